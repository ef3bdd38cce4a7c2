// SPDX-License-Identifier: GPL-2.0
/* A task's session: its state from the cgroup made to the record stored. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "base/util.h"
#include "collector/cgroup.h"
#include "collector/collector.h"
#include "model/collect_kinds.h"
#include "model/config.h"
#include "model/notes.h"
#include "session/hostinfo.h"
#include "session/session.h"
#include "store/spool.h"
#include "store/store.h"

void session__clear(struct session *s)
{
	memset(s, 0, sizeof(*s));
	s->slot = -1;
	s->tid = -1;
	s->events_fd = -1;
	s->cg_lock = -1;
	s->msock.fd = -1;
	s->mem.peak_fd = -1;
	rules__init(&s->rules);
}

/*
 * The task's memory figures from its cgroup's files where it has them; else BPF's,
 * whose rss_stat program is attached for it now (every page fault of the host pays
 * for it then: docs/PERFORMANCE.md).
 */
static void memory_begin(struct session *s, struct collector *c, __u64 v1_peak)
{
	int err;

	memsrc__open(&s->mem, s->cgroup, s->memcg);
	s->mem.v1_peak = v1_peak;
	if (s->mem.kind != MEMSRC_BPF || !c)
		return;
	err = collector__need_rss(c);
	if (err)
		session__fault(s, "resident memory is not followed (rss_stat: %s)", strerror(-err));
}

/* The peak since the last phase boundary, and a new one from now. */
static __s64 take_peak(struct session *s)
{
	__u64 v = 0;

	if (s->mem.kind == MEMSRC_BPF)
		return collector__take_peak(s->c, s->slot);
	if (memsrc__take_peak(&s->mem, &v))
		return 0;
	if (s->mem.kind == MEMSRC_V1 && s->p.mem_reset_fn)
		s->p.mem_reset_fn(s->p.done_ctx, s);
	return (__s64)v;
}

int session__init(struct session *s, const struct session_params *p)
{
	const char *config_path = p->config_path ? p->config_path : TP_DEFAULT_CONFIG;
	char *text = p->config_text ? strdup(p->config_text) : NULL;
	int err;

	session__clear(s);
	s->p = *p;
	if (um_table__init(&s->um) || (p->config_text && !text)) {
		free(text);
		return -ENOMEM;
	}
	/* The daemon's snapshot, so that the rules change with a reload, not a save. */
	err = text ? rules__parse(&s->rules, config_path, text, true)
		   : rules__load(&s->rules, config_path, true, false);
	free(text);
	if (!err && p->rules_text) {
		text = strdup(p->rules_text);
		err = text ? rules__parse(&s->rules, p->rules_path ? p->rules_path : "--rules",
					  text, false)
			   : -ENOMEM;
		free(text);
	} else if (!err && p->rules_path) {
		err = rules__load(&s->rules, p->rules_path, false, true);
	}
	if (err || rules__finish(&s->rules))
		return -EINVAL;
	return 0;
}

bool session__needs_args(const struct session *s)
{
	return rules__has(&s->rules, RULE_EXEC);
}

static int populated_from_fd(int fd)
{
	char buf[256], *p;
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);

	if (n < 0)
		return -errno;
	buf[n] = '\0';
	p = strstr(buf, "populated ");
	return p ? p[10] != '0' : -ENODATA;
}

/* Over once the main process ended and nothing is left in the cgroup. */
static void check_done(struct session *s)
{
	if (s->done || !s->main_done)
		return;
	if (s->action != LEFTOVER_KEPT && populated_from_fd(s->events_fd) > 0)
		return;
	s->done = true;
	if (s->p.done_fn)
		s->p.done_fn(s->p.done_ctx, s);
}

void session__main_exited(struct session *s)
{
	int n = cgroup_count_procs(s->cgroup);

	s->main_done = true;
	s->main_end_ns = tp_now_ns();
	s->leftovers = n > 0 ? n : 0;
	if (s->leftovers && s->p.keep_leftovers) {
		s->action = LEFTOVER_KEPT;
	} else if (s->leftovers && s->p.grace_s == 0) {
		s->action = LEFTOVER_KILLED;
		cgroup_kill(s->cgroup);
	} else if (s->leftovers) {
		s->action = LEFTOVER_EXITED;
		s->grace_end_ns = s->main_end_ns + s->p.grace_s * 1000000000ULL;
	}
	check_done(s);
}

void session__interrupt(struct session *s)
{
	if (s->main_done && s->leftovers && !s->p.keep_leftovers && !s->done) {
		s->action = LEFTOVER_KILLED;
		cgroup_kill(s->cgroup);
	}
}

/* A snapshot at now of figures f (NULL: unreadable) and cpu.stat cs (NULL: unreadable). */
static void snap_of(struct phase_snap *snap, __u64 now, const struct task_figures *f,
		    const struct cg_cpu_stat *cs)
{
	memset(snap, 0, sizeof(*snap));
	snap->t_ns = now;
	if (!f)
		return;
	/* cpu.stat is current to the tick; BPF charges a live thread when the iterator runs. */
	snap->cpu_ns = cs ? cs->usage_us * 1000 : f->cpu.cpu_ns;
	snap->execs = f->proc.execs;
	snap->read_bytes = f->io.read_bytes;
	snap->write_bytes = f->io.write_bytes;
	snap->runq_wait_ns = f->cpu.wait_ns;
	snap->runq = f->cpu.runq;
}

/* The pressure totals of the task's cgroup and of the host, into a phase boundary. */
static void snap_psi(struct session *s, struct phase_snap *snap)
{
	psi_read(s->cgroup, &snap->psi);
	psi_read(NULL, &snap->host_psi);
}

/* The task's live figures now, for a phase boundary: events drained first. */
static void snapshot(struct session *s, struct phase_snap *snap)
{
	struct task_figures f;
	struct cg_cpu_stat cs;
	bool have_f;

	collector__poll(s->c, 0);
	have_f = !collector__read(s->c, s->slot, &f);
	snap_of(snap, tp_now_ns(), have_f ? &f : NULL,
		have_f && !cgroup_read_cpu_stat(s->cgroup, &cs) ? &cs : NULL);
	snap_psi(s, snap);
}

/* The task's pressure totals, and the series' others' cores, from its start. */
static void pressure_begin(struct session *s)
{
	psi_read(s->cgroup, &s->psi_start);
	host_read_usage(s->p.root, &s->sampler.last_host_us, &s->sampler.last_kids_us);
}

/* The host at the task's start, or since note says when. */
static void host_begin(struct session *s, const char *note)
{
	if (host_snap__take(&s->host_start, s->p.root, true, s->cgroup))
		snprintf(s->rec.hctx.note, sizeof(s->rec.hctx.note), "%s",
			 "the host's CPU and pressure files could not be read");
	else if (note)
		snprintf(s->rec.hctx.note, sizeof(s->rec.hctx.note), "%s", note);
}

void session__host_begin(struct session *s)
{
	if (!s->host_start.t_ns)
		host_begin(s, NULL);
}

/* The host around the task from its start to now, into its record. */
static void host_end(struct session *s)
{
	struct task_record *rec = &s->rec;
	struct host_snap end;
	struct psi_totals psi;
	__u64 task_cpu = rec->have_cpu_stat ? rec->cpu_stat.usage_us * 1000 : rec->fig.cpu.cpu_ns;

	psi_read(s->cgroup, &psi);
	rec->hctx.psi = psi_totals__delta(&s->psi_start, &psi);
	if (!s->host_start.t_ns)
		return;
	host_snap__take(&end, s->p.root, true, s->cgroup);
	host_context__compute(&rec->hctx, &s->host_start, &end, s->cg_rel, task_cpu, s->p.tasks);
	host_snap__free(&end);
}

/* One line of the task's metrics language: taken, or refused and counted (the reason). */
static enum um_reject on_line(struct session *s, const char *line, size_t len)
{
	static const char *const reserved[] = { "cpu.", "proc.", "io.",	       "mem.",
						"net.", "http.", "lost_events" };
	struct phase_snap snap;
	struct um_line l;
	enum um_reject r = um_parse_line(line, len, &l);

	if (!r && (l.kind == UM_PHASE_BEGIN || l.kind == UM_PHASE_END)) {
		snapshot(s, &snap);
		if (l.kind == UM_PHASE_BEGIN)
			r = phases__begin(&s->phases, l.key, &snap, take_peak(s))
				    ? UM_TOO_MANY_NAMES
				    : UM_OK;
		else
			r = phases__end(&s->phases, l.key, &snap, take_peak(s)) ? UM_UNKNOWN_PHASE
										: UM_OK;
	} else if (!r) {
		/* The built-in figures' names are not the task's to write. */
		for (size_t i = 0; i < ARRAY_SIZE(reserved) && !r; i++)
			if (!strncmp(l.key, reserved[i], strlen(reserved[i])))
				r = UM_BAD_NAME;
		if (!r)
			r = um_table__add(&s->um, &l);
	}
	if (r)
		s->um.rejected[r]++;
	else
		s->um.accepted++;
	return r;
}

/* Every datagram waiting on the metrics socket; each line is accepted or counted. */
static void drain_socket(struct session *s)
{
	static char buf[MSOCK_DGRAM_MAX];
	enum um_reject first;
	struct sockaddr_un from;
	socklen_t from_len;
	char answer[64];
	ssize_t n;
	pid_t pid;
	int pidfd;

	if (s->msock.fd < 0)
		return;
	while ((n = msock__recv(&s->msock, buf, sizeof(buf), &pid, &pidfd, &from, &from_len)) !=
	       -EAGAIN) {
		bool ours;

		if (n == -EMSGSIZE) {
			s->um.rejected[UM_TOO_LONG]++;
			msock__ack(&s->msock, &from, from_len, "refused too_long");
			continue;
		}
		if (n < 0)
			break;
		/* Who sent it, from the kernel's credentials: never a claim in the text. */
		ours = msock__sender_in(&s->msock, pid, pidfd, s->cg_rel);
		if (pidfd >= 0)
			close(pidfd);
		first = UM_OK;
		for (char *p = buf, *end = buf + n; p < end;) {
			char *nl = memchr(p, '\n', (size_t)(end - p));
			size_t len = (size_t)((nl ? nl : end) - p);
			enum um_reject r = UM_NOT_IN_TASK;

			if (len) {
				if (ours)
					r = on_line(s, p, len);
				else
					s->um.rejected[UM_NOT_IN_TASK]++;
				if (!first)
					first = r;
			}
			p += len + 1;
		}
		snprintf(answer, sizeof(answer), first ? "refused %s" : "ok",
			 um_reject_names[first]);
		msock__ack(&s->msock, &from, from_len, answer);
	}
}

/* Exec rules see "path arg1 arg2 ...": the resolved path in place of argv[0]. */
static void on_exec(void *ctx, const char *path, const char *args, size_t len, bool truncated)
{
	struct session *s = ctx;
	char cmd[TP_PATH_LEN + TP_ARGS_LEN + 8];
	size_t n = (size_t)snprintf(cmd, sizeof(cmd), "%s", path), i = 0;
	int nargs = 0;

	/* Skip argv[0], then at most TP_ARGS_MAX - 1 more arguments. */
	while (i < len && args[i])
		i++;
	for (i++; i < len && n + 2 < sizeof(cmd); i++) {
		if (args[i] == '\0') {
			if (++nargs == TP_ARGS_MAX - 1) {
				truncated |= i + 1 < len;
				break;
			}
			continue;
		}
		if (i == 0 || args[i - 1] == '\0')
			cmd[n++] = ' ';
		cmd[n++] = args[i];
	}
	cmd[n] = '\0';
	/* Counted with or without rules: the record says when argv was cut. */
	s->args_truncated += truncated;
	rules__exec(&s->rules, cmd, n, &s->um);
}

/* A phase rule matched an output line: the same path as markers and the socket. */
static void on_phase_rule(void *ctx, bool begin, const char *name, size_t len)
{
	char msg[UM_LINE_MAX + 1];

	snprintf(msg, sizeof(msg), "phase:%s:%.*s", begin ? "begin" : "end", (int)len, name);
	on_line(ctx, msg, strlen(msg));
}

/* "BEGIN_PHASE name" / "END_PHASE name" in the output: the same path as the socket's. */
void session__output_line(void *ctx, const char *line, size_t len)
{
	struct session *s = ctx;
	const char *markers[2] = { s->p.cfg->phase_begin_marker, s->p.cfg->phase_end_marker };
	size_t plen = strlen(PERFHERDER_PREFIX);
	char msg[UM_LINE_MAX + 1];

	rules__output_line(&s->rules, line, len, &s->um);
	if (len > plen && !memcmp(line, PERFHERDER_PREFIX, plen)) {
		/* Passed through whatever it holds; taken only if it is an artifact. */
		if (um_table__add_perfherder(&s->um, line + plen, len - plen) < 0)
			s->um.rejected[UM_BAD_PERFHERDER]++;
		else
			s->um.accepted++;
		return;
	}

	for (int k = 0; k < 2; k++) {
		size_t m = strlen(markers[k]);
		const char *name;
		size_t n;

		if (len <= m + 1 || memcmp(line, markers[k], m) || line[m] != ' ')
			continue;
		name = line + m + 1;
		n = len - m - 1;
		while (n && (name[n - 1] == ' ' || name[n - 1] == '\t'))
			n--;
		snprintf(msg, sizeof(msg), "phase:%s:%.*s", k ? "end" : "begin", (int)n, name);
		on_line(s, msg, strlen(msg));
		return;
	}
}

static void on_msock(struct loop *l, void *ctx, int fd, uint32_t events)
{
	(void)l, (void)fd, (void)events;
	drain_socket(ctx);
}

static void on_cgroup_events(struct loop *l, void *ctx, int fd, uint32_t events)
{
	(void)l, (void)events;
	populated_from_fd(fd); /* re-arms EPOLLPRI */
	check_done(ctx);
}

/* Due by time: a series sample, the end of the grace period, the check for the end. */
static void on_tick(struct loop *l, void *ctx, __u64 now)
{
	struct session *s = ctx;
	__u64 every = s->p.interval_ms * 1000000ULL;

	(void)l;
	if (s->done)
		return;
	if (now >= s->next_sample_ns) {
		/* A full disk must not stop the task: the next flush retries. */
		sampler__sample(&s->sampler, now);
		s->next_sample_ns += every;
		if (s->next_sample_ns <= now)
			s->next_sample_ns = now + every;
	}
	if (s->grace_end_ns && now >= s->grace_end_ns) {
		s->grace_end_ns = 0;
		if (populated_from_fd(s->events_fd) > 0) {
			s->action = LEFTOVER_KILLED;
			cgroup_kill(s->cgroup);
		}
	}
	check_done(s);
}

static void report_cgroup_error(int err, const char *id, const char *root)
{
	if (err == -EEXIST)
		tp_err("task id '%s' is in use: %s/taskprobe/%s still has processes; choose "
		       "another --id",
		       id, root, id);
	else if (err == -ENOTDIR)
		tp_err("task id '%s' clashes with a file in %s/taskprobe; choose another --id", id,
		       root);
	else
		tp_err("cannot create the task's cgroup under %s/taskprobe: %s%s", root,
		       strerror(-err), err == -EACCES ? "; run as root" : "");
}

/* What is known before the task starts: enough for its row in the store. */
static void fill_identity(struct session *s)
{
	struct task_record *t = &s->rec;
	char shown[PATH_MAX];

	snprintf(t->id, sizeof(t->id), "%s", s->p.id);
	t->argv = s->p.argv;
	t->argc = s->p.argc;
	memcpy(t->labels, s->p.labels, (size_t)s->p.nlabels * sizeof(*t->labels));
	t->nlabels = s->p.nlabels;
	snprintf(t->cgroup, sizeof(t->cgroup), "%s",
		 cgroup_display(s->cgroup, shown, sizeof(shown)));
	if (gethostname(t->host, sizeof(t->host) - 1))
		strcpy(t->host, "unknown");
}

/* A cgroup a worker manages (a container's, a unit's): it must be below the mount. */
static int adopt_cgroup(struct session *s)
{
	char real[PATH_MAX], root[PATH_MAX];
	struct stat st;
	size_t n;

	if (!realpath(s->p.cgroup, real) || stat(real, &st) || !S_ISDIR(st.st_mode)) {
		tp_err("cgroup %s: %s", s->p.cgroup, strerror(errno ? errno : ENOTDIR));
		return -ENOENT;
	}
	if (!realpath(s->p.root, root))
		snprintf(root, sizeof(root), "%s", s->p.root);
	n = strlen(root);
	if (strncmp(real, root, n) || real[n] != '/') {
		tp_err("cgroup %s is not below the cgroup2 mount %s", s->p.cgroup, root);
		return -EINVAL;
	}
	snprintf(s->cgroup, sizeof(s->cgroup), "%s", real);
	/* Below the mount as resolved: the given root may have been a link to it. */
	s->cg_rel = s->cgroup + n;
	s->adopted = true;
	return 0;
}

/* The cgroup's events (when its events_fd is open), the metrics socket and the tick. */
static int watch(struct session *s, struct loop *loop)
{
	int err;

	s->events_h = (struct loop_handler){ s->events_fd, EPOLLPRI, on_cgroup_events, s };
	s->msock_h = (struct loop_handler){ s->msock.fd, EPOLLIN, on_msock, s };
	err = s->events_fd >= 0 ? loop__add(loop, &s->events_h) : 0;
	if (!err && s->msock.fd >= 0)
		err = loop__add(loop, &s->msock_h);
	if (!err)
		err = loop__on_tick(loop, on_tick, s);
	if (err)
		tp_err("cannot set up the event loop: %s", strerror(-err));
	return err;
}

int session__start(struct session *s, struct collector *c, struct store *store, struct loop *loop)
{
	struct label host_labels[HOST_LABELS];
	char host_store[1024];
	int err;

	s->c = c;
	s->loop = loop;
	s->rules.phase_fn = on_phase_rule;
	s->rules.phase_ctx = s;
	if (s->p.cgroup) {
		err = adopt_cgroup(s);
		if (err)
			return err;
	} else {
		/* What dead runs and daemons left is swept first; live ones hold theirs. */
		cgroup_sweep(s->p.root);
		err = cgroup_make_task(s->p.root, s->p.id, s->cgroup, sizeof(s->cgroup),
				       &s->cg_lock);
		if (err) {
			report_cgroup_error(err, s->p.id, s->p.root);
			s->cgroup[0] = '\0'; /* not ours: never remove it */
			return err;
		}
	}
	/*
	 * No memory controller on cgroup2 (hybrid hosts): the kernel's charge comes from
	 * a v1 memory cgroup of the task's own; else the BPF sum of resident pages. A
	 * cgroup that is someone else's has its processes already: no mirror then.
	 */
	if (!s->adopted && cgroup_read_u64(s->cgroup, "memory.peak", &(__u64){ 0 }) &&
	    cgroup_v1_memory_make(s->p.id, s->memcg, sizeof(s->memcg)))
		s->memcg[0] = '\0';
	memory_begin(s, c, 0);
	if (c) {
		s->slot = collector__track(c, s->cgroup);
		if (s->slot < 0) {
			tp_err("cannot track cgroup %s: %s", s->cgroup, strerror(-s->slot));
			return s->slot;
		}
		s->rec.collect =
			collector__collects(c) & (s->p.collect ? s->p.collect : COLLECT_ALL);
		/* argv is copied in BPF only for a task whose exec rules read it. */
		if (session__needs_args(s))
			collector__capture_args(c, s->slot, true);
		collector__on_exec(c, s->slot, on_exec, s);
	} else {
		/* No BPF: the cgroup's own files, and the task's own metrics, are all. */
		s->rec.collect = COLLECT_CGROUP_ONLY;
	}
	if (!s->adopted)
		s->cg_rel = s->cgroup + strlen(s->p.root);
	/* Without the socket the task still runs, only its own metrics are not taken. */
	err = msock__open(&s->msock);
	if (err)
		session__fault(s,
			       "no metrics socket (%s: %s): the task's own metrics are not taken",
			       MSOCK_DIR, strerror(-err));
	s->events_fd = cgroup_events_fd(s->cgroup);
	if (s->events_fd < 0) {
		err = s->events_fd;
		tp_err("cannot watch %s/cgroup.events: %s", s->cgroup, strerror(-err));
		return err;
	}
	err = watch(s, loop);
	if (err)
		return err;

	s->start_ns = tp_now_ns();
	s->next_sample_ns = s->start_ns + s->p.interval_ms * 1000000ULL;
	s->rec.start_real_ns = tp_realtime_ns();
	fill_identity(s);
	if (store) {
		char why[512];

		hostinfo_labels(s->p.cfg, host_labels, host_store, sizeof(host_store));
		/* A store that fails must not stop the task: its record is spooled at the end. */
		tp_catch(why, sizeof(why));
		err = store__task_begin(store, &s->rec, host_labels, HOST_LABELS, &s->tid);
		tp_catch(NULL, 0);
		if (err) {
			s->tid = -1;
			session__fault(s,
				       "the store failed at the task's start (%s); its record "
				       "is kept to be stored later",
				       why[0] ? why : strerror(-err));
		} else {
			s->store = store;
		}
	}
	sampler__init(&s->sampler, c, s->slot, s->cgroup, s->start_ns, s->store, s->tid);
	s->sampler.root = s->p.root;
	s->sampler.mem = &s->mem;
	phases__init(&s->phases, s->start_ns);
	s->sampler.phases = &s->phases;
	pressure_begin(s);
	return 0;
}

int session__resume(struct session *s, struct collector *c, struct store *store, struct loop *loop,
		    const struct session_resume *r)
{
	__u64 now = tp_now_ns(), every = s->p.interval_ms * 1000000ULL;
	char when[40];
	size_t n = strlen(s->p.root);
	int err;

	s->c = c;
	s->loop = loop;
	s->rules.phase_fn = on_phase_rule;
	s->rules.phase_ctx = s;
	snprintf(s->cgroup, sizeof(s->cgroup), "%s", r->cgroup);
	snprintf(s->memcg, sizeof(s->memcg), "%s", r->memcg);
	/* A worker's cgroup stays the worker's; a run's is ours again (held; maybe gone). */
	s->adopted = !r->run;
	if (r->run)
		s->cg_lock = cgroup_lock_task(s->cgroup, false);
	s->slot = collector__retrack(c, r->slot, s->cgroup);
	if (s->slot < 0)
		return s->slot;
	memory_begin(s, c, r->mem_v1_peak);
	s->rec.collect = collector__collects(c) & (s->p.collect ? s->p.collect : COLLECT_ALL);
	if (session__needs_args(s))
		collector__capture_args(c, s->slot, true);
	collector__on_exec(c, s->slot, on_exec, s);
	s->cg_rel = !strncmp(s->cgroup, s->p.root, n) && s->cgroup[n] == '/' ? s->cgroup + n
									     : s->cgroup;
	/* Where the task's processes were told to send: bound again, so they still can. */
	err = r->msock[0] ? msock__open_at(&s->msock, r->msock) : msock__open(&s->msock);
	if (err)
		session__fault(s,
			       "no metrics socket (%s: %s): the task's own metrics are not taken",
			       MSOCK_DIR, strerror(-err));
	/* A cgroup gone in the gap: nothing is left in it, the task is over. */
	s->events_fd = cgroup_events_fd(s->cgroup);
	err = watch(s, loop);
	if (err)
		return err;
	s->start_ns = r->start_ns;
	s->next_sample_ns = now + every;
	s->rec.start_real_ns = r->start_real_ns;
	fill_identity(s);
	if (store && r->tid >= 0) {
		char why[512];

		tp_catch(why, sizeof(why));
		err = store__task_resume(store, r->tid);
		tp_catch(NULL, 0);
		if (!err) {
			s->store = store;
			s->tid = r->tid;
		} else if (err == -EALREADY) {
			return err; /* stored whole before: over, nothing to take over */
		} else {
			session__fault(s,
				       "its store row could not be taken over (%s): the record "
				       "goes to the spool, stored within seconds",
				       why[0] ? why : strerror(-err));
		}
	}
	sampler__init(&s->sampler, c, s->slot, s->cgroup, s->start_ns, s->store, s->tid);
	s->sampler.root = s->p.root;
	s->sampler.mem = &s->mem;
	sampler__resume(&s->sampler, now);
	phases__init(&s->phases, s->start_ns);
	s->sampler.phases = &s->phases;
	pressure_begin(s);
	host_begin(s, "the rest of the host's CPU and pressure since the daemon changed hands, "
		      "not since the task's start");
	tp_fmt_time(when, sizeof(when), tp_realtime_ns());
	task_record__add_fault(
		&s->rec,
		"the daemon changed hands at %s (the one before died or handed over): "
		"the counters are exact; the program table, processes, events, phases "
		"and the task's own metrics before then are not in this record",
		when);
	return 0;
}

/* cpu.stat and the kernel's peak memory, where the cgroups give them. */
static void read_cgroup_figures(struct session *s)
{
	struct task_record *rec = &s->rec;
	int err = cgroup_read_cpu_stat(s->cgroup, &rec->cpu_stat);

	rec->have_cpu_stat = !err;
	/* Removed from outside (its processes moved away first): what was read is kept. */
	if (err == -ENOENT && s->sampler.have_cs) {
		rec->cpu_stat = s->sampler.last_cs;
		rec->have_cpu_stat = true;
		rec->cpu_stat_note = "last read before the task's cgroup was removed";
	} else if (err == -ENOENT) {
		rec->cpu_stat_note = "the task's cgroup was removed before cpu.stat was read";
	}
	/* No BPF: the cgroup's usage is the task's CPU time. */
	if (!s->c && rec->have_cpu_stat)
		rec->fig.cpu.cpu_ns = rec->cpu_stat.usage_us * 1000;
	rec->have_memory_peak = !cgroup_read_u64(s->cgroup, "memory.peak", &rec->memory_peak);
	if (rec->have_memory_peak)
		rec->memory_peak_source = "cgroup:memory.peak";
	/* The v1 memory cgroup's peak, with those read before its per-phase resets. */
	else if (!memsrc__v1_task_peak(&s->mem, &rec->memory_peak)) {
		rec->have_memory_peak = true;
		rec->memory_peak_source = "cgroup1:memory.max_usage_in_bytes";
	}
}

struct task_record *session__finish(struct session *s)
{
	struct task_record *rec = &s->rec;
	const struct program_stat *progs;
	struct phase_snap snap;
	size_t nprogs;
	__u64 now = tp_now_ns();

	rec->wall_ns = now - s->start_ns;
	rec->main_wall_ns = (s->main_done ? s->main_end_ns : now) - s->start_ns;
	/* What the task sent before it ended counts, then open phases end. */
	drain_socket(s);
	snapshot(s, &snap);
	phases__close_all(&s->phases, &snap, take_peak(s));
	rec->phases = &s->phases;
	rec->um = &s->um;
	rec->rules = &s->rules;
	rec->exec_args_truncated = s->args_truncated;
	rec->leftovers = s->leftovers;
	rec->leftover_action = s->action;
	sampler__sample(&s->sampler, tp_now_ns());
	if (sampler__compact(&s->sampler))
		sampler__flush(&s->sampler);
	rec->peak_cores = (double)s->sampler.peak_millicores / 1000.0;
	collector__read(s->c, s->slot, &rec->fig);
	collector__net(s->c, s->slot, &s->p.cfg->http_ports, &rec->net);
	progs = collector__programs(s->c, s->slot, &nprogs);
	task_record__set_programs(rec, progs, nprogs);
	rec->lost_total = collector__lost_total(s->c);
	rec->skipped_runs = collector__skipped_runs(s->c);
	rec->by_daemon = s->p.by_daemon;
	notes__fini(&rec->notes);
	notes__rebase(&rec->notes, collector__notes(s->c, s->slot), s->start_ns);
	procs__fini(&rec->procs);
	collector__processes(s->c, s->slot, now, s->start_ns, &rec->procs);
	read_cgroup_figures(s);
	host_end(s);
	return rec;
}

int session__live(struct session *s, struct task_record *out)
{
	const struct program_stat *progs;
	struct phases *ph = NULL;
	struct phase_snap snap;
	size_t nprogs;
	bool have_f;
	__u64 now, mem_now;

	if (s->slot < 0 || s->done)
		return -ENOENT;
	now = tp_now_ns();
	*out = s->rec;
	out->net = (struct net_figures){ 0 };
	out->progs = NULL;
	out->nprogs = 0;
	out->argv_owned = NULL;
	out->um_owned = NULL;
	out->rules_owned = NULL;
	out->notes = (struct notes){ 0 };
	out->procs = (struct procs){ 0 };
	out->end = TASK_RUNNING;
	out->wall_ns = now - s->start_ns;
	out->main_wall_ns = (s->main_done ? s->main_end_ns : now) - s->start_ns;
	/* Each read once: the figures, cpu.stat, memory.peak. */
	have_f = !collector__read(s->c, s->slot, &out->fig);
	if (have_f && !memsrc__now(&s->mem, &mem_now))
		out->fig.mem.rss_bytes = (__s64)mem_now;
	out->have_cpu_stat = !cgroup_read_cpu_stat(s->cgroup, &out->cpu_stat);
	out->cpu_stat_note = NULL;
	out->have_memory_peak = !cgroup_read_u64(s->cgroup, "memory.peak", &out->memory_peak);
	out->memory_peak_source = out->have_memory_peak ? "cgroup:memory.peak" : NULL;
	snap_of(&snap, now, have_f ? &out->fig : NULL,
		have_f && out->have_cpu_stat ? &out->cpu_stat : NULL);
	snap_psi(s, &snap);
	/* Live: the task's stalls so far; the host's others come at its end. */
	memset(&out->hctx, 0, sizeof(out->hctx));
	out->hctx.psi = psi_totals__delta(&s->psi_start, &snap.psi);
	/* The phases as they would end now: a copy, the open ones closed and unfinished. */
	ph = calloc(1, sizeof(*ph));
	if (ph) {
		*ph = s->phases;
		ph->p = s->phases.n ? malloc(s->phases.n * sizeof(*ph->p)) : NULL;
		if (s->phases.n && !ph->p) {
			free(ph);
			ph = NULL;
		} else {
			if (ph->p)
				memcpy(ph->p, s->phases.p, s->phases.n * sizeof(*ph->p));
			phases__close_all(ph, &snap, 0);
		}
	}
	out->phases = out->phases_owned = ph;
	out->um = &s->um;
	out->rules = &s->rules;
	out->exec_args_truncated = s->args_truncated;
	out->leftovers = s->leftovers;
	out->leftover_action = s->action;
	out->peak_cores = (double)s->sampler.peak_millicores / 1000.0;
	collector__net(s->c, s->slot, &s->p.cfg->http_ports, &out->net);
	progs = collector__programs(s->c, s->slot, &nprogs);
	task_record__set_programs(out, progs, nprogs);
	out->lost_total = collector__lost_total(s->c);
	out->skipped_runs = collector__skipped_runs(s->c);
	out->by_daemon = s->p.by_daemon;
	notes__rebase(&out->notes, collector__notes(s->c, s->slot), s->start_ns);
	collector__processes(s->c, s->slot, now, s->start_ns, &out->procs);
	return 0;
}

void session__fault(struct session *s, const char *fmt, ...)
{
	char msg[TASK_FAULT_LEN];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	tp_warn("task '%s': %s", s->p.id, msg);
	task_record__add_fault(&s->rec, "%s", msg);
}

/* The record into the spool of the session's store: 0, or -errno (said). */
static int spool_record(struct session *s)
{
	struct label host_labels[HOST_LABELS];
	char host_store[1024], where[PATH_MAX], why[1024];
	int err;

	hostinfo_labels(s->p.cfg, host_labels, host_store, sizeof(host_store));
	err = spool__save(s->p.db_path, &s->rec, host_labels, HOST_LABELS, s->sampler.pts,
			  s->sampler.n, (__u64)s->p.cfg->spool_max_mb << 20, where, sizeof(where),
			  why, sizeof(why));
	if (err)
		tp_err("warning: task '%s' could not be stored nor spooled (%s): its record is "
		       "lost but for --json",
		       s->p.id, why);
	else
		tp_debug("task '%s' spooled as %s", s->p.id, where);
	return err;
}

int session__store(struct session *s)
{
	char why[512];
	int err = -ENODEV;

	if (!s->p.db_path)
		return 0; /* --no-db */
	if (s->store && s->tid >= 0) {
		tp_catch(why, sizeof(why));
		err = store__task_end(s->store, s->tid, &s->rec);
		tp_catch(NULL, 0);
		if (!err) {
			/* Housekeeping, after the task's own write so that it cannot delay it. */
			store__mark_lost(s->store);
			store__retain(s->store, s->p.cfg->retain_days, s->p.cfg->max_db_mb);
			return 0;
		}
		/* Its start's row stays, lost once our lock is let go, until the spool's. */
		store__task_release(s->store, s->tid);
		tp_err("warning: task '%s': the store failed at the task's end (%s); its record "
		       "goes to the spool",
		       s->p.id, why[0] ? why : strerror(-err));
	}
	/* The task ran: a store that fails is a warning and a file, never a lost record. */
	spool_record(s);
	return err;
}

void session__hand_over(struct session *s)
{
	s->handed_over = true;
	session__fini(s);
}

void session__fini(struct session *s)
{
	if (s->loop && s->events_fd >= 0)
		loop__del(s->loop, &s->events_h);
	if (s->loop && s->msock.fd >= 0)
		loop__del(s->loop, &s->msock_h);
	if (s->loop)
		loop__off_tick(s->loop, on_tick, s);
	/* Handed over: the slot, the cgroups and the task's description stay as they are. */
	if (s->slot >= 0 && !s->handed_over)
		collector__untrack(s->c, s->slot);
	if (s->memcg[0] && s->action != LEFTOVER_KEPT && !s->handed_over)
		cgroup_remove_task(s->memcg);
	if (s->cgroup[0] && !s->adopted && s->action != LEFTOVER_KEPT && !s->handed_over)
		cgroup_remove_task(s->cgroup);
	if (s->cg_lock >= 0)
		close(s->cg_lock);
	s->cg_lock = -1;
	if (s->events_fd >= 0)
		close(s->events_fd);
	task_record__fini(&s->rec);
	sampler__fini(&s->sampler);
	msock__close(&s->msock);
	memsrc__close(&s->mem);
	rules__fini(&s->rules);
	phases__fini(&s->phases);
	um_table__fini(&s->um);
	host_snap__free(&s->host_start);
}
