/* SPDX-License-Identifier: GPL-2.0 */
/* A task's figures in Treeherder's performance-artifact schema. */
#ifndef TP_PERFHERDER_H
#define TP_PERFHERDER_H

#include <stdio.h>

#include "model/task.h"

/*
 * One "PERFHERDER_DATA: {...}" line (Treeherder's schema, framework
 * job_resource_usage): a suite for the task and one per phase.
 */
void task_record__print_perfherder(FILE *f, const struct task_record *t);
/* The same data alone (no prefix, no newline): a perfherder-data.json file's. */
void task_record__write_perfherder(FILE *f, const struct task_record *t);

#endif /* TP_PERFHERDER_H */
