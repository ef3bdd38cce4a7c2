// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target: the HTTP API's routes and parameters over a small store of its
 * own (two ended tasks, one running). Input: the path, a newline, then the query
 * ("k=v&k=v", as libmicrohttpd hands it over, decoded). Every answer has a status the
 * API documents, and every JSON answer parses.
 */
#define _XOPEN_SOURCE 700
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/json.h"
#include "model/task.h"
#include "store/store.h"
#include "view/api.h"

static struct api *api;
static char dir[] = "/tmp/taskprobe-fuzz-api.XXXXXX";

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	return remove(path);
}

/* The store is this run's own: gone when the fuzzer exits. */
static void cleanup(void)
{
	nftw(dir, remove_one, 8, FTW_DEPTH | FTW_PHYS);
}

static void add_task(struct store *s, const char *id, const char *job, bool end)
{
	static char *argv[] = { "make", "-j2" };
	struct label l[1] = { { "job", (char *)job } };
	struct task_record t;
	__s64 tid;

	memset(&t, 0, sizeof(t));
	snprintf(t.id, sizeof(t.id), "%s", id);
	t.argv = argv;
	t.argc = 2;
	t.labels[0] = l[0];
	t.nlabels = 1;
	snprintf(t.host, sizeof(t.host), "fuzzhost");
	t.start_real_ns = 1700000000000000000ULL;
	t.wall_ns = 2000000000ULL;
	t.fig.proc.execs = 7;
	t.fig.cpu.cpu_ns = 123456789;
	if (store__task_begin(s, &t, NULL, 0, &tid))
		abort();
	if (end && store__task_end(s, tid, &t))
		abort();
}

static void setup(void)
{
	struct api_source src = { 0 };
	char path[64];
	struct store *s;

	if (!mkdtemp(dir))
		abort();
	atexit(cleanup);
	snprintf(path, sizeof(path), "%s/tp.db", dir);
	s = store__open(path, true, (gid_t)-1);
	if (!s)
		abort();
	add_task(s, "t1", "build", true);
	add_task(s, "t2", "test", true);
	add_task(s, "t3", "build", false);
	src.store = s;
	src.metrics_label = "job";
	api = api__offline(&src);
	if (!api)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1), *query, *body = NULL;
	unsigned status;
	size_t len;

	if (!text)
		return 0;
	if (!api)
		setup();
	memcpy(text, data, size);
	text[size] = '\0';
	query = strchr(text, '\n');
	if (query)
		*query++ = '\0';
	status = api__answer(api, text, query, &body, &len);
	if (status != 200 && status != 400 && status != 404 && status != 500)
		__builtin_trap();
	if (body && strcmp(text, "/metrics")) {
		char err[128];
		struct json *j = json_parse(body, len, err, sizeof(err));

		/* A JSON answer always; an error one is {"error": "..."}. */
		if (!j || (status != 200 && !json_get(j, "error")))
			__builtin_trap();
		json_free(j);
	}
	free(body);
	free(text);
	return 0;
}
