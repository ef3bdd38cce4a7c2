/* SPDX-License-Identifier: GPL-2.0 */
/*
 * HTTP/1.x outcomes, shared by the TLS uprobes (tls.bpf.c) and the plaintext packet
 * programs (net.bpf.c): per-connection state, and parsing of the first bytes of a
 * request (method, Host) and of a response (status). Nothing else is ever read.
 */
#ifndef TP_HTTP_BPF_H
#define TP_HTTP_BPF_H

#include "maps.bpf.h"

/* Bytes of a request or response looked at: the method and Host must be within. */
#define HTTP_SCAN 512
#define HTTP_PENDING_MAX 64

/* An HTTP connection: a TLS handle in a process, or a plaintext socket (by cookie). */
struct http_key {
	__u64 owner; /* tgid for TLS handles, 0 for sockets */
	__u64 handle;
};

struct http_conn {
	__u32 slot;
	__u32 gen;
	__u32 pending;	/* requests sent and not yet answered */
	__u32 last_seq; /* TCP sequence of the last plaintext request: retransmits once */
	__u8 via;
	__u8 h2;
	__u8 pad[6];
	char method[TP_HTTP_METHOD_LEN];
	char host[TP_HTTP_HOST_LEN];
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 8192);
	__type(key, struct http_key);
	__type(value, struct http_conn);
} http_conns SEC(".maps") __weak;

/* A TLS read in flight on a thread: where the plaintext will land. */
struct tls_read {
	struct http_key conn;
	__u64 buf;
	__u64 nread_ptr; /* SSL_read_ex's size_t *readbytes, else 0 */
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u64);
	__type(value, struct tls_read);
} tls_reads SEC(".maps") __weak;

struct scan_buf {
	char b[HTTP_SCAN];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 3); /* enum scan_user */
	__type(key, __u32);
	__type(value, struct scan_buf);
} scan SEC(".maps") __weak;

/* ---- HTTP: parsing the first bytes of a request or a response ---- */

static __always_inline char lower(char c)
{
	return c >= 'A' && c <= 'Z' ? c + 32 : c;
}

#define W(a, b, c, d) ((__u32)(a) | (__u32)(b) << 8 | (__u32)(c) << 16 | (__u32)(d) << 24)

/*
 * The request's method (copied to method), or 0 when b does not start a request.
 * Returns the method's length; -1 for an HTTP/2 connection preface.
 */
static __always_inline int parse_method(const char *b, char *method)
{
	__u32 w0 = *(__u32 *)b, w1 = *(__u32 *)(b + 4);
	int len = 0;

	if (w0 == W('G', 'E', 'T', ' '))
		len = 3;
	else if (w0 == W('P', 'U', 'T', ' '))
		len = 3;
	else if (w0 == W('P', 'O', 'S', 'T') && b[4] == ' ')
		len = 4;
	else if (w0 == W('H', 'E', 'A', 'D') && b[4] == ' ')
		len = 4;
	else if (w0 == W('P', 'A', 'T', 'C') && (w1 & 0xffff) == W('H', ' ', 0, 0))
		len = 5;
	else if (w0 == W('D', 'E', 'L', 'E') && (w1 & 0xffffff) == W('T', 'E', ' ', 0))
		len = 6;
	else if (w0 == W('O', 'P', 'T', 'I') && w1 == W('O', 'N', 'S', ' '))
		len = 7;
	else if (w0 == W('P', 'R', 'I', ' ') && w1 == W('*', ' ', 'H', 'T'))
		return -1;
	if (!len)
		return 0;
	for (int i = 0; i < TP_HTTP_METHOD_LEN - 1; i++)
		method[i] = i < len ? b[i] : 0;
	method[TP_HTTP_METHOD_LEN - 1] = 0;
	return len;
}

struct host_search {
	const char *b;
	__u32 n;
	__u32 at;
};

/* bpf_loop step: does a "\nHost:" header start at i? */
static long host_at(__u32 i, void *ctx)
{
	struct host_search *hs = ctx;
	const char *b = hs->b;

	if (i + 6 > hs->n || i >= HTTP_SCAN - 6)
		return 1;
	if (b[i] != '\n' || lower(b[i + 1]) != 'h' || lower(b[i + 2]) != 'o' ||
	    lower(b[i + 3]) != 's' || lower(b[i + 4]) != 't' || b[i + 5] != ':')
		return 0;
	hs->at = i + 6;
	return 1;
}

/* Copies the Host header's value (lower case, port cut off) from the first n bytes. */
static __always_inline void parse_host(const char *b, __u32 n, char *host)
{
	struct host_search hs = { .b = b, .n = n };
	__u32 at;

	bpf_loop(HTTP_SCAN - 6, host_at, &hs, 0);
	at = hs.at;
	if (!at)
		return;
	for (int k = 0; k < 8 && at < n && b[at & (HTTP_SCAN - 1)] == ' '; k++)
		at++;
	for (int k = 0; k < TP_HTTP_HOST_LEN - 1; k++) {
		char c;

		if (at + k >= n)
			break;
		c = b[(at + k) & (HTTP_SCAN - 1)];
		/* A port ends the name; "[v6]" keeps its colons. */
		if (c == '\r' || c == '\n' || c == ' ' || (c == ':' && host[0] != '['))
			break;
		host[k] = lower(c);
	}
}

/* The status code of a response line "HTTP/1.x NNN", or 0. */
static __always_inline __u16 parse_status(const char *b)
{
	if (*(__u32 *)b != W('H', 'T', 'T', 'P') || b[4] != '/' || b[8] != ' ')
		return 0;
	for (int i = 9; i < 12; i++)
		if (b[i] < '0' || b[i] > '9')
			return 0;
	return (b[9] - '0') * 100 + (b[10] - '0') * 10 + (b[11] - '0');
}

static __always_inline void http_emit(struct http_conn *hc, __u8 kind, __u16 status)
{
	struct tp_http_event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	__u64 id = bpf_get_current_pid_tgid();

	if (!e) {
		tp_count_lost(hc->slot);
		return;
	}
	e->hdr.type = TP_EV_HTTP;
	e->hdr.slot = hc->slot;
	e->hdr.gen = hc->gen;
	e->hdr.pid = (__u32)id;
	e->hdr.tgid = id >> 32;
	e->hdr.pad = 0;
	e->hdr.ts_ns = bpf_ktime_get_ns();
	e->status = status;
	e->kind = kind;
	e->via = hc->via;
	e->pad = 0;
	__builtin_memcpy(e->method, hc->method, sizeof(e->method));
	__builtin_memcpy(e->host, hc->host, sizeof(e->host));
	/* The reader drains on its timer: no wakeup (an IPI) per request. */
	bpf_ringbuf_submit(e, BPF_RB_NO_WAKEUP);
}

/* A request seen on conn: remember its method and Host until the response. */
static __always_inline void http_request(const struct http_key *key,
					 const struct tp_cgroup_info *ci, const char *b, __u32 n,
					 __u8 via, __u32 seq)
{
	struct http_conn *hc, fresh = {};
	char method[TP_HTTP_METHOD_LEN];
	int mlen = parse_method(b, method);

	if (!mlen)
		return;
	hc = bpf_map_lookup_elem(&http_conns, key);
	if (!hc || hc->slot != ci->slot || hc->gen != ci->gen) {
		fresh.slot = ci->slot;
		fresh.gen = ci->gen;
		fresh.via = via;
		fresh.last_seq = seq - 1;
		bpf_map_update_elem(&http_conns, key, &fresh, BPF_ANY);
		hc = bpf_map_lookup_elem(&http_conns, key);
		if (!hc)
			return;
	}
	if (seq && seq == hc->last_seq)
		return; /* a retransmitted request */
	hc->last_seq = seq;
	if (mlen < 0) {
		if (!hc->h2) {
			hc->h2 = 1;
			http_emit(hc, TP_HTTP_H2, 0);
		}
		return;
	}
	__builtin_memcpy(hc->method, method, sizeof(method));
	__builtin_memset(hc->host, 0, sizeof(hc->host));
	parse_host(b, n, hc->host);
	if (hc->pending < HTTP_PENDING_MAX)
		hc->pending++;
}

static __always_inline void http_response(struct http_conn *hc, const char *b)
{
	__u16 status = parse_status(b);

	if (!status || !hc->pending || !tp_slot_current(hc->slot, hc->gen))
		return;
	hc->pending--;
	http_emit(hc, TP_HTTP_RESPONSE, status);
}

/*
 * A scratch buffer per CPU and per context that can interrupt another: uprobes run
 * in process context, egress packets there or in softirq, ingress in softirq.
 */
enum scan_user { SCAN_UPROBE, SCAN_EGRESS, SCAN_INGRESS, SCAN_USERS };

static __always_inline struct scan_buf *scan_buf(__u32 user)
{
	return bpf_map_lookup_elem(&scan, &user);
}

#endif /* TP_HTTP_BPF_H */
