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

/* Where a response stands: its status line, its headers, its body. */
enum rsp_state {
	RS_IDLE,	 /* between responses: "HTTP/" expected */
	RS_VERSION,	 /* past "HTTP/", to the space */
	RS_CODE,	 /* the three digits of the status */
	RS_REASON,	 /* to the end of the status line */
	RS_LINE,	 /* at the start of a header line */
	RS_NAME,	 /* in a header name that may be Content-Length or Transfer-Encoding */
	RS_VALUE,	 /* in the value of one of those */
	RS_SKIP,	 /* in a header line of no interest */
	RS_BODY,	 /* Content-Length bytes still to come (skipped in bulk) */
	RS_CHUNK_SIZE,	 /* a chunk's hex size */
	RS_CHUNK_EXT,	 /* the rest of that line */
	RS_CHUNK_DATA,	 /* a chunk's bytes (bulk) */
	RS_CHUNK_END,	 /* the CRLF after them */
	RS_TRAILER,	 /* at the start of a trailer line, after the last chunk */
	RS_TRAILER_SKIP, /* in a trailer line */
	RS_TO_CLOSE,	 /* a body that lasts until the connection closes (bulk) */
	RS_DEAD,	 /* 101: the connection speaks another protocol now (bulk) */
};

#define RF_CHUNKED 0x1 /* Transfer-Encoding: chunked */
#define RF_LENGTH 0x2  /* a Content-Length was given (in left) */

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 8192);
	__type(key, struct tp_http_key);
	__type(value, struct tp_http_conn);
} http_conns SEC(".maps") __weak;

/* A TLS read in flight on a thread: where the plaintext will land. */
struct tls_read {
	struct tp_http_key conn;
	__u64 buf;
	__u64 nread_ptr; /* SSL_read_ex's size_t *readbytes, else 0 */
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u64);
	__type(value, struct tls_read);
} tls_reads SEC(".maps") __weak;

/*
 * TLS: a request was just written on a connection whose socket is not known yet. The
 * thread's next TCP send (tcp_sendmsg_locked) is that socket's, if it comes within
 * TLS_SEND_NS (a TLS write that is no TCP send leaves it stale).
 */
#define TLS_SEND_NS 100000000ULL

struct tls_send {
	struct tp_http_key conn;
	__u64 ns;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u64);
	__type(value, struct tls_send);
} tls_sends SEC(".maps") __weak;

/*
 * How many threads have a request in tls_sends: none, and a TCP send looks up nothing.
 * One the LRU evicted is never taken off: the gate stays open (a lookup per send).
 */
__u32 tls_sends_n __weak = 0;

static __always_inline void tls_send_forget(__u64 id)
{
	if (!bpf_map_delete_elem(&tls_sends, &id))
		__sync_fetch_and_sub(&tls_sends_n, 1);
}

/*
 * TLS: the connection over a socket, by the socket's cookie. A socket's state change
 * has no thread to find a TLS read by; it finds the connection here, and the read that
 * comes to a reset finds the endpoint to count it on.
 */
struct tls_sock {
	struct tp_http_key conn;
	struct tp_endpoint_key ep; /* slot 0 and gen 0: the socket is no task's */
	__u64 sk;		   /* its struct tcp_sock, read only while its session reads */
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 8192);
	__type(key, __u64);
	__type(value, struct tls_sock);
} tls_socks SEC(".maps") __weak;

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
	char *host;
	__u32 n;
	__u32 at;
	__u32 end;
	__u32 v6;
};

/* bpf_loop step: byte i of the Host value (at, end bytes long), lower case. */
static long host_copy(__u32 i, void *ctx)
{
	struct host_search *hs = ctx;

	if (i >= hs->end || i >= TP_HTTP_HOST_LEN - 1)
		return 1;
	hs->host[i] = lower(hs->b[(hs->at + i) & (HTTP_SCAN - 1)]);
	return 0;
}

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

/* bpf_loop step: does the Host value end at at + i (a port, or the line's end)? */
static long host_end_at(__u32 i, void *ctx)
{
	struct host_search *hs = ctx;
	__u32 p = hs->at + i;
	char c;

	if (p >= hs->n || p >= HTTP_SCAN) {
		hs->end = p;
		return 1;
	}
	c = hs->b[p & (HTTP_SCAN - 1)];
	if (c == '\r' || c == '\n' || c == ' ' || c == '\t' || (c == ':' && !hs->v6)) {
		hs->end = p;
		return 1;
	}
	if (c == ']' && hs->v6) {
		hs->end = p + 1;
		return 1;
	}
	return 0;
}

/*
 * Copies the Host header's value (lower case, port cut off) from the first n bytes.
 * A name longer than host[] keeps its end, where the domain is ("*.example.com"
 * globs still match): host_cut says so.
 */
static __always_inline void parse_host(const char *b, __u32 n, char *host, __u8 *cut)
{
	struct host_search hs = { .b = b, .n = n };
	__u32 at, len;

	*cut = 0;
	bpf_loop(HTTP_SCAN - 6, host_at, &hs, 0);
	at = hs.at;
	if (!at)
		return;
	for (int k = 0; k < 8 && at < n && b[at & (HTTP_SCAN - 1)] == ' '; k++)
		at++;
	hs.at = at;
	hs.end = n < HTTP_SCAN ? n : HTTP_SCAN;
	hs.v6 = at < n && b[at & (HTTP_SCAN - 1)] == '[';
	bpf_loop(HTTP_SCAN, host_end_at, &hs, 0);
	len = hs.end > at ? hs.end - at : 0;
	if (len > TP_HTTP_HOST_LEN - 1) {
		at = hs.end - (TP_HTTP_HOST_LEN - 1);
		len = TP_HTTP_HOST_LEN - 1;
		*cut = 1;
	}
	hs.at = at;
	hs.end = len;
	hs.host = host;
	bpf_loop(TP_HTTP_HOST_LEN - 1, host_copy, &hs, 0);
}

/* An outcome of count requests on conn (kind, status): one event. */
static __noinline void http_emit(struct tp_http_conn *hc, __u8 kind, __u16 status, __u16 count,
				 __u8 flags)
{
	struct tp_http_event *e;
	__u64 id;

	if (!hc)
		return;
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		tp_count_lost(hc->slot);
		return;
	}
	id = bpf_get_current_pid_tgid();
	e->hdr.type = TP_EV_HTTP;
	e->hdr.slot = hc->slot;
	e->hdr.gen = hc->gen;
	e->hdr.pid = (__u32)id;
	e->hdr.tgid = id >> 32;
	e->hdr.ppid = 0;
	e->hdr.ts_ns = bpf_ktime_get_ns();
	e->status = status;
	e->kind = kind;
	e->via = hc->via;
	e->count = count;
	e->flags = flags | (hc->host_cut ? TP_HTTP_HOST_CUT : 0);
	e->pad = 0;
	__builtin_memcpy(e->method, hc->method, sizeof(e->method));
	__builtin_memcpy(e->host, hc->host, sizeof(e->host));
	/* The reader drains on its timer: no wakeup (an IPI) per request. */
	bpf_ringbuf_submit(e, BPF_RB_NO_WAKEUP);
}

/* A request seen on conn: remember its method and Host until the response. */
static __always_inline void http_request(const struct tp_http_key *key,
					 const struct tp_cgroup_info *ci, const char *b, __u32 n,
					 __u8 via, __u32 seq)
{
	struct tp_http_conn *hc, fresh = {};
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
			http_emit(hc, TP_HTTP_H2, 0, 1, 0);
		}
		return;
	}
	/* After a 101 the connection is not HTTP/1 any more: what looks like one is not. */
	if (hc->state == RS_DEAD)
		return;
	__builtin_memcpy(hc->method, method, sizeof(method));
	__builtin_memset(hc->host, 0, sizeof(hc->host));
	parse_host(b, n, hc->host, &hc->host_cut);
	if (hc->pending < HTTP_PENDING_MAX)
		hc->pending++;
}

/* ---- HTTP: following a response to its end ---- */

/* The response being read is complete: its request is answered. */
static __always_inline void rsp_complete(struct tp_http_conn *hc)
{
	if (hc->pending && tp_slot_current(hc->slot, hc->gen)) {
		hc->pending--;
		http_emit(hc, TP_HTTP_RESPONSE, hc->status, 1, 0);
	}
	hc->state = RS_IDLE;
	hc->match = 0;
	hc->headers = 0;
}

/*
 * The blank line after the headers. 1xx other than 101 are interim: the final
 * response follows. 101 ends HTTP on the connection. HEAD, 204 and 304 have no body;
 * otherwise it is chunked, Content-Length long, or lasts until the close.
 */
static __always_inline void rsp_headers_done(struct tp_http_conn *hc)
{
	__u16 st = hc->status;

	hc->match = 0;
	if (st >= 100 && st < 200 && st != 101) {
		hc->state = RS_IDLE;
		return;
	}
	if (st == 101) {
		rsp_complete(hc);
		hc->state = RS_DEAD;
		return;
	}
	if ((hc->method[0] == 'H' && hc->method[1] == 'E') || st == 204 || st == 304) {
		rsp_complete(hc);
		return;
	}
	/* A final response's headers are whole: whatever befalls its body, this is its answer. */
	hc->headers = 1;
	if (hc->rflags & RF_CHUNKED) {
		hc->left = 0;
		hc->state = RS_CHUNK_SIZE;
	} else if (hc->rflags & RF_LENGTH) {
		if (hc->left)
			hc->state = RS_BODY;
		else
			rsp_complete(hc);
	} else {
		hc->state = RS_TO_CLOSE;
	}
}

static __always_inline int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = lower(c);
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* A chunk-size line read: its data follows, or, for size 0, the trailers. */
static __always_inline void rsp_chunk_line_done(struct tp_http_conn *hc)
{
	hc->state = hc->left ? RS_CHUNK_DATA : RS_TRAILER;
}

/*
 * The tokens a response is matched against, packed little-endian in words: string
 * constants would land in .rodata, which the linked object cannot carry here.
 */
#define TOK_HTTP 0x0000002f50545448ULL	  /* "HTTP/" */
#define TOK_CHUNKED 0x0064656b6e756863ULL /* "chunked" */
#define TOK_CL0 0x2d746e65746e6f63ULL	  /* "content-length:" */
#define TOK_CL1 0x003a6874676e656cULL
#define TOK_TE0 0x726566736e617274ULL /* "transfer-encoding:" */
#define TOK_TE1 0x6e69646f636e652dULL
#define TOK_TE2 0x0000000000003a67ULL
#define CL_LEN 15
#define TE_LEN 18

static __always_inline char tok(__u64 w0, __u64 w1, __u64 w2, __u32 i)
{
	__u64 w = i < 8 ? w0 : i < 16 ? w1 : w2;

	return (char)(w >> ((i & 7) * 8));
}

/* One byte of a response, in any state that reads bytes one by one. */
static __always_inline void rsp_byte(struct tp_http_conn *hc, char c)
{
	char lc = lower(c);
	int d;

	switch (hc->state) {
	case RS_IDLE:
		if (hc->match < 5 && c == tok(TOK_HTTP, 0, 0, hc->match)) {
			if (++hc->match == 5)
				hc->state = RS_VERSION;
		} else {
			hc->match = c == 'H';
		}
		break;
	case RS_VERSION:
		if (c == ' ') {
			hc->state = RS_CODE;
			hc->match = 0;
			hc->status = 0;
		} else if (c == '\n') {
			hc->state = RS_IDLE;
			hc->match = 0;
		}
		break;
	case RS_CODE:
		if (c < '0' || c > '9') {
			hc->state = RS_IDLE;
			hc->match = 0;
			break;
		}
		hc->status = hc->status * 10 + (c - '0');
		if (++hc->match == 3)
			hc->state = RS_REASON;
		break;
	case RS_REASON:
		if (c == '\n') {
			hc->state = RS_LINE;
			hc->rflags = 0;
			hc->left = 0;
		}
		break;
	case RS_LINE:
		if (c == '\r')
			break;
		if (c == '\n') {
			rsp_headers_done(hc);
			break;
		}
		hc->hdr = lc == 'c' ? 1 : lc == 't' ? 2 : 0;
		hc->match = 1;
		hc->state = hc->hdr ? RS_NAME : RS_SKIP;
		break;
	case RS_NAME:
		if (c == '\n') {
			hc->state = RS_LINE;
			break;
		}
		if (lc != (hc->hdr == 1 ? tok(TOK_CL0, TOK_CL1, 0, hc->match)
					: tok(TOK_TE0, TOK_TE1, TOK_TE2, hc->match))) {
			hc->state = RS_SKIP;
			break;
		}
		if (++hc->match == (hc->hdr == 1 ? CL_LEN : TE_LEN)) {
			hc->state = RS_VALUE;
			hc->match = 0;
			if (hc->hdr == 1) {
				hc->rflags |= RF_LENGTH;
				hc->left = 0;
			}
		}
		break;
	case RS_VALUE:
		if (c == '\n') {
			hc->state = RS_LINE;
		} else if (hc->hdr == 1) {
			if (c >= '0' && c <= '9' && hc->left < (1ULL << 58))
				hc->left = hc->left * 10 + (c - '0');
		} else if (hc->match < 7 && lc == tok(TOK_CHUNKED, 0, 0, hc->match)) {
			if (++hc->match == 7)
				hc->rflags |= RF_CHUNKED;
		} else {
			hc->match = lc == 'c';
		}
		break;
	case RS_SKIP:
		if (c == '\n')
			hc->state = RS_LINE;
		break;
	case RS_CHUNK_SIZE:
		d = hex_digit(c);
		if (d >= 0 && hc->left < (1ULL << 58))
			hc->left = hc->left * 16 + d;
		else if (c == ';' || c == ' ' || c == '\t')
			hc->state = RS_CHUNK_EXT;
		else if (c == '\n')
			rsp_chunk_line_done(hc);
		else if (c != '\r')
			hc->state = RS_TO_CLOSE; /* not chunked after all: to the close */
		break;
	case RS_CHUNK_EXT:
		if (c == '\n')
			rsp_chunk_line_done(hc);
		break;
	case RS_CHUNK_END:
		if (c == '\n') {
			hc->left = 0;
			hc->state = RS_CHUNK_SIZE;
		}
		break;
	case RS_TRAILER:
		if (c == '\n')
			rsp_complete(hc);
		else if (c != '\r')
			hc->state = RS_TRAILER_SKIP;
		break;
	case RS_TRAILER_SKIP:
		if (c == '\n')
			hc->state = RS_TRAILER;
		break;
	}
}

static __always_inline bool rsp_bulk(__u8 state)
{
	return state == RS_BODY || state == RS_CHUNK_DATA || state == RS_TO_CLOSE ||
	       state == RS_DEAD;
}

/* Bytes of body taken at once in a bulk state (of avail); the state moves on at its end. */
static __always_inline __u32 rsp_skip(struct tp_http_conn *hc, __u32 avail)
{
	__u32 n;

	if (hc->state == RS_TO_CLOSE || hc->state == RS_DEAD)
		return avail;
	n = hc->left < avail ? (__u32)hc->left : avail;
	hc->left -= n;
	if (!hc->left) {
		if (hc->state == RS_BODY)
			rsp_complete(hc);
		else
			hc->state = RS_CHUNK_END;
	}
	return n;
}

struct rsp_walk {
	struct tp_http_conn *hc;
	struct scan_buf *sb;
	const void *ubuf;      /* a TLS read's buffer, or */
	struct __sk_buff *skb; /* a packet, payload at off */
	__u32 off;
	__u32 n;
	__u32 done;
};

/* bpf_loop step: one byte of the window (hc->wpos of hc->wlen), until a bulk state. */
static long rsp_step(__u32 i, void *ctx)
{
	struct rsp_walk *w = ctx;
	struct tp_http_conn *hc = w->hc;
	__u16 pos = hc->wpos;

	if (pos >= hc->wlen || rsp_bulk(hc->state))
		return 1;
	rsp_byte(hc, w->sb->b[pos & (HTTP_SCAN - 1)]);
	hc->wpos = pos + 1;
	return 0;
}

/*
 * One window: the body in bulk if that is where the response is, else up to
 * HTTP_SCAN bytes byte by byte. Returns 1 when the bytes are used up.
 */
static __always_inline long rsp_window(struct rsp_walk *w, bool from_skb)
{
	struct tp_http_conn *hc = w->hc;
	__u32 len;

	if (w->done >= w->n)
		return 1;
	if (rsp_bulk(hc->state)) {
		w->done += rsp_skip(hc, w->n - w->done);
		if (w->done >= w->n || rsp_bulk(hc->state))
			return 1;
	}
	len = w->n - w->done;
	if (len > HTTP_SCAN)
		len = HTTP_SCAN;
	if (len == 0)
		return 1;
	if (from_skb ? bpf_skb_load_bytes(w->skb, w->off + w->done, w->sb->b, len)
		     : bpf_probe_read_user(w->sb->b, len, w->ubuf + w->done))
		return 1;
	hc->wpos = 0;
	hc->wlen = (__u16)len;
	bpf_loop(HTTP_SCAN, rsp_step, w, 0);
	w->done += hc->wpos;
	return 0;
}

static long rsp_window_skb(__u32 i, void *ctx)
{
	return rsp_window(ctx, true);
}

static long rsp_window_user(__u32 i, void *ctx)
{
	return rsp_window(ctx, false);
}

/* Windows of a response read at most, each HTTP_SCAN bytes: headers up to 4 KiB at once. */
#define HTTP_WINDOWS 8

/*
 * n bytes of what the server sent on conn, from user memory (a TLS read) or from a
 * packet (skb at off, plaintext; a constant, so that each program has one of the
 * two helpers only): headers byte by byte, bodies skipped by length. Both loops are
 * bpf_loop callbacks, so that each is verified once.
 */
static __always_inline void http_stream(struct tp_http_conn *hc, struct scan_buf *sb,
					const bool from_skb, const void *ubuf,
					struct __sk_buff *skb, __u32 off, __u32 n)
{
	struct rsp_walk w = { .hc = hc, .sb = sb, .ubuf = ubuf, .skb = skb, .off = off, .n = n };

	if (!hc->pending && hc->state == RS_IDLE)
		return;
	bpf_loop(HTTP_WINDOWS, from_skb ? rsp_window_skb : rsp_window_user, &w, 0);
}

/*
 * The connection ends (reset, closed, or the TLS session freed) with requests
 * waiting. A response whose headers were whole is answered with its status: its body
 * read to the close is complete, one that ended early is truncated, by the server, or
 * (local: the client closed first) left unread, which cuts nothing. Anything before
 * the end of the headers, and every request behind it, is a reset, or unanswered when
 * the client closed first (it gave up waiting).
 */
static __always_inline void http_conn_end(struct tp_http_conn *hc, bool reset, bool local)
{
	__u8 st = hc->state;

	if (!hc->pending || !tp_slot_current(hc->slot, hc->gen))
		goto out;
	if (st == RS_TO_CLOSE && !reset) {
		rsp_complete(hc);
	} else if (st == RS_TO_CLOSE || (st >= RS_BODY && st <= RS_TRAILER_SKIP)) {
		hc->pending--;
		http_emit(hc, TP_HTTP_TRUNCATED, hc->status, 1, local ? TP_HTTP_BODY_UNREAD : 0);
	}
	if (hc->pending)
		http_emit(hc, local ? TP_HTTP_UNANSWERED : TP_HTTP_RESET, 0, (__u16)hc->pending, 0);
out:
	hc->pending = 0;
	hc->state = RS_IDLE;
	hc->match = 0;
	hc->headers = 0;
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
