#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# An exec storm as one task: LOOPS parallel chains of N execs each (execloop, an exec
# of itself with no fork and no libc), as fast as the machine goes, with the collector
# (`run`, start-up included) and without (the same storm from this shell), in PAIRS
# interleaved pairs: the median ratio of their times, and the rates. Every run with the
# collector is checked: the task's exec count against the exact number made, and the
# events lost (the record's lost_events and the collector's lost_events_total).
# One pair is not enough here: the same storm's time moves by 30 % between runs on a
# machine of this project's CI kind.
# UNTRACKED=1: the storm runs outside any task, beside a task that only waits (what the
# collector costs the rest of the host's execs: its untracked tests, and each mapping
# looking for the uprobes it placed); the task must count none of the storm's execs.
#   [UNTRACKED=1] scripts/bench/execstorm.sh [LOOPS] [N] [PAIRS (5)]
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_root
loops=${1:-$((2 * $(nproc)))}
n=${2:-20000}
pairs=${3:-5}
EXECLOOP=${EXECLOOP:-${BENCH_BIN:-$(dirname "$TP")/bench}/execloop}
json=$(mktemp -p /var/tmp taskprobe-bench.XXXXXX)
trap 'waiting_task_abort; rm -f "$json" "$json".*' EXIT
storm="i=0; while [ \$i -lt $loops ]; do '$EXECLOOP' $n & i=\$((i+1)); done; wait"
made=$((1 + loops * (n + 1))) # sh itself, each loop's first exec, then its chain
want=$made
if [ "${UNTRACKED:-0}" = 1 ]; then
	want=1 # beside the storm, the task's own sh is its only exec
fi

# One storm; prints its time in microseconds. With the collector, its record's counts
# go to $json.counts, a line a run.
storm() {
	local us
	if [ "$1" = off ]; then
		us=$(elapsed_us sh -c "$storm")
		echo "$us" >> "$json.off"
		echo "$us"
		return
	fi
	if [ "${UNTRACKED:-0}" = 1 ]; then
		waiting_task_start "$json" : --json "$json"
		us=$(elapsed_us sh -c "$storm")
		waiting_task_end "$json"
	else
		us=$(elapsed_us "$TP" run --quiet --no-db --json "$json" -- sh -c "$storm")
	fi
	echo "$us" >> "$json.on"
	python3 - "$json" >> "$json.counts" <<'PY'
import json, sys
rec = json.load(open(sys.argv[1]))
print(rec["metrics"]["proc.execs"], rec["metrics"]["lost_events"],
      rec["collector"]["lost_events_total"])
PY
	echo "$us"
}

interleave "$pairs" " us" storm
python3 - "$json" "$want" "$made" "$RATIO" "$loops" "$n" "$pairs" "${UNTRACKED:-0}" <<'PY'
import statistics, sys
base = sys.argv[1]
counts = [tuple(int(v) for v in l.split()) for l in open(base + ".counts")]
on = statistics.median(int(l) for l in open(base + ".on"))
off = statistics.median(int(l) for l in open(base + ".off"))
want, made = int(sys.argv[2]), int(sys.argv[3])
ratio = float(sys.argv[4])
loops, n, pairs, untracked = map(int, sys.argv[5:])
exact = all(c[0] == want for c in counts)
lost = sum(c[1] + c[2] for c in counts)
print("exec storm%s, %d loops of %d: median time ratio with/without the collector %.3f over %d "
      "interleaved pairs (median rates %.0f and %.0f execs/s); the task counted %s of %d in "
      "each of %d runs: %s; lost %d" % (
          " beside a waiting task" if untracked else "", loops, n, ratio, pairs,
          made / (on / 1e6), made / (off / 1e6),
          "/".join(str(v) for v in sorted({c[0] for c in counts})), want, len(counts),
          "exact" if exact else "NOT EXACT", lost))
sys.exit(0 if exact and lost == 0 else 1)
PY
