/* SPDX-License-Identifier: GPL-2.0 */
/* A task's record as JSON (docs/task-record.md): written and read by the metrics' table. */
#ifndef TP_TASK_JSON_H
#define TP_TASK_JSON_H

#include "base/json.h"
#include "model/task.h"

void task_record__write_json(struct jw *w, const struct task_record *t);
/* Writes the JSON record to path atomically (a temporary file renamed into place). */
int task_save_json(const char *path, const struct task_record *t);
/*
 * Rebuilds a record from its JSON (as stored): strings point into j, which must
 * outlive t; t->argv is allocated (free with task_record__fini).
 */
int task_record__from_json(struct task_record *t, const struct json *j);

#endif /* TP_TASK_JSON_H */
