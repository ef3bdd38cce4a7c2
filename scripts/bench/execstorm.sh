#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# An exec storm as one task: LOOPS parallel chains of N execs each (execloop, an exec
# of itself with no fork and no libc), as fast as the machine goes. Prints the rate
# reached, the task's exec count against the exact number made, and the events lost
# (the record's lost_events and the collector's lost_events_total). Then the same
# storm with the collector off, for the rate the machine gives without it.
#   scripts/bench/execstorm.sh [LOOPS] [N]
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_root
loops=${1:-$((2 * $(nproc)))}
n=${2:-20000}
EXECLOOP=${EXECLOOP:-${BENCH_BIN:-$(dirname "$TP")/bench}/execloop}
json=$(mktemp -p /var/tmp taskprobe-bench.XXXXXX)
trap 'rm -f "$json"' EXIT
storm="i=0; while [ \$i -lt $loops ]; do '$EXECLOOP' $n & i=\$((i+1)); done; wait"
want=$((1 + loops * (n + 1))) # sh itself, each loop's first exec, then its chain
off_us=$(elapsed_us sh -c "$storm")
on_us=$(elapsed_us "$TP" run --quiet --no-db --json "$json" -- sh -c "$storm")
python3 - "$json" "$want" "$on_us" "$off_us" "$loops" "$n" <<'PY'
import json, sys
rec = json.load(open(sys.argv[1]))
want, on_us, off_us, loops, n = (int(a) for a in sys.argv[2:])
m = rec["metrics"]
got = m["proc.execs"]
print("exec storm, %d loops of %d: %.0f execs/s with the collector (%.0f without, "
      "ratio %.3f); counted %d of %d made (%s); lost %d (task), %d (collector)" % (
          loops, n, want / (on_us / 1e6), want / (off_us / 1e6), on_us / off_us, got, want,
          "exact" if got == want else "OFF BY %d" % (got - want), m["lost_events"],
          rec["collector"]["lost_events_total"]))
sys.exit(0 if got == want and m["lost_events"] == 0 else 1)
PY
