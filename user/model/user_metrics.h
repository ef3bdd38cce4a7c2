/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The task's own metrics language on the metrics socket: statsd lines
 * ("name:value|c", "|g", "|ms", tags "|#k:v,k2:v2") and "phase:begin:NAME" /
 * "phase:end:NAME". Every limit of docs/metrics-language.md is a counted rejection.
 */
#ifndef TP_USERMETRICS_H
#define TP_USERMETRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

#include "base/htab.h"

#define UM_LINE_MAX 4096
#define UM_NAME_MAX 200
#define UM_NAMES_MAX 1000
#define UM_TAGS_MAX 64
#define UM_KEY_MAX 512 /* name plus its sorted tags, "name{k=v,...}" */

enum um_kind { UM_COUNTER, UM_GAUGE, UM_TIMER, UM_PHASE_BEGIN, UM_PHASE_END };

struct um_line {
	enum um_kind kind;
	char key[UM_KEY_MAX]; /* metric name with tags, or the phase name */
	double value;
};

/* Why a line was refused; each has its own count. */
enum um_reject {
	UM_OK = 0,
	UM_TOO_LONG,
	UM_BAD_NAME,
	UM_BAD_VALUE,
	UM_BAD_TYPE,
	UM_TOO_MANY_TAGS,
	UM_BAD_TAG,
	UM_TOO_MANY_NAMES,
	UM_NOT_IN_TASK,
	UM_UNKNOWN_PHASE,
	UM_BAD_PERFHERDER,
	UM_OVERFLOW, /* a counter or timer total would pass the range of a double */
	UM_REJECT_KINDS,
};

extern const char *const um_reject_names[UM_REJECT_KINDS];

/* Parses one line (no newline) of at most len bytes. */
enum um_reject um_parse_line(const char *line, size_t len, struct um_line *out);

struct um_metric {
	char key[UM_KEY_MAX];
	enum um_kind kind;
	__u64 count;
	double sum;  /* counter: the total; timer: sum of ms */
	double last; /* gauge */
	double min;
	double max;
};

/* One task's user metrics. */
struct um_table {
	struct um_metric *m;
	size_t n;
	struct htab index; /* hash of key -> index + 1 */
	__u64 rejected[UM_REJECT_KINDS];
	__u64 accepted;
};

int um_table__init(struct um_table *t);
void um_table__fini(struct um_table *t);
/* Adds a parsed metric line; UM_TOO_MANY_NAMES past UM_NAMES_MAX distinct keys. */
enum um_reject um_table__add(struct um_table *t, const struct um_line *l);
__u64 um_table__rejected_total(const struct um_table *t);
/* A whole metric as it was recorded (reading a stored record back); -ENOSPC when full. */
int um_table__put(struct um_table *t, const struct um_metric *m);

#define PERFHERDER_PREFIX "PERFHERDER_DATA: "

/*
 * A PERFHERDER_DATA payload (Treeherder's performance artifact: framework.name,
 * suites[].name/value, suites[].subtests[].name/value) into gauges named
 * perfherder.FRAMEWORK.SUITE[.SUBTEST]. Returns the values taken, or UM_BAD_PERFHERDER
 * (negated) when the payload is not such an artifact.
 */
int um_table__add_perfherder(struct um_table *t, const char *json, size_t len);

#endif /* TP_USERMETRICS_H */
