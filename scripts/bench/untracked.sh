#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# What a task's collector costs the rest of the host: ns per sched_switch while a
# hackbench storm runs OUTSIDE the task (the task itself only sleeps), from
# kernel.bpf_stats_enabled. The common case on a worker host running other work.
#   scripts/bench/untracked.sh
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_root
out=$(mktemp -p /var/tmp taskprobe-bench.XXXXXX)
CLEANUP=$out
with_bpf_stats
hackbench -g 2 -l 3000 > /dev/null 2>&1 &
hb=$!
"$TP" run --quiet --no-db -- sh -c "sleep 2; bpftool prog show --json > '$out'"
wait "$hb"
python3 - "$out" <<'PY'
import json, sys
for p in json.load(open(sys.argv[1])):
    if p.get("name") == "tp_sched_switch":
        n = p.get("run_cnt", 0)
        print(f"sched_switch with the storm outside the task: {n} events "
              f"{p.get('run_time_ns', 0) / max(n, 1):.1f} ns/event")
PY
