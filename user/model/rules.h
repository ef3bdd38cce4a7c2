/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Rules: counters the task does not have to emit. A rule is one line
 *
 *     output|exec NAME[{k=v,...}] [anchor] REGEX
 *     phase-begin|phase-end - REGEX-WITH-(?<phase>...)
 *
 * An output rule counts the task's output lines its PCRE2 regex matches; an exec
 * rule counts execs whose "path arg1 arg2 ..." it matches. Named capture groups
 * become labels of the counter; "anchor" also records the matching line's number.
 * A phase rule begins or ends the phase its "phase" group names, on output lines.
 */
#ifndef TP_RULES_H
#define TP_RULES_H

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdbool.h>
#include <linux/types.h>

#include "model/user_metrics.h"

#define RULES_MAX 256
#define ANCHORS_MAX 1000

enum rule_where { RULE_OUTPUT, RULE_EXEC, RULE_PHASE_BEGIN, RULE_PHASE_END };

/* Called when a phase rule matches: begin (true) or end, and the phase's name. */
typedef void (*rules_phase_fn)(void *ctx, bool begin, const char *name, size_t len);

struct rule {
	enum rule_where where;
	char name[UM_KEY_MAX];
	bool anchor;
	pcre2_code *re;
	bool jit; /* compiled to machine code: matched with pcre2_jit_match */
};

struct anchor {
	int rule;
	__u64 line;
};

/* Both tables grow as rules and anchors come: most tasks have few or none. */
struct rules {
	struct rule *r; /* n of them, room for cap (at most RULES_MAX) */
	int n;
	int cap;
	pcre2_match_data *md;
	struct anchor *anchors; /* nanchors, room for cap_anchors (at most ANCHORS_MAX) */
	int nanchors;
	int cap_anchors;
	__u64 anchors_dropped;
	__u64 lines;
	rules_phase_fn phase_fn;
	void *phase_ctx;
};

void rules__init(struct rules *rs);
/* Parses and compiles one rule; a bad one prints "taskprobe: FILE:LINE: why", -EINVAL. */
int rules__add(struct rules *rs, const char *file, int lineno, const char *line);
/*
 * Loads rule lines from path: with section, only those in "[rules]" (the config
 * file); without, every line (--rules FILE). Blank lines and '#' comments are skipped.
 */
int rules__load(struct rules *rs, const char *path, bool section, bool required);
/* The same from text read before (as the file path was then); text is cut up. */
int rules__parse(struct rules *rs, const char *path, char *text, bool section);
/* After the last rules__add: the match data all rules share. */
int rules__finish(struct rules *rs);
void rules__fini(struct rules *rs);
/* The rule named name (its regex NULL when made here, for a record read back), or NULL. */
struct rule *rules__named(struct rules *rs, const char *name, int *index);
/* An anchor: rule matched at line; past ANCHORS_MAX (or memory) it is counted dropped. */
void rules__anchor(struct rules *rs, int rule, __u64 line);
/* Is there a rule of this kind? */
bool rules__has(const struct rules *rs, enum rule_where where);
/* One output line (the task's lines are numbered from 1 as they are read). */
void rules__output_line(struct rules *rs, const char *line, size_t len, struct um_table *um);
/* One exec, as "path arg1 arg2 ...". */
void rules__exec(struct rules *rs, const char *cmdline, size_t len, struct um_table *um);

#endif /* TP_RULES_H */
