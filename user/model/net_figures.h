/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A task's network figures: TCP totals and endpoints (from the BPF maps), names it
 * resolved and HTTP outcomes by host (from events), and how they are printed and saved.
 */
#ifndef TP_NET_H
#define TP_NET_H

#include <stdbool.h>
#include <stdio.h>
#include <linux/types.h>

#include "base/hist.h"
#include "base/json.h"
#include "taskprobe.h"

/* What makes an HTTP failure: docs/task-record.md, "HTTP outcomes" and `http.failures`. */
enum http_failure {
	HTTP_FAIL_5XX,
	HTTP_FAIL_429,
	HTTP_FAIL_REFUSED,
	HTTP_FAIL_TIMEOUT,
	HTTP_FAIL_RESET,     /* reset or closed before the response's headers ended */
	HTTP_FAIL_TRUNCATED, /* body cut short by the server (a status not itself a failure),
			      * or, in records before, headers whole and no status counted */
	HTTP_FAIL_KINDS,
};

extern const char *const http_failure_names[HTTP_FAIL_KINDS];
extern const char *const connect_failure_names[TP_CONN_FAILURE_KINDS];

/* The plain counters of struct tp_net_counters, by name ("net." before it in metrics). */
#define NET_COUNTERS 7
struct net_counter_desc {
	const char *name;
	size_t off;
};
extern const struct net_counter_desc net_counter_descs[NET_COUNTERS];
__u64 net_counter(const struct tp_net_counters *c, int i);

/* Ports whose refused or timed-out connects count as HTTP failures (config http_ports). */
#define NET_HTTP_PORTS_MAX 16
struct http_ports {
	int n;
	__u16 port[NET_HTTP_PORTS_MAX];
};
void http_ports__default(struct http_ports *p);
/* "80,443,8080": 0, or -EINVAL with *why set. */
int http_ports__parse(struct http_ports *p, const char *s, const char **why);

struct net_endpoint {
	char address[64];	     /* "10.0.0.1:443", "[::1]:80" */
	char names[TP_DNS_NAME_LEN]; /* names the task resolved to this address, comma-separated */
	struct tp_net_counters c;
};

/* A Host longer than the event's field: "…" and the name's end. */
#define NET_HOST_CUT_MARK "\u2026"
#define NET_HOST_LEN (TP_HTTP_HOST_LEN + sizeof(NET_HOST_CUT_MARK))

/*
 * One remote HTTP host. Every request sent has one outcome: a response whose headers
 * were whole (by status class; its body cut short by the server adds
 * failures[HTTP_FAIL_TRUNCATED] unless the status is a failure), a reset
 * (failures[HTTP_FAIL_RESET]), or none yet when the task ended (unanswered). requests
 * is their sum (older records also have truncated responses without a status).
 */
struct http_host {
	char host[NET_HOST_LEN];
	__u64 requests;
	__u64 classes[6]; /* complete responses by status / 100: 1xx..5xx; [0] for others */
	__u64 failures[HTTP_FAIL_KINDS];
	__u64 unanswered;
};

struct net_figures {
	struct tp_net_counters tcp;
	__u64 dns_lookups;
	__u64 dns_failures;
	__u64 dns_queries;
	__u64 dns_query_failures;
	__u64 endpoints_dropped;
	__u64 h2_connections; /* HTTP/2 connections seen: their requests are not decoded */
	struct tp_hist connect_latency;
	struct net_endpoint *eps; /* most failures first */
	size_t neps;
	struct http_host *hosts; /* most requests first */
	size_t nhosts;
};

/* What a task's events taught the collector: names resolved, HTTP outcomes. */
struct net_acc {
	struct dns_name *names;
	size_t nnames;
	struct http_host *hosts;
	size_t nhosts;
	__u64 h2_connections;
};

void net_acc__dns(struct net_acc *a, const struct tp_dns_event *e);
/* count requests still waiting on host when the task's figures were read. */
void net_figures__add_unanswered(struct net_figures *nf, const char *host, bool cut, __u64 count);
/* A request whose response's headers were whole when the task ended: by its status. */
void net_figures__add_answered(struct net_figures *nf, const char *host, bool cut, __u16 status);
void net_acc__http(struct net_acc *a, const struct tp_http_event *e);
void net_acc__fini(struct net_acc *a);

/*
 * Builds the figures from the BPF totals, the task's endpoint rows and the events;
 * refused and timed-out connects to HTTP ports become HTTP failures of their host.
 */
int net_figures__build(struct net_figures *nf, const struct tp_net_stats *st,
		       const struct tp_endpoint_key *keys, const struct tp_net_counters *vals,
		       size_t n, const struct net_acc *acc, const struct http_ports *ports);
void net_figures__fini(struct net_figures *nf);
__u64 net_figures__http_requests(const struct net_figures *nf);
__u64 net_figures__http_unanswered(const struct net_figures *nf);
__u64 net_figures__http_failures(const struct net_figures *nf, int kind /* -1: all */);
bool net_figures__any(const struct net_figures *nf);

/* "net.*" and "http.*" members of the record's "metrics" object. */
void net_figures__write_metrics(struct jw *w, const struct net_figures *nf, bool net, bool http);
/* The "network" object: endpoints and HTTP hosts. */
void net_figures__write_json(struct jw *w, const struct net_figures *nf);
int net_figures__from_json(struct net_figures *nf, const struct json *metrics,
			   const struct json *net);
/* The summary's lines: endpoints with failures, or all of them (up to 50) when all. */
void net_figures__print_summary(FILE *f, const struct net_figures *nf, bool all);

/* "10.0.0.1:443" or "[::1]:443" (IPv4-mapped IPv6 shown as IPv4). */
void net_fmt_addr(char *buf, size_t len, __u16 family, const __u8 *addr, int port);

#endif /* TP_NET_H */
