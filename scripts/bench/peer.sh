#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The peer, in the same run as the collector: a 1 s psutil-style poller of the task's
# processes (scripts/bench/poller.py, what CI systems run inside tasks today) beside
# taskprobe, on a CI-like task (a build's worth of short processes: 1500 execs of
# /bin/true, 300 shells that sleep 10 ms, a hackbench, 2 s asleep). Prints what each
# saw against the exact number of execs the task made, and what each cost in CPU per
# second of the task: the poller its own getrusage, the collector its BPF programs'
# run time (kernel.bpf_stats_enabled) plus taskprobe's own process.
#   scripts/bench/peer.sh
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_root
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d -p /var/tmp taskprobe-bench.XXXXXX)
with_bpf_stats
trap 'sysctl -qw kernel.bpf_stats_enabled="$BPF_STATS_PREV"; rm -rf "$work"' EXIT
# Made, exactly: 1500 execs of true, 301 of sleep (each shell execs its sleep, then one).
"$TP" run --quiet --no-db --json "$work/rec.json" -- sh -c "
	python3 '$here/poller.py' \$\$ '$work/poller.json' 1 & P=\$!
	bpftool prog show --json > '$work/start.json'
	cat /proc/\$PPID/stat > '$work/start.stat'
	i=0; while [ \$i -lt 1500 ]; do /bin/true; i=\$((i+1)); done
	i=0; while [ \$i -lt 300 ]; do sh -c 'sleep 0.01'; i=\$((i+1)); done
	hackbench -g 2 -l 300 > /dev/null 2>&1
	sleep 2
	bpftool prog show --json > '$work/end.json'
	cat /proc/\$PPID/stat > '$work/end.stat'
	kill \$P; wait \$P"
python3 - "$work" <<'PY'
import json, os, sys
work = sys.argv[1]
rec = json.load(open(work + "/rec.json"))
pol = json.load(open(work + "/poller.json"))
def bpf_ns(path):
    return sum(p.get("run_time_ns", 0) for p in json.load(open(path))
               if p.get("name", "").startswith("tp_"))
def proc_cpu_s(path):
    # utime and stime of `taskprobe run` (the task's parent), in clock ticks
    f = open(path).read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")
wall = rec["wall_ns"] / 1e9
user_s = proc_cpu_s(work + "/end.stat") - proc_cpu_s(work + "/start.stat")
bpf_s = (bpf_ns(work + "/end.json") - bpf_ns(work + "/start.json")) / 1e9
made = {"true": 1500, "sleep": 301}
def tp_execs(comm):
    return sum(p["execs"] for p in rec["programs"] if p["path"].rsplit("/", 1)[-1] == comm)
print("peer: a %.1f s task, %d execs, %d processes" % (wall, rec["metrics"]["proc.execs"],
      rec["metrics"]["proc.forks"] + 1))
for comm, n in made.items():
    got, saw = tp_execs(comm), pol["by_comm"].get(comm, 0)
    print("  %-5s made %4d: taskprobe counted %4d (%s), the 1 s poller saw %4d (missed %.1f%%)"
          % (comm, n, got, "exact" if got == n else "OFF BY %d" % (got - n), saw,
             100.0 * (n - saw) / n))
print("  CPU per s of the task: taskprobe's BPF programs %.1f ms and its process %.1f ms;"
      " the poller %.1f ms (%d samples, %d processes seen of %d)"
      % (bpf_s * 1e3 / wall, user_s * 1e3 / wall, pol["cpu_s"] * 1e3 / wall,
                                                 pol["samples"], pol["processes_seen"],
                                                 rec["metrics"]["proc.forks"] + 1))
sys.exit(0 if all(tp_execs(c) == n for c, n in made.items()) else 1)
PY
