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

#endif /* TP_OPENMETRICS_H */
