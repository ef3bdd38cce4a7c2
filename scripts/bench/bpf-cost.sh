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
# cost at most the floor plus one lookup; that reference is measured too, as a program
# (scripts/bench/lookup.bpf.c) attached after the collector. Each figure is the median
# of RUNS runs (3), each with its own fresh collector.
# FLOOR_SECOND=1 attaches the floor after the collector, in each run: on a tracepoint the
# programs run in the order they were attached, and the first pays for warming the
# hook's path (by default the floor is attached first, so it is the one that pays).
#   [RUNS=N] scripts/bench/bpf-cost.sh
#   FLOOR_SECOND=1 scripts/bench/bpf-cost.sh
#   COLLECT=all scripts/bench/bpf-cost.sh
#   UNTRACKED=1 scripts/bench/bpf-cost.sh
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_root
out=$(mktemp -p /var/tmp taskprobe-bench.XXXXXX)
cleanup() {
	waiting_task_abort
	detach_obj 8
	stop_floor
	rm -f "$out.fifo" "$out.lookup" "$out.dd"
}
CLEANUP=$out
with_bpf_stats
trap 'cleanup; sysctl -qw kernel.bpf_stats_enabled="$BPF_STATS_PREV"; rm -f "$out" "$out".*' EXIT
second=${FLOOR_SECOND:-0}
[ "$second" = 1 ] || start_floor "$out.fifo"
workload="hackbench -g 2 -l 1000 >/dev/null 2>&1;
	i=0; while [ \$i -lt 2000 ]; do /bin/true; i=\$((i+1)); done;
	dd if=/dev/zero of='$out.dd' bs=64k count=2000 oflag=direct status=none;
	rm -f '$out.dd'"
collect=${COLLECT:-cpu,io,mem,net,http}
runs=${RUNS:-3}
for ((run = 0; run < runs; run++)); do
	# The floor stays attached: its figures for this run are what it adds from here.
	[ "$second" = 1 ] || bpftool prog show --json > "$out.$run.before"
	if [ "${UNTRACKED:-0}" = 1 ]; then
		# The workload runs beside a task that only waits (lib.sh; a sleep loop there
		# once put ~100 tracked processes among the events), then reads the stats.
		waiting_task_start "$out" "bpftool prog show --json > '$out.$run'" --collect "$collect"
		if [ "$second" = 1 ]; then
			start_floor "$out.fifo"
		fi
		# The reference, one lookup, runs after the collector on each event.
		attach_obj 8 "$LOOKUP_OBJ" "$out.lookup"
		bpftool prog show --json > "$out.$run.before"
		sh -c "$workload"
		waiting_task_end "$out"
		detach_obj 8
		rm -f "$out.lookup"
		[ "$second" = 1 ] && { stop_floor; rm -f "$out.fifo"; }
	elif [ "$second" = 1 ]; then
		# The task attaches the floor (after the collector), then runs the workload.
		"$TP" run --quiet --no-db --collect "$collect" -- sh -c "
			mkfifo '$out.fifo'; '$FLOOR' '$FLOOR_OBJ' < '$out.fifo' > '$out.ready' &
			fl=\$!; exec 9> '$out.fifo'
			while ! grep -q ready '$out.ready' 2> /dev/null; do sleep 0.05; done
			bpftool prog show --json > '$out.$run.before'
			$workload
			bpftool prog show --json > '$out.$run'
			exec 9>&-; wait \$fl; rm -f '$out.fifo' '$out.ready'"
	else
		# The task reads the stats of every program just before it ends.
		"$TP" run --quiet --no-db --collect "$collect" -- sh -c "$workload;
			bpftool prog show --json > '$out.$run'"
	fi
done
python3 - "$out" "$runs" "${UNTRACKED:-0}" <<'PY'
import json, statistics, sys
out, runs, untracked = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1"
def load(path):
    return {p.get("name", ""): p for p in json.load(open(path))}
def per(p, before=None):
    n = p.get("run_cnt", 0) - (before or {}).get("run_cnt", 0)
    t = p.get("run_time_ns", 0) - (before or {}).get("run_time_ns", 0)
    return (t / n if n else 0.0), n
# hot program: (its hook's floor, target ratio)
hot = {"tp_sched_switch": ("sched_switch", 1.3),
       "tp_sched_process_fork": ("sched_process_fork", 5),
       "tp_sched_process_exec": ("sched_process_exec", 5),
       "tp_sched_process_exit": ("sched_process_exit", 5),
       "tp_block_io_start": ("block_io_start", 1.5),
       "tp_block_rq_issue": ("block_rq_issue", 1.5),
       "tp_block_rq_complete": ("block_rq_complete", 1.5),
       "tp_rss_stat": ("rss_stat", None),
       "tp_sock_recv_length": ("sock_recv_length", None)}
# per program: lists over the runs of (ns/event, events, floor ns/event, ratio, and
# with UNTRACKED=1 the reference's ns/event: the floor plus one lookup, lookup.bpf.c)
rows = {}
for r in range(runs):
    after, before = load("%s.%d" % (out, r)), load("%s.%d.before" % (out, r))
    for name, p in after.items():
        if not name.startswith("tp_"):
            continue
        # Beside the task, only the workload's events: the task's start is not in it.
        ns, n = per(p, before.get(name) if untracked else None)
        f = after.get("floor_" + hot[name][0]) if name in hot else None
        fns = per(f, before.get(f["name"]))[0] if f else 0.0
        ref = after.get("lookup_" + hot[name][0]) if name in hot else None
        rows.setdefault(name, []).append((ns, n, fns, ns / fns if fns else 0.0,
                                          per(ref)[0] if ref else 0.0))
    # Hot hooks the collector left alone (not loaded, or loaded and not attached, as
    # rss_stat where the cgroups give memory): what their events would have paid.
    for name in hot:
        if name not in after or per(after[name])[1] == 0:
            rows.pop(name, None)
            f = after.get("floor_" + hot[name][0], {})
            fns, n = per(f, before.get(f.get("name")))
            rows.setdefault(name + " (not attached)", []).append((0.0, n, fns, 0.0, 0.0))
med = statistics.median
print("median of %d runs (ns/event of each run in brackets)" % runs)
for name in sorted(rows):
    v = rows[name]
    line = "%-24s %9d events %8.1f ns/event" % (name, med(x[1] for x in v), med(x[0] for x in v))
    if "not attached" in name:
        line = "%-39s %9d events at no cost (an empty program: %.1f ns)" % (
            name, med(x[1] for x in v), med(x[2] for x in v))
    elif name in hot and med(x[2] for x in v) > 0:
        r = med(x[3] for x in v)
        line += "  floor %6.1f ns  ratio %5.2f" % (med(x[2] for x in v), r)
        target, ref = hot[name][1], med(x[4] for x in v)
        if untracked and ref > 0:
            line += "  one lookup %6.1f ns  (target <= floor + one lookup: %s)" % (
                ref, "met" if med(x[0] for x in v) <= ref else "NOT met")
        elif target:
            line += "  (target <= %g: %s)" % (target, "met" if r <= target else "NOT met")
        line += "  [%s]" % " ".join("%.0f" % x[0] for x in v)
    print(line)
PY
