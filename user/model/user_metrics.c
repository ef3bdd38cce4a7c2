// SPDX-License-Identifier: GPL-2.0
/* The task's own metrics language: statsd lines and phase markers, parsed and aggregated. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "model/user_metrics.h"

const char *const um_reject_names[UM_REJECT_KINDS] = {
	[UM_OK] = "ok",
	[UM_TOO_LONG] = "too_long",
	[UM_BAD_NAME] = "bad_name",
	[UM_BAD_VALUE] = "bad_value",
	[UM_BAD_TYPE] = "bad_type",
	[UM_TOO_MANY_TAGS] = "too_many_tags",
	[UM_BAD_TAG] = "bad_tag",
	[UM_TOO_MANY_NAMES] = "too_many_names",
	[UM_NOT_IN_TASK] = "not_in_task",
	[UM_UNKNOWN_PHASE] = "unknown_phase",
	[UM_BAD_PERFHERDER] = "bad_perfherder",
	[UM_OVERFLOW] = "overflow",
};

static bool name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '.' || c == '-';
}

static bool valid_name(const char *s, size_t n)
{
	if (n == 0 || n > UM_NAME_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!name_char(s[i]))
			return false;
	return true;
}

struct tag {
	const char *s;
	size_t n;
};

static int cmp_tag(const void *a, const void *b)
{
	const struct tag *x = a, *y = b;
	size_t n = x->n < y->n ? x->n : y->n;
	int c = memcmp(x->s, y->s, n);

	return c ? c : (int)x->n - (int)y->n;
}

/* "k:v,k2:v2" into "{k=v,k2=v2}" appended to key, sorted so order does not matter. */
static enum um_reject add_tags(char *key, size_t cap, const char *s, size_t n)
{
	struct tag tags[UM_TAGS_MAX + 1];
	size_t nt = 0, len = strlen(key);
	const char *p = s, *end = s + n;

	while (p < end) {
		const char *comma = memchr(p, ',', (size_t)(end - p));
		const char *stop = comma ? comma : end, *colon;

		if (nt == UM_TAGS_MAX)
			return UM_TOO_MANY_TAGS;
		colon = memchr(p, ':', (size_t)(stop - p));
		if (!colon || !valid_name(p, (size_t)(colon - p)) ||
		    !valid_name(colon + 1, (size_t)(stop - colon - 1)))
			return UM_BAD_TAG;
		tags[nt].s = p;
		tags[nt++].n = (size_t)(stop - p);
		p = comma ? comma + 1 : end;
	}
	if (!nt)
		return UM_BAD_TAG;
	qsort(tags, nt, sizeof(tags[0]), cmp_tag);
	for (size_t i = 0; i < nt; i++) {
		if (len + tags[i].n + 3 >= cap)
			return UM_TOO_LONG;
		key[len++] = i ? ',' : '{';
		for (size_t k = 0; k < tags[i].n; k++)
			key[len++] = tags[i].s[k] == ':' && !memchr(tags[i].s, ':', k)
					     ? '='
					     : tags[i].s[k];
	}
	key[len++] = '}';
	key[len] = '\0';
	return UM_OK;
}

enum um_reject um_parse_line(const char *line, size_t len, struct um_line *out)
{
	const char *colon, *bar, *end = line + len, *type, *rest;
	char num[64], *nend;
	size_t tlen;

	memset(out, 0, sizeof(*out));
	if (len > UM_LINE_MAX)
		return UM_TOO_LONG;
	if (len > 6 && !memcmp(line, "phase:", 6)) {
		const char *what = line + 6, *c2 = memchr(what, ':', len - 6);

		if (!c2)
			return UM_BAD_TYPE;
		if (!valid_name(c2 + 1, (size_t)(end - c2 - 1)))
			return UM_BAD_NAME;
		if ((size_t)(c2 - what) == 5 && !memcmp(what, "begin", 5))
			out->kind = UM_PHASE_BEGIN;
		else if ((size_t)(c2 - what) == 3 && !memcmp(what, "end", 3))
			out->kind = UM_PHASE_END;
		else
			return UM_BAD_TYPE;
		memcpy(out->key, c2 + 1, (size_t)(end - c2 - 1));
		return UM_OK;
	}
	colon = memchr(line, ':', len);
	if (!colon || !valid_name(line, (size_t)(colon - line)))
		return UM_BAD_NAME;
	bar = memchr(colon, '|', (size_t)(end - colon));
	if (!bar || (size_t)(bar - colon - 1) >= sizeof(num) || bar == colon + 1)
		return UM_BAD_VALUE;
	memcpy(num, colon + 1, (size_t)(bar - colon - 1));
	num[bar - colon - 1] = '\0';
	out->value = strtod(num, &nend);
	if (*nend || !isfinite(out->value) || num[0] == ' ')
		return UM_BAD_VALUE;
	type = bar + 1;
	rest = memchr(type, '|', (size_t)(end - type));
	tlen = (size_t)((rest ? rest : end) - type);
	if (tlen == 1 && *type == 'c')
		out->kind = UM_COUNTER;
	else if (tlen == 1 && *type == 'g')
		out->kind = UM_GAUGE;
	else if (tlen == 2 && !memcmp(type, "ms", 2))
		out->kind = UM_TIMER;
	else
		return UM_BAD_TYPE;
	memcpy(out->key, line, (size_t)(colon - line));
	/* Optional "|@rate" (ignored: the sender sends each event) and "|#tags". */
	while (rest) {
		const char *f = rest + 1, *next = memchr(f, '|', (size_t)(end - f));
		size_t flen = (size_t)((next ? next : end) - f);
		enum um_reject r;

		if (flen > 1 && *f == '#') {
			r = add_tags(out->key, sizeof(out->key), f + 1, flen - 1);
			if (r)
				return r;
		} else if (!(flen > 1 && *f == '@')) {
			return UM_BAD_TYPE;
		}
		rest = next;
	}
	return UM_OK;
}

int um_table__init(struct um_table *t)
{
	memset(t, 0, sizeof(*t));
	return htab__init(&t->index, sizeof(__u32));
}

void um_table__fini(struct um_table *t)
{
	free(t->m);
	htab__fini(&t->index);
	memset(t, 0, sizeof(*t));
}

static struct um_metric *find(struct um_table *t, const char *key, bool create)
{
	__u64 h = tp_hash_str(key);
	__u32 *ref;

	for (;; h++) {
		ref = htab__get(&t->index, h);
		if (!ref)
			break;
		if (!strcmp(t->m[*ref - 1].key, key))
			return &t->m[*ref - 1];
	}
	if (!create || t->n >= UM_NAMES_MAX)
		return NULL;
	if (!t->m) {
		t->m = calloc(UM_NAMES_MAX, sizeof(*t->m));
		if (!t->m)
			return NULL;
	}
	ref = htab__put(&t->index, h);
	if (!ref)
		return NULL;
	snprintf(t->m[t->n].key, UM_KEY_MAX, "%s", key);
	*ref = (__u32)++t->n;
	return &t->m[t->n - 1];
}

enum um_reject um_table__add(struct um_table *t, const struct um_line *l)
{
	struct um_metric *m = find(t, l->key, true);

	if (!m)
		return UM_TOO_MANY_NAMES;
	/* One name, one kind: the first line decides. */
	if (m->count && m->kind != l->kind)
		return UM_BAD_TYPE;
	/* A total past the range of a double would be stored as null: the line is refused. */
	if (!isfinite(m->sum + l->value))
		return UM_OVERFLOW;
	m->kind = l->kind;
	if (!m->count || l->value < m->min)
		m->min = l->value;
	if (!m->count || l->value > m->max)
		m->max = l->value;
	m->count++;
	m->sum += l->value;
	m->last = l->value;
	return UM_OK;
}

int um_table__put(struct um_table *t, const struct um_metric *m)
{
	struct um_metric *to = find(t, m->key, true);

	if (!to)
		return -ENOSPC;
	*to = *m;
	return 0;
}

__u64 um_table__rejected_total(const struct um_table *t)
{
	__u64 n = 0;

	for (int i = 1; i < UM_REJECT_KINDS; i++)
		n += t->rejected[i];
	return n;
}

/* Treeherder names are free text: keep what a metric name allows, '_' for the rest. */
static void append_part(char *key, size_t cap, const char *part)
{
	size_t len = strlen(key);

	if (len && len + 1 < cap)
		key[len++] = '.';
	for (; *part && len + 1 < cap; part++)
		key[len++] = name_char(*part) && *part != '.' ? *part : '_';
	key[len] = '\0';
}

static int add_value(struct um_table *t, const char *key, const struct json *v)
{
	struct um_line l = { .kind = UM_GAUGE };

	if (!v || v->type != JSON_NUM)
		return 0;
	snprintf(l.key, sizeof(l.key), "%s", key);
	l.value = v->num;
	if (strlen(key) > UM_NAME_MAX || um_table__add(t, &l) != UM_OK) {
		t->rejected[strlen(key) > UM_NAME_MAX ? UM_BAD_NAME : UM_TOO_MANY_NAMES]++;
		return 0;
	}
	return 1;
}

int um_table__add_perfherder(struct um_table *t, const char *text, size_t len)
{
	struct json *j = json_parse(text, len, NULL, 0);
	const struct json *fw = json_get(json_get(j, "framework"), "name");
	const struct json *suites = json_get(j, "suites");
	char base[UM_KEY_MAX] = "perfherder";
	int n = 0;

	if (!fw || fw->type != JSON_STR || !suites || suites->type != JSON_ARR) {
		json_free(j);
		return -UM_BAD_PERFHERDER;
	}
	append_part(base, sizeof(base), fw->str);
	for (const struct json *s = suites->child; s; s = s->next) {
		const struct json *name = json_get(s, "name"), *subs = json_get(s, "subtests");
		char key[UM_KEY_MAX];

		if (!name || name->type != JSON_STR)
			continue;
		snprintf(key, sizeof(key), "%s", base);
		append_part(key, sizeof(key), name->str);
		n += add_value(t, key, json_get(s, "value"));
		for (const struct json *st = subs ? subs->child : NULL; st; st = st->next) {
			const struct json *sn = json_get(st, "name");
			char sk[UM_KEY_MAX];

			if (!sn || sn->type != JSON_STR)
				continue;
			snprintf(sk, sizeof(sk), "%s", key);
			append_part(sk, sizeof(sk), sn->str);
			n += add_value(t, sk, json_get(st, "value"));
		}
	}
	json_free(j);
	return n;
}
