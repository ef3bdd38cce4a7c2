/* SPDX-License-Identifier: GPL-2.0 */
/* A streaming JSON writer (commas and nesting handled) and a small bounded DOM parser. */
#ifndef TP_JSON_H
#define TP_JSON_H

#include <stdbool.h>
#include <stdio.h>
#include <linux/types.h>

#define JW_MAX_DEPTH 32

struct jw {
	FILE *f;
	int depth;
	bool pretty;
	bool need_comma[JW_MAX_DEPTH];
	bool after_key;
};

void jw_init(struct jw *w, FILE *f, bool pretty);
void jw_obj_begin(struct jw *w);
void jw_obj_end(struct jw *w);
void jw_arr_begin(struct jw *w);
void jw_arr_end(struct jw *w);
void jw_key(struct jw *w, const char *key);
void jw_str(struct jw *w, const char *s);
void jw_u64(struct jw *w, __u64 v);
void jw_i64(struct jw *w, long long v);
void jw_double(struct jw *w, double v);
void jw_bool(struct jw *w, bool v);
void jw_null(struct jw *w);
/* Shorthands for "key": value inside an object. */
void jw_kstr(struct jw *w, const char *key, const char *s);
void jw_ku64(struct jw *w, const char *key, __u64 v);
void jw_kdouble(struct jw *w, const char *key, double v);

enum json_type { JSON_NULL, JSON_BOOL, JSON_NUM, JSON_STR, JSON_ARR, JSON_OBJ };

struct json {
	enum json_type type;
	bool b;
	double num;
	__u64 u;	    /* JSON_NUM written as an integer: its exact value (two's complement) */
	bool exact;	    /* u holds it */
	char *str;	    /* JSON_STR */
	char *key;	    /* set on members of an object */
	struct json *child; /* first element or member */
	struct json *next;
};

/*
 * Parses text of at most len bytes, nesting at most JW_MAX_DEPTH; NULL on error with
 * a reason in err. Free with json_free().
 */
struct json *json_parse(const char *text, size_t len, char *err, size_t errlen);
void json_free(struct json *j);
/* Member of an object by its exact key ("cpu.time_ns" is one key, not a path). */
const struct json *json_get(const struct json *obj, const char *key);
size_t json_len(const struct json *arr);
/* A member's number, or 0 when absent or not a number. */
double json_num(const struct json *obj, const char *key);
/* An integer member exactly (a double holds 53 bits: nanosecond times have 61). */
__u64 json_u64(const struct json *obj, const char *key);
long long json_i64(const struct json *obj, const char *key);
/* A member's string, or "" when absent or not a string. */
const char *json_str(const struct json *obj, const char *key);
const struct json *json_at(const struct json *arr, size_t i);

#endif /* TP_JSON_H */
