/* SPDX-License-Identifier: GPL-2.0 */
/* The human summary of a task's record. */
#ifndef TP_SUMMARY_H
#define TP_SUMMARY_H

#include <stdio.h>

#include "model/task.h"

/* The human summary, at most 80 columns wide. */
void task_record__print_summary(FILE *f, const struct task_record *t);

#endif /* TP_SUMMARY_H */
