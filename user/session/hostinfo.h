/* SPDX-License-Identifier: GPL-2.0 */
/* The host labels recorded with every task (docs/storage.md, table `labels`). */
#ifndef TP_HOSTINFO_H
#define TP_HOSTINFO_H

#include "model/config.h"
#include "model/task.h"

#define HOST_LABELS 7

/* Their keys, in the order hostinfo_labels fills them: no task label may take one. */
extern const char *const host_label_keys[HOST_LABELS];
bool hostinfo_is_label(const char *key);

/* Fills host, kernel, cpu_model, ncpu, mem_total, instance_type and worker_pool. */
void hostinfo_labels(const struct config *cfg, struct label out[HOST_LABELS], char *store,
		     size_t store_len);

#endif /* TP_HOSTINFO_H */
