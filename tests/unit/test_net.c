// SPDX-License-Identifier: GPL-2.0
/* Unit tests: network figures from events and BPF rows, their JSON, http_ports. */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "harness.h"
#include "model/net_figures.h"
#include "testutil.h"

static struct tp_dns_event dns(const char *name, const char *ip)
{
	struct tp_dns_event e = { .hdr.type = TP_EV_DNS };

	snprintf(e.name, sizeof(e.name), "%s", name);
	e.naddrs = 1;
	e.addrs[0].family = AF_INET;
	inet_pton(AF_INET, ip, e.addrs[0].addr);
	return e;
}

static struct tp_http_event http(const char *host, int status, int kind)
{
	struct tp_http_event e = { .hdr.type = TP_EV_HTTP, .status = (__u16)status };

	e.kind = (__u8)kind;
	snprintf(e.method, sizeof(e.method), "GET");
	snprintf(e.host, sizeof(e.host), "%s", host);
	return e;
}

static struct tp_endpoint_key key(const char *ip, int port, bool mapped)
{
	struct tp_endpoint_key k = { .port = (__u16)port };

	if (mapped) {
		k.family = AF_INET6;
		k.addr[10] = k.addr[11] = 0xff;
		inet_pton(AF_INET, ip, k.addr + 12);
	} else {
		k.family = AF_INET;
		inet_pton(AF_INET, ip, k.addr);
	}
	return k;
}

TEST(TIER_UNIT, net_figures_join_names_http_and_failures)
{
	struct net_acc acc = { 0 };
	struct tp_net_stats st = { 0 };
	struct tp_endpoint_key keys[3] = { key("10.0.0.2", 443, false), key("10.0.0.2", 443, true),
					   key("10.0.0.9", 8443, false) };
	struct tp_net_counters vals[3] = {
		{ .attempts = 2, .connects = 2, .rx_bytes = 10 },
		{ .attempts = 1, .connects = 1, .rx_bytes = 5 },
		{ .attempts = 2, .failures = { [TP_CONN_REFUSED] = 1, [TP_CONN_TIMEOUT] = 1 } }
	};
	struct tp_dns_event d1 = dns("b.s3.amazonaws.com", "10.0.0.2"),
			    d2 = dns("alias.example", "10.0.0.2"),
			    d3 = dns("x.example", "10.0.0.9");
	struct tp_http_event ev[] = { http("b.s3.amazonaws.com", 200, TP_HTTP_RESPONSE),
				      http("b.s3.amazonaws.com", 503, TP_HTTP_RESPONSE),
				      http("b.s3.amazonaws.com", 429, TP_HTTP_RESPONSE),
				      http("b.s3.amazonaws.com", 0, TP_HTTP_RESET),
				      http("", 0, TP_HTTP_H2) };
	struct http_ports ports;
	struct net_figures nf, back;
	const struct net_endpoint *e;
	char *buf = NULL, err[64];
	size_t len = 0;
	struct json *j;
	struct jw w;
	FILE *f;

	http_ports__default(&ports);
	net_acc__dns(&acc, &d1);
	net_acc__dns(&acc, &d1); /* the same answer twice: kept once */
	net_acc__dns(&acc, &d2);
	net_acc__dns(&acc, &d3);
	for (size_t i = 0; i < sizeof(ev) / sizeof(ev[0]); i++)
		net_acc__http(&acc, &ev[i]);
	ASSERT_EQ(acc.nnames, 3, "names kept once each");
	ASSERT_OK(net_figures__build(&nf, &st, keys, vals, 3, &acc, &ports), "build");
	ASSERT_EQ(nf.neps, 2, "a v4-mapped socket joins its IPv4 endpoint");
	e = nf.neps ? &nf.eps[0] : NULL;
	ASSERT_TRUE(e && !strcmp(e->address, "10.0.0.9:8443"), "failing endpoint first");
	e = nf.neps == 2 ? &nf.eps[1] : NULL;
	ASSERT_TRUE(e && !strcmp(e->names, "b.s3.amazonaws.com,alias.example"), "both names");
	ASSERT_TRUE(e && e->c.attempts == 3 && e->c.rx_bytes == 15, "counters summed");
	/* Every request sent has one outcome: three responses and a reset. */
	ASSERT_EQ(net_figures__http_requests(&nf), 4, "requests");
	ASSERT_EQ(net_figures__http_failures(&nf, HTTP_FAIL_5XX), 1, "5xx");
	ASSERT_EQ(net_figures__http_failures(&nf, HTTP_FAIL_429), 1, "429");
	ASSERT_EQ(net_figures__http_failures(&nf, HTTP_FAIL_RESET), 1, "reset before a response");
	ASSERT_EQ(net_figures__http_failures(&nf, HTTP_FAIL_REFUSED), 1, "refused on an HTTP port");
	ASSERT_EQ(net_figures__http_failures(&nf, HTTP_FAIL_TIMEOUT), 1, "timeout on an HTTP port");
	ASSERT_EQ(nf.h2_connections, 1, "HTTP/2 counted, not decoded");

	/* What is written is what is read back. */
	f = open_memstream(&buf, &len);
	jw_init(&w, f, false);
	jw_obj_begin(&w);
	jw_key(&w, "metrics");
	jw_obj_begin(&w);
	net_figures__write_metrics(&w, &nf, true, true);
	jw_obj_end(&w);
	jw_key(&w, "network");
	net_figures__write_json(&w, &nf);
	jw_obj_end(&w);
	fclose(f);
	j = json_parse(buf, len, err, sizeof(err));
	ASSERT_TRUE(j != NULL, "JSON parses");
	if (j) {
		ASSERT_OK(net_figures__from_json(&back, json_get(j, "metrics"),
						 json_get(j, "network")),
			  "read back");
		ASSERT_EQ(back.neps, nf.neps, "endpoints back");
		ASSERT_EQ(net_figures__http_failures(&back, -1),
			  net_figures__http_failures(&nf, -1), "failures back");
		ASSERT_TRUE(back.neps == 2 &&
				    !memcmp(&back.eps[1].c, &nf.eps[1].c, sizeof(nf.eps[1].c)),
			    "endpoint counters back");
		net_figures__fini(&back);
		json_free(j);
	}
	free(buf);
	net_figures__fini(&nf);
	net_acc__fini(&acc);
}

/*
 * A response whose headers were whole counts by its status however its body ended: cut
 * by the server (a truncated count beside a status that is no failure itself), or left
 * unread by the client (nothing more). Only a response with no status is truncated
 * alone (records before). requests is the classes, resets and such truncated ones.
 */
TEST(TIER_UNIT, http_status_counts_however_the_body_ends)
{
	struct tp_http_event ev[] = { http("h", 200, TP_HTTP_TRUNCATED),
				      http("h", 503, TP_HTTP_TRUNCATED),
				      http("h", 500, TP_HTTP_TRUNCATED),
				      http("h", 200, TP_HTTP_TRUNCATED),
				      http("h", 0, TP_HTTP_TRUNCATED) };
	struct net_acc acc = { 0 };
	struct tp_net_stats st = { 0 };
	struct http_ports ports;
	struct net_figures nf;

	ev[2].flags |= TP_HTTP_BODY_UNREAD; /* urllib on a 500: the body never read */
	ev[3].flags |= TP_HTTP_BODY_UNREAD; /* head -c on a stream */
	http_ports__default(&ports);
	for (size_t i = 0; i < sizeof(ev) / sizeof(ev[0]); i++)
		net_acc__http(&acc, &ev[i]);
	if (!ASSERT_OK(net_figures__build(&nf, &st, NULL, NULL, 0, &acc, &ports), "build"))
		return;
	ASSERT_EQ(nf.nhosts, 1, "one host");
	ASSERT_EQ(nf.hosts[0].requests, 5, "requests");
	ASSERT_EQ(nf.hosts[0].classes[2], 2, "2xx: cut and unread alike");
	ASSERT_EQ(nf.hosts[0].classes[5], 2, "5xx: cut and unread alike");
	ASSERT_EQ(net_figures__http_failures(&nf, HTTP_FAIL_5XX), 2, "both 5xx are failures");
	ASSERT_EQ(
		net_figures__http_failures(&nf, HTTP_FAIL_TRUNCATED), 2,
		"truncated: the cut 200 and the old record's, not the 5xx (a request fails once)");
	ASSERT_EQ(net_figures__http_failures(&nf, -1), 4, "failed requests");
	net_figures__fini(&nf);
	net_acc__fini(&acc);
}

TEST(TIER_UNIT, http_ports_parse_and_reject)
{
	struct http_ports p;
	const char *why = NULL;

	ASSERT_OK(http_ports__parse(&p, "80,443,8080", &why), "three ports");
	ASSERT_EQ(p.n, 3, "n");
	ASSERT_EQ(p.port[2], 8080, "third");
	ASSERT_EQ(http_ports__parse(&p, "80,,443", &why), -22, "empty item");
	ASSERT_TRUE(why && !strncmp(why, "http_ports", 10), "a reason");
	ASSERT_EQ(http_ports__parse(&p, "0", &why), -22, "port 0");
	ASSERT_EQ(http_ports__parse(&p, "65536", &why), -22, "too big");
	ASSERT_EQ(http_ports__parse(&p, "80x", &why), -22, "junk");
	ASSERT_EQ(http_ports__parse(&p, "1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17", &why), -22,
		  "17 ports");
	ASSERT_EQ(p.n, 3, "a rejected value leaves the ports as they were");
}
