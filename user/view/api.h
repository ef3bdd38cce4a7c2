/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The daemon's HTTP API (libmicrohttpd, in the daemon's own event loop, no thread):
 * JSON answers from the store's queries, the same rows the CLI prints with --json.
 *   /healthz, /api/v1/tasks, /api/v1/tasks/ID, /api/v1/tasks/ID/histograms,
 *   /api/v1/tasks/ID/series?points=N,
 *   /api/v1/count?metric=M[&since=&label=K=V&by=&host=], /metrics (Prometheus text)
 */
#ifndef TP_API_H
#define TP_API_H

struct api;
struct collector;
struct loop;
struct store;

/* What the API answers from: the store, and the daemon's live side for /metrics. */
struct jw;

struct api_source {
	struct store *store;
	struct collector *c;
	int (*running)(void *ctx); /* tasks tracked now */
	void *ctx;
	const char *metrics_label; /* a task label key /metrics sums by too, or "" */
	/* A running task's record so far written to w: 0, or -ENOENT when not running. */
	int (*live)(void *ctx, const char *id, struct jw *w);
	const char *db_path; /* the store's path, for its spool (/metrics), or NULL */
};

#define API_LISTEN_DEFAULT "127.0.0.1:9464"

/*
 * Serves on listen ("ADDR:PORT", IPv4 or [IPv6]); token, when set, is required of
 * every request as "Authorization: Bearer TOKEN", and an address that is not
 * loopback is refused without one. NULL with the reason said in one line.
 */
struct api *api__open(const char *listen, const char *token, const struct api_source *src,
		      struct loop *l);
void api__close(struct api *a);
/*
 * The routes without a server (tests and the fuzzer): an api over src, and the answer
 * to GET url?query (query decoded, "k=v&k=v"): its HTTP status, its body malloc'd.
 */
struct api *api__offline(const struct api_source *src);
unsigned api__answer(struct api *api, const char *url, const char *query, char **body, size_t *len);

#endif /* TP_API_H */
