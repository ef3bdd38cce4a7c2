#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The fleet store: shipping throughput into one PostgreSQL 15 (a cluster of the
# benchmark's own, scripts/pglab/pglab.sh, on its unix socket), and fleet queries
# over TASKS synthetic tasks from HOSTS hosts. Medians of 5 runs.
#   scripts/bench/fleet.sh [SHIP_TASKS] [TASKS] [HOSTS]
#   KEEP=1: leave the cluster running (its directory is printed; pglab.sh down DIR)
#
# Shipping: one real task's rows in a local store, cloned SHIP_TASKS times (its record,
# 52 metrics, labels, histograms, network rows and series block each), then
# `taskprobe ship`: tasks per second, with an empty fleet each run (new) and with the
# fleet holding them all (resent: the idempotent path).
# Pruning: sink_retain_days = 7 over those 14 days, once, timed whole.
# Queries: TASKS tasks over 14 days from HOSTS hosts (4 instance types, 3 pools), 13
# metrics and 2 remote hosts each, made in SQL; `taskprobe count`/`list` timed whole.
# The server is sized as a fleet's would be (shared_buffers 2GB, work_mem 64MB);
# PGLAB_SHARED_BUFFERS and PGLAB_WORK_MEM override that.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_root
ship_n=${1:-2000}
n=${2:-1000000}
hosts=${3:-100}
root=$(cd "$(dirname "$0")/../.." && pwd)
lab="$root/scripts/pglab/pglab.sh"
dir=/var/tmp/taskprobe-bench-pg-$$
work=$(mktemp -d)
if [ "${KEEP:-0}" = 1 ]; then
	trap 'rm -rf "$work"; echo "kept: $lab psql $dir SQL; $lab down $dir"' EXIT
else
	trap '"$lab" down "$dir"; rm -rf "$work"' EXIT
fi
mkdir -p "$dir"
head -c 18 /dev/urandom | base64 | tr -d '/+=' >"$dir/pw"
port=$((20000 + $$ % 20000))
PGLAB_SHARED_BUFFERS=${PGLAB_SHARED_BUFFERS:-2GB} PGLAB_WORK_MEM=${PGLAB_WORK_MEM:-64MB} \
	"$lab" up "$dir" "$port"
sink="host=$dir/sock port=$port user=tp dbname=fleet"
psql_fleet() { "$lab" psql "$dir" "$@"; }

db="$work/local.db"
conf="$work/tp.conf"
printf 'db = %s\nsink = %s\nsink_passfile = %s\n' "$db" "$sink" "$dir/pgpass" >"$conf"
# One real task (its run ships it and makes the fleet schema), then its clones.
"$TP" run --quiet --config "$conf" --id real -- sh -c 'for i in 1 2 3; do /bin/true; done'
sqlite3 "$db" <<SQL
BEGIN;
WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < $ship_n)
INSERT INTO tasks (id, host, command, status, exit_status, start_ns, wall_ns, record, ship)
SELECT 'clone-' || i, t.host, t.command, t.status, t.exit_status, t.start_ns + i, t.wall_ns,
       t.record, 1 FROM k, tasks t WHERE t.id = 'real';
INSERT INTO metrics SELECT c.tid, m.name, m.value FROM tasks c, tasks r, metrics m
 WHERE c.id LIKE 'clone-%' AND r.id = 'real' AND m.task = r.tid;
INSERT INTO labels SELECT c.tid, l.key, l.value FROM tasks c, tasks r, labels l
 WHERE c.id LIKE 'clone-%' AND r.id = 'real' AND l.task = r.tid;
INSERT INTO histograms SELECT c.tid, h.name, h.unit, h.count, h.sum, h.slots
 FROM tasks c, tasks r, histograms h WHERE c.id LIKE 'clone-%' AND r.id = 'real' AND h.task = r.tid;
INSERT INTO net SELECT c.tid, x.host, x.address, x.port, x.name, x.value FROM tasks c, tasks r,
 (SELECT 'bucket.s3.amazonaws.com' AS host, '' AS address, 0 AS port, 'http.requests' AS name,
  40 AS value UNION ALL SELECT 'bucket.s3.amazonaws.com', '', 0, 'http.failures', 2
  UNION ALL SELECT 'github.com', '140.82.112.3', 443, 'net.tcp.connect_attempts', 3) x
 WHERE c.id LIKE 'clone-%' AND r.id = 'real';
INSERT INTO series SELECT c.tid, s.seq, s.points, s.data FROM tasks c, tasks r, series s
 WHERE c.id LIKE 'clone-%' AND r.id = 'real' AND s.task = r.tid;
COMMIT;
SQL
echo "one task's shipped document: $(sqlite3 "$db" "SELECT count(*) FROM metrics WHERE task = 1") metrics, $(sqlite3 "$db" "SELECT length(record) FROM tasks WHERE tid = 1") bytes of record"

ship_rate() {
	local us
	us=$(elapsed_us "$TP" ship --config "$conf")
	awk -v n="$ship_n" -v us="$us" 'BEGIN { printf "%.0f\n", n / (us / 1e6) }'
}
new=() resent=()
for _ in 1 2 3 4 5; do
	psql_fleet "TRUNCATE taskprobe.tasks CASCADE" >/dev/null
	sqlite3 "$db" "UPDATE tasks SET ship = 1 WHERE id LIKE 'clone-%'"
	new+=("$(ship_rate)")
	sqlite3 "$db" "UPDATE tasks SET ship = 1 WHERE id LIKE 'clone-%'"
	resent+=("$(ship_rate)")
done
got=$(psql_fleet "SELECT count(*) FROM taskprobe.tasks WHERE id LIKE 'clone-%'")
psql_fleet "TRUNCATE taskprobe.tasks CASCADE" >/dev/null
[ "$got" -eq "$ship_n" ] || { echo "fleet has $got clones, expected $ship_n" >&2; exit 1; }
echo "shipping $ship_n tasks: new ${new[*]} tasks/s, median $(printf '%s\n' "${new[@]}" | median)"
echo "resending $ship_n tasks: ${resent[*]} tasks/s, median $(printf '%s\n' "${resent[@]}" | median)"

# The fleet: n tasks from the hosts over 14 days, in SQL (the schema is the shipper's).
now_ns=$(date +%s%N)
echo "making $n synthetic tasks from $hosts hosts..."
t0=$(now_ns)
psql_fleet "
INSERT INTO taskprobe.tasks (host, id, start_ns, command, status, exit_status, wall_ns, labels)
SELECT 'worker-' || lpad((i % $hosts)::text, 3, '0'), 'synthetic-' || i,
       $now_ns - (i::bigint * (14 * 86400 * 1000000000::bigint / $n)), '[\"make\"]', 'exited',
       0, 1000000000,
       jsonb_build_object('host', 'worker-' || lpad((i % $hosts)::text, 3, '0'),
         'instance_type', (ARRAY['m5.large', 'c5.xlarge', 'm6i.2xlarge', 'c6g.4xlarge'])[1 + i % $hosts % 4],
         'worker_pool', 'pool-' || (i % $hosts % 3), 'kernel', '6.1.0', 'cpu_model', 'Xeon',
         'ncpu', '8', 'mem_total', '34359738368', 'branch', 'branch-' || (i % 10),
         'project', 'project-' || (i % 7))
FROM generate_series(1, $n) i" >/dev/null
psql_fleet "
INSERT INTO taskprobe.metrics (task, name, start_ns, value)
SELECT t.tid, m.name, t.start_ns, (t.tid * 7919 + m.k) % 1000
FROM taskprobe.tasks t, (VALUES ('cpu.time_ns', 1), ('proc.execs', 2), ('proc.forks', 3),
  ('proc.exits', 4), ('proc.failed_exits', 5), ('io.read_bytes', 6), ('io.write_bytes', 7),
  ('io.read_ops', 8), ('io.write_ops', 9), ('mem.peak_bytes', 10), ('cpu.avg_cores', 11),
  ('lost_events', 12), ('http.failures', 13)) m(name, k)
WHERE t.id LIKE 'synthetic-%'" >/dev/null
psql_fleet "
INSERT INTO taskprobe.net (task, host, address, port, name, start_ns, value)
SELECT t.tid, x.host, x.address, x.port, x.name, t.start_ns,
       (t.tid + x.k) % 3
FROM taskprobe.tasks t, (VALUES
  ('bucket-a.s3.amazonaws.com', '', 0, 'http.failures', 1),
  ('github.com,www.github.com', '140.82.112.3', 443, 'http.failures', 2)) x(host, address, port, name, k)
WHERE t.id LIKE 'synthetic-%'" >/dev/null
psql_fleet "VACUUM ANALYZE" >/dev/null
t1=$(now_ns)
echo "made in $(((t1 - t0) / 1000000000)) s; fleet size $(psql_fleet "SELECT pg_size_pretty(pg_database_size('fleet'))")"

q() {
	local label=$1 runs=()
	shift
	for _ in 1 2 3 4 5; do
		runs+=($(elapsed_us "$TP" "$@" --db "$sink" --config "$conf"))
	done
	awk -v m="$(printf '%s\n' "${runs[@]}" | median)" -v l="$label" \
		'BEGIN { printf "%-58s median %8.1f ms\n", l, m / 1000 }'
}
q "count proc.execs --by instance_type --since 7d" count proc.execs --by instance_type --since 7d
q "count proc.execs --by host --since 7d" count proc.execs --by host --since 7d
q "count http.failures --host '*.s3.amazonaws.com' --since 7d" count http.failures --host '*.s3.amazonaws.com' --since 7d
q "count http.failures --host '*github*' --by instance_type" count http.failures --host '*github*' --by instance_type
q "count cpu.time_ns --label worker_pool=pool-1 --since 7d" count cpu.time_ns --label worker_pool=pool-1 --since 7d
q "count proc.execs --host 'worker-00[0-4]' --since 1d" count proc.execs --host 'worker-00[0-4]' --since 1d
q "list --label host=worker-042 --since 7d --limit 50" list --label host=worker-042 --since 7d --limit 50
q "show synthetic-$((n / 2))" show "synthetic-$((n / 2))"
# The answer is the fleet's own sum, whatever plan found it.
want=$(psql_fleet "SELECT sum(value) FROM taskprobe.metrics WHERE name = 'proc.execs'")
got=$("$TP" count proc.execs --db "$sink" --config "$conf" --json | sed -n 's/^  "sum": \(.*\)$/\1/p')
[ "$got" = "$want" ] || { echo "count says $got, SQL $want" >&2; exit 1; }
echo "count proc.execs over every task: $got, as SQL's own sum"

# Pruning: sink_retain_days = 7 over the 14 days, once (it deletes): tasks per second.
before=$(psql_fleet "SELECT count(*) FROM taskprobe.tasks")
printf 'sink_retain_days = 7\n' >>"$conf"
us=$(elapsed_us "$TP" ship --config "$conf")
after=$(psql_fleet "SELECT count(*) FROM taskprobe.tasks")
awk -v n=$((before - after)) -v us="$us" -v left="$after" \
	'BEGIN { printf "pruning %d tasks older than 7 days: %.0f ms, %.0f tasks/s; %d left\n", n, us / 1000, n / (us / 1e6), left }'
