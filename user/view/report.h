/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A task's report for people: one self-contained HTML file (inline SVG and CSS, nothing
 * fetched, UTC times), or Markdown for a CI job page. Both are drawn from the record
 * and the stored series: no figure is computed again differently.
 */
#ifndef TP_REPORT_H
#define TP_REPORT_H

#include <stdio.h>

#include "base/json.h"
#include "model/series.h"

struct query_label;

/* Columns of the timelines: the series is bucketed (min, mean, max) to this many. */
#define REPORT_COLUMNS 480

struct report_input {
	const struct json *rec;		/* the record (docs/task-record.md) */
	const struct series_point *pts; /* its stored samples, in order */
	size_t n;
	const struct query_label *labels; /* its labels, the host's included (host, ncpu, ...) */
	int nlabels;
};

int report_html(FILE *f, const struct report_input *in);
/*
 * Markdown (GitHub and GitLab job pages): CPU cores and memory over time as Mermaid
 * xycharts (from two samples on), a Mermaid gantt of the phases, tables, <details>.
 */
int report_markdown(FILE *f, const struct report_input *in);

/* Markdown table text: | and line breaks would end the cell, < would open HTML. */
void report_md_cell(FILE *f, const char *s);

#endif /* TP_REPORT_H */
