// SPDX-License-Identifier: GPL-2.0
/*
 * TLS library probes: the plaintext of HTTP requests and responses passes through
 * OpenSSL's SSL_write/SSL_read(_ex) and GnuTLS's gnutls_record_send/recv. The
 * collector attaches them to every copy of the libraries (user/collector/libraries.c).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "maps.bpf.h"
#include "http.bpf.h"
#include "netcount.bpf.h"

static __always_inline int tls_write(void *handle, const void *buf, __s64 len, __u8 via)
{
	struct tp_cgroup_info *ci;
	struct tp_http_conn *hc;
	struct tp_http_key key;
	struct scan_buf *sb;
	__u64 id;
	__u32 n;

	if (len < 16)
		return 0;
	ci = tp_cgroup_lookup(bpf_get_current_cgroup_id());
	if (!ci)
		return 0;
	sb = scan_buf(SCAN_UPROBE);
	if (!sb)
		return 0;
	n = len < HTTP_SCAN ? (__u32)len : HTTP_SCAN;
	if (bpf_probe_read_user(sb->b, n, buf))
		return 0;
	id = bpf_get_current_pid_tgid();
	key.owner = id >> 32;
	key.handle = (__u64)handle;
	http_request(&key, ci, sb->b, n, via, 0);
	/* The connection's socket is not known yet: this thread's next TCP send is it. */
	hc = bpf_map_lookup_elem(&http_conns, &key);
	if (hc && hc->pending && !hc->sock) {
		struct tls_send s = { .conn = key, .ns = bpf_ktime_get_ns() };

		if (!bpf_map_update_elem(&tls_sends, &id, &s, BPF_NOEXIST))
			__sync_fetch_and_add(&tls_sends_n, 1);
		else
			bpf_map_update_elem(&tls_sends, &id, &s, BPF_EXIST);
	}
	return 0;
}

static __always_inline int tls_read_enter(void *handle, void *buf, void *nread_ptr)
{
	struct tls_read r = {};
	struct tp_http_conn *hc;
	__u64 id = bpf_get_current_pid_tgid();

	r.conn.owner = id >> 32;
	r.conn.handle = (__u64)handle;
	/* Only reads that may carry an awaited response are followed. */
	hc = bpf_map_lookup_elem(&http_conns, &r.conn);
	if (!hc || !hc->pending)
		return 0;
	r.buf = (__u64)buf;
	r.nread_ptr = (__u64)nread_ptr;
	bpf_map_update_elem(&tls_reads, &id, &r, BPF_ANY);
	return 0;
}

/*
 * A read that returned no data, while requests may wait: the end of the stream, or the
 * socket's end its state change saw. A reset fails what still waits, now that every
 * byte before it was read (the kernel gives the data first, then the reset); a FIN,
 * or SSL_read's 0, is the server's end: what is cut is its doing.
 */
static __always_inline void tls_read_none(struct tp_http_conn *hc, bool eof)
{
	struct tls_sock *link;

	if (hc->sk_end == TP_SK_RESET) {
		link = hc->sock ? bpf_map_lookup_elem(&tls_socks, &hc->sock) : NULL;
		/*
		 * A read may return no data for want of it (a non-blocking socket) just
		 * before the reset came: only once every byte before the reset was read
		 * has the client come to it. The socket lives while its session reads.
		 */
		if (link && link->sk) {
			struct tcp_sock *tp = (struct tcp_sock *)link->sk;

			if (BPF_CORE_READ(tp, copied_seq) != BPF_CORE_READ(tp, rcv_nxt))
				return;
		}
		if (link && link->ep.gen && hc->pending && tp_slot_current(hc->slot, hc->gen) &&
		    tp_slot_current(link->ep.slot, link->ep.gen))
			NET_ADD(&link->ep, http_resets, 1);
		http_conn_end(hc, true, false);
		hc->sk_end = TP_SK_OPEN;
	} else if (eof || hc->sk_end == TP_SK_FIN) {
		hc->peer_end = 1;
	}
}

static __always_inline int tls_read_exit(int ret)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct tls_read *r = bpf_map_lookup_elem(&tls_reads, &id);
	struct tp_http_conn *hc;
	struct scan_buf *sb;
	__u64 n = 0;

	if (!r)
		return 0;
	if (r->nread_ptr) {
		if (ret == 1)
			bpf_probe_read_user(&n, sizeof(n), (void *)r->nread_ptr);
	} else if (ret > 0) {
		n = (__u64)ret;
	}
	hc = bpf_map_lookup_elem(&http_conns, &r->conn);
	/*
	 * No data: SSL_read and gnutls_record_recv return 0 only at the end of the stream,
	 * and below 0 on an error; SSL_read_ex returns 0 for both.
	 */
	if (hc && (r->nread_ptr ? ret == 0 : ret <= 0))
		tls_read_none(hc, !r->nread_ptr && ret == 0);
	sb = scan_buf(SCAN_UPROBE);
	if (hc && sb && n && n < (1u << 30))
		http_stream(hc, sb, false, (void *)r->buf, NULL, 0, (__u32)n);
	bpf_map_delete_elem(&tls_reads, &id);
	/* Its request was sent, or never will be by TCP (a stale one keeps the gate open). */
	if (tls_sends_n)
		tls_send_forget(id);
	return 0;
}

/* The session is freed: requests still waiting on it end (truncated, reset or complete). */
static __always_inline int tls_free(void *handle)
{
	struct tp_http_key key = { .owner = bpf_get_current_pid_tgid() >> 32,
				   .handle = (__u64)handle };
	struct tp_http_conn *hc = bpf_map_lookup_elem(&http_conns, &key);

	if (!hc)
		return 0;
	/* Freed before the server ended the stream: the client left what it did not read. */
	http_conn_end(hc, false, !hc->peer_end);
	if (hc->sock)
		bpf_map_delete_elem(&tls_socks, &hc->sock);
	bpf_map_delete_elem(&http_conns, &key);
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(tp_ssl_free, void *ssl)
{
	return tls_free(ssl);
}

SEC("uprobe")
int BPF_KPROBE(tp_gnutls_deinit, void *session)
{
	return tls_free(session);
}

SEC("uprobe")
int BPF_KPROBE(tp_ssl_write, void *ssl, const void *buf, int num)
{
	return tls_write(ssl, buf, num, TP_HTTP_OPENSSL);
}

SEC("uprobe")
int BPF_KPROBE(tp_ssl_read, void *ssl, void *buf, int num)
{
	return tls_read_enter(ssl, buf, NULL);
}

SEC("uprobe")
int BPF_KPROBE(tp_ssl_read_ex, void *ssl, void *buf, __u64 num, __u64 *readbytes)
{
	return tls_read_enter(ssl, buf, readbytes);
}

/* SSL_read, SSL_read_ex and gnutls_record_recv: the result is in the return register. */
SEC("uretprobe")
int BPF_KRETPROBE(tp_tls_read_ret, long ret)
{
	/* SSL_read(_ex) return an int: the register's upper half is not theirs. */
	return tls_read_exit((int)ret);
}

SEC("uprobe")
int BPF_KPROBE(tp_gnutls_send, void *session, const void *data, __u64 size)
{
	return tls_write(session, data, (__s64)size, TP_HTTP_GNUTLS);
}

SEC("uprobe")
int BPF_KPROBE(tp_gnutls_recv, void *session, void *data, __u64 size)
{
	return tls_read_enter(session, data, NULL);
}
