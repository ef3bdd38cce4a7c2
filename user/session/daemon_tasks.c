// SPDX-License-Identifier: GPL-2.0
/*
 * The daemon's tasks: the table a task is started into, ended and dropped from, the
 * `run` clients' tasks and their connections, and the control requests answered.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include "base/json.h"
#include "base/loop.h"
#include "base/util.h"
#include "collector/collector.h"
#include "model/collect_kinds.h"
#include "model/config.h"
#include "model/task.h"
#include "model/task_json.h"
#include "session/control.h"
#include "session/daemon.h"
#include "session/daemon_int.h"
#include "session/handover.h"
#include "session/hostinfo.h"
#include "session/session.h"
#include "store/ship.h"

int daemon__tasks_running(void *ctx)
{
	return ((struct daemon *)ctx)->ntasks;
}

int daemon__live_record(void *ctx, const char *id, struct jw *w)
{
	struct dtask *t = daemon__find_task(ctx, id);
	struct task_record rec;

	if (!t)
		return -ENOENT;
	collector__poll(t->d->c, 0);
	if (session__live(&t->s, &rec))
		return -ENOENT;
	task_record__write_json(w, &rec);
	task_record__fini(&rec);
	return 0;
}

struct dtask *daemon__find_task(struct daemon *d, const char *id)
{
	for (int i = 0; i < d->ntasks; i++)
		if (!strcmp(d->tasks[i]->id, id))
			return d->tasks[i];
	return NULL;
}

void daemon__drop_task(struct daemon *d, struct dtask *t)
{
	for (int i = 0; i < d->ntasks; i++) {
		if (d->tasks[i] != t)
			continue;
		d->tasks[i] = d->tasks[--d->ntasks];
		break;
	}
	if (t->conn >= 0) {
		loop__del(&d->loop, &t->conn_h);
		close(t->conn);
	}
	if (d->handing_over) {
		session__hand_over(&t->s);
	} else {
		if (t->s.slot >= 0 && d->handover[0])
			handover__remove(d->handover, t->s.slot);
		session__fini(&t->s);
	}
	for (int i = 0; i < t->argc; i++)
		free(t->argv[i]);
	free(t->argv);
	free(t->rules_text);
	free(t->in);
	free(t);
}

void daemon_answer(int fd, const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n > sizeof(line) - 2)
		n = (int)sizeof(line) - 2;
	line[n++] = '\n';
	if (write(fd, line, (size_t)n) < 0)
		return;
}

/* A long answer: the client reads it at once; one that does not gets 2 s, not the loop. */
static void send_text(int fd, const char *text, size_t len)
{
	struct timeval tv = { .tv_sec = 2 };

	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	while (len) {
		ssize_t n = send(fd, text, len, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return;
		text += n;
		len -= (size_t)n;
	}
}

/*
 * tasks: "ok", then a line per running task: ID WALL_NS CPU_NS MEM_BYTES READ_BYTES
 * WRITE_BYTES RX_BYTES TX_BYTES PROCS FAILURES PHASE, totals so far (top makes rates).
 */
static void list_tasks(struct daemon *d, int fd)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	if (!f) {
		daemon_answer(fd, "error\tout of memory");
		return;
	}
	fputs("ok\n", f);
	/* The events so far, drained once for every task's figures. */
	collector__poll(d->c, 0);
	for (int i = 0; i < d->ntasks; i++) {
		struct dtask *t = d->tasks[i];
		struct task_record rec;
		const struct tp_net_counters *tcp = &rec.net.tcp;
		__u64 cpu, fails;

		if (session__live(&t->s, &rec))
			continue;
		/* cpu.stat is current to the tick; BPF charges a running thread at switch-out. */
		cpu = rec.have_cpu_stat ? rec.cpu_stat.usage_us * 1000 : rec.fig.cpu.cpu_ns;
		fails = rec.fig.proc.failed_exits + rec.fig.mem.oom_kills +
			net_figures__http_failures(&rec.net, -1);
		for (int k = 0; k < TP_CONN_FAILURE_KINDS; k++)
			fails += tcp->failures[k];
		fprintf(f, "%s\t%llu\t%llu\t%lld\t%llu\t%llu\t%llu\t%llu\t%lld\t%llu\t%s\n", t->id,
			(unsigned long long)rec.wall_ns, (unsigned long long)cpu,
			(long long)rec.fig.mem.rss_bytes, (unsigned long long)rec.fig.io.read_bytes,
			(unsigned long long)rec.fig.io.write_bytes,
			(unsigned long long)tcp->rx_bytes, (unsigned long long)tcp->tx_bytes,
			(long long)rec.fig.proc.alive, (unsigned long long)fails,
			phases__current(&t->s.phases));
		task_record__fini(&rec);
	}
	if (fclose(f) == 0)
		send_text(fd, text, len);
	free(text);
}

/* A new task's id and labels checked (else the answer says why): NULL, or the task. */
static struct dtask *new_task(struct daemon *d, int fd, const char *id, char **kv, int nkv)
{
	const char *why;
	struct dtask *t;

	if (!tp_valid_id(id)) {
		daemon_answer(fd, "error\tinvalid task id: use " TP_ID_RULE);
		return NULL;
	}
	if (daemon__find_task(d, id)) {
		daemon_answer(fd,
			      "error\ttask '%s' is tracked already; 'taskprobe task end %s' first",
			      id, id);
		return NULL;
	}
	if (nkv > TP_LABELS_MAX) {
		daemon_answer(fd, "error\tat most %d labels", TP_LABELS_MAX);
		return NULL;
	}
	if (d->ntasks >= d->max_tasks) {
		daemon_answer(
			fd,
			"error\tthe daemon's task table is full: %d tasks are tracked (max_tasks in "
			"the config, then a restart, makes room for more)",
			d->max_tasks);
		return NULL;
	}
	t = calloc(1, sizeof(*t));
	if (!t) {
		daemon_answer(fd, "error\tout of memory");
		return NULL;
	}
	t->d = d;
	t->conn = -1;
	/* No slot, no fds: dropped before its session opens, it frees nothing of another's. */
	session__clear(&t->s);
	snprintf(t->id, sizeof(t->id), "%s", id);
	for (int i = 0; i < nkv; i++) {
		struct label *l = &t->labels[i];

		snprintf(t->kv[i], sizeof(t->kv[0]), "%s", kv[i]);
		if (tp_parse_label(t->kv[i], &l->key, &l->val, &why)) {
			daemon_answer(fd, "error\tinvalid label '%.64s': %s", kv[i], why);
			free(t);
			return NULL;
		}
		if (hostinfo_is_label(l->key)) {
			daemon_answer(fd, "error\tlabel '%.64s' names a host label", l->key);
			free(t);
			return NULL;
		}
	}
	t->cfg = d->cfg;
	return t;
}

/* Another of the daemon's tasks, by the cgroup it tracks or tracked: its id. */
static bool name_task(void *ctx, const char *rel, char *id, size_t len)
{
	struct daemon *d = ctx;

	for (int i = 0; i < d->ntasks; i++)
		if (d->tasks[i]->s.cg_rel && !strcmp(d->tasks[i]->s.cg_rel, rel)) {
			snprintf(id, len, "%s", d->tasks[i]->id);
			return true;
		}
	for (int i = 0; d->ended && i < ENDED_MAX; i++)
		if (d->ended[i].end_ns && !strcmp(d->ended[i].rel, rel)) {
			snprintf(id, len, "%s", d->ended[i].id);
			return true;
		}
	return false;
}

/* The tasks that ended since `since`, with their cgroups' last usage. */
static size_t gone_tasks(void *ctx, __u64 since, struct cg_usage *out, size_t max)
{
	struct daemon *d = ctx;
	size_t n = 0;

	for (int i = 0; d->ended && i < ENDED_MAX && n < max; i++)
		if (d->ended[i].end_ns > since)
			out[n++] = (struct cg_usage){ d->ended[i].rel, d->ended[i].usage_us };
	return n;
}

/* A task ends: remembered for the host context of the tasks that ran beside it. */
static void remember_ended(struct daemon *d, const struct dtask *t, const struct task_record *rec)
{
	struct ended_task *e;

	if (!t->s.cg_rel || !rec->have_cpu_stat)
		return;
	if (!d->ended && !(d->ended = calloc(ENDED_MAX, sizeof(*d->ended))))
		return;
	e = &d->ended[d->ended_next];
	d->ended_next = (d->ended_next + 1) % ENDED_MAX;
	snprintf(e->rel, sizeof(e->rel), "%s", t->s.cg_rel);
	snprintf(e->id, sizeof(e->id), "%s", t->id);
	e->usage_us = rec->cpu_stat.usage_us;
	e->end_ns = tp_now_ns();
}

void daemon__params(struct daemon *d, struct dtask *t, struct session_params *p, int nlabels)
{
	p->id = t->id;
	p->labels = t->labels;
	p->nlabels = nlabels;
	p->cfg = &t->cfg;
	p->config_path = d->config_path;
	p->config_text = d->config_text;
	p->root = d->root;
	p->db_path = d->db;
	p->by_daemon = true;
	d->host_tasks = (struct host_tasks){ name_task, gone_tasks, d };
	p->tasks = &d->host_tasks;
	/* A phase boundary reset a v1 memory peak: described again, the peak so far in it. */
	p->mem_reset_fn = daemon_redescribe;
	p->done_ctx = t;
}

/* The session of t with what every task of the daemon's shares; 0, or answered. */
static int open_session(struct daemon *d, struct dtask *t, int fd, struct session_params *p,
			int nlabels)
{
	int err;

	daemon__params(d, t, p, nlabels);
	err = session__init(&t->s, p);
	if (!err)
		err = session__start(&t->s, d->c, d->store, &d->loop);
	if (err) {
		daemon_answer(fd, "error\tcannot track task '%s': %s (the daemon's log says more)",
			      t->id, strerror(-err));
		return err;
	}
	return 0;
}

/*
 * The task described for the daemon after us (handover.h): one that dies or hands over
 * leaves it to be adopted. Without the file the task still runs; only a restart would
 * lose it, and that is said.
 */
static void describe(struct daemon *d, struct dtask *t)
{
	struct handover_task h = {
		.slot = t->s.slot,
		.abi = TP_ABI_VERSION,
		.run = t->argv != NULL,
		.start_ns = t->s.start_ns,
		.start_real_ns = t->s.rec.start_real_ns,
		.interval_ms = t->s.p.interval_ms,
		.grace_s = t->s.p.grace_s,
		.keep_leftovers = t->s.p.keep_leftovers,
		.collect = t->s.p.collect,
		.tid = t->s.store ? t->s.tid : -1,
		.mem_v1_peak = t->s.mem.v1_peak,
		.nlabels = t->s.p.nlabels,
		.argc = t->argc,
		.argv = t->argv,
		.rules = t->rules_text,
	};
	int err;

	snprintf(h.id, sizeof(h.id), "%s", t->id);
	snprintf(h.cgroup, sizeof(h.cgroup), "%s", t->s.cgroup);
	snprintf(h.memcg, sizeof(h.memcg), "%s", t->s.memcg);
	snprintf(h.msock, sizeof(h.msock), "%s", t->s.msock.fd >= 0 ? t->s.msock.path : "");
	memcpy(h.kv, t->kv, sizeof(h.kv));
	err = d->handover[0] ? handover__save(d->handover, &h) : -ENOENT;
	if (err)
		tp_err("warning: task '%s' is not described in %s (%s): a daemon restarted before "
		       "its end could not adopt it",
		       t->id, d->handover, strerror(-err));
}

/* start ID CGROUP [K=V ...]: a cgroup the worker manages, until `end ID`. */
static void start_task(struct daemon *d, int fd, char **f, int nf)
{
	struct session_params p = { 0 };
	struct dtask *t;

	if (nf < 3) {
		daemon_answer(fd, "error\tstart needs an id and a cgroup");
		return;
	}
	t = new_task(d, fd, f[1], f + 3, nf - 3);
	if (!t)
		return;
	snprintf(t->cgroup, sizeof(t->cgroup), "%s", f[2]);
	p.cgroup = t->cgroup;
	p.interval_ms = 1000;
	if (open_session(d, t, fd, &p, nf - 3)) {
		daemon__drop_task(d, t);
		return;
	}
	d->tasks[d->ntasks++] = t;
	describe(d, t);
	daemon_answer(fd, "ok\t%s", t->s.msock.fd >= 0 ? t->s.msock.path : "");
	/* The worker's processes run: the host around them, once they are not kept waiting. */
	session__host_begin(&t->s);
}

void daemon__end_task(struct daemon *d, struct dtask *t, enum task_end end, int fd)
{
	struct task_record *rec = session__finish(&t->s);
	struct timeval tv = { .tv_sec = 2 };
	FILE *f;

	remember_ended(d, t, rec);
	if (end == TASK_EXITED)
		task_record__set_end(rec, t->wstatus, t->exec_err);
	else
		rec->end = end;
	/*
	 * Stored (or spooled), and its description gone, before the client has it: a daemon
	 * killed in between leaves a task stored, never one its client thinks is.
	 */
	session__store(&t->s);
	if (t->s.slot >= 0 && d->handover[0])
		handover__remove(d->handover, t->s.slot);
	if (fd >= 0) {
		/* The client reads it at once: one that does not is given 2 s, not the loop. */
		setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
		daemon_answer(fd, "ok");
		f = fdopen(dup(fd), "w");
		if (f) {
			struct jw w;

			jw_init(&w, f, false);
			task_record__write_json(&w, rec);
			fputc('\n', f);
			fclose(f);
		}
	}
	shipper__kick(&d->ship);
	daemon__drop_task(d, t);
}

void daemon_redescribe(void *ctx, struct session *s)
{
	struct dtask *t = ctx;

	(void)s;
	describe(t->d, t);
}

void daemon_on_run_done(void *ctx, struct session *s)
{
	struct dtask *t = ctx;

	(void)s;
	if (t->orphan)
		return; /* its client may still come back for its record */
	if (t->conn < 0 || write(t->conn, "e\n", 2) != 2)
		t->finish = true;
}

void daemon_run_is_lost(struct dtask *t)
{
	t->lost = true;
	if (!t->exited) {
		t->exited = true;
		session__main_exited(&t->s);
	}
	if (t->s.done)
		t->finish = true;
}

/* The client went away: its task ends as interrupted, once its cgroup is empty. */
static void run_client_gone(struct dtask *t)
{
	loop__del(&t->d->loop, &t->conn_h);
	close(t->conn);
	t->conn = -1;
	if (!t->finish)
		daemon_run_is_lost(t);
}

static void run_message(struct dtask *t, char *line, size_t len)
{
	if (len >= 2 && line[0] == 'o' && line[1] == '\t') {
		session__output_line(&t->s, line + 2, len - 2);
	} else if (line[0] == 'x' && !t->exited) {
		char *p = line + 1;

		t->wstatus = (int)strtol(p, &p, 10);
		t->exec_err = (int)strtol(p, &p, 10);
		t->exited = true;
		session__main_exited(&t->s);
	} else if (line[0] == 'i') {
		session__interrupt(&t->s);
	} else if (line[0] == 'f' && t->s.done) {
		t->finish = true;
	}
}

/* What a run's client sends: lines, each one message. */
static void on_run_conn(struct loop *l, void *ctx, int fd, uint32_t events)
{
	struct dtask *t = ctx;
	ssize_t n;

	(void)l, (void)events;
	for (;;) {
		char *nl, *p = t->in;

		n = read(fd, t->in + t->in_len, RUN_IN_MAX - t->in_len);
		if (n <= 0)
			break;
		t->in_len += (size_t)n;
		while ((nl = memchr(p, '\n', t->in_len - (size_t)(p - t->in)))) {
			*nl = '\0';
			run_message(t, p, (size_t)(nl - p));
			p = nl + 1;
		}
		t->in_len -= (size_t)(p - t->in);
		memmove(t->in, p, t->in_len);
		/* Longer than any line run sends: not ours to read. */
		if (t->in_len == RUN_IN_MAX)
			t->in_len = 0;
	}
	if (n == 0 || (errno != EAGAIN && errno != EINTR))
		run_client_gone(t);
}

/* A client not root: the task's cgroup is delegated to it, as systemd does. */
static void delegate(const char *dir, uid_t uid)
{
	static const char *const files[] = { "", "/cgroup.procs", "/cgroup.threads" };
	char path[PATH_MAX];

	if (!dir[0] || !uid)
		return;
	for (size_t i = 0; i < ARRAY_SIZE(files); i++) {
		snprintf(path, sizeof(path), "%s%s", dir, files[i]);
		if (chown(path, uid, (gid_t)-1) && errno != ENOENT)
			tp_err("warning: cannot hand %s to uid %u: %s", path, (unsigned)uid,
			       strerror(errno));
	}
}

/* fd, a run's client, is t's connection from now on: 0, or -1 (answered). */
static int take_conn(struct daemon *d, struct dtask *t, int fd)
{
	t->conn = fd;
	t->conn_h = (struct loop_handler){ fd, EPOLLIN, on_run_conn, t };
	if (fcntl(fd, F_SETFL, O_NONBLOCK) || loop__add(&d->loop, &t->conn_h)) {
		daemon_answer(fd, "error\tcannot watch the connection: %s", strerror(errno));
		t->conn = -1;
		return -1;
	}
	return 0;
}

/* run ID INTERVAL GRACE KEEP RULES ARGC ARG... [K=V ...]: a task `run` spawns itself. */
static bool run_task(struct daemon *d, int fd, char **f, int nf)
{
	struct session_params p = { 0 };
	struct ucred cred = { 0 };
	socklen_t clen = sizeof(cred);
	__u64 interval, grace, keep, collect, argc;
	struct dtask *t;

	if (nf < 8 || tp_parse_u64(f[2], RUN_INTERVAL_MAX, &interval) ||
	    interval < RUN_INTERVAL_MIN || tp_parse_u64(f[3], RUN_GRACE_MAX, &grace) ||
	    tp_parse_u64(f[4], 1, &keep) || tp_parse_u64(f[5], COLLECT_ALL, &collect) ||
	    tp_parse_u64(f[7], (__u64)(nf - 8), &argc) || !argc) {
		daemon_answer(fd, "error\tmalformed run request");
		return false;
	}
	t = new_task(d, fd, f[1], f + 8 + argc, nf - 8 - (int)argc);
	if (!t)
		return false;
	t->argv = calloc(argc + 1, sizeof(char *));
	t->in = malloc(RUN_IN_MAX);
	if (!t->argv || !t->in || (f[6][0] && !(t->rules_text = strdup(control_unescape(f[6]))))) {
		daemon_answer(fd, "error\tout of memory");
		daemon__drop_task(d, t);
		return false;
	}
	for (t->argc = 0; t->argc < (int)argc; t->argc++) {
		t->argv[t->argc] = strdup(control_unescape(f[8 + t->argc]));
		if (!t->argv[t->argc]) {
			daemon_answer(fd, "error\tout of memory");
			daemon__drop_task(d, t);
			return false;
		}
	}
	p.argv = t->argv;
	p.argc = t->argc;
	p.rules_text = t->rules_text;
	p.interval_ms = interval;
	p.grace_s = grace;
	p.keep_leftovers = keep;
	p.collect = (unsigned)collect;
	p.done_fn = daemon_on_run_done;
	p.done_ctx = t;
	if (open_session(d, t, fd, &p, nf - 8 - (int)argc)) {
		daemon__drop_task(d, t);
		return false;
	}
	if (!getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen)) {
		delegate(t->s.cgroup, cred.uid);
		delegate(t->s.memcg, cred.uid);
	}
	if (take_conn(d, t, fd)) {
		daemon__drop_task(d, t);
		return false;
	}
	d->tasks[d->ntasks++] = t;
	describe(d, t);
	daemon_answer(fd, "ok\t%s\t%s\t%s", t->s.cgroup, t->s.memcg,
		      t->s.msock.fd >= 0 ? t->s.msock.path : "");
	/* Answered: its client starts the command meanwhile. */
	session__host_begin(&t->s);
	return true;
}

/*
 * reattach ID: the client of a run's task adopted from the daemon before us is back
 * (its connection went with that daemon). It gets run's answer again, then "e" at
 * once if the task's cgroup emptied meanwhile; then the task goes on as any run's.
 */
static bool reattach_task(struct daemon *d, int fd, char **f, int nf)
{
	struct dtask *t = nf == 2 ? daemon__find_task(d, f[1]) : NULL;

	if (!t || !t->orphan || t->conn >= 0) {
		daemon_answer(fd, "error\tno run's task '%.128s' waits for its client here",
			      f[nf > 1]);
		return false;
	}
	if (take_conn(d, t, fd))
		return false;
	t->orphan = false;
	daemon_answer(fd, "ok\t%s\t%s\t%s", t->s.cgroup, t->s.memcg,
		      t->s.msock.fd >= 0 ? t->s.msock.path : "");
	if (t->s.done && write(fd, "e\n", 2) != 2)
		t->finish = true;
	return true;
}

void daemon__finish_runs(struct loop *l, void *ctx)
{
	struct daemon *d = ctx;
	bool again = true;

	(void)l;
	while (again) {
		again = false;
		for (int i = 0; i < d->ntasks; i++) {
			struct dtask *t = d->tasks[i];

			if (!t->finish)
				continue;
			/* Every CPU switched since the task emptied: its figures are final. */
			collector__sync(d->c);
			daemon__end_task(d, t, t->lost ? TASK_INTERRUPTED : TASK_EXITED, t->conn);
			again = true;
			break;
		}
	}
}

bool daemon__on_request(struct daemon *d, int fd, char *line)
{
	char **f, *p = line;
	int nf = 0, max = 1;
	bool kept = false;

	for (const char *c = line; *c; c++)
		max += *c == '\t';
	f = malloc((size_t)max * sizeof(*f));
	if (!f) {
		daemon_answer(fd, "error\tout of memory");
		return false;
	}
	while (p) {
		f[nf++] = p;
		p = strchr(p, '\t');
		if (p)
			*p++ = '\0';
	}
	if (!strcmp(f[0], "start")) {
		start_task(d, fd, f, nf);
	} else if (!strcmp(f[0], "run")) {
		kept = run_task(d, fd, f, nf);
	} else if (!strcmp(f[0], "reattach")) {
		kept = reattach_task(d, fd, f, nf);
	} else if (!strcmp(f[0], "tasks") && nf == 1) {
		list_tasks(d, fd);
	} else if (!strcmp(f[0], "end") && nf == 2) {
		struct dtask *t = daemon__find_task(d, f[1]);

		if (!t) {
			daemon_answer(fd, "error\tno task '%.128s' is tracked", f[1]);
		} else if (t->argv) {
			daemon_answer(fd,
				      "error\ttask '%.128s' is a run's: it ends with its command",
				      f[1]);
		} else {
			/* Every CPU switched since the request: the task's figures are final. */
			collector__sync(d->c);
			daemon__end_task(d, t, TASK_ENDED, fd);
		}
	} else {
		daemon_answer(fd, "error\tunknown request '%.32s'", f[0]);
	}
	free(f);
	return kept;
}
