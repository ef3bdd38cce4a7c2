#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# ns per event of each BPF program, from kernel.bpf_stats_enabled (run_time_ns / run_cnt),
# measured while a hackbench storm, 2000 short execs and 2000 direct writes run as a task.
#   scripts/bench/bpf-cost.sh
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_root
out=$(mktemp -p /var/tmp taskprobe-bench.XXXXXX)
CLEANUP=$out
with_bpf_stats
# The task reads the stats of the programs loaded for it, just before it ends.
"$TP" run --quiet -- sh -c "hackbench -g 2 -l 1000 >/dev/null 2>&1;
	i=0; while [ \$i -lt 2000 ]; do /bin/true; i=\$((i+1)); done;
	dd if=/dev/zero of='$out.dd' bs=64k count=2000 oflag=direct status=none;
	rm -f '$out.dd';
	bpftool prog show --json > '$out'"
python3 - "$out" <<'PY'
import json, sys
progs = [p for p in json.load(open(sys.argv[1])) if p.get("name", "").startswith("tp_")]
for p in sorted(progs, key=lambda p: p["name"]):
    cnt = p.get("run_cnt", 0)
    ns = p.get("run_time_ns", 0)
    per = ns / cnt if cnt else 0
    print(f"{p['name']:<24} {cnt:>10} events {per:8.1f} ns/event")
PY
