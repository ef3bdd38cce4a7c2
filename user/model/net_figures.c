// SPDX-License-Identifier: GPL-2.0
/* Network figures of a task: endpoints, resolved names, HTTP by host; JSON and summary. */
#include <stddef.h>
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "base/util.h"
#include "model/net_figures.h"

/* Bounds on what one task can make the collector keep. */
#define NAMES_MAX 1024
#define HOSTS_MAX 256
#define TOP_ENDPOINTS 5
#define TOP_HOSTS 5

const char *const http_failure_names[HTTP_FAIL_KINDS] = { "status_5xx", "status_429", "refused",
							  "timeout",	"reset",      "truncated" };
const char *const connect_failure_names[TP_CONN_FAILURE_KINDS] = { "refused", "timeout",
								   "unreachable", "other" };

struct dns_name {
	struct tp_addr addr;
	char name[TP_DNS_NAME_LEN];
};

void http_ports__default(struct http_ports *p)
{
	static const __u16 def[] = { 80, 443, 8080, 8443 };

	p->n = ARRAY_SIZE(def);
	memcpy(p->port, def, sizeof(def));
}

int http_ports__parse(struct http_ports *p, const char *s, const char **why)
{
	struct http_ports out = { 0 };
	char *end;

	while (*s) {
		long v = strtol(s, &end, 10);

		if (end == s || v < 1 || v > 65535 || (*end && *end != ',')) {
			*why = "http_ports takes ports 1-65535 separated by commas";
			return -EINVAL;
		}
		if (out.n == NET_HTTP_PORTS_MAX) {
			*why = "http_ports takes at most 16 ports";
			return -EINVAL;
		}
		out.port[out.n++] = (__u16)v;
		s = *end ? end + 1 : end;
	}
	*p = out;
	return 0;
}

static bool is_http_port(const struct http_ports *p, int port)
{
	for (int i = 0; p && i < p->n; i++)
		if (p->port[i] == port)
			return true;
	return false;
}

/* IPv4-mapped IPv6 (::ffff:a.b.c.d) as the IPv4 address it is. */
static void canon_addr(__u16 *family, __u8 *addr)
{
	static const __u8 mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

	if (*family == AF_INET6 && !memcmp(addr, mapped, sizeof(mapped))) {
		memmove(addr, addr + 12, 4);
		memset(addr + 4, 0, 12);
		*family = AF_INET;
	}
	if (*family == AF_INET)
		memset(addr + 4, 0, 12);
}

void net_fmt_addr(char *buf, size_t len, __u16 family, const __u8 *addr, int port)
{
	char ip[INET6_ADDRSTRLEN] = "?";
	__u8 a[16];

	memcpy(a, addr, sizeof(a));
	canon_addr(&family, a);
	inet_ntop(family == AF_INET ? AF_INET : AF_INET6, a, ip, sizeof(ip));
	if (family == AF_INET)
		snprintf(buf, len, "%s:%d", ip, port);
	else
		snprintf(buf, len, "[%s]:%d", ip, port);
}

void net_acc__dns(struct net_acc *a, const struct tp_dns_event *e)
{
	char name[TP_DNS_NAME_LEN];

	memcpy(name, e->name, sizeof(name));
	name[sizeof(name) - 1] = '\0';
	for (__u32 i = 0; i < e->naddrs && i < TP_DNS_ADDRS; i++) {
		struct tp_addr addr = e->addrs[i];
		size_t k;

		if (addr.family != AF_INET && addr.family != AF_INET6)
			continue;
		canon_addr(&addr.family, addr.addr);
		for (k = 0; k < a->nnames; k++)
			if (!memcmp(&a->names[k].addr, &addr, sizeof(addr)) &&
			    !strcmp(a->names[k].name, name))
				break;
		if (k < a->nnames || a->nnames >= NAMES_MAX)
			continue;
		if (!(a->nnames & (a->nnames + 1)) || !a->names) {
			struct dns_name *n = realloc(a->names, (a->nnames * 2 + 2) * sizeof(*n));

			if (!n)
				return;
			a->names = n;
		}
		a->names[a->nnames].addr = addr;
		memcpy(a->names[a->nnames].name, name, sizeof(name));
		a->nnames++;
	}
}

static struct http_host *host_get(struct http_host **hosts, size_t *n, const char *host)
{
	const char *key = host[0] ? host : "(no host)";
	struct http_host *h;

	for (size_t i = 0; i < *n; i++)
		if (!strcmp((*hosts)[i].host, key))
			return &(*hosts)[i];
	/* Past the bound, every new host is "(other)", which gets one row past it. */
	if (*n >= HOSTS_MAX && strcmp(key, "(other)"))
		return host_get(hosts, n, "(other)");
	h = realloc(*hosts, (*n + 1) * sizeof(*h));
	if (!h)
		return NULL;
	*hosts = h;
	h = &h[(*n)++];
	memset(h, 0, sizeof(*h));
	snprintf(h->host, sizeof(h->host), "%s", key);
	return h;
}

/* The host as stored: a cut name is marked, so that nobody takes it for a whole one. */
static void host_name(char *buf, size_t len, const char *host, bool cut)
{
	snprintf(buf, len, "%s%.*s", cut ? NET_HOST_CUT_MARK : "", TP_HTTP_HOST_LEN - 1, host);
}

/* The row of a host as the BPF side named it (cut: its end only), made when new. */
static struct http_host *host_of(struct net_figures *nf, const char *host, bool cut)
{
	char name[NET_HOST_LEN];

	host_name(name, sizeof(name), host, cut);
	return host_get(&nf->hosts, &nf->nhosts, name);
}

void net_figures__add_unanswered(struct net_figures *nf, const char *host, bool cut, __u64 count)
{
	struct http_host *h = host_of(nf, host, cut);

	if (!h)
		return;
	h->unanswered += count;
	h->requests += count;
}

/*
 * A response whose headers were whole: counted by its status, whatever befell its body.
 * A body the server cut short (cut) is a failure of its own only when the status is not
 * one: a request fails once.
 */
static void host_answered(struct http_host *h, __u16 status, bool cut)
{
	h->classes[status >= 100 && status < 600 ? status / 100 : 0]++;
	if (status >= 500)
		h->failures[HTTP_FAIL_5XX]++;
	else if (status == 429)
		h->failures[HTTP_FAIL_429]++;
	else if (cut)
		h->failures[HTTP_FAIL_TRUNCATED]++;
}

void net_figures__add_answered(struct net_figures *nf, const char *host, bool cut, __u16 status)
{
	struct http_host *h = host_of(nf, host, cut);

	if (!h)
		return;
	h->requests++;
	host_answered(h, status, false);
}

void net_acc__http(struct net_acc *a, const struct tp_http_event *e)
{
	char raw[TP_HTTP_HOST_LEN], host[NET_HOST_LEN];
	__u64 n = e->count ? e->count : 1;
	struct http_host *h;

	if (e->kind == TP_HTTP_H2) {
		a->h2_connections++;
		return;
	}
	memcpy(raw, e->host, sizeof(raw));
	raw[sizeof(raw) - 1] = '\0';
	host_name(host, sizeof(host), raw, e->flags & TP_HTTP_HOST_CUT);
	h = host_get(&a->hosts, &a->nhosts, host);
	if (!h)
		return;
	h->requests += n;
	if (e->kind == TP_HTTP_UNANSWERED) {
		h->unanswered += n;
		return;
	}
	if (e->kind == TP_HTTP_RESET || (e->kind == TP_HTTP_TRUNCATED && !e->status)) {
		h->failures[e->kind == TP_HTTP_RESET ? HTTP_FAIL_RESET : HTTP_FAIL_TRUNCATED] += n;
		return;
	}
	host_answered(h, e->status,
		      e->kind == TP_HTTP_TRUNCATED && !(e->flags & TP_HTTP_BODY_UNREAD));
}

void net_acc__fini(struct net_acc *a)
{
	free(a->names);
	free(a->hosts);
	memset(a, 0, sizeof(*a));
}

static void add_counters(struct tp_net_counters *to, const struct tp_net_counters *c)
{
	const __u64 *s = (const __u64 *)c;
	__u64 *d = (__u64 *)to;

	for (size_t i = 0; i < sizeof(*c) / sizeof(__u64); i++)
		d[i] += s[i];
}

static __u64 failures(const struct tp_net_counters *c)
{
	__u64 n = 0;

	for (int i = 0; i < TP_CONN_FAILURE_KINDS; i++)
		n += c->failures[i];
	return n;
}

static int cmp_endpoints(const void *a, const void *b)
{
	const struct net_endpoint *x = a, *y = b;
	__u64 fx = failures(&x->c) + x->c.resets_received,
	      fy = failures(&y->c) + y->c.resets_received;

	if (fx != fy)
		return fx > fy ? -1 : 1;
	if (x->c.attempts != y->c.attempts)
		return x->c.attempts > y->c.attempts ? -1 : 1;
	return strcmp(x->address, y->address);
}

static int cmp_hosts(const void *a, const void *b)
{
	const struct http_host *x = a, *y = b;

	if (x->requests != y->requests)
		return x->requests > y->requests ? -1 : 1;
	return strcmp(x->host, y->host);
}

/* Names the task resolved to (family, addr), comma-separated, into buf. */
static void names_of(const struct net_acc *acc, __u16 family, const __u8 *addr, char *buf,
		     size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	for (size_t i = 0; acc && i < acc->nnames; i++) {
		const struct dns_name *n = &acc->names[i];
		int w;

		if (n->addr.family != family || memcmp(n->addr.addr, addr, 16))
			continue;
		w = snprintf(buf + used, len - used, "%s%s", used ? "," : "", n->name);
		if (w < 0 || (size_t)w >= len - used) {
			buf[used] = '\0';
			return;
		}
		used += (size_t)w;
	}
}

int net_figures__build(struct net_figures *nf, const struct tp_net_stats *st,
		       const struct tp_endpoint_key *keys, const struct tp_net_counters *vals,
		       size_t n, const struct net_acc *acc, const struct http_ports *ports)
{
	memset(nf, 0, sizeof(*nf));
	nf->tcp = st->tcp;
	nf->dns_lookups = st->dns_lookups;
	nf->dns_failures = st->dns_failures;
	nf->dns_queries = st->dns_queries;
	nf->dns_query_failures = st->dns_query_failures;
	nf->endpoints_dropped = st->endpoints_dropped;
	nf->connect_latency = st->connect_lat;
	nf->h2_connections = acc ? acc->h2_connections : 0;
	if (acc && acc->nhosts) {
		nf->hosts = malloc(acc->nhosts * sizeof(*nf->hosts));
		if (!nf->hosts)
			return -ENOMEM;
		memcpy(nf->hosts, acc->hosts, acc->nhosts * sizeof(*nf->hosts));
		nf->nhosts = acc->nhosts;
	}
	if (n) {
		nf->eps = calloc(n, sizeof(*nf->eps));
		if (!nf->eps)
			return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		struct net_endpoint *e = NULL;
		__u16 family = keys[i].family;
		__u8 addr[16];
		char address[64];

		memcpy(addr, keys[i].addr, sizeof(addr));
		canon_addr(&family, addr);
		net_fmt_addr(address, sizeof(address), family, addr, keys[i].port);
		/* A v4-mapped socket and a v4 one to the same place are one endpoint. */
		for (size_t k = 0; k < nf->neps; k++)
			if (!strcmp(nf->eps[k].address, address))
				e = &nf->eps[k];
		if (!e) {
			e = &nf->eps[nf->neps++];
			snprintf(e->address, sizeof(e->address), "%s", address);
			names_of(acc, family, addr, e->names, sizeof(e->names));
		}
		add_counters(&e->c, &vals[i]);
		if (is_http_port(ports, keys[i].port) &&
		    (vals[i].failures[TP_CONN_REFUSED] || vals[i].failures[TP_CONN_TIMEOUT])) {
			char first[TP_HTTP_HOST_LEN];
			struct http_host *h;

			snprintf(first, sizeof(first), "%s", e->names[0] ? e->names : e->address);
			first[strcspn(first, ",")] = '\0';
			if (!e->names[0])
				first[strcspn(first, ":")] = '\0';
			h = host_get(&nf->hosts, &nf->nhosts, first);
			if (h) {
				h->failures[HTTP_FAIL_REFUSED] += vals[i].failures[TP_CONN_REFUSED];
				h->failures[HTTP_FAIL_TIMEOUT] += vals[i].failures[TP_CONN_TIMEOUT];
			}
		}
	}
	if (nf->neps)
		qsort(nf->eps, nf->neps, sizeof(*nf->eps), cmp_endpoints);
	if (nf->nhosts)
		qsort(nf->hosts, nf->nhosts, sizeof(*nf->hosts), cmp_hosts);
	return 0;
}

void net_figures__fini(struct net_figures *nf)
{
	free(nf->eps);
	free(nf->hosts);
	memset(nf, 0, sizeof(*nf));
}

__u64 net_figures__http_unanswered(const struct net_figures *nf)
{
	__u64 n = 0;

	for (size_t i = 0; i < nf->nhosts; i++)
		n += nf->hosts[i].unanswered;
	return n;
}

__u64 net_figures__http_requests(const struct net_figures *nf)
{
	__u64 n = 0;

	for (size_t i = 0; i < nf->nhosts; i++)
		n += nf->hosts[i].requests;
	return n;
}

static __u64 host_failures(const struct http_host *h, int kind)
{
	__u64 n = 0;

	for (int k = 0; k < HTTP_FAIL_KINDS; k++)
		if (kind < 0 || kind == k)
			n += h->failures[k];
	return n;
}

__u64 net_figures__http_failures(const struct net_figures *nf, int kind)
{
	__u64 n = 0;

	for (size_t i = 0; i < nf->nhosts; i++)
		n += host_failures(&nf->hosts[i], kind);
	return n;
}

bool net_figures__any(const struct net_figures *nf)
{
	return nf->tcp.attempts || nf->dns_lookups || nf->dns_queries || nf->nhosts ||
	       nf->h2_connections;
}

#define NET_COUNTER(name, field)                                                                   \
	{                                                                                          \
		name, offsetof(struct tp_net_counters, field)                                      \
	}

const struct net_counter_desc net_counter_descs[NET_COUNTERS] = {
	NET_COUNTER("tcp.connect_attempts", attempts),
	NET_COUNTER("tcp.connects", connects),
	NET_COUNTER("tcp.resets_received", resets_received),
	NET_COUNTER("tcp.resets_sent", resets_sent),
	NET_COUNTER("tcp.retransmits", retransmits),
	NET_COUNTER("tx_bytes", tx_bytes),
	NET_COUNTER("rx_bytes", rx_bytes),
};

__u64 net_counter(const struct tp_net_counters *c, int i)
{
	return *(const __u64 *)((const char *)c + net_counter_descs[i].off);
}

static void write_counters(struct jw *w, const char *prefix, const struct tp_net_counters *c)
{
	char key[96];

	for (int i = 0; i < NET_COUNTERS; i++) {
		snprintf(key, sizeof(key), "%s%s", prefix, net_counter_descs[i].name);
		jw_ku64(w, key, net_counter(c, i));
	}
	snprintf(key, sizeof(key), "%stcp.connect_failures", prefix);
	jw_ku64(w, key, failures(c));
	for (int i = 0; i < TP_CONN_FAILURE_KINDS; i++) {
		snprintf(key, sizeof(key), "%stcp.connect_failures.%s", prefix,
			 connect_failure_names[i]);
		jw_ku64(w, key, c->failures[i]);
	}
}

void net_figures__write_metrics(struct jw *w, const struct net_figures *nf, bool net, bool http)
{
	char key[64];

	if (!net)
		return;
	write_counters(w, "net.", &nf->tcp);
	jw_ku64(w, "net.dns.lookups", nf->dns_lookups);
	jw_ku64(w, "net.dns.failures", nf->dns_failures);
	jw_ku64(w, "net.dns.queries", nf->dns_queries);
	jw_ku64(w, "net.dns.query_failures", nf->dns_query_failures);
	if (!http)
		return;
	jw_ku64(w, "http.requests", net_figures__http_requests(nf));
	jw_ku64(w, "http.failures", net_figures__http_failures(nf, -1));
	for (int k = 0; k < HTTP_FAIL_KINDS; k++) {
		snprintf(key, sizeof(key), "http.failures.%s", http_failure_names[k]);
		jw_ku64(w, key, net_figures__http_failures(nf, k));
	}
	jw_ku64(w, "http.requests.unanswered", net_figures__http_unanswered(nf));
	jw_ku64(w, "http.h2_connections", nf->h2_connections);
}

static void write_host(struct jw *w, const struct http_host *h)
{
	static const char *const cls[6] = { "other", "1xx", "2xx", "3xx", "4xx", "5xx" };

	jw_obj_begin(w);
	jw_kstr(w, "host", h->host);
	jw_ku64(w, "requests", h->requests);
	jw_key(w, "status");
	jw_obj_begin(w);
	for (int i = 1; i < 6; i++)
		jw_ku64(w, cls[i], h->classes[i]);
	jw_ku64(w, cls[0], h->classes[0]); /* a status outside 100-599 */
	jw_obj_end(w);
	jw_ku64(w, "unanswered", h->unanswered);
	jw_ku64(w, "failures", host_failures(h, -1));
	jw_key(w, "failures_by_kind");
	jw_obj_begin(w);
	for (int k = 0; k < HTTP_FAIL_KINDS; k++)
		jw_ku64(w, http_failure_names[k], h->failures[k]);
	jw_obj_end(w);
	jw_obj_end(w);
}

void net_figures__write_json(struct jw *w, const struct net_figures *nf)
{
	jw_obj_begin(w);
	jw_key(w, "endpoints");
	jw_arr_begin(w);
	for (size_t i = 0; i < nf->neps; i++) {
		const struct net_endpoint *e = &nf->eps[i];

		jw_obj_begin(w);
		jw_kstr(w, "address", e->address);
		jw_kstr(w, "names", e->names);
		write_counters(w, "", &e->c);
		jw_ku64(w, "http_resets", e->c.http_resets);
		jw_obj_end(w);
	}
	jw_arr_end(w);
	jw_ku64(w, "endpoints_dropped", nf->endpoints_dropped);
	jw_key(w, "http_hosts");
	jw_arr_begin(w);
	for (size_t i = 0; i < nf->nhosts; i++)
		write_host(w, &nf->hosts[i]);
	jw_arr_end(w);
	jw_kstr(w, "http2", "HTTP/2 requests are not decoded: their connections are counted");
	jw_obj_end(w);
}

static void read_counters(struct tp_net_counters *c, const char *prefix, const struct json *o)
{
	char key[96];

	for (int i = 0; i < NET_COUNTERS; i++) {
		snprintf(key, sizeof(key), "%s%s", prefix, net_counter_descs[i].name);
		*(__u64 *)((char *)c + net_counter_descs[i].off) = (__u64)json_num(o, key);
	}
	for (int i = 0; i < TP_CONN_FAILURE_KINDS; i++) {
		snprintf(key, sizeof(key), "%stcp.connect_failures.%s", prefix,
			 connect_failure_names[i]);
		c->failures[i] = (__u64)json_num(o, key);
	}
}

int net_figures__from_json(struct net_figures *nf, const struct json *metrics,
			   const struct json *net)
{
	const struct json *eps = json_get(net, "endpoints"), *hosts = json_get(net, "http_hosts");
	size_t n = json_len(eps), nh = json_len(hosts);

	memset(nf, 0, sizeof(*nf));
	read_counters(&nf->tcp, "net.", metrics);
	nf->dns_lookups = (__u64)json_num(metrics, "net.dns.lookups");
	nf->dns_failures = (__u64)json_num(metrics, "net.dns.failures");
	nf->dns_queries = (__u64)json_num(metrics, "net.dns.queries");
	nf->dns_query_failures = (__u64)json_num(metrics, "net.dns.query_failures");
	nf->h2_connections = (__u64)json_num(metrics, "http.h2_connections");
	nf->endpoints_dropped = (__u64)json_num(net, "endpoints_dropped");
	if (n && !(nf->eps = calloc(n, sizeof(*nf->eps))))
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		const struct json *e = json_at(eps, i);
		struct net_endpoint *d = &nf->eps[nf->neps++];

		snprintf(d->address, sizeof(d->address), "%s", json_str(e, "address"));
		snprintf(d->names, sizeof(d->names), "%s", json_str(e, "names"));
		read_counters(&d->c, "", e);
		d->c.http_resets = (__u64)json_num(e, "http_resets");
	}
	if (nh && !(nf->hosts = calloc(nh, sizeof(*nf->hosts))))
		return -ENOMEM;
	for (size_t i = 0; i < nh; i++) {
		static const char *const cls[6] = { "other", "1xx", "2xx", "3xx", "4xx", "5xx" };
		const struct json *h = json_at(hosts, i), *st = json_get(h, "status");
		const struct json *fk = json_get(h, "failures_by_kind");
		struct http_host *d = &nf->hosts[nf->nhosts++];

		snprintf(d->host, sizeof(d->host), "%s", json_str(h, "host"));
		d->requests = (__u64)json_num(h, "requests");
		for (int c = 0; c < 6; c++)
			d->classes[c] = (__u64)json_num(st, cls[c]);
		for (int k = 0; k < HTTP_FAIL_KINDS; k++)
			d->failures[k] = (__u64)json_num(fk, http_failure_names[k]);
		d->unanswered = (__u64)json_num(h, "unanswered");
	}
	return 0;
}

/* A host name in at most width columns: its end, where the domain is, behind "…". */
static const char *host_fit(char *buf, size_t width, const char *host)
{
	size_t cols = 0, n = strlen(host), start;

	for (size_t i = 0; i < n; i++)
		cols += ((unsigned char)host[i] & 0xc0) != 0x80;
	if (cols <= width)
		return host;
	start = n;
	for (size_t kept = 0; start > 0 && kept < width - 1;)
		kept += ((unsigned char)host[--start] & 0xc0) != 0x80;
	while (start < n && ((unsigned char)host[start] & 0xc0) == 0x80)
		start++;
	snprintf(buf, 200, NET_HOST_CUT_MARK "%s", host + start);
	return buf;
}

/* "name (address)" when the task resolved a name to it, else the address. */
static const char *endpoint_label(char *buf, size_t len, const struct net_endpoint *e)
{
	if (e->names[0])
		snprintf(buf, len, "%.*s (%s)", (int)strcspn(e->names, ","), e->names, e->address);
	else
		snprintf(buf, len, "%s", e->address);
	return buf;
}

void net_figures__print_summary(FILE *f, const struct net_figures *nf, bool all)
{
	size_t top = all ? 50 : TOP_ENDPOINTS;
	const struct tp_net_counters *c = &nf->tcp;
	char a[32], b[32], label[200];
	size_t shown = 0;
	__u64 others = 0;

	if (!net_figures__any(nf))
		return;
	fprintf(f, "  network    %llu connects, %llu failed (%llu refused, %llu timeout,\n",
		(unsigned long long)c->attempts, (unsigned long long)failures(c),
		(unsigned long long)c->failures[TP_CONN_REFUSED],
		(unsigned long long)c->failures[TP_CONN_TIMEOUT]);
	fprintf(f,
		"             %llu unreachable, %llu other); resets %llu in, %llu out; %llu "
		"retransmits\n",
		(unsigned long long)c->failures[TP_CONN_UNREACHABLE],
		(unsigned long long)c->failures[TP_CONN_OTHER],
		(unsigned long long)c->resets_received, (unsigned long long)c->resets_sent,
		(unsigned long long)c->retransmits);
	fprintf(f, "             sent %s, received %s\n", tp_fmt_bytes(a, sizeof(a), c->tx_bytes),
		tp_fmt_bytes(b, sizeof(b), c->rx_bytes));
	fprintf(f, "             DNS %llu lookups (%llu failed), %llu queries sent (%llu failed)\n",
		(unsigned long long)nf->dns_lookups, (unsigned long long)nf->dns_failures,
		(unsigned long long)nf->dns_queries, (unsigned long long)nf->dns_query_failures);
	if (nf->connect_latency.count)
		fprintf(f, "             connect latency p50 %s, p99 %s\n",
			tp_fmt_dur(a, sizeof(a), tp_hist__quantile(&nf->connect_latency, 0.50)),
			tp_fmt_dur(b, sizeof(b), tp_hist__quantile(&nf->connect_latency, 0.99)));
	for (size_t i = 0; i < nf->neps && shown < top; i++) {
		const struct net_endpoint *e = &nf->eps[i];

		if (!all && !failures(&e->c) && !e->c.resets_received)
			continue;
		if (!shown++)
			fprintf(f, "  endpoints  %6s %6s %6s  %s\n", "CONN", "FAILED", "RESETS",
				all ? "ENDPOINT" : "ENDPOINT (with failures, most first)");
		fprintf(f, "             %6llu %6llu %6llu  %.45s\n",
			(unsigned long long)e->c.attempts, (unsigned long long)failures(&e->c),
			(unsigned long long)e->c.resets_received,
			endpoint_label(label, sizeof(label), e));
	}
	if (shown < nf->neps && all)
		fprintf(f, "             (%zu more in the JSON record)\n", nf->neps - shown);
	if (nf->nhosts)
		fprintf(f, "  http       %5s %4s %4s %4s %4s %5s %6s  %s\n", "REQS", "2xx", "3xx",
			"4xx", "5xx", "OTHER", "FAILED", "HOST");
	for (size_t i = 0; i < nf->nhosts && i < TOP_HOSTS; i++) {
		const struct http_host *h = &nf->hosts[i];
		__u64 other =
			h->requests - h->classes[2] - h->classes[3] - h->classes[4] - h->classes[5];

		others += other;
		fprintf(f, "             %5llu %4llu %4llu %4llu %4llu %5llu %6llu  %s\n",
			(unsigned long long)h->requests, (unsigned long long)h->classes[2],
			(unsigned long long)h->classes[3], (unsigned long long)h->classes[4],
			(unsigned long long)h->classes[5], (unsigned long long)other,
			(unsigned long long)host_failures(h, -1), host_fit(label, 27, h->host));
	}
	if (nf->nhosts > TOP_HOSTS)
		fprintf(f, "             (%zu more hosts in the JSON record)\n",
			nf->nhosts - TOP_HOSTS);
	if (others)
		fprintf(f, "             OTHER: 1xx and other statuses, resets, "
			   "unanswered\n");
	if (nf->h2_connections)
		fprintf(f, "             %llu HTTP/2 connections: their requests are not decoded\n",
			(unsigned long long)nf->h2_connections);
}
