// SPDX-License-Identifier: GPL-2.0
/* A streaming JSON writer (commas and nesting handled) and a small bounded DOM parser. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"

void jw_init(struct jw *w, FILE *f, bool pretty)
{
	memset(w, 0, sizeof(*w));
	w->f = f;
	w->pretty = pretty;
}

static void indent(struct jw *w)
{
	if (!w->pretty)
		return;
	fputc('\n', w->f);
	for (int i = 0; i < w->depth; i++)
		fputs("  ", w->f);
}

/* Before any value: a comma after a sibling, a newline, or nothing after a key. */
static void value_prefix(struct jw *w)
{
	if (w->after_key) {
		w->after_key = false;
		return;
	}
	if (w->depth > 0) {
		if (w->need_comma[w->depth])
			fputc(',', w->f);
		w->need_comma[w->depth] = true;
		indent(w);
	}
}

static void open_(struct jw *w, char c)
{
	value_prefix(w);
	fputc(c, w->f);
	if (w->depth < JW_MAX_DEPTH - 1)
		w->depth++;
	w->need_comma[w->depth] = false;
}

static void close_(struct jw *w, char c)
{
	bool had = w->need_comma[w->depth];

	if (w->depth > 0)
		w->depth--;
	if (had)
		indent(w);
	fputc(c, w->f);
	if (w->depth == 0 && w->pretty)
		fputc('\n', w->f);
}

void jw_obj_begin(struct jw *w)
{
	open_(w, '{');
}

void jw_obj_end(struct jw *w)
{
	close_(w, '}');
}

void jw_arr_begin(struct jw *w)
{
	open_(w, '[');
}

void jw_arr_end(struct jw *w)
{
	close_(w, ']');
}

static void put_escaped(FILE *f, const char *s)
{
	fputc('"', f);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		switch (*p) {
		case '"':
			fputs("\\\"", f);
			break;
		case '\\':
			fputs("\\\\", f);
			break;
		case '\n':
			fputs("\\n", f);
			break;
		case '\r':
			fputs("\\r", f);
			break;
		case '\t':
			fputs("\\t", f);
			break;
		default:
			if (*p < 0x20 || *p == 0x7f)
				fprintf(f, "\\u%04x", *p);
			else
				fputc(*p, f);
		}
	}
	fputc('"', f);
}

void jw_key(struct jw *w, const char *key)
{
	value_prefix(w);
	put_escaped(w->f, key);
	fputs(w->pretty ? ": " : ":", w->f);
	w->after_key = true;
}

void jw_str(struct jw *w, const char *s)
{
	value_prefix(w);
	put_escaped(w->f, s ? s : "");
}

void jw_u64(struct jw *w, __u64 v)
{
	value_prefix(w);
	fprintf(w->f, "%llu", (unsigned long long)v);
}

void jw_i64(struct jw *w, long long v)
{
	value_prefix(w);
	fprintf(w->f, "%lld", v);
}

void jw_double(struct jw *w, double v)
{
	value_prefix(w);
	/* Whole numbers exactly (byte counts, sums); others to the precision they carry. */
	if (!isfinite(v))
		fputs("null", w->f);
	else if (fabs(v) < 9007199254740992.0 && v == (double)(long long)v)
		fprintf(w->f, "%lld", (long long)v);
	else
		fprintf(w->f, "%.17g", v);
}

void jw_bool(struct jw *w, bool v)
{
	value_prefix(w);
	fputs(v ? "true" : "false", w->f);
}

void jw_null(struct jw *w)
{
	value_prefix(w);
	fputs("null", w->f);
}

void jw_kstr(struct jw *w, const char *key, const char *s)
{
	jw_key(w, key);
	jw_str(w, s);
}

void jw_ku64(struct jw *w, const char *key, __u64 v)
{
	jw_key(w, key);
	jw_u64(w, v);
}

void jw_kdouble(struct jw *w, const char *key, double v)
{
	jw_key(w, key);
	jw_double(w, v);
}

/* Parser: recursive descent over a bounded buffer. */

struct parser {
	const char *p, *end;
	char *err;
	size_t errlen;
	int depth;
};

static int fail(struct parser *ps, const char *what)
{
	if (ps->err && ps->errlen && !ps->err[0])
		snprintf(ps->err, ps->errlen, "%s", what);
	return -EINVAL;
}

static void skip_ws(struct parser *ps)
{
	while (ps->p < ps->end &&
	       (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r'))
		ps->p++;
}

static int hex4(struct parser *ps, unsigned *out)
{
	unsigned v = 0;

	if (ps->end - ps->p < 4)
		return fail(ps, "short \\u escape");
	for (int i = 0; i < 4; i++) {
		char c = *ps->p++;

		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v |= (unsigned)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			v |= (unsigned)(c - 'A' + 10);
		else
			return fail(ps, "bad \\u escape");
	}
	*out = v;
	return 0;
}

static size_t put_utf8(char *o, unsigned cp)
{
	if (cp < 0x80) {
		o[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		o[0] = (char)(0xc0 | (cp >> 6));
		o[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		o[0] = (char)(0xe0 | (cp >> 12));
		o[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		o[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	o[0] = (char)(0xf0 | (cp >> 18));
	o[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
	o[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
	o[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

/*
 * The output is never longer than the escaped input, so one allocation of the string's
 * own length suffices (found first: not the rest of the text, which made a long
 * document's parse allocate its length once per string).
 */
static int parse_string(struct parser *ps, char **out)
{
	const char *start = ++ps->p, *q = start;
	char *buf, *o;

	while (q < ps->end && *q != '"')
		q += *q == '\\' && q + 1 < ps->end ? 2 : 1;
	buf = malloc((size_t)(q - start) + 1);
	if (!buf)
		return -ENOMEM;
	o = buf;
	while (ps->p < ps->end && *ps->p != '"') {
		unsigned char c = (unsigned char)*ps->p++;
		unsigned cp, lo;

		if (c < 0x20) {
			free(buf);
			return fail(ps, "control character in string");
		}
		if (c != '\\') {
			*o++ = (char)c;
			continue;
		}
		if (ps->p >= ps->end)
			break;
		c = (unsigned char)*ps->p++;
		switch (c) {
		case '"':
		case '\\':
		case '/':
			*o++ = (char)c;
			break;
		case 'b':
			*o++ = '\b';
			break;
		case 'f':
			*o++ = '\f';
			break;
		case 'n':
			*o++ = '\n';
			break;
		case 'r':
			*o++ = '\r';
			break;
		case 't':
			*o++ = '\t';
			break;
		case 'u':
			if (hex4(ps, &cp)) {
				free(buf);
				return -EINVAL;
			}
			if (cp >= 0xd800 && cp < 0xdc00 && ps->end - ps->p >= 6 &&
			    ps->p[0] == '\\' && ps->p[1] == 'u') {
				ps->p += 2;
				if (hex4(ps, &lo)) {
					free(buf);
					return -EINVAL;
				}
				if (lo >= 0xdc00 && lo < 0xe000)
					cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
			}
			if (cp == 0)
				cp = 0xfffd; /* keep strings NUL-free */
			o += put_utf8(o, cp);
			break;
		default:
			free(buf);
			return fail(ps, "bad escape in string");
		}
	}
	if (ps->p >= ps->end) {
		free(buf);
		return fail(ps, "unterminated string");
	}
	ps->p++;
	*o = '\0';
	*out = buf;
	return 0;
}

static int parse_value(struct parser *ps, struct json **out);

static int parse_container(struct parser *ps, struct json *j, char close)
{
	struct json **tail = &j->child;

	ps->p++;
	if (++ps->depth > JW_MAX_DEPTH)
		return fail(ps, "nested too deeply");
	skip_ws(ps);
	if (ps->p < ps->end && *ps->p == close) {
		ps->p++;
		ps->depth--;
		return 0;
	}
	for (;;) {
		char *key = NULL;
		struct json *v;
		int err;

		skip_ws(ps);
		if (j->type == JSON_OBJ) {
			if (ps->p >= ps->end || *ps->p != '"')
				return fail(ps, "expected a key");
			err = parse_string(ps, &key);
			if (err)
				return err;
			skip_ws(ps);
			if (ps->p >= ps->end || *ps->p != ':') {
				free(key);
				return fail(ps, "expected ':'");
			}
			ps->p++;
		}
		err = parse_value(ps, &v);
		if (err) {
			free(key);
			return err;
		}
		v->key = key;
		*tail = v;
		tail = &v->next;
		skip_ws(ps);
		if (ps->p < ps->end && *ps->p == ',') {
			ps->p++;
			continue;
		}
		if (ps->p < ps->end && *ps->p == close) {
			ps->p++;
			ps->depth--;
			return 0;
		}
		return fail(ps,
			    j->type == JSON_OBJ ? "expected ',' or '}'" : "expected ',' or ']'");
	}
}

static int parse_number(struct parser *ps, struct json *j)
{
	char buf[64], *endp;
	size_t n = 0;

	while (ps->p + n < ps->end && n < sizeof(buf) - 1 && strchr("+-0123456789.eE", ps->p[n]))
		n++;
	memcpy(buf, ps->p, n);
	buf[n] = '\0';
	errno = 0;
	j->num = strtod(buf, &endp);
	if (n == 0 || *endp || errno == ERANGE || !isfinite(j->num))
		return fail(ps, "bad number");
	/* An integer is also kept exactly: nanosecond times pass 2^53. */
	if (n == strspn(buf, "-0123456789") && !strchr(buf + 1, '-')) {
		errno = 0;
		j->u = buf[0] == '-' ? (__u64)strtoll(buf, &endp, 10) : strtoull(buf, &endp, 10);
		j->exact = !errno && !*endp;
	}
	ps->p += n;
	return 0;
}

static bool literal(struct parser *ps, const char *word)
{
	size_t n = strlen(word);

	if ((size_t)(ps->end - ps->p) < n || memcmp(ps->p, word, n))
		return false;
	ps->p += n;
	return true;
}

static int parse_value(struct parser *ps, struct json **out)
{
	struct json *j = calloc(1, sizeof(*j));
	int err = 0;

	if (!j)
		return -ENOMEM;
	*out = j;
	skip_ws(ps);
	if (ps->p >= ps->end) {
		err = fail(ps, "unexpected end");
	} else if (*ps->p == '{') {
		j->type = JSON_OBJ;
		err = parse_container(ps, j, '}');
	} else if (*ps->p == '[') {
		j->type = JSON_ARR;
		err = parse_container(ps, j, ']');
	} else if (*ps->p == '"') {
		j->type = JSON_STR;
		err = parse_string(ps, &j->str);
	} else if (literal(ps, "true")) {
		j->type = JSON_BOOL;
		j->b = true;
	} else if (literal(ps, "false")) {
		j->type = JSON_BOOL;
	} else if (literal(ps, "null")) {
		j->type = JSON_NULL;
	} else {
		j->type = JSON_NUM;
		err = parse_number(ps, j);
	}
	if (err) {
		json_free(j);
		*out = NULL;
	}
	return err;
}

struct json *json_parse(const char *text, size_t len, char *err, size_t errlen)
{
	struct parser ps = { .p = text, .end = text + len, .err = err, .errlen = errlen };
	struct json *j = NULL;

	if (err && errlen)
		err[0] = '\0';
	if (parse_value(&ps, &j))
		return NULL;
	skip_ws(&ps);
	if (ps.p != ps.end) {
		fail(&ps, "trailing characters");
		json_free(j);
		return NULL;
	}
	return j;
}

void json_free(struct json *j)
{
	while (j) {
		struct json *next = j->next;

		json_free(j->child);
		free(j->str);
		free(j->key);
		free(j);
		j = next;
	}
}

const struct json *json_get(const struct json *obj, const char *key)
{
	if (!obj || obj->type != JSON_OBJ)
		return NULL;
	for (const struct json *m = obj->child; m; m = m->next)
		if (m->key && !strcmp(m->key, key))
			return m;
	return NULL;
}

size_t json_len(const struct json *arr)
{
	size_t n = 0;

	if (!arr || (arr->type != JSON_ARR && arr->type != JSON_OBJ))
		return 0;
	for (const struct json *m = arr->child; m; m = m->next)
		n++;
	return n;
}

const struct json *json_at(const struct json *arr, size_t i)
{
	if (!arr || (arr->type != JSON_ARR && arr->type != JSON_OBJ))
		return NULL;
	for (const struct json *m = arr->child; m; m = m->next)
		if (i-- == 0)
			return m;
	return NULL;
}

double json_num(const struct json *obj, const char *key)
{
	const struct json *v = json_get(obj, key);

	return v && v->type == JSON_NUM ? v->num : 0;
}

__u64 json_u64(const struct json *obj, const char *key)
{
	const struct json *v = json_get(obj, key);

	if (!v || v->type != JSON_NUM)
		return 0;
	return v->exact ? v->u : v->num > 0 ? (__u64)v->num : 0;
}

long long json_i64(const struct json *obj, const char *key)
{
	const struct json *v = json_get(obj, key);

	if (!v || v->type != JSON_NUM)
		return 0;
	return v->exact ? (long long)v->u : (long long)v->num;
}

const char *json_str(const struct json *obj, const char *key)
{
	const struct json *v = json_get(obj, key);

	return v && v->type == JSON_STR ? v->str : "";
}
