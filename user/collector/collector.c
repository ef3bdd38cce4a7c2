// SPDX-License-Identifier: GPL-2.0
/* The collector core: BPF lifecycle, task slots, ring-buffer drain and figure reads. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "base/htab.h"
#include "base/loop.h"
#include "base/util.h"
#include "collector/cgroup.h"
#include "collector/collector.h"
#include "collector/uprobe.h"
#include "model/collect_kinds.h"
#include "model/net_figures.h"
#include "model/notes.h"
#include "model/procs.h"
#include "taskprobe.skel.h"

#define DEFAULT_RINGBUF_BYTES (4u << 20)
#define MAX_PROGRAMS 4096
/* Library copies probed at once (a container brings its own), and scans queued. */
#define MAX_LIBS 64
#define MAX_SCANS 1024

_Static_assert(sizeof(struct tp_cpu_stats) % 8 == 0 && sizeof(struct tp_io_stats) % 8 == 0,
	       "per-CPU figures are __u64 only (sum_percpu)");
_Static_assert(sizeof(struct tp_cgroup_info) == 8, "ABI: tp_cgroup_info");
_Static_assert(sizeof(struct tp_event_hdr) == 32, "ABI: tp_event_hdr");
_Static_assert(sizeof(struct tp_exec_event) ==
		       32 + 16 + TP_COMM_LEN + TP_PATH_LEN + 8 + TP_ARGS_LEN,
	       "ABI: tp_exec_event");
_Static_assert(sizeof(struct tp_exit_event) == 32 + 24 + TP_COMM_LEN, "ABI: tp_exit_event");
_Static_assert(sizeof(struct tp_cpu_stats) == (4 + TP_HIST_SLOTS) * 8, "ABI: tp_cpu_stats");
_Static_assert(sizeof(struct tp_proc_stats) == 10 * 8, "ABI: tp_proc_stats");
_Static_assert(sizeof(struct tp_io_stats) == (7 + TP_HIST_SLOTS) * 8, "ABI: tp_io_stats");
_Static_assert(sizeof(struct tp_ioac_stats) == 5 * 8, "ABI: tp_ioac_stats");
_Static_assert(sizeof(struct tp_mem_stats) == 3 * 8, "ABI: tp_mem_stats");
_Static_assert(sizeof(struct tp_net_counters) == (8 + TP_CONN_FAILURE_KINDS) * 8,
	       "ABI: tp_net_counters");
_Static_assert(sizeof(struct tp_net_stats) ==
		       sizeof(struct tp_net_counters) + (7 + TP_HIST_SLOTS) * 8,
	       "ABI: tp_net_stats");
_Static_assert(sizeof(struct tp_endpoint_key) == 32, "ABI: tp_endpoint_key");
_Static_assert(sizeof(struct tp_addr) == 20, "ABI: tp_addr");
_Static_assert(sizeof(struct tp_dns_event) ==
		       32 + 16 + TP_DNS_NAME_LEN + TP_DNS_ADDRS * sizeof(struct tp_addr),
	       "ABI: tp_dns_event");
_Static_assert(sizeof(struct tp_http_event) == 32 + 8 + TP_HTTP_METHOD_LEN + TP_HTTP_HOST_LEN,
	       "ABI: tp_http_event");
_Static_assert(sizeof(struct tp_http_conn) == 48 + TP_HTTP_METHOD_LEN + TP_HTTP_HOST_LEN,
	       "ABI: tp_http_conn");

/* The largest per-CPU value read through percpu_buf. */
#define PERCPU_VALUE_MAX                                                                           \
	(sizeof(struct tp_cpu_stats) > sizeof(struct tp_io_stats) ? sizeof(struct tp_cpu_stats)    \
								  : sizeof(struct tp_io_stats))

/*
 * Which program a live process runs, how much of its CPU was already attributed, and
 * its span so far (the record's processes).
 */
struct proc_info {
	__u32 prog;  /* index + 1 into slot.progs; 0: not known yet */
	__u32 execd; /* it exec'd in the task */
	__u64 base_runtime;
	__u64 start_ns; /* when it began (its leader's start_time; else when first seen) */
	__u64 cpu_ns;
	__u32 ppid;
	__s32 exit; /* the shell-style status its group exit gave, or -1 */
};

struct slot {
	bool used;
	__u32 gen;
	__u64 cgid;
	struct program_stat *progs;
	size_t nprogs;
	size_t cap;
	struct htab prog_index; /* hash of path -> index + 1 */
	struct htab procs;	/* tgid -> struct proc_info */
	__u64 events;
	struct net_acc net;
	struct notes notes;
	struct procs done;	       /* the processes that ended or left */
	struct bpf_link *skb_links[2]; /* plaintext HTTP: the task cgroup's packets */
	collector_exec_fn exec_fn;     /* the task's own subscriber, or NULL */
	void *exec_ctx;
};

enum lib_kind { LIB_C, LIB_SSL, LIB_GNUTLS, LIB_KINDS };

/* The libraries whose calls are probed, by file name as the dynamic linker maps them. */
static const char *const lib_names[LIB_KINDS] = { "libc.so.6", "libssl.so.3", "libgnutls.so.30" };

struct lib_copy {
	dev_t dev;
	ino_t ino;
	enum lib_kind kind;
};

/* A process whose mappings are looked at for library copies, once due. */
struct lib_scan {
	__u64 due_ns;
	int tgid;
	int left; /* scans still to do */
};

struct collector {
	struct taskprobe_bpf *skel;
	struct ring_buffer *rb;
	int ncpus;
	void *percpu_buf; /* ncpus values of the largest per-CPU map */
	__u32 next_gen;
	__u64 stale_events;
	struct lib_copy libs[MAX_LIBS];
	int nlibs;
	struct bpf_link **links; /* uprobes, one per function (perf events) */
	size_t nlinks;
	int *ufds; /* or uprobe_multi links, one per program and library copy */
	size_t nufds;
	bool uprobe_multi;
	struct lib_scan scans[MAX_SCANS];
	int nscans;
	__u64 lib_attach_errors;
	char pin_dir[PATH_MAX]; /* where the maps and links are pinned, or "" */
	struct slot *slots;	/* max_tasks of them, one per slot of the per-task maps */
	int max_tasks;
	unsigned collect; /* collect.h */
	struct loop_handler ring_h;
	__u64 refreshed_ns;  /* when the task iterator last charged live threads */
	bool adopted;	     /* the maps and links of a collector before us (opts.adopt_dir) */
	bool keep_pins;	     /* freed without unpinning: the next daemon adopts them */
	char adopt_why[256]; /* why they could not be adopted, or "" */
};

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	/* libbpf's own lines are for -v; our errors say what failed in one line. */
	if (!tp_verbose)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

/*
 * Does the kernel stamp queued threads (CONFIG_SCHED_INFO)? /proc/PID/schedstat
 * exists exactly then. Checked this way, not through BTF, to keep start-up short:
 * parsing vmlinux BTF costs ~50 ms here, and libbpf parses it once anyway.
 */
static bool kernel_stamps_queueing(void)
{
	return access("/proc/self/schedstat", R_OK) == 0;
}

static void slot_reset(struct slot *s)
{
	for (int i = 0; i < 2; i++)
		bpf_link__destroy(s->skb_links[i]);
	net_acc__fini(&s->net);
	notes__fini(&s->notes);
	procs__fini(&s->done);
	free(s->progs);
	htab__fini(&s->prog_index);
	htab__fini(&s->procs);
	memset(s, 0, sizeof(*s));
}

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

static __u64 mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ull + (__u64)ts.tv_nsec;
}

/*
 * A new program maps its libraries after the exec event, and may dlopen one much
 * later: its mappings are looked at 50 ms, 300 ms and 2 s after the exec.
 */
static void queue_lib_scan(struct collector *c, int tgid)
{
	if (c->nscans >= MAX_SCANS)
		return;
	c->scans[c->nscans++] = (struct lib_scan){ mono_ns() + 50000000ull, tgid, 3 };
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
	queue_lib_scan(c, (int)e->hdr.tgid);
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

static void on_exit_(struct slot *s, const struct tp_exit_event *e)
{
	struct proc_info *pi = proc_of(s, &e->hdr, e->start_ns);
	__u64 base = 0;
	char comm[TP_COMM_LEN + 1];

	if (pi && e->hdr.pid == e->hdr.tgid)
		base = pi->base_runtime;
	memcpy(comm, e->comm, TP_COMM_LEN);
	comm[TP_COMM_LEN] = '\0';
	if (e->runtime_ns > base)
		add_cpu(s, pi, pi ? pi->prog : 0, comm, e->runtime_ns - base);
	if (pi && e->hdr.pid == e->hdr.tgid)
		pi->base_runtime = e->runtime_ns;
	if (pi && (e->flags & TP_EXIT_GROUP_DEAD))
		pi->exit = shell_status(e->exit_code);
	if ((e->flags & TP_EXIT_GROUP_DEAD) && e->exit_code)
		note_exit(s, e, comm);
}

/* A process moved out of the task: its CPU so far is its program's, and it is forgotten. */
static void on_left(struct slot *s, const struct tp_exit_event *e)
{
	struct proc_info *pi = htab__get(&s->procs, e->hdr.tgid);
	char comm[TP_COMM_LEN + 1];

	memcpy(comm, e->comm, TP_COMM_LEN);
	comm[TP_COMM_LEN] = '\0';
	if (pi && e->runtime_ns > pi->base_runtime)
		add_cpu(s, pi, pi->prog, comm, e->runtime_ns - pi->base_runtime);
	if (pi)
		proc_done(s, e->hdr.tgid, pi, e->hdr.ts_ns, PROC_LEFT, comm);
	htab__del(&s->procs, e->hdr.tgid);
}

/* A thread's last slice, after its exit event; the process is forgotten after its last. */
static void on_final(struct slot *s, const struct tp_exit_event *e)
{
	struct proc_info *pi = htab__get(&s->procs, e->hdr.tgid);
	char comm[TP_COMM_LEN + 1];

	memcpy(comm, e->comm, TP_COMM_LEN);
	comm[TP_COMM_LEN] = '\0';
	add_cpu(s, pi, pi ? pi->prog : 0, comm, e->runtime_ns);
	if (!(e->flags & TP_EXIT_GROUP_DEAD))
		return;
	if (pi)
		proc_done(s, e->hdr.tgid, pi, e->hdr.ts_ns, PROC_EXITED, comm);
	htab__del(&s->procs, e->hdr.tgid);
}

static int handle_event(void *ctx, void *data, size_t size)
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
	case TP_EV_FINAL:
		if (size >= sizeof(struct tp_exit_event))
			on_final(s, data);
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

/* A slot of a task tracked now; none without a collector (no BPF: c is NULL). */
static bool slot_ok(const struct collector *c, int slot)
{
	return c && slot >= 0 && slot < c->max_tasks && c->slots[slot].used;
}

const struct notes *collector__notes(const struct collector *c, int slot)
{
	static const struct notes none;

	if (!slot_ok(c, slot))
		return &none;
	return &c->slots[slot].notes;
}

int collector__on_exec(struct collector *c, int slot, collector_exec_fn fn, void *ctx)
{
	if (!slot_ok(c, slot))
		return -EINVAL;
	c->slots[slot].exec_fn = fn;
	c->slots[slot].exec_ctx = ctx;
	return 0;
}

struct probe {
	enum lib_kind lib;
	const char *func;
	bool ret;
};

static const struct probe probes[] = {
	{ LIB_C, "getaddrinfo", false },
	{ LIB_C, "getaddrinfo", true },
	{ LIB_C, "execve", true },
	{ LIB_SSL, "SSL_write", false },
	{ LIB_SSL, "SSL_write_ex", false },
	{ LIB_SSL, "SSL_read", false },
	{ LIB_SSL, "SSL_read", true },
	{ LIB_SSL, "SSL_read_ex", false },
	{ LIB_SSL, "SSL_read_ex", true },
	{ LIB_SSL, "SSL_free", false },
	{ LIB_GNUTLS, "gnutls_record_send", false },
	{ LIB_GNUTLS, "gnutls_record_recv", false },
	{ LIB_GNUTLS, "gnutls_record_recv", true },
	{ LIB_GNUTLS, "gnutls_deinit", false },
};

static struct bpf_program *probe_prog(struct collector *c, const struct probe *p)
{
	struct taskprobe_bpf *k = c->skel;

	if (p->ret && !strcmp(p->func, "execve"))
		return k->progs.tp_execve_ret;
	if (p->ret)
		return p->lib == LIB_C ? k->progs.tp_getaddrinfo_ret : k->progs.tp_tls_read_ret;
	if (p->lib == LIB_C)
		return k->progs.tp_getaddrinfo;
	if (!strcmp(p->func, "SSL_free"))
		return k->progs.tp_ssl_free;
	if (!strcmp(p->func, "gnutls_deinit"))
		return k->progs.tp_gnutls_deinit;
	if (p->lib == LIB_GNUTLS)
		return strstr(p->func, "send") ? k->progs.tp_gnutls_send : k->progs.tp_gnutls_recv;
	if (strstr(p->func, "write"))
		return k->progs.tp_ssl_write;
	return strstr(p->func, "_ex") ? k->progs.tp_ssl_read_ex : k->progs.tp_ssl_read;
}

static bool grow(void **arr, size_t n, size_t size)
{
	void *p = realloc(*arr, (n + 1) * size);

	if (p)
		*arr = p;
	return p != NULL;
}

/* One uprobe_multi link per program: all its functions in this copy at once. */
static void attach_lib_multi(struct collector *c, enum lib_kind lib, const char *path)
{
	const char *names[ARRAY_SIZE(probes)];
	long off[ARRAY_SIZE(probes)];
	bool done[ARRAY_SIZE(probes)] = { false };

	for (size_t i = 0; i < ARRAY_SIZE(probes); i++)
		names[i] = probes[i].lib == lib ? probes[i].func : "";
	if (uprobe_func_offsets(path, names, ARRAY_SIZE(probes), off))
		return;
	for (size_t i = 0; i < ARRAY_SIZE(probes); i++) {
		struct bpf_program *prog = probe_prog(c, &probes[i]);
		unsigned long offs[ARRAY_SIZE(probes)];
		size_t n = 0;
		int fd;

		if (probes[i].lib != lib || done[i] || bpf_program__fd(prog) < 0)
			continue;
		/* This probe and every later one of the same program and direction. */
		for (size_t k = i; k < ARRAY_SIZE(probes); k++) {
			if (probes[k].lib != lib || probes[k].ret != probes[i].ret ||
			    probe_prog(c, &probes[k]) != prog)
				continue;
			done[k] = true;
			if (off[k] < 0) {
				c->lib_attach_errors++;
				tp_verbose_log("no %s in %s", probes[k].func, path);
				continue;
			}
			offs[n++] = (unsigned long)off[k];
		}
		if (!n)
			continue;
		fd = uprobe_multi_attach(prog, path, offs, n, probes[i].ret);
		if (fd < 0) {
			c->lib_attach_errors++;
			tp_verbose_log("cannot probe %s in %s: %s", probes[i].func, path,
				       strerror(-fd));
			continue;
		}
		if (!grow((void **)&c->ufds, c->nufds, sizeof(*c->ufds))) {
			close(fd);
			continue;
		}
		c->ufds[c->nufds++] = fd;
	}
}

/* Probes one copy of a library (a path that opens it); each copy once, by inode. */
static void attach_lib(struct collector *c, enum lib_kind lib, const char *path)
{
	struct stat st;

	if (stat(path, &st) || !S_ISREG(st.st_mode))
		return;
	for (int i = 0; i < c->nlibs; i++)
		if (c->libs[i].dev == st.st_dev && c->libs[i].ino == st.st_ino)
			return;
	if (c->nlibs >= MAX_LIBS) {
		c->lib_attach_errors++;
		return;
	}
	c->libs[c->nlibs++] = (struct lib_copy){ st.st_dev, st.st_ino, lib };
	if (c->uprobe_multi) {
		attach_lib_multi(c, lib, path);
		return;
	}
	for (size_t i = 0; i < ARRAY_SIZE(probes); i++) {
		LIBBPF_OPTS(bpf_uprobe_opts, uo, .func_name = probes[i].func,
			    .retprobe = probes[i].ret);
		struct bpf_link *l;

		if (probes[i].lib != lib || bpf_program__fd(probe_prog(c, &probes[i])) < 0)
			continue;
		l = bpf_program__attach_uprobe_opts(probe_prog(c, &probes[i]), -1, path, 0, &uo);
		if (!l) {
			c->lib_attach_errors++;
			tp_verbose_log("cannot probe %s in %s: %s", probes[i].func, path,
				       strerror(errno));
			continue;
		}
		if (!grow((void **)&c->links, c->nlinks, sizeof(*c->links))) {
			bpf_link__destroy(l);
			continue;
		}
		c->links[c->nlinks++] = l;
	}
}

static int lib_kind_of(const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	for (int k = 0; k < LIB_KINDS; k++)
		if (!strcmp(base, lib_names[k]))
			return k;
	return -1;
}

/* The library copies a process has mapped, reached through its root (containers). */
static void scan_process_libs(struct collector *c, int tgid)
{
	char maps[64], line[PATH_MAX + 128], path[PATH_MAX + 64];
	FILE *f;

	snprintf(maps, sizeof(maps), "/proc/%d/maps", tgid);
	f = fopen(maps, "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char *p = strchr(line, '/');
		int kind;

		if (!p)
			continue;
		p[strcspn(p, "\n")] = '\0';
		kind = lib_kind_of(p);
		if (kind < 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/root%s", tgid, p);
		attach_lib(c, (enum lib_kind)kind, path);
	}
	fclose(f);
}

/* The host's own copies, and the one this process uses, probed at start. */
static void attach_host_libs(struct collector *c)
{
	static const char *const dirs[] = { "/lib/x86_64-linux-gnu",
					    "/usr/lib/x86_64-linux-gnu",
					    "/lib/aarch64-linux-gnu",
					    "/usr/lib/aarch64-linux-gnu",
					    "/lib64",
					    "/usr/lib64",
					    "/lib",
					    "/usr/lib" };
	char path[PATH_MAX];

	scan_process_libs(c, getpid());
	for (int k = 0; k < LIB_KINDS; k++)
		for (size_t d = 0; d < ARRAY_SIZE(dirs); d++) {
			snprintf(path, sizeof(path), "%s/%s", dirs[d], lib_names[k]);
			attach_lib(c, (enum lib_kind)k, path);
		}
}

void collector__tick(struct collector *c, __u64 now)
{
	for (int i = 0; i < c->nscans;) {
		struct lib_scan *s = &c->scans[i];

		if (s->due_ns > now) {
			i++;
			continue;
		}
		scan_process_libs(c, s->tgid);
		if (--s->left > 0) {
			s->due_ns = now + (s->left == 2 ? 250000000ull : 1700000000ull);
			i++;
		} else {
			*s = c->scans[--c->nscans];
		}
	}
}

/* The maps indexed by slot get max_tasks entries: the slot table's size is the config's. */
static int size_slot_maps(struct collector *c)
{
	struct bpf_map *maps[] = { c->skel->maps.cpu_stats, c->skel->maps.proc_stats,
				   c->skel->maps.io_stats,  c->skel->maps.ioac_stats,
				   c->skel->maps.mem_stats, c->skel->maps.phase_peak,
				   c->skel->maps.slot_gen,  c->skel->maps.net_stats };

	for (size_t i = 0; i < ARRAY_SIZE(maps); i++) {
		int err = bpf_map__set_max_entries(maps[i], (__u32)c->max_tasks);

		if (err)
			return err;
	}
	return 0;
}

/* What is not collected is not loaded: its programs are neither verified nor attached. */
static void drop_uncollected(struct collector *c)
{
	struct taskprobe_bpf *k = c->skel;
	struct {
		unsigned bit;
		struct bpf_program *p;
	} progs[] = {
		{ COLLECT_RUNQ, k->progs.tp_sched_wakeup },
		{ COLLECT_RUNQ, k->progs.tp_sched_wakeup_new },
		{ COLLECT_IO, k->progs.tp_block_bio_backmerge },
		{ COLLECT_IO, k->progs.tp_block_bio_frontmerge },
		{ COLLECT_IO, k->progs.tp_block_rq_merge },
		{ COLLECT_IO, k->progs.tp_block_io_start },
		{ COLLECT_IO, k->progs.tp_block_rq_complete },
		{ COLLECT_MEM, k->progs.tp_rss_stat },
		{ COLLECT_MEM, k->progs.tp_mark_victim },
		{ COLLECT_NET, k->progs.tp_inet_sock_set_state },
		{ COLLECT_NET, k->progs.tp_inet_sk_error_report },
		{ COLLECT_NET, k->progs.tp_tcp_receive_reset },
		{ COLLECT_NET, k->progs.tp_tcp_send_reset },
		{ COLLECT_NET, k->progs.tp_tcp_retransmit_skb },
		{ COLLECT_NET, k->progs.tp_getaddrinfo },
		{ COLLECT_NET, k->progs.tp_getaddrinfo_ret },
		/* the packets: DNS answers of any resolver (net), plaintext HTTP (http) */
		{ COLLECT_NET, k->progs.tp_http_egress },
		{ COLLECT_NET, k->progs.tp_http_ingress },
		{ COLLECT_HTTP, k->progs.tp_sock_recv_length },
		{ COLLECT_HTTP, k->progs.tp_ssl_write },
		{ COLLECT_HTTP, k->progs.tp_ssl_read },
		{ COLLECT_HTTP, k->progs.tp_ssl_read_ex },
		{ COLLECT_HTTP, k->progs.tp_tls_read_ret },
		{ COLLECT_HTTP, k->progs.tp_ssl_free },
		{ COLLECT_HTTP, k->progs.tp_gnutls_send },
		{ COLLECT_HTTP, k->progs.tp_gnutls_recv },
		{ COLLECT_HTTP, k->progs.tp_gnutls_deinit },
	};

	for (size_t i = 0; i < ARRAY_SIZE(progs); i++)
		if (!(c->collect & progs[i].bit))
			bpf_program__set_autoload(progs[i].p, false);
}

int collector__capture_args(struct collector *c, int slot, bool on)
{
	if (!slot_ok(c, slot))
		return -EINVAL;
	c->skel->bss->capture_args[slot] = on;
	return 0;
}

unsigned collector__collects(const struct collector *c)
{
	return c ? c->collect : COLLECT_CGROUP_ONLY;
}

/* Opens, configures and loads the skeleton; the uprobe programs for uprobe_multi. */
/* The .bss map: the per-slot switches (capture_args) old and new programs share. */
static bool is_bss(const struct bpf_map *m)
{
	const char *n = bpf_map__name(m);
	size_t len = strlen(n);

	return len >= 4 && !strcmp(n + len - 4, ".bss");
}

/* A map's name in the pin directory: bpffs takes no '.' in a name (".bss" is "bss"). */
static const char *pin_name(const struct bpf_map *m)
{
	return is_bss(m) ? "bss" : bpf_map__name(m);
}

/* Whether the pinned map fd has m's shape: another version's map is never taken. */
static bool map_fits(const struct bpf_map *m, int fd)
{
	struct bpf_map_info info = { 0 };
	__u32 len = sizeof(info);

	return !bpf_obj_get_info_by_fd(fd, &info, &len) && info.type == bpf_map__type(m) &&
	       info.key_size == bpf_map__key_size(m) && info.value_size == bpf_map__value_size(m) &&
	       info.max_entries == bpf_map__max_entries(m) &&
	       info.map_flags == bpf_map__map_flags(m);
}

static int pin_path(char *buf, size_t len, const char *dir, const char *kind, const char *name);

/*
 * The maps a collector before us pinned under dir, used in place of new ones, all or
 * none: the new programs and the old links then count into the same maps.
 */
static int reuse_pins(struct collector *c, const char *dir)
{
	char path[PATH_MAX];
	struct bpf_map *m;

	bpf_object__for_each_map(m, c->skel->obj)
	{
		int fd, err;

		if (bpf_map__is_internal(m) && !is_bss(m))
			continue;
		if (pin_path(path, sizeof(path), dir, "maps", pin_name(m)))
			return -ENAMETOOLONG;
		fd = bpf_obj_get(path);
		if (fd < 0) {
			err = -errno;
			snprintf(c->adopt_why, sizeof(c->adopt_why), "no map %s: %s", path,
				 strerror(errno));
			return err;
		}
		err = map_fits(m, fd) ? bpf_map__reuse_fd(m, fd) : -EPROTO;
		close(fd);
		if (err) {
			snprintf(
				c->adopt_why, sizeof(c->adopt_why),
				"map %s is not this version's (ABI %d) or this config's (max_tasks)",
				bpf_map__name(m), TP_ABI_VERSION);
			return err;
		}
	}
	return 0;
}

/*
 * The links pinned under dir for the programs this collector runs: kept attached (the
 * new programs of those hooks stay loaded, unattached), so that no event is missed or
 * counted twice while the collector changes hands. The others are attached anew.
 */
static void adopt_links(struct collector *c, const char *dir)
{
	const struct bpf_object_skeleton *sk = c->skel->skeleton;
	char path[PATH_MAX];

	for (int i = 0; i < sk->prog_cnt; i++) {
		if (!bpf_program__autoload(*sk->progs[i].prog) ||
		    pin_path(path, sizeof(path), dir, "links", sk->progs[i].name) ||
		    access(path, F_OK))
			continue;
		*sk->progs[i].link = bpf_link__open(path);
	}
}

static int load_skel(struct collector *c, const struct collector_opts *opts, __u32 rb_bytes,
		     const char *adopt)
{
	struct taskprobe_bpf *k;
	int err;

	c->skel = k = taskprobe_bpf__open();
	if (!k)
		return -errno;
	err = bpf_map__set_max_entries(k->maps.events, rb_bytes);
	if (err)
		return err;
	err = size_slot_maps(c);
	if (err)
		return err;
	k->rodata->wakeup_bytes = rb_bytes / 4;
	k->rodata->runq_hist = (c->collect & COLLECT_RUNQ) != 0;
	drop_uncollected(c);
	if (kernel_stamps_queueing()) {
		/* Run-queue latency comes from the kernel's own stamps: no wakeup hooks. */
		k->rodata->use_sched_info = true;
		bpf_program__set_autoload(k->progs.tp_sched_wakeup, false);
		bpf_program__set_autoload(k->progs.tp_sched_wakeup_new, false);
	}
	if (c->uprobe_multi) {
		struct bpf_program *up[] = { k->progs.tp_getaddrinfo,  k->progs.tp_getaddrinfo_ret,
					     k->progs.tp_execve_ret,   k->progs.tp_ssl_write,
					     k->progs.tp_ssl_read,     k->progs.tp_ssl_read_ex,
					     k->progs.tp_tls_read_ret, k->progs.tp_gnutls_send,
					     k->progs.tp_gnutls_recv,  k->progs.tp_ssl_free,
					     k->progs.tp_gnutls_deinit };

		for (size_t i = 0; i < ARRAY_SIZE(up); i++)
			bpf_program__set_expected_attach_type(up[i], 48 /* TRACE_UPROBE_MULTI */);
	}
	if (adopt) {
		err = reuse_pins(c, adopt);
		if (err)
			return err;
	}
	return taskprobe_bpf__load(k);
}

/* The skeleton loaded, with uprobe_multi where the kernel takes it. */
static int load_any(struct collector *c, const struct collector_opts *opts, __u32 rb_bytes,
		    const char *adopt)
{
	int err = load_skel(c, opts, rb_bytes, adopt);

	if (err && c->uprobe_multi && !c->adopt_why[0]) {
		/* A kernel that says 6.6 but lacks them: per-function uprobes instead. */
		tp_verbose_log("uprobe_multi programs do not load (%s): plain uprobes",
			       strerror(-err));
		taskprobe_bpf__destroy(c->skel);
		c->skel = NULL;
		c->uprobe_multi = false;
		err = load_skel(c, opts, rb_bytes, adopt);
	}
	return err;
}

struct collector *collector__open(const struct collector_opts *opts)
{
	__u32 rb_bytes = opts && opts->ringbuf_bytes ? opts->ringbuf_bytes : DEFAULT_RINGBUF_BYTES;
	const char *adopt;
	struct collector *c;
	int err;

	libbpf_set_print(libbpf_print);
	if (access("/sys/kernel/btf/vmlinux", R_OK)) {
		errno = ENOENT;
		return NULL;
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->max_tasks = opts && opts->max_tasks ? opts->max_tasks : TP_MAX_TASKS;
	c->collect = opts && opts->collect ? opts->collect & COLLECT_ALL : COLLECT_DEFAULT;
	if (c->max_tasks < 1 || c->max_tasks > TP_MAX_TASKS_LIMIT) {
		err = -EINVAL;
		goto cleanup;
	}
	c->slots = calloc((size_t)c->max_tasks, sizeof(*c->slots));
	if (!c->slots) {
		err = -ENOMEM;
		goto cleanup;
	}
	c->ncpus = libbpf_num_possible_cpus();
	if (c->ncpus <= 0) {
		err = c->ncpus ? c->ncpus : -EINVAL;
		goto cleanup;
	}
	c->percpu_buf = calloc((size_t)c->ncpus, PERCPU_VALUE_MAX);
	if (!c->percpu_buf) {
		err = -ENOMEM;
		goto cleanup;
	}

	c->uprobe_multi = uprobe_multi_supported();
	adopt = opts && opts->adopt_dir && opts->adopt_dir[0] ? opts->adopt_dir : NULL;
	err = load_any(c, opts, rb_bytes, adopt);
	if (err && adopt) {
		/* Not adoptable (another version, another max_tasks): a collector anew. */
		if (!c->adopt_why[0])
			snprintf(c->adopt_why, sizeof(c->adopt_why), "its maps do not load: %s",
				 strerror(-err));
		taskprobe_bpf__destroy(c->skel);
		c->skel = NULL;
		c->uprobe_multi = uprobe_multi_supported();
		adopt = NULL;
		err = load_any(c, opts, rb_bytes, NULL);
	}
	if (err)
		goto cleanup;
	c->adopted = adopt != NULL;
	if (c->adopted)
		adopt_links(c, adopt);
	/* Slot uses numbered from the clock: never one a collector before us gave out. */
	c->next_gen = (__u32)(tp_realtime_ns() / 1000000000ULL);
	err = taskprobe_bpf__attach(c->skel);
	if (err)
		goto cleanup;
	c->rb = ring_buffer__new(bpf_map__fd(c->skel->maps.events), handle_event, c, NULL);
	if (!c->rb) {
		err = -errno;
		goto cleanup;
	}
	attach_host_libs(c);
	return c;

cleanup:
	collector__free(c);
	errno = err < 0 ? -err : EINVAL;
	return NULL;
}

/* dir/maps/NAME and dir/links/PROGRAM: the pins of this collector's objects. */
static int pin_path(char *buf, size_t len, const char *dir, const char *kind, const char *name)
{
	return (size_t)snprintf(buf, len, "%s/%s/%s", dir, kind, name) < len ? 0 : -ENAMETOOLONG;
}

/*
 * DIR/SUB made, or emptied: what is there was pinned by a collector that died, and a
 * link's programs stay attached until its pin goes (whatever its version named them).
 */
static int make_dir(const char *dir, const char *sub)
{
	char path[PATH_MAX], entry[PATH_MAX + 256];
	struct dirent *e;
	DIR *d;

	snprintf(path, sizeof(path), "%s%s%s", dir, sub ? "/" : "", sub ? sub : "");
	if (mkdir(path, 0700) && errno != EEXIST)
		return -errno;
	if (!sub || !(d = opendir(path)))
		return 0;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.') {
			snprintf(entry, sizeof(entry), "%s/%s", path, e->d_name);
			unlink(entry);
		}
	closedir(d);
	return 0;
}

/* Walks the pinnable objects: fn(c, kind, name, map or link, ctx) for each. */
static int each_pinnable(struct collector *c,
			 int (*fn)(const char *kind, const char *name, struct bpf_map *m,
				   struct bpf_link *l, void *ctx),
			 void *ctx)
{
	const struct bpf_object_skeleton *sk = c->skel->skeleton;
	struct bpf_map *m;
	int err = 0;

	bpf_object__for_each_map(m,
				 c->skel->obj) if ((!bpf_map__is_internal(m) || is_bss(m)) && !err)
		err = fn("maps", pin_name(m), m, NULL, ctx);
	for (int i = 0; i < sk->prog_cnt && !err; i++)
		if (*sk->progs[i].link)
			err = fn("links", sk->progs[i].name, NULL, *sk->progs[i].link, ctx);
	return err;
}

static int pin_one(const char *kind, const char *name, struct bpf_map *m, struct bpf_link *l,
		   void *ctx)
{
	const char *dir = ctx;
	char path[PATH_MAX];
	int err = pin_path(path, sizeof(path), dir, kind, name);

	if (err)
		return err;
	/*
	 * libbpf pins no internal map, and no link it opened from a pin (an adopted one,
	 * whose old pin make_dir removed): those are pinned by their fd.
	 */
	if (m && bpf_map__is_internal(m))
		return bpf_obj_pin(bpf_map__fd(m), path) ? -errno : 0;
	if (l && bpf_link__pin_path(l))
		return bpf_obj_pin(bpf_link__fd(l), path) ? -errno : 0;
	return m ? bpf_map__pin(m, path) : bpf_link__pin(l, path);
}

static int unpin_one(const char *kind, const char *name, struct bpf_map *m, struct bpf_link *l,
		     void *ctx)
{
	char path[PATH_MAX];

	if (m && bpf_map__is_internal(m) && !pin_path(path, sizeof(path), ctx, kind, name))
		unlink(path);
	else if (m)
		bpf_map__unpin(m, NULL);
	else if (bpf_link__pin_path(l))
		bpf_link__unpin(l);
	return 0;
}

int collector__pin(struct collector *c, const char *dir)
{
	int err = make_dir(dir, NULL);

	if (!err)
		err = make_dir(dir, "maps");
	if (!err)
		err = make_dir(dir, "links");
	if (err)
		return err;
	snprintf(c->pin_dir, sizeof(c->pin_dir), "%s", dir);
	err = each_pinnable(c, pin_one, (void *)dir);
	if (err)
		collector__unpin(c);
	return err;
}

void collector__unpin(struct collector *c)
{
	char path[PATH_MAX];

	if (!c->pin_dir[0] || !c->skel)
		return;
	each_pinnable(c, unpin_one, c->pin_dir);
	for (int i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "%s/%s", c->pin_dir, i ? "links" : "maps");
		rmdir(path);
	}
	rmdir(c->pin_dir);
	c->pin_dir[0] = '\0';
}

static int cmp_int(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

/* In a child: closes every fd but the n in keep (sorted here). */
static void close_all_but(int *keep, size_t n)
{
	int lo = 0;

	qsort(keep, n, sizeof(*keep), cmp_int);
	for (size_t i = 0; i < n; i++) {
		if (keep[i] > lo)
			close_range((unsigned)lo, (unsigned)keep[i] - 1, 0);
		lo = keep[i] + 1;
	}
	close_range((unsigned)lo, ~0u, 0);
}

/*
 * Detaching a uprobe waits for the kernel's tracing grace periods, one after another
 * (~80 ms each on this VM, ~0.9 s for all of them). A detached grandchild holds the
 * links until this process has dropped its own references, then lets them go and
 * waits; this process goes on at once. The probes drop every call meanwhile (no
 * cgroup is tracked any more).
 */
static void release_links(struct bpf_link **links, size_t n, int *fds, size_t nfds)
{
	int p[2] = { -1, -1 };
	pid_t pid = n + nfds && !pipe2(p, O_CLOEXEC) ? fork() : -1;

	if (pid == 0) {
		if (fork() == 0) {
			int *keep = calloc(n + nfds + 1, sizeof(*keep));
			char b;

			if (keep) {
				for (size_t i = 0; i < n; i++)
					keep[i] = bpf_link__fd(links[i]);
				for (size_t i = 0; i < nfds; i++)
					keep[n + i] = fds[i];
				keep[n + nfds] = p[0];
				/* Nothing else: not stdio, the database or its lock, pipes. */
				close_all_but(keep, n + nfds + 1);
				/* EOF: the parent's references are gone; ours are the last. */
				while (read(p[0], &b, 1) > 0)
					;
			}
			_exit(0);
		}
		_exit(0);
	}
	if (pid > 0)
		waitpid(pid, NULL, 0);
	for (size_t i = 0; i < n; i++)
		bpf_link__destroy(links[i]);
	for (size_t i = 0; i < nfds; i++)
		close(fds[i]);
	if (p[0] >= 0) {
		close(p[0]);
		close(p[1]);
	}
}

void collector__free(struct collector *c)
{
	if (!c)
		return;
	if (!c->keep_pins)
		collector__unpin(c);
	ring_buffer__free(c->rb);
	for (int i = 0; c->slots && i < c->max_tasks; i++)
		slot_reset(&c->slots[i]);
	free(c->slots);
	release_links(c->links, c->nlinks, c->ufds, c->nufds);
	free(c->links);
	free(c->ufds);
	taskprobe_bpf__destroy(c->skel);
	free(c->percpu_buf);
	free(c);
}

static int zero_slot_maps(struct collector *c, __u32 slot)
{
	struct bpf_map *percpu[] = { c->skel->maps.cpu_stats, c->skel->maps.io_stats };
	struct bpf_map *shared[] = { c->skel->maps.proc_stats, c->skel->maps.ioac_stats,
				     c->skel->maps.mem_stats, c->skel->maps.phase_peak,
				     c->skel->maps.net_stats };
	char zero[sizeof(struct tp_net_stats)] = { 0 };

	_Static_assert(sizeof(struct tp_net_stats) >= sizeof(struct tp_proc_stats) &&
			       sizeof(struct tp_net_stats) >= sizeof(struct tp_ioac_stats) &&
			       sizeof(struct tp_net_stats) >= sizeof(struct tp_mem_stats),
		       "zero buffer too small");
	memset(c->percpu_buf, 0, (size_t)c->ncpus * PERCPU_VALUE_MAX);
	for (size_t i = 0; i < ARRAY_SIZE(percpu); i++)
		if (bpf_map_update_elem(bpf_map__fd(percpu[i]), &slot, c->percpu_buf, 0))
			return -errno;
	for (size_t i = 0; i < ARRAY_SIZE(shared); i++)
		if (bpf_map_update_elem(bpf_map__fd(shared[i]), &slot, zero, 0))
			return -errno;
	return 0;
}

/* Adds path and every cgroup below it; descendants made later come from cgroup_mkdir. */
static int add_cgroup_tree(struct collector *c, const char *path, const struct tp_cgroup_info *ci,
			   int depth)
{
	int fd = bpf_map__fd(c->skel->maps.cgroups);
	char child[PATH_MAX];
	struct dirent *de;
	__u64 id;
	DIR *d;
	int err;

	if (depth > 64)
		return -ELOOP;
	err = cgroup_id(path, &id);
	if (err)
		return err;
	if (bpf_map_update_elem(fd, &id, ci, BPF_ANY))
		return -errno;
	d = opendir(path);
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		if (de->d_type != DT_DIR || de->d_name[0] == '.')
			continue;
		snprintf(child, sizeof(child), "%s/%s", path, de->d_name);
		err = add_cgroup_tree(c, child, ci, depth + 1);
		if (err)
			break;
	}
	closedir(d);
	return err;
}

/* Plaintext HTTP is read from the task cgroup's own packets (and its descendants'). */
static void attach_skb(struct collector *c, struct slot *s, const char *path)
{
	struct bpf_program *progs[2] = { c->skel->progs.tp_http_egress,
					 c->skel->progs.tp_http_ingress };
	int fd;

	if (!(c->collect & COLLECT_NET))
		return;
	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return;
	for (int i = 0; i < 2; i++) {
		s->skb_links[i] = bpf_program__attach_cgroup(progs[i], fd);
		if (!s->skb_links[i])
			tp_verbose_log("cannot attach %s to %s: %s", bpf_program__name(progs[i]),
				       path, strerror(errno));
	}
	close(fd);
}

/*
 * Live threads are charged what they ran and waited when the task iterator runs
 * (tp_iter_charge), and threads of a task without state adopted: once per REFRESH_NS
 * however many tasks are read, at a sync, and when a cgroup with processes in it is
 * tracked. One pass costs ~0.2-0.3 us per thread on the host.
 */
#define REFRESH_NS 20000000ull

static int refresh(struct collector *c)
{
	struct bpf_link *l = c->skel->links.tp_iter_charge;
	char buf[64];
	ssize_t n;
	int fd;

	if (!l)
		return 0;
	fd = bpf_iter_create(bpf_link__fd(l));
	if (fd < 0)
		return -errno;
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		;
	n = n < 0 ? -errno : 0;
	close(fd);
	c->refreshed_ns = mono_ns();
	return (int)n;
}

int collector__track(struct collector *c, const char *path)
{
	struct tp_cgroup_info ci;
	struct tp_proc_stats ps = { 0 };
	struct slot *s = NULL;
	int slot, err, procs;

	for (slot = 0; slot < c->max_tasks; slot++)
		if (!c->slots[slot].used) {
			s = &c->slots[slot];
			break;
		}
	if (!s)
		return -ENOSPC;
	memset(s, 0, sizeof(*s));
	err = htab__init(&s->prog_index, sizeof(__u32));
	if (!err)
		err = htab__init(&s->procs, sizeof(struct proc_info));
	if (!err)
		err = cgroup_id(path, &s->cgid);
	if (!err)
		err = zero_slot_maps(c, (__u32)slot);
	if (err)
		goto fail;
	/* Processes already there are alive; ones forked later are counted by BPF. */
	procs = cgroup_count_procs(path);
	if (procs > 0) {
		ps.alive = ps.max_alive = procs;
		if (bpf_map_update_elem(bpf_map__fd(c->skel->maps.proc_stats), &slot, &ps, 0)) {
			err = -errno;
			goto fail;
		}
	}
	s->used = true;
	s->gen = ++c->next_gen ? c->next_gen : ++c->next_gen; /* 0 means free */
	ci.slot = (__u32)slot;
	ci.gen = s->gen;
	if (bpf_map_update_elem(bpf_map__fd(c->skel->maps.slot_gen), &slot, &s->gen, 0)) {
		err = -errno;
		collector__untrack(c, slot);
		return err;
	}
	err = add_cgroup_tree(c, path, &ci, 0);
	if (err) {
		collector__untrack(c, slot);
		return err;
	}
	attach_skb(c, s, path);
	/* Its threads already there are adopted now, not at the next read. */
	if (procs > 0 && (err = refresh(c)))
		tp_verbose_log("cannot adopt the threads in %s: %s", path, strerror(-err));
	return slot;

fail:
	slot_reset(s);
	return err;
}

int collector__retrack(struct collector *c, int slot, const char *path)
{
	struct slot *s;
	__u32 gen = 0;
	int err;

	if (!c || slot < 0 || slot >= c->max_tasks || c->slots[slot].used)
		return -EINVAL;
	/* Freed by the collector before us (its task ended): nothing to adopt there. */
	if (bpf_map_lookup_elem(bpf_map__fd(c->skel->maps.slot_gen), &slot, &gen) || !gen)
		return -ENOENT;
	s = &c->slots[slot];
	memset(s, 0, sizeof(*s));
	err = htab__init(&s->prog_index, sizeof(__u32));
	if (!err)
		err = htab__init(&s->procs, sizeof(struct proc_info));
	if (err) {
		slot_reset(s);
		return err;
	}
	/* A cgroup removed in the gap: its figures are in the maps all the same. */
	cgroup_id(path, &s->cgid);
	s->used = true;
	s->gen = gen;
	attach_skb(c, s, path);
	return slot;
}

bool collector__adopted(const struct collector *c, const char **why)
{
	if (why)
		*why = c && c->adopt_why[0] ? c->adopt_why : NULL;
	return c && c->adopted;
}

void collector__keep_pins(struct collector *c)
{
	if (c)
		c->keep_pins = true;
}

/* The endpoint rows of one use of a slot, read in one walk of the table. */
struct ep_list {
	struct tp_endpoint_key *keys;
	struct tp_net_counters *vals;
	size_t n;
};

static void ep_list_free(struct ep_list *l)
{
	free(l->keys);
	free(l->vals);
}

static int read_endpoints(struct collector *c, __u32 slot, __u32 gen, struct ep_list *l)
{
	int fd = bpf_map__fd(c->skel->maps.endpoints);
	struct tp_endpoint_key key, next;
	struct tp_net_counters v;
	int err = bpf_map_get_next_key(fd, NULL, &next);

	memset(l, 0, sizeof(*l));
	while (!err) {
		key = next;
		err = bpf_map_get_next_key(fd, &key, &next);
		if (key.slot != slot || key.gen != gen || bpf_map_lookup_elem(fd, &key, &v))
			continue;
		if (!grow((void **)&l->keys, l->n, sizeof(*l->keys)) ||
		    !grow((void **)&l->vals, l->n, sizeof(*l->vals))) {
			ep_list_free(l);
			return -ENOMEM;
		}
		l->keys[l->n] = key;
		l->vals[l->n++] = v;
	}
	return 0;
}

static void delete_endpoints(struct collector *c, __u32 slot, __u32 gen)
{
	struct ep_list l;

	if (read_endpoints(c, slot, gen, &l))
		return;
	for (size_t i = 0; i < l.n; i++)
		bpf_map_delete_elem(bpf_map__fd(c->skel->maps.endpoints), &l.keys[i]);
	ep_list_free(&l);
}

/* Requests still waiting on the task's HTTP connections: one walk of the table. */
static void add_unanswered(struct collector *c, __u32 slot, __u32 gen, struct net_figures *nf)
{
	int fd = bpf_map__fd(c->skel->maps.http_conns);
	struct tp_http_key key, next;
	struct tp_http_conn hc;
	char host[TP_HTTP_HOST_LEN];
	int err = bpf_map_get_next_key(fd, NULL, &next);

	while (!err) {
		key = next;
		err = bpf_map_get_next_key(fd, &key, &next);
		if (bpf_map_lookup_elem(fd, &key, &hc) || hc.slot != slot || hc.gen != gen ||
		    !hc.pending)
			continue;
		memcpy(host, hc.host, sizeof(host));
		host[sizeof(host) - 1] = '\0';
		/* Its headers came: answered, by its status (the client went, unread). */
		if (hc.headers && hc.status) {
			net_figures__add_answered(nf, host, hc.host_cut, hc.status);
			hc.pending--;
		}
		if (hc.pending)
			net_figures__add_unanswered(nf, host, hc.host_cut, hc.pending);
	}
}

int collector__net(struct collector *c, int slot, const struct http_ports *ports,
		   struct net_figures *out)
{
	struct tp_net_stats st;
	struct ep_list l;
	__u32 key = (__u32)slot;
	struct slot *s;
	int err;

	memset(out, 0, sizeof(*out));
	if (!slot_ok(c, slot))
		return -EINVAL;
	s = &c->slots[slot];
	if (bpf_map_lookup_elem(bpf_map__fd(c->skel->maps.net_stats), &key, &st))
		return -errno;
	err = read_endpoints(c, key, s->gen, &l);
	if (err)
		return err;
	err = net_figures__build(out, &st, l.keys, l.vals, l.n, &s->net, ports);
	ep_list_free(&l);
	if (!err)
		add_unanswered(c, key, s->gen, out);
	return err;
}

int collector__untrack(struct collector *c, int slot)
{
	int fd = bpf_map__fd(c->skel->maps.cgroups);
	struct tp_cgroup_info ci;
	__u32 free_gen = 0;
	__u64 key, next;
	int err;

	if (!slot_ok(c, slot))
		return -EINVAL;
	/* Threads still holding this slot (kept leftovers) stop counting at once. */
	bpf_map_update_elem(bpf_map__fd(c->skel->maps.slot_gen), &slot, &free_gen, 0);
	c->skel->bss->capture_args[slot] = 0;
	/* Collect first: deleting while walking would restart the walk. */
	for (;;) {
		bool found = false;

		err = bpf_map_get_next_key(fd, NULL, &next);
		while (!err) {
			key = next;
			if (!bpf_map_lookup_elem(fd, &key, &ci) && ci.slot == (__u32)slot) {
				bpf_map_delete_elem(fd, &key);
				found = true;
				break;
			}
			err = bpf_map_get_next_key(fd, &key, &next);
		}
		if (!found)
			break;
	}
	delete_endpoints(c, (__u32)slot, c->slots[slot].gen);
	slot_reset(&c->slots[slot]);
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
		n = ring_buffer__consume(c->rb);
	if (n == -EINTR)
		return 0;
	return n < 0 ? n : 0;
}

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
	if (refresh(c))
		return -EIO;
	return ring_buffer__consume(c->rb) < 0 ? -EIO : 0;
}

/* Sum a per-CPU map's values, made of __u64 only, into out (size bytes). */
static int sum_percpu(struct collector *c, struct bpf_map *map, __u32 key, void *out, size_t size)
{
	const __u64 *v = c->percpu_buf;
	__u64 *sum = out;
	size_t n = size / sizeof(__u64);
	/* libbpf lays the CPUs' values out 8-byte aligned. */
	size_t stride = (size + 7) / 8;

	if (bpf_map_lookup_elem(bpf_map__fd(map), &key, c->percpu_buf))
		return -errno;
	memset(out, 0, size);
	for (int cpu = 0; cpu < c->ncpus; cpu++)
		for (size_t i = 0; i < n; i++)
			sum[i] += v[(size_t)cpu * stride + i];
	return 0;
}

int collector__read(struct collector *c, int slot, struct task_figures *out)
{
	struct tp_net_stats ns;
	__u32 key = (__u32)slot;
	int fd;

	memset(out, 0, sizeof(*out));
	if (!slot_ok(c, slot))
		return -EINVAL;
	if (mono_ns() - c->refreshed_ns > REFRESH_NS)
		refresh(c);
	if (sum_percpu(c, c->skel->maps.cpu_stats, key, &out->cpu, sizeof(out->cpu)) ||
	    sum_percpu(c, c->skel->maps.io_stats, key, &out->io, sizeof(out->io)))
		return -errno;
	fd = bpf_map__fd(c->skel->maps.proc_stats);
	if (bpf_map_lookup_elem(fd, &key, &out->proc))
		return -errno;
	if (bpf_map_lookup_elem(bpf_map__fd(c->skel->maps.ioac_stats), &key, &out->ioac))
		return -errno;
	if (bpf_map_lookup_elem(bpf_map__fd(c->skel->maps.mem_stats), &key, &out->mem))
		return -errno;
	if (bpf_map_lookup_elem(bpf_map__fd(c->skel->maps.net_stats), &key, &ns))
		return -errno;
	out->net_rx_bytes = ns.tcp.rx_bytes;
	out->net_tx_bytes = ns.tcp.tx_bytes;
	out->events_received = c->slots[slot].events;
	return 0;
}

__s64 collector__take_peak(struct collector *c, int slot)
{
	struct tp_mem_stats ms;
	__u32 key = (__u32)slot;
	__s64 peak = 0, now;
	int fd;

	if (!slot_ok(c, slot))
		return 0;
	fd = bpf_map__fd(c->skel->maps.phase_peak);

	if (bpf_map_lookup_elem(fd, &key, &peak) ||
	    bpf_map_lookup_elem(bpf_map__fd(c->skel->maps.mem_stats), &key, &ms))
		return 0;
	now = ms.rss_bytes > 0 ? ms.rss_bytes : 0;
	bpf_map_update_elem(fd, &key, &now, 0);
	return peak > now ? peak : now;
}

const struct program_stat *collector__programs(const struct collector *c, int slot, size_t *n)
{
	if (!slot_ok(c, slot)) {
		*n = 0;
		return NULL;
	}
	*n = c->slots[slot].nprogs;
	return c->slots[slot].progs;
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
	if (!slot_ok(c, slot))
		return -EINVAL;
	s = &c->slots[slot];
	for (size_t i = 0; i < s->done.n; i++)
		procs__add(&all, &s->done.v[i]);
	while ((pi = htab__next(&s->procs, &pos, &tgid))) {
		char name[16];
		struct proc_span p;

		snprintf(name, sizeof(name), "%u", (__u32)tgid);
		p = span_of(s, (__u32)tgid, pi, now_ns, PROC_ALIVE, name);
		procs__add(&all, &p);
	}
	all.dropped += s->done.dropped;
	err = procs__rebase(out, &all, start_ns);
	procs__fini(&all);
	return err;
}

int collector__probed_libs(const struct collector *c, const char *name)
{
	int n = 0;

	for (int i = 0; i < c->nlibs; i++)
		n += !strcmp(lib_names[c->libs[i].kind], name);
	return n;
}

void collector__prog_stats(struct collector *c, collector_prog_fn fn, void *ctx)
{
	struct bpf_program *prog;

	if (!c)
		return;

	bpf_object__for_each_program(prog, c->skel->obj)
	{
		struct bpf_prog_info info = { 0 };
		__u32 len = sizeof(info);
		int fd = bpf_program__fd(prog);
		struct collector_prog_stat st;

		if (fd < 0 || bpf_obj_get_info_by_fd(fd, &info, &len))
			continue;
		st.name = bpf_program__name(prog);
		st.run_time_ns = info.run_time_ns;
		st.run_cnt = info.run_cnt;
		st.recursion_misses = info.recursion_misses;
		fn(ctx, &st);
	}
}

static void add_misses(void *ctx, const struct collector_prog_stat *st)
{
	*(__u64 *)ctx += st->recursion_misses;
}

__u64 collector__skipped_runs(struct collector *c)
{
	__u64 total = 0;

	collector__prog_stats(c, add_misses, &total);
	return total;
}

__u64 collector__lost_total(struct collector *c)
{
	struct tp_global_stats *gs = c ? c->percpu_buf : NULL;
	__u32 zero = 0;
	__u64 total = 0;

	if (!c || bpf_map_lookup_elem(bpf_map__fd(c->skel->maps.global_stats), &zero, gs))
		return 0;
	for (int cpu = 0; cpu < c->ncpus; cpu++)
		total += gs[cpu].lost_events;
	return total;
}
