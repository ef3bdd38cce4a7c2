#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# `taskprobe count` over N synthetic stored tasks (12 metrics, 9 labels each), grouped
# by instance type and filtered by a label. Prints the median of 5 runs of each.
#   scripts/bench/count.sh [N]
set -euo pipefail
. "$(dirname "$0")/lib.sh"
n=${1:-100000}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
db="$dir/tp.db"
# The schema is the product's own: one real task creates it.
"$TP" run --quiet --db "$db" -- /bin/true
sqlite3 "$db" <<SQL
BEGIN;
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < $n)
INSERT INTO tasks (id, host, command, status, exit_status, start_ns, wall_ns, record)
SELECT 'synthetic-' || i, 'worker-' || (i % 50), '["make"]', 'exited', 0,
       (strftime('%s', 'now') - i * 6) * 1000000000, 1000000000, NULL FROM n;
INSERT INTO metrics SELECT t.tid, m.name, abs(random() % 1000)
FROM tasks t, (SELECT 'cpu.time_ns' AS name UNION ALL SELECT 'proc.execs' UNION ALL
	SELECT 'proc.forks' UNION ALL SELECT 'proc.exits' UNION ALL SELECT 'proc.failed_exits'
	UNION ALL SELECT 'io.read_bytes' UNION ALL SELECT 'io.write_bytes' UNION ALL
	SELECT 'io.read_ops' UNION ALL SELECT 'io.write_ops' UNION ALL SELECT 'mem.peak_bytes'
	UNION ALL SELECT 'cpu.avg_cores' UNION ALL SELECT 'lost_events') m
WHERE t.id LIKE 'synthetic-%';
INSERT INTO labels SELECT t.tid, l.key, l.key || '-' || (t.tid % l.mod)
FROM tasks t, (SELECT 'instance_type' AS key, 4 AS mod UNION ALL SELECT 'worker_pool', 3
	UNION ALL SELECT 'host', 50 UNION ALL SELECT 'kernel', 2 UNION ALL SELECT 'cpu_model', 2
	UNION ALL SELECT 'ncpu', 2 UNION ALL SELECT 'mem_total', 2 UNION ALL SELECT 'branch', 10
	UNION ALL SELECT 'project', 7) l
WHERE t.id LIKE 'synthetic-%';
COMMIT;
ANALYZE;
SQL
time_median() {
	local runs=()
	for _ in 1 2 3 4 5; do
		runs+=($(elapsed_us "$TP" "$@"))
	done
	printf '%s\n' "${runs[@]}" | median
}
a=$(time_median count proc.execs --db "$db" --by instance_type)
b=$(time_median count io.write_bytes --db "$db" --label worker_pool=worker_pool-1 --since 7d --by host)
awk -v a="$a" -v b="$b" -v n="$n" 'BEGIN {
	printf "count over %d tasks, --by instance_type: median %.1f ms\n", n, a / 1000
	printf "count over %d tasks, --label --since --by host: median %.1f ms\n", n, b / 1000 }'
