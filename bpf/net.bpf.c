// SPDX-License-Identifier: GPL-2.0
/*
 * Network programs: TCP connects, failures, resets, retransmits and bytes per task
 * and per endpoint; DNS from getaddrinfo() (uprobes) and from the task's packets;
 * plaintext HTTP from the task's packets (cgroup_skb); the socket under a TLS
 * connection and how it ended (TLS requests come from tls.bpf.c).
 *
 * A socket is tied to its task when the task connects it (SYN_SENT, process
 * context). Later events, in softirq or timer context, find the task through the
 * socket's storage, never through the current task.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>
#include "maps.bpf.h"
#include "bits.bpf.h"
#include "http.bpf.h"
#include "netcount.bpf.h"

#define AF_INET 2
#define AF_INET6 10
#define IPPROTO_TCP 6
#define IPPROTO_UDP 17
#define ECONNREFUSED 111
#define ECONNRESET 104
#define ETIMEDOUT 110
#define EHOSTUNREACH 113
#define ENETUNREACH 101
#define EHOSTDOWN 112
#define ENETDOWN 100

/* A connected socket of a task: which endpoint, and what was already charged. */
struct tp_sock {
	struct tp_endpoint_key ep;
	__u64 syn_ns;
	__s32 syn_err; /* the error reported while connecting (the app may take it first) */
	__u32 tgid;    /* the process that connected */
	__u64 tx_charged;
	__u64 rx_charged;
};

struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct tp_sock);
} socks SEC(".maps");

/*
 * Every socket on which a task's HTTP request was seen (plaintext in tp_http_egress,
 * TLS when tcp_sendmsg_locked names the socket) is given storage, zeroed when it had
 * none (slot 0 and gen 0: no task's connection). So a socket without storage has no
 * HTTP state, and its state changes look nothing else up: the rest of the host's
 * closes cost one lookup, not the cookie and two (tcpsend.sh). Should storage ever
 * fail to be made, http_unmarked makes every state change look, as before.
 */
__u32 http_unmarked = 0;

static __always_inline void mark_http(void *sk)
{
	if (!bpf_sk_storage_get(&socks, sk, 0, BPF_SK_STORAGE_GET_F_CREATE))
		http_unmarked = 1;
}

struct dns_call {
	__u64 node;
	__u64 res;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u64);
	__type(value, struct dns_call);
} dns_calls SEC(".maps");

/* A socket's storage if it is a connection of a task still tracked, else NULL. */
static __always_inline struct tp_sock *sock_current(struct tp_sock *ts)
{
	return ts && tp_slot_current(ts->ep.slot, ts->ep.gen) ? ts : NULL;
}

static __always_inline struct tp_sock *sock_of(const struct sock *sk)
{
	return sock_current(bpf_sk_storage_get(&socks, (void *)sk, 0, 0));
}

/*
 * Payload bytes sent (retransmits once) and received since last charged. The kernel's
 * bytes_received counts the peer's FIN too, which tcp_fin() marks with SOCK_DONE.
 */
static __always_inline void charge_bytes(const struct sock *sk, struct tp_sock *ts)
{
	struct tcp_sock *tp = (struct tcp_sock *)sk;
	__u64 tx = BPF_CORE_READ(tp, bytes_sent) - BPF_CORE_READ(tp, bytes_retrans);
	__u64 rx = BPF_CORE_READ(tp, bytes_received);

	if (rx && (BPF_CORE_READ(sk, __sk_common.skc_flags) & (1UL << SOCK_DONE)))
		rx--;
	if (tx > ts->tx_charged) {
		NET_ADD(&ts->ep, tx_bytes, tx - ts->tx_charged);
		ts->tx_charged = tx;
	}
	if (rx > ts->rx_charged) {
		NET_ADD(&ts->ep, rx_bytes, rx - ts->rx_charged);
		ts->rx_charged = rx;
	}
}

static __always_inline void connect_start(const struct sock *sk)
{
	struct tp_cgroup_info *ci = tp_cgroup_lookup(bpf_get_current_cgroup_id());
	struct tp_sock *ts;

	if (!ci)
		return;
	ts = bpf_sk_storage_get(&socks, (void *)sk, 0, BPF_SK_STORAGE_GET_F_CREATE);
	if (!ts)
		return;
	__builtin_memset(ts, 0, sizeof(*ts));
	ts->tgid = bpf_get_current_pid_tgid() >> 32;
	ts->ep.slot = ci->slot;
	ts->ep.gen = ci->gen;
	ts->ep.family = sk->__sk_common.skc_family;
	ts->ep.port = bpf_ntohs(sk->__sk_common.skc_dport);
	if (ts->ep.family == AF_INET)
		__builtin_memcpy(ts->ep.addr, &sk->__sk_common.skc_daddr, 4);
	else
		BPF_CORE_READ_INTO(&ts->ep.addr, sk, __sk_common.skc_v6_daddr.in6_u.u6_addr8);
	ts->syn_ns = bpf_ktime_get_ns();
	NET_ADD(&ts->ep, attempts, 1);
}

static __always_inline int failure_kind(int err)
{
	switch (err) {
	case ECONNREFUSED:
		return TP_CONN_REFUSED;
	case ETIMEDOUT:
		return TP_CONN_TIMEOUT;
	case EHOSTUNREACH:
	case ENETUNREACH:
	case EHOSTDOWN:
	case ENETDOWN:
		return TP_CONN_UNREACHABLE;
	default:
		return TP_CONN_OTHER;
	}
}

/* A failed connect, with its time, for the record's list of notable moments. */
static __always_inline void note_connect_failed(const struct tp_sock *ts, int kind)
{
	struct tp_note_event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);

	if (!e) {
		tp_count_lost(ts->ep.slot);
		return;
	}
	e->hdr.type = TP_EV_NOTE;
	e->hdr.slot = ts->ep.slot;
	e->hdr.gen = ts->ep.gen;
	e->hdr.pid = ts->tgid;
	e->hdr.tgid = ts->tgid;
	e->hdr.ppid = 0;
	e->hdr.ts_ns = bpf_ktime_get_ns();
	e->kind = TP_NOTE_CONNECT_FAILED;
	e->detail = kind;
	e->ep = ts->ep;
	__builtin_memset(e->comm, 0, sizeof(e->comm));
	bpf_ringbuf_submit(e, 0);
}

static __always_inline void connect_done(const struct sock *sk, struct tp_sock *ts, int newstate)
{
	__u64 lat = bpf_ktime_get_ns() - ts->syn_ns;
	__u32 slot = ts->ep.slot;
	struct tp_net_stats *ns;
	int err;

	if (newstate == TCP_ESTABLISHED) {
		NET_ADD(&ts->ep, connects, 1);
		ns = bpf_map_lookup_elem(&net_stats, &slot);
		if (ns) {
			add(&ns->connect_lat.count, 1);
			add(&ns->connect_lat.sum, lat);
			add(&ns->connect_lat.slots[tp_log2_slot(lat)], 1);
		}
		return;
	}
	if (newstate != TCP_CLOSE)
		return;
	err = sk->sk_err;
	if (!err)
		err = ts->syn_err;
	note_connect_failed(ts, failure_kind(err));
	switch (failure_kind(err)) {
	case TP_CONN_REFUSED:
		NET_ADD(&ts->ep, failures[TP_CONN_REFUSED], 1);
		break;
	case TP_CONN_TIMEOUT:
		NET_ADD(&ts->ep, failures[TP_CONN_TIMEOUT], 1);
		break;
	case TP_CONN_UNREACHABLE:
		NET_ADD(&ts->ep, failures[TP_CONN_UNREACHABLE], 1);
		break;
	default:
		NET_ADD(&ts->ep, failures[TP_CONN_OTHER], 1);
		break;
	}
}

/*
 * A plaintext connection leaves ESTABLISHED (the peer's FIN, a reset, our close):
 * every byte the server sent before has passed the ingress program, so requests
 * still waiting end here (truncated, reset, or complete for a body read to the close).
 * Who ended it is the new state's: CLOSE_WAIT the server's FIN, a reset the error,
 * FIN_WAIT1 (or CLOSE without an error: a close with data unread) the client's own.
 */
static __always_inline void plain_http_end(const struct sock *sk, struct tp_sock *ts, int newstate,
					   __u64 cookie)
{
	struct tp_http_key key = { .handle = cookie };
	struct tp_http_conn *hc = bpf_map_lookup_elem(&http_conns, &key);
	bool reset = sk->sk_err == ECONNRESET;

	if (!hc)
		return;
	if (ts && reset && hc->pending)
		NET_ADD(&ts->ep, http_resets, 1);
	/* A timeout (ETIMEDOUT) or any error is no close of the client's own. */
	http_conn_end(hc, reset,
		      !sk->sk_err && (newstate == TCP_FIN_WAIT1 || newstate == TCP_CLOSE));
	bpf_map_delete_elem(&http_conns, &key);
}

/*
 * A TLS connection's socket leaves ESTABLISHED while requests wait: its responses may
 * still sit undecrypted in the socket, so nothing ends here. The reason is kept for
 * the read that comes to it (tls.bpf.c, tls_read_none): a reset, or the server's FIN.
 */
static __always_inline void tls_sock_end(const struct sock *sk, int newstate, __u64 cookie)
{
	struct tls_sock *link = bpf_map_lookup_elem(&tls_socks, &cookie);
	struct tp_http_conn *hc;

	if (!link)
		return;
	hc = bpf_map_lookup_elem(&http_conns, &link->conn);
	/* Kept while idle too: a request a kept-alive connection sends later meets it. */
	if (!hc || hc->sock != cookie)
		return;
	if (sk->sk_err == ECONNRESET)
		hc->sk_end = TP_SK_RESET;
	else if (newstate == TCP_CLOSE_WAIT)
		hc->sk_end = TP_SK_FIN;
}

SEC("tp_btf/inet_sock_set_state")
int BPF_PROG(tp_inet_sock_set_state, const struct sock *sk, int oldstate, int newstate)
{
	struct tp_sock *ts;

	if (sk->sk_protocol != IPPROTO_TCP)
		return 0;
	if (newstate == TCP_SYN_SENT) {
		connect_start(sk);
		return 0;
	}
	/* No storage: no task's connection and no HTTP (mark_http), one lookup and out. */
	ts = bpf_sk_storage_get(&socks, (void *)sk, 0, 0);
	if (!ts && !http_unmarked)
		return 0;
	ts = sock_current(ts);
	if (ts && oldstate == TCP_SYN_SENT) {
		connect_done(sk, ts, newstate);
		return 0;
	}
	if (ts)
		charge_bytes(sk, ts);
	/* HTTP also on a socket the task did not connect (no storage): its requests. */
	if (oldstate == TCP_ESTABLISHED) {
		__u64 cookie = bpf_get_socket_cookie((void *)sk);

		plain_http_end(sk, ts, newstate, cookie);
		tls_sock_end(sk, newstate, cookie);
	}
	return 0;
}

/*
 * An error reported on a connecting socket: the app may read (and so clear) the
 * error and close the socket itself, so the reason is kept for the close.
 */
SEC("tp_btf/inet_sk_error_report")
int BPF_PROG(tp_inet_sk_error_report, const struct sock *sk)
{
	struct tp_sock *ts;

	if (sk->sk_protocol != IPPROTO_TCP || sk->__sk_common.skc_state != TCP_SYN_SENT)
		return 0;
	ts = sock_of(sk);
	if (!ts)
		return 0;
	/*
	 * Fatal errors (a refusal) are in sk_err; a soft ICMP error (net or host
	 * unreachable) is reported before sk_err_soft is written, which the app then
	 * takes through SO_ERROR: a report with neither set is that.
	 */
	ts->syn_err = sk->sk_err ? sk->sk_err : sk->sk_err_soft ? sk->sk_err_soft : EHOSTUNREACH;
	return 0;
}

SEC("tp_btf/tcp_receive_reset")
int BPF_PROG(tp_tcp_receive_reset, struct sock *sk)
{
	struct tp_sock *ts = sock_of(sk);

	/* A RST in answer to the SYN is a refused connect, counted at its close. */
	if (ts && sk->__sk_common.skc_state != TCP_SYN_SENT)
		NET_ADD(&ts->ep, resets_received, 1);
	return 0;
}

SEC("tp_btf/tcp_send_reset")
int BPF_PROG(tp_tcp_send_reset, const struct sock *sk, const struct sk_buff *skb, int reason)
{
	struct tp_sock *ts;

	if (!sk)
		return 0;
	ts = sock_of(sk);
	if (ts)
		NET_ADD(&ts->ep, resets_sent, 1);
	return 0;
}

SEC("tp_btf/tcp_retransmit_skb")
int BPF_PROG(tp_tcp_retransmit_skb, const struct sock *sk)
{
	struct tp_sock *ts = sock_of(sk);

	if (ts)
		NET_ADD(&ts->ep, retransmits, 1);
	return 0;
}

/*
 * A request just written through TLS names its socket: the writing thread's next TCP
 * send is that socket's (TCP only: the sends of other sockets never come here). Its
 * state change then finds the connection by the socket's cookie (tls_sock_end).
 */
SEC("tp_btf/tcp_sendmsg_locked")
int BPF_PROG(tp_tcp_sendmsg_locked, const struct sock *sk)
{
	struct tls_sock link = {};
	struct tp_http_conn *hc;
	struct tls_send *s;
	struct tp_sock *ts;
	__u64 id, cookie;
	bool fresh;

	if (!tls_sends_n)
		return 0; /* no TLS request waits for its socket: every other send */
	id = bpf_get_current_pid_tgid();
	s = bpf_map_lookup_elem(&tls_sends, &id);
	if (!s)
		return 0;
	link.conn = s->conn;
	fresh = bpf_ktime_get_ns() - s->ns < TLS_SEND_NS;
	tls_send_forget(id);
	hc = fresh ? bpf_map_lookup_elem(&http_conns, &link.conn) : NULL;
	if (!hc)
		return 0;
	cookie = bpf_get_socket_cookie((void *)sk);
	ts = sock_of(sk);
	if (ts)
		link.ep = ts->ep;
	link.sk = (__u64)sk;
	if (!bpf_map_update_elem(&tls_socks, &cookie, &link, BPF_ANY)) {
		hc->sock = cookie;
		mark_http((void *)sk);
	}
	return 0;
}

/* ---- plaintext HTTP: the task cgroup's own packets ---- */

/* Offset of the transport header and its protocol, or 0. */
static __always_inline __u32 l4_offset(struct __sk_buff *skb, __u8 *proto)
{
	__u8 b0;

	if (bpf_skb_load_bytes(skb, 0, &b0, 1))
		return 0;
	if ((b0 >> 4) == 4)
		return bpf_skb_load_bytes(skb, 9, proto, 1) ? 0 : (b0 & 0xf) * 4;
	if ((b0 >> 4) == 6)
		return bpf_skb_load_bytes(skb, 6, proto, 1) ? 0 : 40;
	return 0;
}

/*
 * Offset of a TCP payload of at least need bytes whose first len are copied to head,
 * with its sequence number; 0 for anything else.
 */
static __always_inline __u32 tcp_head(struct __sk_buff *skb, __u32 off, __u32 *seq, void *head,
				      __u32 len, __u32 need)
{
	__u8 doff;

	if (bpf_skb_load_bytes(skb, off + 4, seq, 4) || bpf_skb_load_bytes(skb, off + 12, &doff, 1))
		return 0;
	off += (doff >> 4) * 4;
	if (off + need > skb->len || bpf_skb_load_bytes(skb, off, head, len))
		return 0;
	return off;
}

/* ---- DNS on the wire: queries and answers of any resolver, not only glibc's ---- */

#define DNS_PORT 53
#define DNS_ANSWERS 8
#define DNS_ADDRS 4 /* addresses kept from one answer */

/*
 * The walk's state lives in a per-CPU map, not on the stack: loaded from a map, its
 * values are unknown to the verifier, so a callback is verified once, not once per
 * distinct offset (that took 105 ms of verification on the stack).
 */
struct dns_walk {
	__u32 at;    /* offset in the scan buffer */
	__u32 n;     /* bytes in it */
	__u32 out;   /* bytes of the name written */
	__u32 label; /* bytes left of the current label */
	__u32 done;
	__u32 naddrs;
	char name[TP_DNS_NAME_LEN];
	struct tp_addr addrs[DNS_ADDRS];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct dns_walk);
} dns_parse SEC(".maps");

static __always_inline struct dns_walk *dns_walk_state(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&dns_parse, &zero);
}

/* bpf_loop step: one byte of the question's name, labels turned into dots. */
static long dns_name_step(__u32 i, void *ctx)
{
	struct dns_walk *w = dns_walk_state();
	struct scan_buf *sb = scan_buf(SCAN_INGRESS);
	__u8 c;

	if (!w || !sb || w->at >= w->n || w->at >= HTTP_SCAN)
		return 1;
	c = (__u8)sb->b[w->at & (HTTP_SCAN - 1)];
	w->at++;
	if (w->label) {
		w->label--;
		if (w->out < TP_DNS_NAME_LEN - 1)
			w->name[w->out++ & (TP_DNS_NAME_LEN - 1)] = lower((char)c);
		return 0;
	}
	if (!c) { /* the root: the name is complete */
		w->done = 1;
		return 1;
	}
	if (c >= 64) /* a pointer in a question: not parsed */
		return 1;
	if (w->out && w->out < TP_DNS_NAME_LEN - 1)
		w->name[w->out++ & (TP_DNS_NAME_LEN - 1)] = '.';
	w->label = c;
	return 0;
}

static __always_inline __u16 be16(const char *b, __u32 at)
{
	return (__u16)((__u8)b[at & (HTTP_SCAN - 1)] << 8 | (__u8)b[(at + 1) & (HTTP_SCAN - 1)]);
}

/* bpf_loop step: one answer record; an A or AAAA one gives an address. */
static long dns_answer_step(__u32 i, void *ctx)
{
	struct scan_buf *sb = scan_buf(SCAN_INGRESS);
	struct dns_walk *a = dns_walk_state();
	__u32 k;
	__u32 off, o;
	__u16 type, rdlen;

	if (!a)
		return 1;
	off = a->at;
	if (!sb || off + 12 > a->n || ((__u8)sb->b[off & (HTTP_SCAN - 1)] & 0xc0) != 0xc0)
		return 1;
	type = be16(sb->b, off + 2);
	rdlen = be16(sb->b, off + 10);
	off += 12;
	if (off + rdlen > a->n)
		return 1;
	a->at = off + rdlen;
	if (!((type == 1 && rdlen == 4) || (type == 28 && rdlen == 16)))
		return 0;
	o = off & (HTTP_SCAN - 1);
	k = a->naddrs;
	if (o > HTTP_SCAN - 16 || k >= DNS_ADDRS)
		return 1;
	a->addrs[k].family = type == 1 ? AF_INET : AF_INET6;
	/* 16 bytes either way: an A record's 12 past it are cleared after. */
	__builtin_memcpy(a->addrs[k].addr, sb->b + o, 16);
	if (type == 1)
		__builtin_memset(a->addrs[k].addr + 4, 0, 12);
	a->naddrs = k + 1;
	return 0;
}

/*
 * An answer to one of the task's queries: counted, and its A/AAAA records sent up
 * with the question's name. Answer owner names must be compressed (a pointer), as
 * servers write them; anything else ends the walk.
 */
static __always_inline void dns_answer(struct __sk_buff *skb, __u32 off,
				       const struct tp_cgroup_info *ci)
{
	struct dns_walk *w = dns_walk_state();
	struct tp_net_stats *ns;
	struct tp_dns_event *e;
	struct scan_buf *sb;
	__u32 slot = ci->slot, n;
	__u16 flags, ancount;
	__u8 rcode;

	sb = scan_buf(SCAN_INGRESS);
	n = skb->len - off;
	if (!w || !sb || n < 12)
		return;
	if (n > HTTP_SCAN)
		n = HTTP_SCAN;
	if (bpf_skb_load_bytes(skb, off, sb->b, n))
		return;
	flags = be16(sb->b, 2);
	if (!(flags & 0x8000)) /* QR: a query, not an answer */
		return;
	rcode = flags & 0xf;
	ns = bpf_map_lookup_elem(&net_stats, &slot);
	if (ns && rcode)
		add(&ns->dns_query_failures, 1);
	if (be16(sb->b, 4) != 1) /* one question, as resolvers ask */
		return;
	ancount = be16(sb->b, 6);
	__builtin_memset(w, 0, sizeof(*w));
	w->at = 12;
	w->n = n;
	bpf_loop(TP_DNS_NAME_LEN + 2, dns_name_step, NULL, 0);
	if (!w->done || !w->out)
		return;
	w->at += 4; /* QTYPE, QCLASS */
	if (!rcode)
		bpf_loop(ancount < DNS_ANSWERS ? ancount : DNS_ANSWERS, dns_answer_step, NULL, 0);
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		tp_count_lost(slot);
		return;
	}
	__builtin_memset(e, 0, sizeof(*e));
	e->hdr.type = TP_EV_DNS;
	e->hdr.slot = ci->slot;
	e->hdr.gen = ci->gen;
	e->hdr.ts_ns = bpf_ktime_get_ns();
	e->ret = rcode;
	e->source = TP_DNS_PACKET;
	__builtin_memcpy(e->name, w->name, sizeof(e->name));
	__builtin_memcpy(e->addrs, w->addrs, sizeof(w->addrs));
	e->naddrs = w->naddrs < DNS_ADDRS ? w->naddrs : DNS_ADDRS;
	bpf_ringbuf_submit(e, BPF_RB_NO_WAKEUP);
}

/* A query the task sends (UDP to port 53): counted. */
static __always_inline void dns_query(struct __sk_buff *skb, __u32 off)
{
	struct tp_cgroup_info *ci;
	struct tp_net_stats *ns;
	__u8 flags;
	__u32 slot;

	if (off + 12 > skb->len || bpf_skb_load_bytes(skb, off + 2, &flags, 1) || (flags & 0x80))
		return;
	ci = tp_cgroup_lookup(bpf_skb_cgroup_id(skb));
	if (!ci)
		return;
	slot = ci->slot;
	ns = bpf_map_lookup_elem(&net_stats, &slot);
	if (ns)
		add(&ns->dns_queries, 1);
}

/* UDP: the payload's offset when port (source or destination, by at) is DNS's. */
static __always_inline __u32 dns_payload(struct __sk_buff *skb, __u32 off, __u32 at)
{
	__u16 port;

	if (bpf_skb_load_bytes(skb, off + at, &port, 2) || bpf_ntohs(port) != DNS_PORT)
		return 0;
	return off + 8;
}

SEC("cgroup_skb/egress")
int tp_http_egress(struct __sk_buff *skb)
{
	struct tp_cgroup_info *ci;
	struct bpf_sock *sk;
	struct tp_http_key key = {};
	struct scan_buf *sb;
	__u32 off, seq, n;
	char head[8];
	__u8 proto = 0;

	off = l4_offset(skb, &proto);
	if (off && proto == IPPROTO_UDP) {
		off = dns_payload(skb, off, 2);
		if (off)
			dns_query(skb, off);
		return 1;
	}
	if (!off || proto != IPPROTO_TCP)
		return 1;
	off = tcp_head(skb, off, &seq, head, sizeof(head), 16);
	if (!off)
		return 1;
	/* Most packets are not a request's first: two loads and out. */
	if (!parse_method(head, head))
		return 1;
	ci = tp_cgroup_lookup(bpf_skb_cgroup_id(skb));
	sb = scan_buf(SCAN_EGRESS);
	if (!ci || !sb)
		return 1;
	n = skb->len - off;
	if (n > HTTP_SCAN)
		n = HTTP_SCAN;
	if (n < 16 || bpf_skb_load_bytes(skb, off, sb->b, n))
		return 1;
	key.handle = bpf_get_socket_cookie(skb);
	http_request(&key, ci, sb->b, n, TP_HTTP_PLAIN, seq);
	sk = skb->sk;
	if (sk)
		sk = bpf_sk_fullsock(sk);
	if (sk)
		mark_http(sk);
	else
		http_unmarked = 1;
	return 1;
}

SEC("cgroup_skb/ingress")
int tp_http_ingress(struct __sk_buff *skb)
{
	struct tp_http_key key = {};
	struct tp_http_conn *hc;
	struct tp_cgroup_info *ci;
	struct scan_buf *sb;
	__u32 off, seq, n, late;
	char head[4];
	__u8 proto = 0;

	off = l4_offset(skb, &proto);
	if (off && proto == IPPROTO_UDP) {
		off = dns_payload(skb, off, 0);
		ci = off ? tp_cgroup_lookup(bpf_skb_cgroup_id(skb)) : NULL;
		if (ci)
			dns_answer(skb, off, ci);
		return 1;
	}
	if (!off || proto != IPPROTO_TCP)
		return 1;
	off = tcp_head(skb, off, &seq, head, 1, 1);
	if (!off)
		return 1;
	/* Only connections where the task sent a request: one lookup per packet. */
	key.handle = bpf_get_socket_cookie(skb);
	hc = bpf_map_lookup_elem(&http_conns, &key);
	if (!hc || (!hc->pending && hc->state == RS_IDLE))
		return 1;
	n = skb->len - off;
	/* In sequence only: a retransmitted segment, or its part already seen, once. */
	if (hc->rx_next && (__s32)(seq - hc->rx_next) < 0) {
		late = hc->rx_next - seq;
		if (late >= n)
			return 1;
		off += late;
		n -= late;
		seq += late;
	}
	hc->rx_next = seq + n;
	sb = scan_buf(SCAN_INGRESS);
	if (sb)
		http_stream(hc, sb, true, NULL, skb, off, n);
	return 1;
}

/* ---- getaddrinfo(): names the task resolved, and to what ---- */

/*
 * An address written as text ("10.0.0.1", "::1"): getaddrinfo() resolves nothing
 * for it, so it is no lookup and no name.
 */
static __always_inline bool numeric_host(const char *node)
{
	char b[40];
	bool colon = false;

	if (bpf_probe_read_user_str(b, sizeof(b), node) <= 1)
		return false;
	for (int i = 0; i < (int)sizeof(b) && b[i]; i++)
		colon |= b[i] == ':';
	for (int i = 0; i < (int)sizeof(b); i++) {
		char c = b[i];

		if (!c)
			return true;
		if (!(c >= '0' && c <= '9') && c != '.' && c != ':' &&
		    !(colon && ((c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'))))
			return false;
	}
	return false;
}

SEC("uprobe")
int BPF_KPROBE(tp_getaddrinfo, const char *node, const char *service, const void *hints, void **res)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct dns_call call;

	if (!node || !tp_cgroup_lookup(bpf_get_current_cgroup_id()) || numeric_host(node))
		return 0;
	call.node = (__u64)node;
	call.res = (__u64)res;
	bpf_map_update_elem(&dns_calls, &id, &call, BPF_ANY);
	return 0;
}

/* struct addrinfo (glibc, LP64): ai_family at 4, ai_addr at 24, ai_next at 40. */
#define AI_FAMILY 4
#define AI_ADDR 24
#define AI_NEXT 40

SEC("uretprobe")
int BPF_KRETPROBE(tp_getaddrinfo_ret, int ret)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct dns_call *call = bpf_map_lookup_elem(&dns_calls, &id);
	struct tp_cgroup_info *ci;
	struct tp_dns_event *e;
	struct tp_net_stats *ns;
	__u64 ai = 0, sa;
	__u32 slot, n = 0;
	int family;

	if (!call)
		return 0;
	ci = tp_cgroup_lookup(bpf_get_current_cgroup_id());
	if (!ci)
		goto out;
	slot = ci->slot;
	ns = bpf_map_lookup_elem(&net_stats, &slot);
	if (ns) {
		add(&ns->dns_lookups, 1);
		if (ret)
			add(&ns->dns_failures, 1);
	}
	e = tp_event_reserve(sizeof(*e), TP_EV_DNS, ci, bpf_get_current_task_btf());
	if (!e)
		goto out;
	__builtin_memset(e->addrs, 0, sizeof(e->addrs));
	e->ret = ret;
	if (bpf_probe_read_user_str(e->name, sizeof(e->name), (void *)call->node) < 0)
		e->name[0] = 0;
	if (!ret)
		bpf_probe_read_user(&ai, sizeof(ai), (void *)call->res);
	/* Each address may come once per socket type: userspace keeps it once. */
	for (int i = 0; i < TP_DNS_ADDRS && ai; i++) {
		struct tp_addr *a = &e->addrs[i];

		family = 0;
		sa = 0;
		bpf_probe_read_user(&family, sizeof(family), (void *)(ai + AI_FAMILY));
		bpf_probe_read_user(&sa, sizeof(sa), (void *)(ai + AI_ADDR));
		if (sa && family == AF_INET) {
			a->family = AF_INET;
			bpf_probe_read_user(a->addr, 4, (void *)(sa + 4));
		} else if (sa && family == AF_INET6) {
			a->family = AF_INET6;
			bpf_probe_read_user(a->addr, 16, (void *)(sa + 8));
		}
		n = i + 1;
		if (bpf_probe_read_user(&ai, sizeof(ai), (void *)(ai + AI_NEXT)))
			break;
	}
	e->naddrs = n;
	e->source = TP_DNS_GETADDRINFO;
	e->pad = 0;
	bpf_ringbuf_submit(e, BPF_RB_NO_WAKEUP);
out:
	bpf_map_delete_elem(&dns_calls, &id);
	return 0;
}
