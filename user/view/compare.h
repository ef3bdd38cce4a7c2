/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A task against its history (store/compare.h) for people and programs: a text
 * table, JSON of a stable shape (docs/storage.md), or Markdown for a CI job summary.
 */
#ifndef TP_VIEW_COMPARE_H
#define TP_VIEW_COMPARE_H

#include <stdio.h>

#include "store/compare.h"

/* A figure's value for people, by its unit: ns as a duration, bytes as bytes, else %.4g. */
char *compare_fmt(char *buf, size_t len, const char *name, double v);

int compare_text(FILE *f, const struct compare *c);
int compare_json(FILE *f, const struct compare *c);
/* A section of a job summary: its heading, one paragraph, tables (phases in <details>). */
int compare_markdown(FILE *f, const struct compare *c);

#endif /* TP_VIEW_COMPARE_H */
