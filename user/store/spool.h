/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The spool: records a store could not take (disk full, locked, damaged, unwritable),
 * kept as whole files until it can, then stored once, with their series.
 *
 * Each store has its own spool: DB.spool beside the database, and when that cannot be
 * written (the same full disk), SPOOL_FALLBACK_DIR/<the database's path, escaped> in
 * memory. A file is DIR/<start_ns>-<id>.task, written to a temporary name, synced and
 * renamed: whole or absent. It holds a header line (the host labels, the series'
 * point count), the record's JSON line, then the series block (series.h's encoding).
 * Storing it is idempotent: a task already stored (same id, host and start) is not
 * stored again, so a file whose unlink was lost to a crash costs nothing.
 */
#ifndef TP_SPOOL_H
#define TP_SPOOL_H

#include <stddef.h>
#include <linux/types.h>

#include "model/series.h"
#include "model/task.h"

#define SPOOL_FALLBACK_DIR "/run/taskprobe/spool"

struct store;

struct spool_stats {
	long files;
	__u64 bytes;
};

/*
 * The record of a task into db_path's spool (series pts too); 0 and the file's path
 * in where, or -errno with the reason in why (one line's worth; -EDQUOT: the spool
 * is full).
 */
int spool__save(const char *db_path, const struct task_record *rec, const struct label *host,
		int nhost, const struct series_point *pts, size_t npts, __u64 max_bytes,
		char *where, size_t wlen, char *why, size_t ylen);
/*
 * Stores what db_path's spool holds into st, oldest first, until max files or budget_ns
 * passed; each stored file is removed. The number stored, or -errno when the store
 * failed (the rest waits). A damaged file is renamed *.bad and said once.
 */
int spool__drain(struct store *st, const char *db_path, int max, __u64 budget_ns);
/* What db_path's spool holds now (both directories). */
int spool__stat(const char *db_path, struct spool_stats *out);

#endif /* TP_SPOOL_H */
