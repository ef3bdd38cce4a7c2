/* SPDX-License-Identifier: GPL-2.0 */
/* A task's figures in Treeherder's performance-artifact schema. */
#ifndef TP_PERFHERDER_H
#define TP_PERFHERDER_H

#include <stdbool.h>
#include <stdio.h>

#include "model/task.h"

/*
 * One "PERFHERDER_DATA: {...}" line, for Treeherders that still read logs: a suite
 * "task" and one "phase.NAME" a phase, each with the same subtests (docs/
 * metrics-language.md, "Treeherder"). framework: a framework Treeherder has registered.
 */
void task_record__print_perfherder(FILE *f, const struct task_record *t, const char *framework);
/* The same data alone (no prefix, no newline): a perfherder-data.json artifact's. */
void task_record__write_perfherder(FILE *f, const struct task_record *t, const char *framework);
/*
 * The artifact written to path whole or not at all: 0, or -errno. A name Treeherder
 * does not ingest (it reads only *perfherder-data*.json) is said in one warning line.
 */
int task_record__save_perfherder(const char *path, const struct task_record *t,
				 const char *framework);

#endif /* TP_PERFHERDER_H */
