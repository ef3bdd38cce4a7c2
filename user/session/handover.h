/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A daemon's running tasks, each described in a file (DB.tasks/SLOT.task, 0600) from
 * its start to its end, for the daemon after it: one killed, or stopped on purpose to
 * hand over (--keep-tasks), leaves its BPF maps and links pinned and these files, and
 * the next daemon adopts every task they name, its counts as the pinned maps hold them.
 */
#ifndef TP_HANDOVER_H
#define TP_HANDOVER_H

#include <limits.h>
#include <stdbool.h>
#include <sys/un.h>
#include <linux/types.h>

#include "base/util.h"

struct handover_task {
	int slot;
	int abi;  /* TP_ABI_VERSION of the daemon that wrote it */
	bool run; /* a `run` client's task (its cgroup the daemon's), else a worker's */
	char id[TP_ID_MAX + 1];
	char cgroup[PATH_MAX];
	char memcg[PATH_MAX];
	char msock[sizeof(((struct sockaddr_un *)0)->sun_path)];
	__u64 start_ns; /* CLOCK_MONOTONIC, as the session counts */
	__u64 start_real_ns;
	__u64 interval_ms;
	__u64 grace_s;
	bool keep_leftovers;
	unsigned collect;
	__s64 tid;	   /* its store row, or -1 */
	__u64 mem_v1_peak; /* v1 hosts: its memory peak before the last phase boundary */
	int nlabels;
	char kv[TP_LABELS_MAX][TP_LABEL_KEY_MAX + TP_LABEL_VAL_MAX + 2];
	int argc;
	char **argv; /* a run's command (owned), NULL for a worker's */
	char *rules; /* a run's --rules text (owned), or NULL */
};

/* DB.tasks: where the daemon of the store at db describes its tasks. */
int handover__dir(const char *db, char *out, size_t len);
/*
 * The daemon of this store, held until it exits (an fd), or -EBUSY when another daemon
 * holds it: that one's tasks are never to be adopted from under it.
 */
int handover__lock(const char *dir);
/* t written whole (a temporary file renamed) as dir/SLOT.task; 0 or -errno. */
int handover__save(const char *dir, const struct handover_task *t);
void handover__remove(const char *dir, int slot);
/*
 * Every task dir describes, into *out (n of them; handover__free frees them). A file
 * that cannot be read back is said in one line and removed.
 */
int handover__load(const char *dir, struct handover_task **out, int *n);
void handover__free(struct handover_task *t, int n);

#endif /* TP_HANDOVER_H */
