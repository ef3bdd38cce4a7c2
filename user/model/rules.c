// SPDX-License-Identifier: GPL-2.0
/* Rules: output-line and exec regexes (PCRE2, JIT) that count, labelled by named groups. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "model/rules.h"

void rules__init(struct rules *rs)
{
	memset(rs, 0, sizeof(*rs));
}

void rules__fini(struct rules *rs)
{
	for (int i = 0; i < rs->n; i++)
		pcre2_code_free(rs->r[i].re);
	pcre2_match_data_free(rs->md);
	free(rs->r);
	free(rs->anchors);
	memset(rs, 0, sizeof(*rs));
}

/* Room for one more rule at r[n], zeroed; -EINVAL past RULES_MAX, -ENOMEM. */
static int room(struct rules *rs)
{
	if (rs->n >= RULES_MAX)
		return -EINVAL;
	if (rs->n == rs->cap) {
		int cap = rs->cap ? rs->cap * 2 : 8;
		struct rule *r = realloc(rs->r, (size_t)cap * sizeof(*r));

		if (!r)
			return -ENOMEM;
		rs->r = r;
		rs->cap = cap;
	}
	memset(&rs->r[rs->n], 0, sizeof(rs->r[0]));
	return 0;
}

struct rule *rules__named(struct rules *rs, const char *name, int *index)
{
	int i = 0;

	while (i < rs->n && strcmp(rs->r[i].name, name))
		i++;
	if (i == rs->n) {
		if (room(rs))
			return NULL;
		snprintf(rs->r[rs->n++].name, sizeof(rs->r[0].name), "%s", name);
	}
	*index = i;
	return &rs->r[i];
}

void rules__anchor(struct rules *rs, int rule, __u64 line)
{
	if (rs->nanchors == rs->cap_anchors && rs->cap_anchors < ANCHORS_MAX) {
		int cap = rs->cap_anchors ? rs->cap_anchors * 4 : 16;
		struct anchor *a;

		cap = cap < ANCHORS_MAX ? cap : ANCHORS_MAX;
		a = realloc(rs->anchors, (size_t)cap * sizeof(*a));
		if (a) {
			rs->anchors = a;
			rs->cap_anchors = cap;
		}
	}
	if (rs->nanchors >= rs->cap_anchors) {
		rs->anchors_dropped++;
		return;
	}
	rs->anchors[rs->nanchors++] = (struct anchor){ rule, line };
}

bool rules__has(const struct rules *rs, enum rule_where where)
{
	for (int i = 0; i < rs->n; i++)
		if (rs->r[i].where == where)
			return true;
	return false;
}

static pcre2_code *compile(const char *src, size_t len, char *why, size_t whylen)
{
	PCRE2_UCHAR msg[160];
	PCRE2_SIZE off;
	pcre2_code *re;
	int code;

	re = pcre2_compile((PCRE2_SPTR)src, len, PCRE2_DUPNAMES, &code, &off, NULL);
	if (!re) {
		pcre2_get_error_message(code, msg, sizeof(msg));
		snprintf(why, whylen, "bad regex at offset %zu: %s", (size_t)off, (char *)msg);
		return NULL;
	}
	/* JIT where the CPU has it; the interpreter otherwise. */
	pcre2_jit_compile(re, PCRE2_JIT_COMPLETE);
	return re;
}

/* "name{k=v,...}": the name valid, the labels each k=v with valid parts. */
static bool valid_counter_name(const char *s)
{
	struct um_line l;
	char line[UM_KEY_MAX + 8], *brace = strchr(s, '{');

	if (!brace) {
		snprintf(line, sizeof(line), "%s:1|c", s);
		return um_parse_line(line, strlen(line), &l) == UM_OK;
	}
	if (s[strlen(s) - 1] != '}')
		return false;
	snprintf(line, sizeof(line), "%.*s:1|c|#%.*s", (int)(brace - s), s,
		 (int)(strlen(brace) - 2), brace + 1);
	for (char *p = strchr(line, '#'); p && *p; p++)
		if (*p == '=')
			*p = ':';
	return um_parse_line(line, strlen(line), &l) == UM_OK;
}

int rules__add(struct rules *rs, const char *file, int lineno, const char *line)
{
	char where[16], name[UM_KEY_MAX], why[200];
	const char *p = line, *re;
	struct rule *r;
	int n = 0;

	n = room(rs);
	if (n) {
		if (n == -ENOMEM)
			tp_err("%s:%d: out of memory", file, lineno);
		else
			tp_err("%s:%d: more than %d rules", file, lineno, RULES_MAX);
		return n;
	}
	r = &rs->r[rs->n];
	if (sscanf(p, "%15s %n", where, &n) != 1 || !n) {
		tp_err("%s:%d: expected 'output|exec NAME [anchor] REGEX'", file, lineno);
		return -EINVAL;
	}
	p += n;
	n = 0;
	if (sscanf(p, "%511s %n", name, &n) != 1 || !n) {
		tp_err("%s:%d: expected 'output|exec NAME [anchor] REGEX'", file, lineno);
		return -EINVAL;
	}
	p += n;
	if (!strcmp(where, "output")) {
		r->where = RULE_OUTPUT;
	} else if (!strcmp(where, "exec")) {
		r->where = RULE_EXEC;
	} else if (!strcmp(where, "phase-begin")) {
		r->where = RULE_PHASE_BEGIN;
	} else if (!strcmp(where, "phase-end")) {
		r->where = RULE_PHASE_END;
	} else {
		tp_err("%s:%d: a rule is output, exec, phase-begin or phase-end, not '%s'", file,
		       lineno, where);
		return -EINVAL;
	}
	if (r->where >= RULE_PHASE_BEGIN) {
		/* The name field is a placeholder: the phase's name comes from the line. */
		snprintf(name, sizeof(name), "phase");
	} else if (!valid_counter_name(name)) {
		tp_err("%s:%d: bad counter name '%s': NAME or NAME{k=v,...} of A-Z a-z 0-9 _ . -",
		       file, lineno, name);
		return -EINVAL;
	}
	snprintf(r->name, sizeof(r->name), "%s", name);
	if (!strncmp(p, "anchor ", 7)) {
		r->anchor = true;
		p += 7;
		while (*p == ' ' || *p == '\t')
			p++;
	}
	re = p;
	if (!*re) {
		tp_err("%s:%d: the rule has no regex", file, lineno);
		return -EINVAL;
	}
	r->re = compile(re, strlen(re), why, sizeof(why));
	if (!r->re) {
		tp_err("%s:%d: %s", file, lineno, why);
		return -EINVAL;
	}
	{
		size_t jit = 0;

		r->jit = !pcre2_pattern_info(r->re, PCRE2_INFO_JITSIZE, &jit) && jit > 0;
	}
	if (r->where >= RULE_PHASE_BEGIN &&
	    pcre2_substring_number_from_name(r->re, (PCRE2_SPTR) "phase") < 0) {
		tp_err("%s:%d: a phase rule's regex needs a group (?<phase>...)", file, lineno);
		pcre2_code_free(r->re);
		r->re = NULL;
		return -EINVAL;
	}
	rs->n++;
	return 0;
}

int rules__parse(struct rules *rs, const char *path, char *text, bool section)
{
	char *save = text, *line;
	bool in = !section;
	int lineno = 0, err = 0;

	/* strsep keeps empty lines, so that line numbers stay right. */
	while (!err && (line = strsep(&save, "\n"))) {
		char *s = line, *e;

		lineno++;
		while (*s == ' ' || *s == '\t')
			s++;
		e = s + strlen(s);
		while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
			*--e = '\0';
		if (!*s || *s == '#')
			continue;
		if (*s == '[') {
			in = !strcmp(s, "[rules]");
			continue;
		}
		if (in)
			err = rules__add(rs, path, lineno, s);
	}
	return err;
}

int rules__load(struct rules *rs, const char *path, bool section, bool required)
{
	ssize_t n;
	char *buf;
	int err;

	n = tp_slurp(path, "rules", required, &buf);
	if (n < 0)
		return (int)n;
	err = rules__parse(rs, path, buf, section);
	free(buf);
	return err;
}

int rules__finish(struct rules *rs)
{
	/* Room for 64 groups; a pattern with more captures fills what fits. */
	rs->md = pcre2_match_data_create(64, NULL);
	return rs->md ? 0 : -ENOMEM;
}

static bool label_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '.' || c == '-' || c == '_';
}

/*
 * The counter's key: the named groups that matched, then the name's own labels
 * (a group of the same name wins); um_parse_line sorts them.
 */
static void count_match(const struct rule *r, pcre2_match_data *md, const char *subject,
			struct um_table *um)
{
	char line[UM_LINE_MAX], tags[UM_LINE_MAX] = "", *brace = strchr(r->name, '{');
	PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
	uint32_t count = 0, size = 0;
	PCRE2_SPTR table;
	struct um_line l;
	size_t tl = 0;

	pcre2_pattern_info(r->re, PCRE2_INFO_NAMECOUNT, &count);
	pcre2_pattern_info(r->re, PCRE2_INFO_NAMEENTRYSIZE, &size);
	pcre2_pattern_info(r->re, PCRE2_INFO_NAMETABLE, &table);
	for (uint32_t i = 0; i < count; i++) {
		const unsigned char *e = table + i * size;
		int g = (e[0] << 8) | e[1];
		PCRE2_SIZE a = ov[2 * g], b = ov[2 * g + 1];

		if (a == PCRE2_UNSET || b <= a)
			continue;
		tl += (size_t)snprintf(tags + tl, sizeof(tags) - tl, "%s%s:", tl ? "," : "", e + 2);
		/* A captured value keeps what a label allows, '_' for the rest, 64 at most. */
		for (PCRE2_SIZE k = a; k < b && k - a < 64 && tl + 1 < sizeof(tags); k++)
			tags[tl++] = label_char(subject[k]) ? subject[k] : '_';
		tags[tl] = '\0';
	}
	for (const char *p = brace ? brace + 1 : NULL; p && *p && *p != '}';) {
		size_t klen = strcspn(p, "="), vlen;
		char key[UM_NAME_MAX + 4];

		vlen = strcspn(p + klen, ",}") - 1;
		snprintf(key, sizeof(key), ",%.*s:", (int)klen, p);
		/* Skip a label a named group already set (first in tags, or after a comma). */
		if (strncmp(tags, key + 1, strlen(key + 1)) && !strstr(tags, key))
			tl += (size_t)snprintf(tags + tl, sizeof(tags) - tl, "%s%.*s:%.*s",
					       tl ? "," : "", (int)klen, p, (int)vlen,
					       p + klen + 1);
		p += klen + 1 + vlen;
		if (*p == ',')
			p++;
	}
	snprintf(line, sizeof(line), "%.*s:1|c%s%s",
		 (int)(brace ? brace - r->name : (long)strlen(r->name)), r->name, tl ? "|#" : "",
		 tags);
	if (um_parse_line(line, strlen(line), &l) != UM_OK) {
		um->rejected[UM_BAD_TAG]++;
		return;
	}
	if (um_table__add(um, &l) != UM_OK)
		um->rejected[UM_TOO_MANY_NAMES]++;
}

static void match(struct rules *rs, enum rule_where where, const char *s, size_t len,
		  struct um_table *um)
{
	for (int i = 0; i < rs->n; i++) {
		struct rule *r = &rs->r[i];

		if (r->where != where)
			continue;
		/* The JIT entry point skips pcre2_match's checks: 163 -> 237 MB/s with 20 rules. */
		if ((r->jit ? pcre2_jit_match(r->re, (PCRE2_SPTR)s, len, 0, 0, rs->md, NULL)
			    : pcre2_match(r->re, (PCRE2_SPTR)s, len, 0, 0, rs->md, NULL)) < 0)
			continue;
		if (r->where >= RULE_PHASE_BEGIN) {
			PCRE2_SIZE *ov = pcre2_get_ovector_pointer(rs->md);
			int g = pcre2_substring_number_from_name(r->re, (PCRE2_SPTR) "phase");

			if (g > 0 && ov[2 * g] != PCRE2_UNSET && rs->phase_fn)
				rs->phase_fn(rs->phase_ctx, r->where == RULE_PHASE_BEGIN,
					     s + ov[2 * g], ov[2 * g + 1] - ov[2 * g]);
			continue;
		}
		count_match(r, rs->md, s, um);
		if (r->anchor && where == RULE_OUTPUT)
			rules__anchor(rs, i, rs->lines);
	}
}

void rules__output_line(struct rules *rs, const char *line, size_t len, struct um_table *um)
{
	rs->lines++;
	if (rs->n) {
		match(rs, RULE_OUTPUT, line, len, um);
		match(rs, RULE_PHASE_BEGIN, line, len, um);
		match(rs, RULE_PHASE_END, line, len, um);
	}
}

void rules__exec(struct rules *rs, const char *cmdline, size_t len, struct um_table *um)
{
	if (rs->n)
		match(rs, RULE_EXEC, cmdline, len, um);
}
