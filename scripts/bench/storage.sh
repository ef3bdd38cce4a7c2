#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Bytes of stored series per task-hour of 1 s samples: a real task sampled every
# 100 ms for SECS seconds (CPU bursts, memory, disk), its stored blocks measured,
# scaled to 3600 samples. Also the whole database per task.
#   scripts/bench/storage.sh [SECS]
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_root
secs=${1:-60}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
db="$dir/tp.db"
"$TP" run --quiet --db "$db" --id storage-bench --interval 100 -- sh -c "
	end=\$((\$(date +%s) + $secs))
	while [ \$(date +%s) -lt \$end ]; do
		dd if=/dev/zero of=$dir/f bs=1M count=8 conv=fsync status=none
		seq 1 200000 | sort -rn > /dev/null
		sleep 0.3
	done"
sqlite3 "$db" "SELECT sum(points), sum(length(data)) FROM series" | awk -F'|' '{
	printf "series: %d samples in %d bytes = %.1f bytes/sample, %.1f KiB per task-hour of 1 s samples\n", $1, $2, $2 / $1, $2 / $1 * 3600 / 1024 }'
sqlite3 "$db" "PRAGMA wal_checkpoint(TRUNCATE)" > /dev/null
echo "database file after one task: $(stat -c %s "$db") bytes"
