#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# What a TCP state change costs the rest of the host: N loopback connections, each
# opened and closed by both ends (about ten inet_sock_set_state events), made outside
# any task while a task that only waits (in a read of a fifo: no events of its own)
# keeps the collector up. ns per event of tp_inet_sock_set_state from
# kernel.bpf_stats_enabled, beside, in the same run, the empty program on that hook
# (floor.bpf.c) and the floor plus one lookup (lookup.bpf.c), the target for the rest of
# the host's events. Medians of RUNS runs (3).
#   [RUNS=N] scripts/bench/tcpstate.sh [N]
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_root
FLOOR=${FLOOR:-${BENCH_BIN:-$(dirname "$TP")/bench}/floor}
FLOOR_OBJ=${FLOOR_OBJ:-${BENCH_BPF:-$(dirname "$TP")/bpf}/floor.bpf.o}
LOOKUP_OBJ=${LOOKUP_OBJ:-${BENCH_BPF:-$(dirname "$TP")/bpf}/lookup.bpf.o}
n=${1:-5000}
runs=${RUNS:-3}
out=$(mktemp -p /var/tmp taskprobe-bench.XXXXXX)
CLEANUP=$out
with_bpf_stats
trap 'detach_obj 8; stop_floor; sysctl -qw kernel.bpf_stats_enabled="$BPF_STATS_PREV"; rm -f "$out" "$out".*' EXIT
start_floor "$out.fifo"
attach_obj 8 "$LOOKUP_OBJ" "$out.lookup"
cat > "$out.py" <<'PY'
import socket, sys
srv = socket.socket()
srv.bind(("127.0.0.1", 0))
srv.listen(64)
for _ in range(int(sys.argv[1])):
    c = socket.create_connection(srv.getsockname())
    a, _ = srv.accept()
    c.close()
    a.close()
srv.close()
PY
for ((run = 0; run < runs; run++)); do
	mkfifo "$out.done"
	"$TP" run --quiet --no-db -- sh -c "read x < '$out.done'; bpftool prog show --json > '$out.$run'" &
	task=$!
	sleep 0.5
	bpftool prog show --json > "$out.$run.before"
	python3 "$out.py" "$n"
	echo done > "$out.done"
	wait "$task"
	rm -f "$out.done"
done
python3 - "$out" "$runs" <<'PY'
import json, statistics, sys
out, runs = sys.argv[1], int(sys.argv[2])
def load(path):
    return {p.get("name", ""): p for p in json.load(open(path))}
def per(name, r):
    a, b = load("%s.%d" % (out, r)), load("%s.%d.before" % (out, r))
    p, q = a.get(name, {}), b.get(name, {})
    n = p.get("run_cnt", 0) - q.get("run_cnt", 0)
    return ((p.get("run_time_ns", 0) - q.get("run_time_ns", 0)) / n if n else 0.0), n
hook = "inet_sock_set_state"
rows = [[per(p + hook, r) for p in ("tp_", "floor_", "lookup_")] for r in range(runs)]
med = statistics.median
ns, fl, lk = (med(x[i][0] for x in rows) for i in range(3))
print("tp_%s %d events %.1f ns/event  floor %.1f ns  ratio %.2f  one lookup %.1f ns  "
      "(target <= floor + one lookup: %s)  [%s]" % (
          hook, med(x[0][1] for x in rows), ns, fl, ns / fl if fl else 0, lk,
          "met" if ns <= lk else "NOT met", " ".join("%.0f" % x[0][0] for x in rows)))
PY
