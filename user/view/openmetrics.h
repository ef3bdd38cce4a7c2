/* SPDX-License-Identifier: GPL-2.0 */
/* A task's figures as an OpenMetrics text file (GitLab's merge-request metrics report). */
#ifndef TP_OPENMETRICS_H
#define TP_OPENMETRICS_H

#include <stdio.h>

#include "base/json.h"

/*
 * The record's built-in figures, one gauge a line, `taskprobe_` and the figure's name
 * with its unit as OpenMetrics has it (ns as _seconds); each phase's figures as
 * `taskprobe_phase_*{phase="NAME"}`; "# EOF" last. 0, or -EIO.
 */
int openmetrics_write(FILE *f, const struct json *rec);
/* A label value as the text format quotes it: backslash, quote and newline escaped. */
void om_label_value(FILE *f, const char *v);

#endif /* TP_OPENMETRICS_H */
