/* SPDX-License-Identifier: GPL-2.0 */
/* The ABI shared by the BPF programs and the userspace collector: map values and events. */
#ifndef TASKPROBE_H
#define TASKPROBE_H

/*
 * Bump whenever a struct below changes layout, or the set of maps a daemon hands over
 * or what they hold does (13: the lifecycle's program arrays, each hook's work at index
 * 0); task records name the version they used.
 */
#define TP_ABI_VERSION 13

/*
 * Tasks tracked at once by one collector (slots in the per-task maps): the maps' size
 * as compiled; the loader sets it (config max_tasks) up to TP_MAX_TASKS_LIMIT.
 */
#define TP_MAX_TASKS 1024
#define TP_MAX_TASKS_LIMIT 8192
/* cgroups (task roots plus their descendants) tracked at once. */
#define TP_MAX_CGROUPS 16384
/* log2 buckets: slot i counts values v with 2^(i-1) <= v < 2^i (slot 0 is v == 0). */
#define TP_HIST_SLOTS 64
#define TP_COMM_LEN 16
#define TP_PATH_LEN 256
/* An exec's argv as captured: at most this many bytes and arguments (metrics-language.md). */
#define TP_ARGS_LEN 256
#define TP_ARGS_MAX 16
#define TP_SLOT_NONE 0xffffffffu

/* A log2 histogram of ns: how many, their sum, and slot tp_log2_slot(v) of each. */
struct tp_hist {
	__u64 count;
	__u64 sum;
	__u64 slots[TP_HIST_SLOTS];
};

/* Value of the cgroup-id -> task map: which slot, and which use of that slot. */
struct tp_cgroup_info {
	__u32 slot;
	__u32 gen;
};

/*
 * Per-CPU, per-slot CPU figures: charged at each thread's exit, its last switch-out
 * and by the task iterator (cpu_ns, wait_ns), and per switch-in only when the
 * run-queue histogram is collected (runq_*).
 */
struct tp_cpu_stats {
	__u64 cpu_ns;
	__u64 wait_ns;	     /* sched_info.run_delay: time runnable but waiting for a CPU */
	struct tp_hist runq; /* each wait from wakeup to switch-in */
};

/* Per-slot process figures, shared by all CPUs and updated atomically. */
struct tp_proc_stats {
	__u64 forks;
	__u64 execs;
	__u64 exits;
	__u64 failed_exits;
	__s64 alive;
	__s64 max_alive;
	__u64 lost_events;
	__u64 threads;
	__u64 exec_failures; /* execve calls that returned (libc's execve: ENOENT, EACCES, ...) */
	__u64 left_task;     /* processes moved out of the task's cgroup while alive */
};

/* Per-CPU, per-slot block-layer figures, charged to the task that submitted the I/O. */
struct tp_io_stats {
	__u64 read_ops;
	__u64 write_ops;
	__u64 read_bytes;   /* block layer, completed */
	__u64 write_bytes;  /* block layer, completed */
	struct tp_hist lat; /* each request, from its start to its completion */
	__u64 merged_bios;  /* bios merged into a request that existed: counted at the merge */
};

/*
 * Per-slot I/O accounting of the kernel's own (task->ioac, what /proc/PID/io shows),
 * summed over the task's exited threads; updated atomically at thread exit.
 */
struct tp_ioac_stats {
	__u64 rchar;
	__u64 wchar;
	__u64 read_bytes;
	__u64 write_bytes;
	__u64 cancelled_write_bytes;
};

/* Per-slot memory: resident bytes of the task's address spaces now, and the most. */
struct tp_mem_stats {
	__s64 rss_bytes;
	__s64 peak_rss_bytes;
	__u64 oom_kills;
};

/* Counters that belong to no task: health of the collector itself. */
struct tp_global_stats {
	__u64 lost_events;
	__u64 events;
};

/* Why a TCP connect failed (the index into tp_net_counters.failures). */
enum tp_connect_failure {
	TP_CONN_REFUSED,     /* RST in answer to the SYN */
	TP_CONN_TIMEOUT,     /* SYN retries exhausted */
	TP_CONN_UNREACHABLE, /* ICMP unreachable, no route */
	TP_CONN_OTHER,	     /* any other error, or abandoned before established */
	TP_CONN_FAILURE_KINDS,
};

/* TCP figures of a task or of one of its endpoints (remote address and port). */
struct tp_net_counters {
	__u64 attempts; /* SYNs sent: connects started */
	__u64 connects; /* established */
	__u64 failures[TP_CONN_FAILURE_KINDS];
	__u64 resets_received; /* on connections past the SYN */
	__u64 resets_sent;
	__u64 retransmits;
	__u64 tx_bytes;	   /* payload acked by the peer */
	__u64 rx_bytes;	   /* payload received */
	__u64 http_resets; /* reset while an HTTP request waited for its response */
};

/* Per-slot network figures, shared by all CPUs and updated atomically. */
struct tp_net_stats {
	struct tp_net_counters tcp;
	__u64 dns_lookups;
	__u64 dns_failures;
	__u64 dns_queries;	    /* DNS queries on the wire (UDP port 53), any resolver */
	__u64 dns_query_failures;   /* answers with an error code (NXDOMAIN, SERVFAIL, ...) */
	__u64 endpoints_dropped;    /* endpoint table full: counted in the totals only */
	struct tp_hist connect_lat; /* SYN to established */
};

/* Key of the endpoint table: a task's use of one remote address and port. */
struct tp_endpoint_key {
	__u32 slot;
	__u32 gen;
	__u16 family; /* AF_INET or AF_INET6 */
	__u16 port;   /* host order */
	__u32 pad;
	__u8 addr[16]; /* IPv4 in the first 4 bytes */
};

enum tp_event_type {
	TP_EV_FORK = 1, /* no longer sent (ABI 7): exec and exit events carry the parent */
	TP_EV_EXEC = 2,
	TP_EV_EXIT = 3, /* a thread's last switch-out, after its exit (ABI 10) */
	TP_EV_DNS = 4,
	TP_EV_HTTP = 5,
	TP_EV_FINAL = 6, /* no longer sent (ABI 10): the exit event is sent at that moment */
	TP_EV_LEFT = 7,	 /* a process moved out of the task: struct tp_exit_event */
	TP_EV_NOTE = 8,	 /* a notable moment counted only in maps: struct tp_note_event */
};

struct tp_event_hdr {
	__u32 type;
	__u32 slot;
	__u32 gen;
	__u32 pid;
	__u32 tgid;
	__u32 ppid; /* exec and exit: the process's parent (real_parent's tgid); else 0 */
	__u64 ts_ns;
};

#define TP_EXEC_ARGS_TRUNCATED 0x1

struct tp_exec_event {
	struct tp_event_hdr hdr;
	/* se.sum_exec_runtime of the thread at exec: CPU used before it goes to the old program. */
	__u64 runtime_ns;
	__u64 start_ns; /* when the process began (its leader's start_time, CLOCK_MONOTONIC) */
	char comm[TP_COMM_LEN];
	/* Before the path: what every exec writes lies in its first two cache lines. */
	__u32 args_len; /* bytes of args used: NUL-separated argv, argv[0] first */
	__u32 args_flags;
	char filename[TP_PATH_LEN];
	char args[TP_ARGS_LEN];
};

#define TP_EXIT_GROUP_DEAD 0x1

/*
 * TP_EV_EXIT, one per thread, at its last switch-out (sched.bpf.c), when its runtime is
 * final: runtime_ns is its se.sum_exec_runtime then, hdr.ts_ns the time of its exit
 * (sched_process_exit), GROUP_DEAD on the thread whose exit ended its process.
 * TP_EV_LEFT: a process moved out of the task, runtime_ns its runtime then.
 */
struct tp_exit_event {
	struct tp_event_hdr hdr;
	__u64 runtime_ns;
	__u64 start_ns; /* TP_EV_EXIT: when the process began, as in tp_exec_event; else 0 */
	__u32 exit_code;
	__u32 flags;
	char comm[TP_COMM_LEN];
};

/*
 * The per-CPU stages of the lifecycle's events (exec, and exit from the last
 * switch-out): each CPU has TP_STAGE_RECS fixed records in stage_recs, written by the
 * programs on that CPU in the order of head (a compare-and-swap: a program that
 * interrupts another on the same CPU takes the next record) and read by userspace in
 * that order up to the first record not yet committed (seq is its index + 1 once
 * written). Userspace advances tail. A stage that is full sends to the ring buffer
 * instead. No lock and no shared cache line: the ring buffer's reserve and submit
 * cost ~1 us here (docs/PERFORMANCE.md).
 */
struct tp_stage_pos {
	__u64 head; /* records reserved on this CPU, all told (programs) */
	__u64 pad0[7];
	__u64 tail; /* records read (userspace) */
	__u64 pad1[7];
};

struct tp_stage_rec {
	__u64 seq;  /* index + 1 when committed */
	__u32 size; /* bytes of the event */
	__u32 pad;
	union {
		struct tp_event_hdr hdr;
		struct tp_exec_event exec;
		struct tp_exit_event exit;
	} ev;
};

enum tp_note_kind {
	TP_NOTE_CONNECT_FAILED = 1, /* detail: enum tp_conn_failure; ep: where to */
	TP_NOTE_OOM_KILL = 2,	    /* hdr.pid/tgid: the victim */
};

/*
 * Rare moments the record lists with their time (failed connects, OOM kills). A
 * connect's failure is often seen in softirq: hdr.tgid is the process that connected.
 */
struct tp_note_event {
	struct tp_event_hdr hdr;
	__u32 kind;
	__s32 detail;
	struct tp_endpoint_key ep;
	char comm[TP_COMM_LEN];
};

#define TP_DNS_NAME_LEN 128
#define TP_DNS_ADDRS 16

struct tp_addr {
	__u16 family;
	__u16 pad;
	__u8 addr[16];
};

/* One getaddrinfo() call of a task: the name, its result code, the addresses. */
enum tp_dns_source { TP_DNS_GETADDRINFO, TP_DNS_PACKET };

struct tp_dns_event {
	struct tp_event_hdr hdr;
	__s32 ret; /* getaddrinfo's return: 0 or an EAI_* code; a packet's RCODE */
	__u32 naddrs;
	__u32 source; /* enum tp_dns_source */
	__u32 pad;
	char name[TP_DNS_NAME_LEN];
	struct tp_addr addrs[TP_DNS_ADDRS];
};

#define TP_HTTP_HOST_LEN 64
#define TP_HTTP_METHOD_LEN 8

enum tp_http_kind {
	TP_HTTP_RESPONSE = 0, /* a final response, whole (headers and body): its status */
	TP_HTTP_RESET = 1,    /* reset or closed before the response's headers ended */
	TP_HTTP_H2 = 2,	      /* an HTTP/2 connection preface: not decoded */
	/*
	 * headers whole (status), the body not read to its end: cut short by the server
	 * (a reset or close), or, with TP_HTTP_BODY_UNREAD, left by the client
	 */
	TP_HTTP_TRUNCATED = 3,
	/* the client closed before any answer came (it gave up): no failure of the server's */
	TP_HTTP_UNANSWERED = 4,
};

enum tp_http_via { TP_HTTP_PLAIN, TP_HTTP_OPENSSL, TP_HTTP_GNUTLS };

/* The Host header was longer than host[]: host holds its end. */
#define TP_HTTP_HOST_CUT 0x1
/* TP_HTTP_TRUNCATED: the client closed before the body ended; the server cut nothing. */
#define TP_HTTP_BODY_UNREAD 0x2

/*
 * The outcome of count requests (count > 1 only for resets of pipelined requests).
 * Only the method, the Host header (port cut off) and the status are ever read from
 * the traffic, and the lengths that delimit a response: never the path, other
 * headers' values or bodies.
 */
struct tp_http_event {
	struct tp_event_hdr hdr;
	__u16 status;
	__u8 kind;
	__u8 via;
	__u16 count;
	__u8 flags;
	__u8 pad;
	char method[TP_HTTP_METHOD_LEN];
	char host[TP_HTTP_HOST_LEN];
};

/*
 * The HTTP connection table (http_conns): an HTTP connection, a TLS handle in a
 * process or a plaintext socket (by cookie), and where its response stands. BPF's
 * state; userspace reads it at a task's end for the requests still waiting.
 */
struct tp_http_key {
	__u64 owner; /* tgid for TLS handles, 0 for sockets */
	__u64 handle;
};

/* How a TLS connection's socket left ESTABLISHED: its next read that ends says so. */
enum tp_sk_end {
	TP_SK_OPEN = 0,
	TP_SK_FIN = 1,	 /* the server's FIN: the end of its stream */
	TP_SK_RESET = 2, /* a reset: the requests still waiting after the data before it */
};

struct tp_http_conn {
	__u32 slot;
	__u32 gen;
	__u32 pending;	/* requests sent and not yet answered */
	__u32 last_seq; /* TCP sequence of the last plaintext request: retransmits once */
	__u32 rx_next;	/* plaintext: sequence of the next response byte expected, 0 unknown */
	__u16 status;	/* of the response being read */
	__u8 via;
	__u8 h2;
	__u8 state; /* enum rsp_state (bpf/http.bpf.h) */
	__u8 match; /* bytes of the token being matched */
	__u8 hdr;   /* the header being matched: 1 Content-Length, 2 Transfer-Encoding */
	__u8 rflags;
	__u8 host_cut; /* Host was longer than host[]: its end is kept */
	__u8 peer_end; /* TLS: the server ended the stream (a read of 0): it cut what is cut */
	__u8 headers;  /* the response's headers are whole: its status is its answer */
	__u8 sk_end;   /* TLS: how its socket left ESTABLISHED while a request waited (TP_SK_*) */
	__u16 wpos;    /* the window being walked: position and length (rsp_step) */
	__u16 wlen;
	__u32 pad2;
	__u64 left; /* Content-Length being read, then body or chunk bytes still to come */
	__u64 sock; /* TLS: the cookie of the socket under it, once a request was sent; or 0 */
	char method[TP_HTTP_METHOD_LEN];
	char host[TP_HTTP_HOST_LEN];
};

#endif /* TASKPROBE_H */
