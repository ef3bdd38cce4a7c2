#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The first touch on a lifecycle hook (scripts/bench/touch.bpf.c): four programs on each
# of fork, exec and exit, run in order for each event (empty, clock read, clock read,
# empty), while EXECS short processes run, no collector attached. Prints ns/event of
# each: what the first program and the first clock read pay over the same work done
# again in the same event, which is what a collector's program on that hook pays for
# each page it is the first to touch since the last context switch.
# Then the same for each kind of memory the collector uses, on sched_process_exec
# (scripts/bench/touchmem.bpf.c): the clock, a global, a hash map's value, an array
# map's, a per-CPU array's, the thread's task storage; each touched twice in a row;
# then a page against a line (m21-m24: a new map's page, the same page's next line).
#   [EXECS=3000] scripts/bench/touch.sh
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_root
root=$(cd "$(dirname "$0")/../.." && pwd)
FLOOR_OBJ=${TOUCH_OBJ:-${BENCH_BPF:-$root/build/bpf}/touch.bpf.o}
MEM_OBJ=${TOUCHMEM_OBJ:-${BENCH_BPF:-$root/build/bpf}/touchmem.bpf.o}
make -C "$root" -s -j"$(nproc)" build/bench/floor build/bpf/touch.bpf.o build/bpf/touchmem.bpf.o > /dev/null
tmp=$(mktemp -d -p /var/tmp taskprobe-touch.XXXXXX)
cleanup() {
	stop_floor
	sysctl -qw kernel.bpf_stats_enabled="$BPF_STATS_PREV"
	rm -rf "$tmp"
}
BPF_STATS_PREV=$(sysctl -n kernel.bpf_stats_enabled)
trap cleanup EXIT
sysctl -qw kernel.bpf_stats_enabled=1
execs=${EXECS:-3000}
execs() {
	local i=0
	while [ $i -lt "$execs" ]; do
		/bin/true
		i=$((i + 1))
	done
}
start_floor "$tmp/fifo"
execs
bpftool prog show --json > "$tmp/progs"
stop_floor
FLOOR_OBJ=$MEM_OBJ
start_floor "$tmp/fifo2"
bpftool map update name touch_hash key 0 0 0 0 value 0 0 0 0 0 0 0 0
execs
bpftool prog show --json > "$tmp/mem"
python3 - "$tmp/progs" <<'PY'
import json, sys
progs = {p.get("name", ""): p for p in json.load(open(sys.argv[1]))}
what = ["first, empty", "first clock read", "second clock read", "last, empty"]
print("%-20s %14s %14s %14s %14s" % ("hook", *what))
for hook in ("sched_process_fork", "sched_process_exec", "sched_process_exit"):
    row = []
    for i in range(1, 5):
        # bpftool shows names cut to 15 characters
        p = next((v for k, v in progs.items() if k and ("t%d_%s" % (i, hook)).startswith(k)), None)
        row.append("%.1f ns" % (p["run_time_ns"] / p["run_cnt"]) if p and p.get("run_cnt") else "-")
    print("%-20s %14s %14s %14s %14s" % (hook, *row))
PY
python3 - "$tmp/mem" "$execs" <<'PY'
import json, sys
print()
print("sched_process_exec, in order (first and second touch of each):")
print("%-14s %10s %8s" % ("program", "ns/event", "events"))
rows = [p for p in json.load(open(sys.argv[1])) if p.get("name", "").startswith("m")]
for p in sorted(rows, key=lambda p: p["name"]):
    if p["name"] == "m00_fork" or not p.get("run_cnt"):
        continue
    print("%-14s %10.1f %8d" % (p["name"], p["run_time_ns"] / p["run_cnt"], p["run_cnt"]))
PY
