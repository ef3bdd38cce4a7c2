#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# ns per event of each BPF program, from kernel.bpf_stats_enabled (run_time_ns /
# run_cnt), while a hackbench storm, 2000 short execs and 2000 direct writes run as a
# task; and, in the same run on the same events, the dispatch floor: an empty program
# on each hot hook (scripts/bench/floor.bpf.c). Each hot program's cost is printed as
# a ratio to its hook's floor, against the targets of docs/PERFORMANCE.md.
# COLLECT=all also attaches the run-queue histogram's sched_switch program (not
# collected by default). UNTRACKED=1 runs the same workload outside the task (which
# only waits): what the collector costs the rest of the host, whose events should
# cost at most the floor plus one lookup.
#   scripts/bench/bpf-cost.sh
#   COLLECT=all scripts/bench/bpf-cost.sh
#   UNTRACKED=1 scripts/bench/bpf-cost.sh
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_root
FLOOR=${FLOOR:-${BENCH_BIN:-$(dirname "$TP")/bench}/floor}
FLOOR_OBJ=${FLOOR_OBJ:-${BENCH_BPF:-$(dirname "$TP")/bpf}/floor.bpf.o}
out=$(mktemp -p /var/tmp taskprobe-bench.XXXXXX)
fifo=$out.fifo
mkfifo "$fifo"
floor_pid=
# The floor ends when its stdin (the fifo) closes.
cleanup() {
	exec 9>&- 2> /dev/null || true
	[ -n "$floor_pid" ] && wait "$floor_pid" 2> /dev/null || true
	rm -f "$fifo" "$out.dd" "$out.ready"
}
CLEANUP=$out
with_bpf_stats
trap 'cleanup; sysctl -qw kernel.bpf_stats_enabled="$BPF_STATS_PREV"; rm -f "$out"' EXIT
# The floor's programs stay attached while its stdin (the fifo) is open.
"$FLOOR" "$FLOOR_OBJ" < "$fifo" > "$out.ready" &
floor_pid=$!
exec 9> "$fifo"
for _ in $(seq 100); do
	grep -q ready "$out.ready" 2> /dev/null && break
	sleep 0.05
done
grep -q ready "$out.ready" || { echo "bpf-cost: the floor did not load" >&2; exit 1; }
rm -f "$out.ready"
workload="hackbench -g 2 -l 1000 >/dev/null 2>&1;
	i=0; while [ \$i -lt 2000 ]; do /bin/true; i=\$((i+1)); done;
	dd if=/dev/zero of='$out.dd' bs=64k count=2000 oflag=direct status=none;
	rm -f '$out.dd'"
collect=${COLLECT:-cpu,io,mem,net,http}
if [ "${UNTRACKED:-0}" = 1 ]; then
	# The workload runs beside a task that only waits, then reads the stats.
	"$TP" run --quiet --no-db --collect "$collect" -- sh -c "
		while [ ! -e '$out.done' ]; do sleep 0.05; done
		bpftool prog show --json > '$out'" &
	task=$!
	sleep 0.5
	sh -c "$workload"
	touch "$out.done"
	wait "$task"
	rm -f "$out.done"
else
	# The task reads the stats of every program just before it ends.
	"$TP" run --quiet --no-db --collect "$collect" -- sh -c "$workload;
		bpftool prog show --json > '$out'"
fi
python3 - "$out" <<'PY'
import json, sys
progs = {p.get("name", ""): p for p in json.load(open(sys.argv[1]))}
def per(p):
    return p["run_time_ns"] / p["run_cnt"] if p.get("run_cnt") else 0.0
# hot program: (its hook's floor, target ratio)
hot = {"tp_sched_switch": ("sched_switch", 1.3),
       "tp_sched_process_fork": ("sched_process_fork", 5),
       "tp_sched_process_exec": ("sched_process_exec", 5),
       "tp_sched_process_exit": ("sched_process_exit", 5),
       "tp_sched_process_free": ("sched_process_free", 5),
       "tp_block_io_start": ("block_io_start", 1.5),
       "tp_block_rq_issue": ("block_rq_issue", 1.5),
       "tp_block_rq_complete": ("block_rq_complete", 1.5),
       "tp_rss_stat": ("rss_stat", None),
       "tp_sock_recv_length": ("sock_recv_length", None)}
# Hooks the collector leaves alone by default: what their events would pay.
for name in ("tp_sched_switch", "tp_block_rq_issue"):
    if name not in progs:
        f = progs.get("floor_" + hot[name][0], {})
        print("%-24s not attached: %d events at no cost (an empty program: %.1f ns)"
              % (name, f.get("run_cnt", 0), per(f)))
for name in sorted(n for n in progs if n.startswith("tp_")):
    p = progs[name]
    line = "%-24s %10d events %8.1f ns/event" % (name, p.get("run_cnt", 0), per(p))
    if name in hot:
        hook, target = hot[name]
        f = progs.get("floor_" + hook)
        if f and per(f) > 0:
            r = per(p) / per(f)
            line += "  floor %6.1f ns  ratio %5.2f" % (per(f), r)
            if target:
                line += "  (target <= %g: %s)" % (target, "met" if r <= target else "NOT met")
    print(line)
PY
