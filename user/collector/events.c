// SPDX-License-Identifier: GPL-2.0
/*
 * The ring buffer drained into each slot's aggregates: the programs a task ran and
 * their CPU, its processes, its notable moments and its DNS and HTTP traffic.
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>
#include <bpf/libbpf.h>

#include "base/htab.h"
#include "base/loop.h"
#include "base/util.h"
#include "collector/collector.h"
#include "collector/collector_int.h"
#include "model/net_figures.h"
#include "model/notes.h"
#include "model/procs.h"

#define MAX_PROGRAMS 4096

/* The index + 1 of path's entry, added when new; the overflow entry past MAX_PROGRAMS. */
static __u32 program_ref(struct slot *s, const char *path)
{
	__u64 key = tp_hash_str(path);
	__u32 *ref;

	for (;; key++) {
		ref = htab__get(&s->prog_index, key);
		if (!ref)
			break;
		if (!strcmp(s->progs[*ref - 1].path, path))
			return *ref;
	}
	if (s->nprogs >= MAX_PROGRAMS)
		return strcmp(path, "(other)") ? program_ref(s, "(other)") : 0;
	if (s->nprogs == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 16;
		struct program_stat *p = realloc(s->progs, cap * sizeof(*p));

		if (!p)
			return 0;
		s->progs = p;
		s->cap = cap;
	}
	ref = htab__put(&s->prog_index, key);
	if (!ref)
		return 0;
	memset(&s->progs[s->nprogs], 0, sizeof(s->progs[0]));
	snprintf(s->progs[s->nprogs].path, TP_PATH_LEN, "%s", path);
	*ref = (__u32)++s->nprogs;
	return *ref;
}

static void add_cpu(struct slot *s, struct proc_info *pi, __u32 prog, const char *comm, __u64 ns)
{
	char name[TP_COMM_LEN + 2];

	if (!ns)
		return;
	if (pi)
		pi->cpu_ns += ns;
	if (!prog) {
		/* A process that never exec'd inside the task: name it by its comm. */
		snprintf(name, sizeof(name), "[%s]", comm);
		prog = program_ref(s, name);
		if (!prog)
			return;
	}
	s->progs[prog - 1].cpu_ns += ns;
}

/*
 * A process is known from its first exec or exit event (there are no fork events):
 * its parent and start come with them. One that never exec'd runs its parent's
 * program (a fork's child inherits the image), as far as that is known.
 */
static struct proc_info *proc_of(struct slot *s, const struct tp_event_hdr *h, __u64 start_ns)
{
	struct proc_info *pi = htab__get(&s->procs, h->tgid), *parent;
	__u32 prog;

	/* An ended process's pid, taken by a new one: the new one starts afresh. */
	if (pi && pi->ended_ns && start_ns && pi->start_ns != start_ns) {
		htab__del(&s->procs, h->tgid);
		pi = NULL;
	}
	if (pi)
		return pi;
	parent = htab__get(&s->procs, h->ppid);
	prog = parent ? parent->prog : 0;
	pi = htab__put(&s->procs, h->tgid);
	if (!pi)
		return NULL;
	pi->prog = prog;
	pi->start_ns = start_ns ? start_ns : h->ts_ns;
	pi->ppid = h->ppid;
	pi->exit = -1;
	return pi;
}

/*
 * A process's span up to end_ns; its command is its program's path, or name (in
 * brackets) when it never exec'd in the task.
 */
static struct proc_span span_of(const struct slot *s, __u32 tgid, const struct proc_info *pi,
				__u64 end_ns, enum proc_end end, const char *name)
{
	struct proc_span p = {
		.start_ns = pi->start_ns,
		.end_ns = end_ns,
		.cpu_ns = pi->cpu_ns,
		.pid = tgid,
		.ppid = pi->ppid,
		.end = end,
		.exit = end == PROC_EXITED ? pi->exit : -1,
	};

	if (pi->prog && pi->prog <= s->nprogs)
		snprintf(p.command, sizeof(p.command), "%s", s->progs[pi->prog - 1].path);
	else
		snprintf(p.command, sizeof(p.command), "[%s]", name);
	return p;
}

/* A process's span ends: kept among the task's longest. */
static void proc_done(struct slot *s, __u32 tgid, const struct proc_info *pi, __u64 end_ns,
		      enum proc_end end, const char *comm)
{
	struct proc_span p = span_of(s, tgid, pi, end_ns, end, comm);

	procs__add(&s->done, &p);
}

static void on_exec(struct collector *c, int slot, struct slot *s, const struct tp_exec_event *e)
{
	struct proc_info *pi = proc_of(s, &e->hdr, e->start_ns);
	char path[TP_PATH_LEN];
	__u32 prog;

	if (!pi)
		return;
	memcpy(path, e->filename, sizeof(path));
	path[sizeof(path) - 1] = '\0';
	prog = program_ref(s, path[0] ? path : "(unknown)");
	if (prog)
		s->progs[prog - 1].execs++;
	/*
	 * Before its first exec a forked child is the new program's process already (its
	 * rusage is): that CPU, the exec itself mostly, is the new program's. After a
	 * second exec, what the first program ran stays its own.
	 */
	if (e->runtime_ns > pi->base_runtime)
		add_cpu(s, pi, pi->execd ? pi->prog : prog, e->comm,
			e->runtime_ns - pi->base_runtime);
	pi->prog = prog;
	pi->execd = 1;
	pi->base_runtime = e->runtime_ns;
	coll__queue_lib_scan(c, (int)e->hdr.tgid);
	if (s->exec_fn)
		s->exec_fn(s->exec_ctx, path, e->args,
			   e->args_len < TP_ARGS_LEN ? e->args_len : TP_ARGS_LEN,
			   e->args_flags & TP_EXEC_ARGS_TRUNCATED);
}

/* The program a process runs, by its file's last component; else its comm. */
static const char *program_of(const struct slot *s, __u32 tgid, const char *comm)
{
	const struct proc_info *pi = htab__get((struct htab *)&s->procs, tgid);
	const char *path;

	if (!pi || !pi->prog || pi->prog > s->nprogs)
		return comm;
	path = s->progs[pi->prog - 1].path;
	return path[0] ? tp_base_name(path) : comm;
}

/* A kernel exit code (a wait status) as the shell says it: the code, or 128 + signal. */
static int shell_status(__u32 exit_code)
{
	return exit_code & 0x7f ? 128 + (int)(exit_code & 0x7f) : (int)((exit_code >> 8) & 0xff);
}

static void note_exit(struct slot *s, const struct tp_exit_event *e, const char *comm)
{
	int sig = (int)(e->exit_code & 0x7f);
	struct note n = { .t_ns = e->hdr.ts_ns, .kind = NOTE_FAILED_EXIT, .pid = e->hdr.tgid };

	n.code = shell_status(e->exit_code);
	if (sig)
		snprintf(n.detail, sizeof(n.detail), "%s killed by signal %d", comm, sig);
	else
		snprintf(n.detail, sizeof(n.detail), "%s exited %d", comm, n.code);
	notes__add(&s->notes, &n);
}

static void note_http(struct slot *s, const struct tp_http_event *e)
{
	struct note n = { .t_ns = e->hdr.ts_ns, .kind = NOTE_HTTP_FAILURE, .pid = e->hdr.tgid };
	char method[TP_HTTP_METHOD_LEN + 1], host[TP_HTTP_HOST_LEN + 1];

	if (e->kind == TP_HTTP_H2 || e->kind == TP_HTTP_UNANSWERED ||
	    (e->kind == TP_HTTP_RESPONSE && e->status < 500 && e->status != 429))
		return;
	memcpy(method, e->method, TP_HTTP_METHOD_LEN);
	method[TP_HTTP_METHOD_LEN] = '\0';
	memcpy(host, e->host, TP_HTTP_HOST_LEN);
	host[TP_HTTP_HOST_LEN] = '\0';
	if (e->kind == TP_HTTP_TRUNCATED && e->status && e->status < 500 && e->status != 429 &&
	    (e->flags & TP_HTTP_BODY_UNREAD))
		return; /* answered, the rest left unread by the client: no failure */
	n.code = e->kind == TP_HTTP_RESET ? 0 : e->status;
	if (e->kind == TP_HTTP_RESPONSE || (e->kind == TP_HTTP_TRUNCATED && e->status >= 500) ||
	    (e->kind == TP_HTTP_TRUNCATED && e->status == 429))
		snprintf(n.detail, sizeof(n.detail), "%s %s: %u", method, host, e->status);
	else if (e->kind == TP_HTTP_TRUNCATED)
		snprintf(n.detail, sizeof(n.detail), "%s %s: %u, body cut short", method, host,
			 e->status);
	else
		snprintf(n.detail, sizeof(n.detail), "%s %s: reset before the response", method,
			 host);
	notes__add(&s->notes, &n);
}

static void on_note(struct slot *s, const struct tp_note_event *e)
{
	struct note n = { .t_ns = e->hdr.ts_ns, .pid = e->hdr.tgid };
	char comm[TP_COMM_LEN + 1], where[80];

	memcpy(comm, e->comm, TP_COMM_LEN);
	comm[TP_COMM_LEN] = '\0';
	if (e->kind == TP_NOTE_OOM_KILL) {
		n.kind = NOTE_OOM_KILL;
		snprintf(n.detail, sizeof(n.detail), "%s OOM-killed",
			 program_of(s, e->hdr.tgid, comm));
	} else if (e->kind == TP_NOTE_CONNECT_FAILED && e->detail >= 0 &&
		   e->detail < TP_CONN_FAILURE_KINDS) {
		n.kind = NOTE_CONNECT_FAILED;
		n.code = e->detail;
		net_fmt_addr(where, sizeof(where), e->ep.family, e->ep.addr, e->ep.port);
		snprintf(n.detail, sizeof(n.detail), "%s: connect to %s %s",
			 program_of(s, e->hdr.tgid, "?"), where, connect_failure_names[e->detail]);
	} else {
		return;
	}
	notes__add(&s->notes, &n);
}

/*
 * A thread's exit, sent at its last switch-out with its whole runtime: its CPU is its
 * program's. The last thread's ends its process: its span is done, and its entry is
 * kept a moment for the other threads' events still to come (sweep_ended).
 */
static void on_exit_(struct slot *s, const struct tp_exit_event *e)
{
	struct proc_info *pi = proc_of(s, &e->hdr, e->start_ns);
	bool leader = e->hdr.pid == e->hdr.tgid;
	__u64 base = 0;
	char comm[TP_COMM_LEN + 1];

	if (pi && leader)
		base = pi->base_runtime;
	memcpy(comm, e->comm, TP_COMM_LEN);
	comm[TP_COMM_LEN] = '\0';
	if (e->runtime_ns > base)
		add_cpu(s, pi, pi ? pi->prog : 0, comm, e->runtime_ns - base);
	if (pi && leader)
		pi->base_runtime = e->runtime_ns;
	if (!(e->flags & TP_EXIT_GROUP_DEAD))
		return;
	if (e->exit_code)
		note_exit(s, e, comm);
	if (!pi || pi->ended_ns)
		return;
	pi->exit = shell_status(e->exit_code);
	proc_done(s, e->hdr.tgid, pi, e->hdr.ts_ns, PROC_EXITED, comm);
	pi->ended_ns = e->hdr.ts_ns ? e->hdr.ts_ns : 1;
}

/*
 * Forgets the processes that ended before cutoff_ns (all of them: ~0ULL), whose other
 * threads' exit events have come.
 */
static void sweep_ended(struct collector *c, __u64 cutoff_ns)
{
	for (int i = 0; i < c->max_tasks; i++) {
		struct slot *s = &c->slots[i];
		struct proc_info *pi;
		size_t pos = 0;
		__u64 tgid;

		if (!s->used)
			continue;
		while ((pi = htab__next(&s->procs, &pos, &tgid)))
			if (pi->ended_ns && pi->ended_ns < cutoff_ns) {
				htab__del(&s->procs, tgid);
				pos--; /* the deletion may have moved a later entry here */
			}
	}
}

/* A process moved out of the task: its CPU so far is its program's, and it is forgotten. */
static void on_left(struct slot *s, const struct tp_exit_event *e)
{
	struct proc_info *pi = htab__get(&s->procs, e->hdr.tgid);
	char comm[TP_COMM_LEN + 1];

	if (pi && pi->ended_ns)
		return;
	memcpy(comm, e->comm, TP_COMM_LEN);
	comm[TP_COMM_LEN] = '\0';
	if (pi && e->runtime_ns > pi->base_runtime)
		add_cpu(s, pi, pi->prog, comm, e->runtime_ns - pi->base_runtime);
	if (pi)
		proc_done(s, e->hdr.tgid, pi, e->hdr.ts_ns, PROC_LEFT, comm);
	htab__del(&s->procs, e->hdr.tgid);
}

int coll__handle_event(void *ctx, void *data, size_t size)
{
	struct collector *c = ctx;
	const struct tp_event_hdr *hdr = data;
	struct slot *s;

	if (size < sizeof(*hdr) || hdr->slot >= (__u32)c->max_tasks)
		return 0;
	s = &c->slots[hdr->slot];
	/* An event of a slot's previous task, still queued when the slot was reused. */
	if (!s->used || s->gen != hdr->gen) {
		c->stale_events++;
		return 0;
	}
	s->events++;
	switch (hdr->type) {
	case TP_EV_EXEC:
		if (size >= sizeof(struct tp_exec_event))
			on_exec(c, (int)hdr->slot, s, data);
		break;
	case TP_EV_EXIT:
		if (size >= sizeof(struct tp_exit_event))
			on_exit_(s, data);
		break;
	case TP_EV_LEFT:
		if (size >= sizeof(struct tp_exit_event))
			on_left(s, data);
		break;
	case TP_EV_DNS:
		if (size >= sizeof(struct tp_dns_event))
			net_acc__dns(&s->net, data);
		break;
	case TP_EV_HTTP:
		if (size >= sizeof(struct tp_http_event)) {
			net_acc__http(&s->net, data);
			note_http(s, data);
		}
		break;
	case TP_EV_NOTE:
		if (size >= sizeof(struct tp_note_event))
			on_note(s, data);
		break;
	}
	return 0;
}

int collector__on_exec(struct collector *c, int slot, collector_exec_fn fn, void *ctx)
{
	if (!coll__slot_ok(c, slot))
		return -EINVAL;
	c->slots[slot].exec_fn = fn;
	c->slots[slot].exec_ctx = ctx;
	return 0;
}

int collector__epoll_fd(const struct collector *c)
{
	return ring_buffer__epoll_fd(c->rb);
}

int collector__poll(struct collector *c, int timeout_ms)
{
	int n;

	if (!c)
		return 0;
	n = timeout_ms ? ring_buffer__poll(c->rb, timeout_ms) : 0;

	/*
	 * Events submitted without a wakeup never make the fd readable, so poll alone
	 * would leave them until the buffer fills: consume reads whatever is there.
	 */
	if (n >= 0)
		n = coll__drain(c);
	if (n == -EINTR)
		return 0;
	return n < 0 ? n : 0;
}

/* How long an ended process is kept for its other threads' exit events. */
#define ENDED_KEEP_NS 1000000000ULL

static void on_ring(struct loop *l, void *ctx, int fd, uint32_t events)
{
	(void)l, (void)fd, (void)events;
	collector__poll(ctx, 0);
}

/* The drain the ring's fd does not promise (COLLECTOR_DRAIN_MS), and what is due. */
static void on_tick(struct loop *l, void *ctx, __u64 now)
{
	(void)l;
	collector__poll(ctx, 0);
	collector__tick(ctx, now);
	/* A thread's last switch-out follows its exit within microseconds: 1 s is ample. */
	if (now > ENDED_KEEP_NS)
		sweep_ended(ctx, now - ENDED_KEEP_NS);
}

int collector__watch(struct collector *c, struct loop *l)
{
	int err;

	c->ring_h = (struct loop_handler){ ring_buffer__epoll_fd(c->rb), EPOLLIN, on_ring, c };
	err = loop__add(l, &c->ring_h);
	return err ? err : loop__on_tick(l, on_tick, c);
}

int collector__sync(struct collector *c)
{
	int ncpu = (int)sysconf(_SC_NPROCESSORS_CONF);
	cpu_set_t old, one;

	if (!c)
		return 0;

	if (!sched_getaffinity(0, sizeof(old), &old)) {
		/* Every CPU, not just ours: the dying thread may run anywhere. */
		for (int cpu = 0; cpu < CPU_SETSIZE && cpu < ncpu; cpu++) {
			CPU_ZERO(&one);
			CPU_SET(cpu, &one);
			/* Returns once we run there, so that CPU has switched since. */
			if (!sched_setaffinity(0, sizeof(one), &one))
				sched_yield();
		}
		sched_setaffinity(0, sizeof(old), &old);
	}
	if (coll__refresh(c))
		return -EIO;
	if (coll__drain(c) < 0)
		return -EIO;
	/* Every CPU switched since: every thread that had exited has sent its event. */
	sweep_ended(c, ~0ULL);
	return 0;
}

int collector__processes(const struct collector *c, int slot, __u64 now_ns, __u64 start_ns,
			 struct procs *out)
{
	struct procs all = { 0 };
	const struct slot *s;
	const struct proc_info *pi;
	size_t pos = 0;
	__u64 tgid;
	int err;

	memset(out, 0, sizeof(*out));
	if (!coll__slot_ok(c, slot))
		return -EINVAL;
	s = &c->slots[slot];
	for (size_t i = 0; i < s->done.n; i++)
		procs__add(&all, &s->done.v[i]);
	while ((pi = htab__next(&s->procs, &pos, &tgid))) {
		char name[16];
		struct proc_span p;

		if (pi->ended_ns)
			continue; /* in done already */
		snprintf(name, sizeof(name), "%u", (__u32)tgid);
		p = span_of(s, (__u32)tgid, pi, now_ns, PROC_ALIVE, name);
		procs__add(&all, &p);
	}
	all.dropped += s->done.dropped;
	err = procs__rebase(out, &all, start_ns);
	procs__fini(&all);
	return err;
}
