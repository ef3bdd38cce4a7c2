// SPDX-License-Identifier: GPL-2.0
/*
 * The host daemon's service: one collector, a session per task that a worker starts
 * and ends over the control socket, the tasks a daemon before it left adopted, the
 * spool drained and the shipper run (session/daemon.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <linux/magic.h>
#include <sys/un.h>

#include "base/json.h"
#include "base/loop.h"
#include "base/util.h"
#include "collector/cgroup.h"
#include "collector/collector.h"
#include "model/collect_kinds.h"
#include "model/config.h"
#include "model/rules.h"
#include "model/task_json.h"
#include "session/control.h"
#include "session/daemon.h"
#include "session/handover.h"
#include "session/hostinfo.h"
#include "session/output.h"
#include "session/session.h"
#include "store/ship.h"
#include "store/spool.h"
#include "store/store.h"

/* What a `run` client may have sent and not yet ended by a newline. */
#define RUN_IN_MAX (OUTPUT_LINE_MAX + 64)

/* Requests being read at once, and how long one may take to arrive whole. */
#define PENDING_MAX 64
#define CONTROL_READ_MS 2000

struct daemon;

/* A control connection whose request line is still coming. */
struct pending {
	struct daemon *d;
	struct loop_handler h;
	char *buf;
	size_t len;
	size_t cap;
	__u64 deadline_ns;
};

/* A task of the daemon's: its session, and the strings its parameters point to. */
struct dtask {
	struct session s;
	struct config cfg; /* the config when it started: a reload is for new tasks */
	struct daemon *d;
	char id[TP_ID_MAX + 1];
	char cgroup[PATH_MAX];
	char kv[TP_LABELS_MAX][TP_LABEL_KEY_MAX + TP_LABEL_VAL_MAX + 2];
	struct label labels[TP_LABELS_MAX];
	char **argv; /* a run's command and rules (owned) */
	int argc;
	char *rules_text;
	/* A `run` client's connection, open for the task's life; -1 for `task start`. */
	int conn;
	struct loop_handler conn_h;
	char *in; /* what it sent, short of a newline */
	size_t in_len;
	int wstatus;
	int exec_err;
	bool exited; /* its main process ended ("x") */
	/* Adopted from the daemon before us: its `run` client may come back until then. */
	bool orphan;
	__u64 reattach_until_ns;
	bool lost;   /* the client went away before "f": the task is interrupted */
	bool finish; /* to be finished after this batch of events */
};

struct daemon {
	struct daemon_opts o;
	struct config cfg;
	const char *config_path;
	char root[PATH_MAX];
	struct collector *c;
	struct store *store;
	struct loop loop;
	int lfd;
	int sfd;
	struct loop_handler listen_h, sig_h;
	struct pending *pending[PENDING_MAX];
	int npending;
	bool listen_paused;   /* pending is full: new clients wait in the listen backlog */
	struct dtask **tasks; /* max_tasks of them: the collector's slot table */
	int ntasks;
	int max_tasks;
	int exit_code;
	char *config_text; /* the config file as last loaded: new tasks' rules */
	char db[PATH_MAX];
	struct shipper ship;	 /* with a sink: the outbox to the fleet, on a thread of its own */
	__u64 spool_next_ns;	 /* the next look into the store's spool */
	char handover[PATH_MAX]; /* DB.tasks: the tasks described for the daemon after us */
	bool keep_tasks;	 /* a stop hands the tasks over instead of ending them */
	bool handing_over;	 /* stopping so: tasks are let go, not ended */
	struct handover_task *left; /* the tasks the daemon before us left */
	int nleft;
	int held;	       /* the store's .daemon.lock, -1 if none */
	char pinned[PATH_MAX]; /* where the maps and links are pinned, "" if nowhere */
};

/* How long an adopted run's task waits for its client to come back. */
#define REATTACH_WAIT_NS (30ULL * 1000 * 1000 * 1000)

/* The spool is looked into this often, and each look is kept short. */
#define SPOOL_DRAIN_EVERY_NS (10ULL * 1000 * 1000 * 1000)
#define SPOOL_DRAIN_MAX 20
#define SPOOL_DRAIN_NS (200ULL * 1000 * 1000)

/* The sink of d->cfg: the outbox on, and its shipper (re)started; off: neither. */
static void apply_sink(struct daemon *d)
{
	shipper__stop(&d->ship);
	store__set_outbox(d->store, d->cfg.sink[0] != '\0');
	if (d->cfg.sink[0])
		ship_name_sink(d->store, &d->cfg);
	if (d->cfg.sink[0] && shipper__start(&d->ship, d->db, &d->cfg))
		tp_err("cannot start the shipper: %s; tasks wait in the outbox", strerror(errno));
}

int daemon__tasks_running(void *ctx)
{
	return ((struct daemon *)ctx)->ntasks;
}

static struct dtask *find_task(struct daemon *d, const char *id);

int daemon__live_record(void *ctx, const char *id, struct jw *w)
{
	struct dtask *t = find_task(ctx, id);
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

static struct dtask *find_task(struct daemon *d, const char *id)
{
	for (int i = 0; i < d->ntasks; i++)
		if (!strcmp(d->tasks[i]->id, id))
			return d->tasks[i];
	return NULL;
}

static void drop_task(struct daemon *d, struct dtask *t)
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

static void answer(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void answer(int fd, const char *fmt, ...)
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
		answer(fd, "error\tout of memory");
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
		answer(fd, "error\tinvalid task id: use " TP_ID_RULE);
		return NULL;
	}
	if (find_task(d, id)) {
		answer(fd, "error\ttask '%s' is tracked already; 'taskprobe task end %s' first", id,
		       id);
		return NULL;
	}
	if (nkv > TP_LABELS_MAX) {
		answer(fd, "error\tat most %d labels", TP_LABELS_MAX);
		return NULL;
	}
	if (d->ntasks >= d->max_tasks) {
		answer(fd,
		       "error\tthe daemon's task table is full: %d tasks are tracked (max_tasks in "
		       "the config, then a restart, makes room for more)",
		       d->max_tasks);
		return NULL;
	}
	t = calloc(1, sizeof(*t));
	if (!t) {
		answer(fd, "error\tout of memory");
		return NULL;
	}
	t->d = d;
	t->conn = -1;
	snprintf(t->id, sizeof(t->id), "%s", id);
	for (int i = 0; i < nkv; i++) {
		struct label *l = &t->labels[i];

		snprintf(t->kv[i], sizeof(t->kv[0]), "%s", kv[i]);
		if (tp_parse_label(t->kv[i], &l->key, &l->val, &why)) {
			answer(fd, "error\tinvalid label '%.64s': %s", kv[i], why);
			free(t);
			return NULL;
		}
		if (hostinfo_is_label(l->key)) {
			answer(fd, "error\tlabel '%.64s' names a host label", l->key);
			free(t);
			return NULL;
		}
	}
	t->cfg = d->cfg;
	return t;
}

/* The session parameters every task of the daemon's shares. */
static void daemon_params(struct daemon *d, struct dtask *t, struct session_params *p, int nlabels)
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
}

/* The session of t with what every task of the daemon's shares; 0, or answered. */
static int open_session(struct daemon *d, struct dtask *t, int fd, struct session_params *p,
			int nlabels)
{
	int err;

	daemon_params(d, t, p, nlabels);
	err = session__init(&t->s, p);
	if (!err)
		err = session__start(&t->s, d->c, d->store, &d->loop);
	if (err) {
		answer(fd, "error\tcannot track task '%s': %s (the daemon's log says more)", t->id,
		       strerror(-err));
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
		answer(fd, "error\tstart needs an id and a cgroup");
		return;
	}
	t = new_task(d, fd, f[1], f + 3, nf - 3);
	if (!t)
		return;
	snprintf(t->cgroup, sizeof(t->cgroup), "%s", f[2]);
	p.cgroup = t->cgroup;
	p.interval_ms = 1000;
	if (open_session(d, t, fd, &p, nf - 3)) {
		drop_task(d, t);
		return;
	}
	d->tasks[d->ntasks++] = t;
	describe(d, t);
	answer(fd, "ok\t%s", t->s.msock.fd >= 0 ? t->s.msock.path : "");
}

/* The record of a task, written to fd and stored; end is how it ended. */
static void end_task(struct daemon *d, struct dtask *t, enum task_end end, int fd)
{
	struct task_record *rec = session__finish(&t->s);
	struct timeval tv = { .tv_sec = 2 };
	FILE *f;

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
		answer(fd, "ok");
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
	drop_task(d, t);
}

/* A run's task is over (main process ended, cgroup empty): its client drains, then "f". */
static void on_run_done(void *ctx, struct session *s)
{
	struct dtask *t = ctx;

	(void)s;
	if (t->orphan)
		return; /* its client may still come back for its record */
	if (t->conn < 0 || write(t->conn, "e\n", 2) != 2)
		t->finish = true;
}

/* A run's client is gone for good: its task ends as interrupted, once its cgroup is empty. */
static void run_is_lost(struct dtask *t)
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
		run_is_lost(t);
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
		answer(fd, "error\tcannot watch the connection: %s", strerror(errno));
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
		answer(fd, "error\tmalformed run request");
		return false;
	}
	t = new_task(d, fd, f[1], f + 8 + argc, nf - 8 - (int)argc);
	if (!t)
		return false;
	t->argv = calloc(argc + 1, sizeof(char *));
	t->in = malloc(RUN_IN_MAX);
	if (!t->argv || !t->in || (f[6][0] && !(t->rules_text = strdup(control_unescape(f[6]))))) {
		answer(fd, "error\tout of memory");
		drop_task(d, t);
		return false;
	}
	for (t->argc = 0; t->argc < (int)argc; t->argc++) {
		t->argv[t->argc] = strdup(control_unescape(f[8 + t->argc]));
		if (!t->argv[t->argc]) {
			answer(fd, "error\tout of memory");
			drop_task(d, t);
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
	p.done_fn = on_run_done;
	p.done_ctx = t;
	if (open_session(d, t, fd, &p, nf - 8 - (int)argc)) {
		drop_task(d, t);
		return false;
	}
	if (!getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen)) {
		delegate(t->s.cgroup, cred.uid);
		delegate(t->s.memcg, cred.uid);
	}
	if (take_conn(d, t, fd)) {
		drop_task(d, t);
		return false;
	}
	d->tasks[d->ntasks++] = t;
	describe(d, t);
	answer(fd, "ok\t%s\t%s\t%s", t->s.cgroup, t->s.memcg,
	       t->s.msock.fd >= 0 ? t->s.msock.path : "");
	return true;
}

/*
 * reattach ID: the client of a run's task adopted from the daemon before us is back
 * (its connection went with that daemon). It gets run's answer again, then "e" at
 * once if the task's cgroup emptied meanwhile; then the task goes on as any run's.
 */
static bool reattach_task(struct daemon *d, int fd, char **f, int nf)
{
	struct dtask *t = nf == 2 ? find_task(d, f[1]) : NULL;

	if (!t || !t->orphan || t->conn >= 0) {
		answer(fd, "error\tno run's task '%.128s' waits for its client here", f[nf > 1]);
		return false;
	}
	if (take_conn(d, t, fd))
		return false;
	t->orphan = false;
	answer(fd, "ok\t%s\t%s\t%s", t->s.cgroup, t->s.memcg,
	       t->s.msock.fd >= 0 ? t->s.msock.path : "");
	if (t->s.done && write(fd, "e\n", 2) != 2)
		t->finish = true;
	return true;
}

/* After each batch of events: the runs' tasks that are over get their records. */
static void finish_runs(struct loop *l, void *ctx)
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
			end_task(d, t, t->lost ? TASK_INTERRUPTED : TASK_EXITED, t->conn);
			again = true;
			break;
		}
	}
}

/* One request; true when its connection became a run's (kept open). */
/* One request line (its newline cut off): answered; true when fd is kept (a run's). */
static bool on_request(struct daemon *d, int fd, char *line)
{
	char **f, *p = line;
	int nf = 0, max = 1;
	bool kept = false;

	for (const char *c = line; *c; c++)
		max += *c == '\t';
	f = malloc((size_t)max * sizeof(*f));
	if (!f) {
		answer(fd, "error\tout of memory");
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
		struct dtask *t = find_task(d, f[1]);

		if (!t) {
			answer(fd, "error\tno task '%.128s' is tracked", f[1]);
		} else if (t->argv) {
			answer(fd, "error\ttask '%.128s' is a run's: it ends with its command",
			       f[1]);
		} else {
			/* Every CPU switched since the request: the task's figures are final. */
			collector__sync(d->c);
			end_task(d, t, TASK_ENDED, fd);
		}
	} else {
		answer(fd, "error\tunknown request '%.32s'", f[0]);
	}
	free(f);
	return kept;
}

static void pending_free(struct daemon *d, struct pending *pc, bool close_fd)
{
	if (pc->h.fd >= 0)
		loop__del(&d->loop, &pc->h);
	for (int i = 0; i < d->npending; i++)
		if (d->pending[i] == pc) {
			d->pending[i] = d->pending[--d->npending];
			break;
		}
	if (close_fd && pc->h.fd >= 0)
		close(pc->h.fd);
	free(pc->buf);
	free(pc);
	/* A slot is free: the clients waiting in the backlog are accepted again. */
	if (d->listen_paused && !loop__add(&d->loop, &d->listen_h))
		d->listen_paused = false;
}

/*
 * What a connection has sent, read without waiting: once its line is whole it is
 * answered, and pc is gone. True while the line is not whole yet.
 */
static bool pending_read(struct daemon *d, struct pending *pc)
{
	int fd = pc->h.fd;
	char *nl = NULL;

	for (;;) {
		ssize_t n;

		if (pc->len + 1 >= pc->cap) {
			size_t cap = pc->cap ? pc->cap * 4 : 4096;
			char *b;

			if (pc->cap >= CONTROL_LINE_MAX) {
				answer(fd, "error\tthe request is not one line of at most %d bytes",
				       CONTROL_LINE_MAX - 1);
				pending_free(d, pc, true);
				return false;
			}
			b = realloc(pc->buf, cap < CONTROL_LINE_MAX ? cap : CONTROL_LINE_MAX);
			if (!b) {
				pending_free(d, pc, true);
				return false;
			}
			pc->buf = b;
			pc->cap = cap < CONTROL_LINE_MAX ? cap : CONTROL_LINE_MAX;
		}
		n = read(fd, pc->buf + pc->len, pc->cap - 1 - pc->len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return true;
		if (n <= 0) {
			pending_free(d, pc, true);
			return false;
		}
		nl = memchr(pc->buf + pc->len, '\n', (size_t)n);
		pc->len += (size_t)n;
		if (nl)
			break;
	}
	*nl = '\0';
	/* The request is whole: answered as before, on a blocking socket. */
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	loop__del(&d->loop, &pc->h);
	pc->h.fd = -1;
	if (!on_request(d, fd, pc->buf))
		close(fd);
	pending_free(d, pc, false);
	return false;
}

/* A connection's request, read as it arrives: the loop never waits for a client. */
static void on_pending(struct loop *l, void *ctx, int fd, uint32_t events)
{
	(void)l, (void)fd, (void)events;
	pending_read(((struct pending *)ctx)->d, ctx);
}

/*
 * Requests not whole within CONTROL_READ_MS are refused: the client is too slow. What
 * it sent is read first: a daemon busy with other tasks past the deadline may not have
 * read yet a line that came in time (the tick can come before its event).
 */
static void expire_pending(struct loop *l, void *ctx, __u64 now)
{
	struct daemon *d = ctx;

	(void)l;
	/* pending_read and pending_free move the last entry into i: one seen already. */
	for (int i = d->npending - 1; i >= 0; i--) {
		struct pending *pc = d->pending[i];

		if (now < pc->deadline_ns || !pending_read(d, pc))
			continue;
		answer(pc->h.fd, "error\tno whole request line within %d ms", CONTROL_READ_MS);
		pending_free(d, pc, true);
	}
}

/*
 * An adopted run's task whose client did not come back in time: it ends as a run's
 * whose client went away (interrupted, once its cgroup is empty).
 */
static void expire_orphans(struct loop *l, void *ctx, __u64 now)
{
	struct daemon *d = ctx;

	(void)l;
	for (int i = 0; i < d->ntasks; i++) {
		struct dtask *t = d->tasks[i];

		if (!t->orphan || now < t->reattach_until_ns)
			continue;
		/*
		 * Its command may still run (its client gone for good, or late): it is never
		 * killed for that. The task ends once its cgroup is empty.
		 */
		if (cgroup_populated(t->s.cgroup) > 0) {
			t->reattach_until_ns = now + 1000000000ULL;
			continue;
		}
		t->orphan = false;
		run_is_lost(t);
	}
}

/* A task the daemon before us described, ours now with its counts: 0, or -errno. */
static int adopt_one(struct daemon *d, struct handover_task *h)
{
	struct session_params p = { 0 };
	struct session_resume r = { h->slot,  h->run,	   h->cgroup,	     h->memcg,
				    h->msock, h->start_ns, h->start_real_ns, h->tid };
	const char *why;
	struct dtask *t;
	int err;

	if (h->abi != TP_ABI_VERSION || find_task(d, h->id) || d->ntasks >= d->max_tasks)
		return -EINVAL;
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->d = d;
	t->conn = -1;
	t->cfg = d->cfg;
	snprintf(t->id, sizeof(t->id), "%s", h->id);
	snprintf(t->cgroup, sizeof(t->cgroup), "%s", h->cgroup);
	for (int i = 0; i < h->nlabels; i++) {
		snprintf(t->kv[i], sizeof(t->kv[0]), "%s", h->kv[i]);
		if (tp_parse_label(t->kv[i], &t->labels[i].key, &t->labels[i].val, &why)) {
			free(t);
			return -EINVAL;
		}
	}
	if (h->run) {
		/* The command and rules move to the task; the client may come back for it. */
		t->argv = h->argv;
		t->argc = h->argc;
		t->rules_text = h->rules;
		h->argv = NULL;
		h->argc = 0;
		h->rules = NULL;
		t->in = malloc(RUN_IN_MAX);
		t->orphan = true;
		t->reattach_until_ns = tp_now_ns() + REATTACH_WAIT_NS;
		p.argv = t->argv;
		p.argc = t->argc;
		p.rules_text = t->rules_text;
		p.done_fn = on_run_done;
		p.done_ctx = t;
	} else {
		p.cgroup = t->cgroup;
	}
	p.interval_ms = h->interval_ms;
	p.grace_s = h->grace_s;
	p.keep_leftovers = h->keep_leftovers;
	p.collect = h->collect;
	daemon_params(d, t, &p, h->nlabels);
	err = h->run && !t->in ? -ENOMEM : session__init(&t->s, &p);
	if (!err)
		err = session__resume(&t->s, d->c, d->store, &d->loop, &r);
	if (err) {
		drop_task(d, t);
		return err;
	}
	d->tasks[d->ntasks++] = t;
	return 0;
}

/*
 * A task the daemon before us described that cannot be adopted (another version, a
 * slot it had freed): ended as interrupted with what is left to read, the cgroup's
 * cpu.stat, and the reason.
 */
static void end_unadopted(struct daemon *d, const struct handover_task *h, const char *why)
{
	struct task_record rec = { 0 };
	char kv[TP_LABELS_MAX][TP_LABEL_KEY_MAX + TP_LABEL_VAL_MAX + 2];
	const char *bad;

	snprintf(rec.id, sizeof(rec.id), "%s", h->id);
	rec.argv = h->argv;
	rec.argc = h->argc;
	memcpy(kv, h->kv, sizeof(kv));
	for (int i = 0; i < h->nlabels; i++)
		if (!tp_parse_label(kv[i], &rec.labels[rec.nlabels].key,
				    &rec.labels[rec.nlabels].val, &bad))
			rec.nlabels++;
	if (gethostname(rec.host, sizeof(rec.host) - 1))
		strcpy(rec.host, "unknown");
	snprintf(rec.cgroup, sizeof(rec.cgroup), "%s", h->cgroup);
	rec.start_real_ns = h->start_real_ns;
	rec.wall_ns = rec.main_wall_ns = tp_now_ns() - h->start_ns;
	rec.end = TASK_INTERRUPTED;
	rec.by_daemon = true;
	rec.collect = COLLECT_CGROUP_ONLY;
	rec.have_cpu_stat = !cgroup_read_cpu_stat(h->cgroup, &rec.cpu_stat);
	rec.fig.cpu.cpu_ns = rec.cpu_stat.usage_us * 1000;
	task_record__add_fault(
		&rec,
		"the daemon before died and this one could not take its counts over (%s): "
		"only the cgroup's cpu.stat is here",
		why);
	/* Its row completed, unless the daemon before stored the task already. */
	if (d->store && store__restore(d->store, &rec, NULL, 0, NULL, 0, 0))
		tp_err("warning: task '%s' could not be stored as interrupted", h->id);
	handover__remove(d->handover, h->slot);
}

/*
 * The tasks the daemon before us left (it died, or handed over): adopted when its maps
 * were (adopted), else ended with what is left. Said in one line.
 */
static void adopt_tasks(struct daemon *d, struct handover_task *h, int n, bool adopted,
			const char *why)
{
	int ok = 0;

	if (!why)
		why = "no maps were pinned (pin_dir off, or no bpffs)";
	for (int i = 0; i < n; i++) {
		int err = adopted ? adopt_one(d, &h[i]) : -ENOENT;

		if (!err || err == -EALREADY) {
			/* Adopted; or stored whole by the daemon before, just before it went. */
			ok++;
			if (err)
				handover__remove(d->handover, h[i].slot);
			continue;
		}
		end_unadopted(d, &h[i], adopted ? "its slot was freed or taken" : why);
	}
	if (n && ok == n)
		tp_note("adopted the %d running task%s of the daemon before", n, n == 1 ? "" : "s");
	else if (n)
		tp_err("warning: adopted %d of the %d running tasks of the daemon before; the "
		       "rest are stored as interrupted (%s)",
		       ok, n,
		       adopted ? "their slots"
		       : why   ? why
			       : "its maps were not pinned");
}

/*
 * What the spool holds (tasks the store could not take when they ended) goes into the
 * store once it works again: a few at a time, so that the loop is never held long.
 */
static void drain_spool(struct loop *l, void *ctx, __u64 now)
{
	struct daemon *d = ctx;
	int n;

	(void)l;
	if (now < d->spool_next_ns)
		return;
	d->spool_next_ns = now + SPOOL_DRAIN_EVERY_NS;
	n = spool__drain(d->store, d->db, SPOOL_DRAIN_MAX, SPOOL_DRAIN_NS);
	if (n > 0)
		tp_note("%d spooled task%s stored in %s", n, n == 1 ? "" : "s", d->db);
}

static void on_listen(struct loop *l, void *ctx, int fd, uint32_t events)
{
	struct daemon *d = ctx;
	int c;

	(void)events;
	/*
	 * With every pending slot taken, clients are not refused: they wait in the listen
	 * backlog (then in connect) until a slot frees. Each slot is freed within
	 * CONTROL_READ_MS, so a burst of runs is slowed, never failed.
	 */
	while (d->npending < PENDING_MAX &&
	       (c = accept4(fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK)) >= 0) {
		struct pending *pc = calloc(1, sizeof(*pc));

		if (!pc) {
			answer(c, "error\tthe daemon is out of memory");
			close(c);
			continue;
		}
		pc->d = d;
		pc->h = (struct loop_handler){ c, EPOLLIN, on_pending, pc };
		pc->deadline_ns = tp_now_ns() + CONTROL_READ_MS * 1000000ULL;
		if (loop__add(l, &pc->h)) {
			close(c);
			free(pc);
			continue;
		}
		d->pending[d->npending++] = pc;
	}
	if (d->npending == PENDING_MAX) {
		loop__del(l, &d->listen_h);
		d->listen_paused = true;
	}
}

/*
 * The config and its rules, checked, and the file's text for the tasks' rules (NULL
 * when there is no file): 0, or -EINVAL after the line saying what is wrong.
 */
static int load_config(const char *path, struct config *cfg, char **text)
{
	const char *file = path ? path : TP_DEFAULT_CONFIG;
	struct session probe;
	char *buf;
	ssize_t n;
	int err;

	*text = NULL;
	config__defaults(cfg);
	/* One read for the keys and the rules: a save in between cannot split them. */
	n = tp_slurp(file, "config", path != NULL, &buf);
	if (n < 0)
		return (int)n;
	err = config__parse(cfg, file, buf);
	if (err) {
		free(buf);
		return err;
	}
	err = session__init(&probe,
			    &(struct session_params){ .config_path = path, .config_text = buf });
	session__fini(&probe);
	if (err)
		free(buf);
	else
		*text = buf;
	return err;
}

/*
 * SIGHUP: the config and its rules again, for tasks started from now on; a bad file
 * keeps the one in use (said in the log). What the collector loaded stays (collect,
 * max_tasks); exec rules get arguments per task, whenever they come.
 */
static void reload(struct daemon *d)
{
	struct config cfg;
	char *text;

	if (load_config(d->config_path, &cfg, &text)) {
		tp_err("reload: %s has errors; the config in use is kept",
		       d->config_path ? d->config_path : TP_DEFAULT_CONFIG);
		return;
	}
	if (cfg.collect != collector__collects(d->c))
		tp_err("warning: collect takes effect at a restart of the daemon");
	if (cfg.max_tasks != d->max_tasks)
		tp_err("warning: max_tasks = %d takes effect at a restart of the daemon; %d until "
		       "then",
		       cfg.max_tasks, d->max_tasks);
	bool sink_changed = strcmp(cfg.sink, d->cfg.sink) ||
			    strcmp(cfg.sink_passfile, d->cfg.sink_passfile) ||
			    cfg.sink_retain_days != d->cfg.sink_retain_days;

	d->cfg = cfg;
	free(d->config_text);
	d->config_text = text;
	if (sink_changed)
		apply_sink(d);
	fprintf(stderr, "taskprobe: config reloaded, for new tasks\n");
}

static void on_signalfd(struct loop *l, void *ctx, int fd, uint32_t events)
{
	struct signalfd_siginfo si;

	(void)events;
	while (read(fd, &si, sizeof(si)) == sizeof(si)) {
		if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT)
			loop__stop(l);
		else if (si.ssi_signo == SIGHUP)
			reload(ctx);
	}
}

/*
 * The maps and links pinned for bpftool and for after a crash (TASKPROBE_PIN_DIR, else
 * the config's pin_dir); bpffs mounted at /sys/fs/bpf for the default one if need be.
 * Not fatal: the daemon works without pins. The directory is "" when none.
 */
static const char *pin_dir_of(const struct daemon *d)
{
	const char *env = getenv("TASKPROBE_PIN_DIR");
	const char *want = env && *env ? env : d->cfg.pin_dir;

	return strcmp(want, "off") ? want : NULL;
}

static void pin(struct daemon *d, char *dir, size_t len)
{
	const char *want = pin_dir_of(d) ? pin_dir_of(d) : "off";
	struct statfs fs;
	int err;

	dir[0] = '\0';
	if (!strcmp(want, "off"))
		return;
	if (!strcmp(want, TP_DEFAULT_PIN_DIR) &&
	    (statfs("/sys/fs/bpf", &fs) || fs.f_type != BPF_FS_MAGIC) &&
	    mount("bpf", "/sys/fs/bpf", "bpf", 0, "mode=0700"))
		tp_err("warning: cannot mount bpffs on /sys/fs/bpf: %s", strerror(errno));
	err = collector__pin(d->c, want);
	if (err) {
		tp_err("warning: maps and links not pinned under %s: %s (is it on a bpffs?)", want,
		       strerror(-err));
		return;
	}
	snprintf(dir, len, "%s", want);
}

/* The control socket: 0660, root's and the config's group (db_group). */
static int listen_on(struct daemon *d, const char *path)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	char dir[PATH_MAX], *slash;
	int fd;

	if (strlen(path) >= sizeof(a.sun_path)) {
		tp_err("control socket path too long: %s", path);
		return -ENAMETOOLONG;
	}
	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = '\0';
		if (mkdir(dir, 0755) && errno != EEXIST) {
			tp_err("cannot make %s: %s", dir, strerror(errno));
			return -errno;
		}
	}
	strcpy(a.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	/* A socket left by a daemon that died: nobody answers on it. */
	if (!connect(fd, (struct sockaddr *)&a, sizeof(a))) {
		tp_err("a daemon is running already on %s", path);
		close(fd);
		return -EADDRINUSE;
	}
	unlink(path);
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) || chmod(path, 0660) ||
	    (d->cfg.db_gid != (gid_t)-1 && chown(path, 0, d->cfg.db_gid)) || listen(fd, 64)) {
		int err = -errno;

		tp_err("cannot listen on %s: %s", path, strerror(-err));
		close(fd);
		return err;
	}
	d->lfd = fd;
	return 0;
}

struct daemon *daemon__open(const struct daemon_opts *o)
{
	struct collector_opts copts = { 0 };
	const char *db, *why = NULL;
	struct daemon *d;
	bool adopted;
	sigset_t mask;

	d = calloc(1, sizeof(*d));
	if (!d) {
		tp_err("out of memory");
		return NULL;
	}
	d->o = *o;
	d->lfd = d->sfd = d->held = -1;
	d->loop.ep = d->loop.tick_fd = -1;
	d->config_path = o->config_path;
	d->keep_tasks = o->keep_tasks;
	/* The config and its rules, checked once: a bad line stops the daemon here. */
	if (load_config(d->config_path, &d->cfg, &d->config_text))
		goto fail;
	if (cgroup2_mount(d->root, sizeof(d->root))) {
		tp_err("no cgroup2 hierarchy is mounted; mount one with 'mount -t cgroup2 none "
		       "/sys/fs/cgroup'");
		goto fail;
	}
	d->keep_tasks |= d->cfg.keep_tasks;
	db = o->db						 ? o->db
	     : getenv("TASKPROBE_DB") && *getenv("TASKPROBE_DB") ? getenv("TASKPROBE_DB")
								 : d->cfg.db;
	snprintf(d->db, sizeof(d->db), "%s", db);
	/* One daemon a store: a second one must not take the tasks of a live one. */
	if (!handover__dir(d->db, d->handover, sizeof(d->handover)) &&
	    (d->held = handover__lock(d->handover)) == -EBUSY) {
		tp_err("daemon: a daemon is running already on the store %s (it holds %s); stop "
		       "it first",
		       d->db, d->handover);
		d->held = -1;
		goto fail;
	}
	/* The tasks a daemon before us left, to adopt with its pinned maps and links. */
	if (d->held < 0 || handover__load(d->handover, &d->left, &d->nleft))
		d->handover[0] = '\0';
	/* Another version's programs would go on writing what this one cannot read. */
	for (int i = 0; i < d->nleft && !why; i++)
		if (d->left[i].abi != TP_ABI_VERSION)
			why = "the daemon before was of another version (its ABI)";
	copts.adopt_dir = d->nleft && !why ? pin_dir_of(d) : NULL;
	copts.max_tasks = d->max_tasks = d->cfg.max_tasks;
	copts.collect = d->cfg.collect;
	d->tasks = calloc((size_t)d->max_tasks, sizeof(*d->tasks));
	if (!d->tasks) {
		tp_err("out of memory for %d tasks", d->max_tasks);
		goto fail;
	}
	d->c = collector__open(&copts);
	if (!d->c) {
		tp_err("cannot load the BPF collector: %s", strerror(errno));
		goto fail;
	}
	/* Before the socket answers: a client that finds the daemon finds its pins. */
	pin(d, d->pinned, sizeof(d->pinned));
	d->store = store__open(db, true, d->cfg.db_gid);
	if (d->store)
		apply_sink(d);
	if (!d->store || loop__init(&d->loop, COLLECTOR_DRAIN_MS))
		goto fail;
	adopted = collector__adopted(d->c, why ? NULL : &why);
	adopt_tasks(d, d->left, d->nleft, adopted, why);
	/* Empty task cgroups of runs and daemons that died before removing them. */
	cgroup_sweep(d->root);
	if (listen_on(d, control_path(o->sock)))
		goto fail;
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	sigaddset(&mask, SIGPIPE);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	d->sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	d->listen_h = (struct loop_handler){ d->lfd, EPOLLIN, on_listen, d };
	d->sig_h = (struct loop_handler){ d->sfd, EPOLLIN, on_signalfd, d };
	d->loop.after_fn = finish_runs;
	if (loop__on_tick(&d->loop, expire_pending, d) || loop__on_tick(&d->loop, drain_spool, d) ||
	    loop__on_tick(&d->loop, expire_orphans, d))
		goto fail;
	d->loop.after_ctx = d;
	if (d->sfd < 0 || loop__add(&d->loop, &d->listen_h) || loop__add(&d->loop, &d->sig_h) ||
	    collector__watch(d->c, &d->loop)) {
		tp_err("cannot set up the event loop: %s", strerror(errno));
		goto fail;
	}
	return d;
fail:
	daemon__close(d);
	return NULL;
}

const struct config *daemon__config(const struct daemon *d)
{
	return &d->cfg;
}

struct store *daemon__store(struct daemon *d)
{
	return d->store;
}

struct collector *daemon__collector(struct daemon *d)
{
	return d->c;
}

struct loop *daemon__loop(struct daemon *d)
{
	return &d->loop;
}

const char *daemon__db(const struct daemon *d)
{
	return d->db;
}

int daemon__serve(struct daemon *d, const char *http)
{
	fprintf(stderr, "taskprobe: daemon listening on %s%s%s%s%s\n", control_path(d->o.sock),
		http ? ", HTTP on " : "", http ? http : "",
		d->pinned[0] ? ", BPF pinned under " : "", d->pinned);
	if (loop__run(&d->loop))
		return 1;
	if (d->keep_tasks) {
		/* Handed over: the next daemon adopts the tasks, their maps and links. */
		tp_note("handing %d task%s over to the next daemon (maps and links stay pinned "
			"under %s)",
			d->ntasks, d->ntasks == 1 ? "" : "s", d->pinned[0] ? d->pinned : "nothing");
		d->handing_over = true;
		collector__keep_pins(d->c);
	} else {
		/* Stopped: what the tasks still tracked did so far is kept, said interrupted. */
		collector__sync(d->c);
		while (d->ntasks)
			end_task(d, d->tasks[0], TASK_INTERRUPTED, d->tasks[0]->conn);
	}
	return 0;
}

void daemon__close(struct daemon *d)
{
	if (!d)
		return;
	shipper__stop(&d->ship);
	while (d->npending)
		pending_free(d, d->pending[0], true);
	while (d->ntasks)
		drop_task(d, d->tasks[0]);
	if (d->lfd >= 0) {
		close(d->lfd);
		unlink(control_path(d->o.sock));
	}
	if (d->sfd >= 0)
		close(d->sfd);
	loop__fini(&d->loop);
	store__close(d->store);
	collector__free(d->c);
	handover__free(d->left, d->nleft);
	free(d->left);
	if (d->held >= 0)
		close(d->held);
	free(d->tasks);
	free(d->config_text);
	free(d);
}
