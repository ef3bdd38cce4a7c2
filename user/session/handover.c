// SPDX-License-Identifier: GPL-2.0
/* A daemon's running tasks described on disk, for the daemon that adopts them. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>

#include "base/json.h"
#include "base/util.h"
#include "session/handover.h"

#define HANDOVER_SUFFIX ".task"

int handover__dir(const char *db, char *out, size_t len)
{
	return (size_t)snprintf(out, len, "%s.tasks", db) >= len ? -ENAMETOOLONG : 0;
}

static int write_task(FILE *f, void *ctx)
{
	const struct handover_task *t = ctx;
	struct jw w;

	jw_init(&w, f, false);
	jw_obj_begin(&w);
	jw_ku64(&w, "abi", (__u64)t->abi);
	jw_ku64(&w, "slot", (__u64)t->slot);
	jw_key(&w, "run");
	jw_bool(&w, t->run);
	jw_kstr(&w, "id", t->id);
	jw_kstr(&w, "cgroup", t->cgroup);
	jw_kstr(&w, "memcg", t->memcg);
	jw_kstr(&w, "msock", t->msock);
	jw_ku64(&w, "start_ns", t->start_ns);
	jw_ku64(&w, "start_real_ns", t->start_real_ns);
	jw_ku64(&w, "interval_ms", t->interval_ms);
	jw_ku64(&w, "grace_s", t->grace_s);
	jw_key(&w, "keep_leftovers");
	jw_bool(&w, t->keep_leftovers);
	jw_ku64(&w, "collect", t->collect);
	jw_key(&w, "tid");
	jw_i64(&w, t->tid);
	jw_ku64(&w, "mem_v1_peak", t->mem_v1_peak);
	jw_key(&w, "labels");
	jw_arr_begin(&w);
	for (int i = 0; i < t->nlabels; i++)
		jw_str(&w, t->kv[i]);
	jw_arr_end(&w);
	jw_key(&w, "argv");
	jw_arr_begin(&w);
	for (int i = 0; i < t->argc; i++)
		jw_str(&w, t->argv[i]);
	jw_arr_end(&w);
	jw_key(&w, "rules");
	if (t->rules)
		jw_str(&w, t->rules);
	else
		jw_null(&w);
	jw_obj_end(&w);
	fputc('\n', f);
	return 0;
}

int handover__save(const char *dir, const struct handover_task *t)
{
	char path[PATH_MAX];

	if (mkdir(dir, 0700) && errno != EEXIST)
		return -errno;
	if ((size_t)snprintf(path, sizeof(path), "%s/%d" HANDOVER_SUFFIX, dir, t->slot) >=
	    sizeof(path))
		return -ENAMETOOLONG;
	return tp_write_whole(path, write_task, (void *)t);
}

int handover__lock(const char *dir)
{
	char path[PATH_MAX];
	int fd;

	if (mkdir(dir, 0700) && errno != EEXIST)
		return -errno;
	if ((size_t)snprintf(path, sizeof(path), "%s/.daemon.lock", dir) >= sizeof(path))
		return -ENAMETOOLONG;
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	if (flock(fd, LOCK_EX | LOCK_NB)) {
		int err = errno == EWOULDBLOCK ? -EBUSY : -errno;

		close(fd);
		return err;
	}
	return fd;
}

void handover__remove(const char *dir, int slot)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%d" HANDOVER_SUFFIX, dir, slot);
	unlink(path);
}

static void copy_str(char *dst, size_t len, const struct json *j, const char *key)
{
	snprintf(dst, len, "%s", json_str(j, key));
}

/* One file's task into t; -EINVAL when it is not one. */
static int parse_task(const struct json *j, struct handover_task *t)
{
	const struct json *labels = json_get(j, "labels"), *argv = json_get(j, "argv");
	const struct json *rules = json_get(j, "rules"), *run = json_get(j, "run");
	const struct json *tid = json_get(j, "tid");

	memset(t, 0, sizeof(*t));
	if (!j || j->type != JSON_OBJ || !json_get(j, "slot") || !tid || tid->type != JSON_NUM ||
	    !run || json_len(labels) > TP_LABELS_MAX || !tp_valid_id(json_str(j, "id")))
		return -EINVAL;
	t->abi = (int)json_num(j, "abi");
	t->slot = (int)json_num(j, "slot");
	t->run = run->type == JSON_BOOL && run->b;
	copy_str(t->id, sizeof(t->id), j, "id");
	copy_str(t->cgroup, sizeof(t->cgroup), j, "cgroup");
	copy_str(t->memcg, sizeof(t->memcg), j, "memcg");
	copy_str(t->msock, sizeof(t->msock), j, "msock");
	t->start_ns = json_u64(j, "start_ns");
	t->start_real_ns = json_u64(j, "start_real_ns");
	t->interval_ms = (__u64)json_num(j, "interval_ms");
	t->grace_s = (__u64)json_num(j, "grace_s");
	t->keep_leftovers = json_get(j, "keep_leftovers") && json_get(j, "keep_leftovers")->b;
	t->collect = (unsigned)json_num(j, "collect");
	t->tid = json_i64(j, "tid");
	t->mem_v1_peak = json_u64(j, "mem_v1_peak");
	for (size_t i = 0; i < json_len(labels); i++)
		if (json_at(labels, i)->type == JSON_STR)
			snprintf(t->kv[t->nlabels++], sizeof(t->kv[0]), "%s",
				 json_at(labels, i)->str);
	if (json_len(argv)) {
		t->argv = calloc(json_len(argv) + 1, sizeof(char *));
		if (!t->argv)
			return -ENOMEM;
		for (size_t i = 0; i < json_len(argv); i++) {
			const struct json *a = json_at(argv, i);

			t->argv[t->argc] = strdup(a->type == JSON_STR ? a->str : "");
			if (!t->argv[t->argc])
				return -ENOMEM;
			t->argc++;
		}
	}
	if (rules && rules->type == JSON_STR && !(t->rules = strdup(rules->str)))
		return -ENOMEM;
	if (t->slot < 0 || !t->cgroup[0] || t->interval_ms < 100 || (t->run && !t->argc))
		return -EINVAL;
	return 0;
}

int handover__load(const char *dir, struct handover_task **out, int *n)
{
	struct dirent *de;
	int cap = 0, err = 0;
	DIR *d;

	*out = NULL;
	*n = 0;
	d = opendir(dir);
	if (!d)
		return errno == ENOENT ? 0 : -errno;
	while ((de = readdir(d)) && !err) {
		size_t len = strlen(de->d_name), sl = strlen(HANDOVER_SUFFIX);
		char path[PATH_MAX], *text = NULL;
		struct json *j;

		if (de->d_name[0] == '.' || len <= sl ||
		    strcmp(de->d_name + len - sl, HANDOVER_SUFFIX))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (*n == cap) {
			struct handover_task *nt =
				realloc(*out, (size_t)(cap = cap * 2 + 8) * sizeof(*nt));

			if (!nt) {
				err = -ENOMEM;
				break;
			}
			*out = nt;
		}
		j = tp_slurp(path, "task description", true, &text) > 0
			    ? json_parse(text, strlen(text), NULL, 0)
			    : NULL;
		if (parse_task(j, &(*out)[*n])) {
			handover__free(&(*out)[*n], 1);
			tp_err("warning: %s is not a task description: removed", path);
			unlink(path);
		} else {
			(*n)++;
		}
		json_free(j);
		free(text);
	}
	closedir(d);
	return err;
}

void handover__free(struct handover_task *t, int n)
{
	for (int i = 0; t && i < n; i++) {
		for (int k = 0; k < t[i].argc; k++)
			free(t[i].argv[k]);
		free(t[i].argv);
		free(t[i].rules);
		t[i].argv = NULL;
		t[i].rules = NULL;
		t[i].argc = 0;
	}
}
