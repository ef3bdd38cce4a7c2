#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# A build-like workload: `make -j2` of a C project (taskprobe's own user/ sources,
# COPIES times over, compiled with gcc -O2 from a clean tree; ~25 s here), as a task
# with the collector vs without, interleaved. Prints the median ratios of wall times
# and of CPU times (everything the build and the collector used; steal left out).
# MODE=daemon: the task runs through a host daemon of this script's own (the collector
# loaded once), not with one embedded in `run` (loaded and attached for each build);
# DAEMON_CONFIG names its config (say, a `collect` without mem, to see rss_stat's share).
# Then one more build as a task, with the collector's own cost counted directly.
#   [MODE=daemon] scripts/bench/build.sh [PAIRS] [COPIES]
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_root
pairs=${1:-7}
copies=${2:-8}
here=$(cd "$(dirname "$0")/../.." && pwd)
dir=$(mktemp -d -p /var/tmp taskprobe-bench.XXXXXX)
mode=${MODE:-embedded}
daemon=
cleanup() {
	if [ -n "$daemon" ]; then
		kill -TERM "$daemon" 2> /dev/null || true
		wait "$daemon" 2> /dev/null || true
	fi
	rm -rf "$dir"
}
trap cleanup EXIT
if [ "$mode" = daemon ]; then
	export TASKPROBE_CONTROL=$dir/control.sock TASKPROBE_PIN_DIR=off
	"$TP" daemon ${DAEMON_CONFIG:+--config "$DAEMON_CONFIG"} --db "$dir/d.db" --listen "127.0.0.1:$((30000 + $$ % 20000))" \
		2> "$dir/daemon.log" &
	daemon=$!
	for _ in $(seq 100); do
		[ -S "$TASKPROBE_CONTROL" ] && break
		sleep 0.05
	done
	[ -S "$TASKPROBE_CONTROL" ] || { echo "build: the daemon did not start" >&2; exit 1; }
fi
for ((c = 0; c < copies; c++)); do
	mkdir "$dir/c$c"
	# Named by their layer too: two layers may have files of the same name.
	for f in "$here"/user/*/*.c; do
		l=${f%/*}
		cp "$f" "$dir/c$c/${l##*/}_${f##*/}"
	done
done
(cd "$here"/user && cp --parents */*.h "$dir"/)
cp "$here"/include/taskprobe.h "$here"/build/bpf/taskprobe.skel.h "$dir"/
cat > "$dir/Makefile" <<'MK'
SRCS := $(wildcard c*/*.c)
OBJS := $(SRCS:.c=.o)
all: $(OBJS)
%.o: %.c
	gcc -O2 -g -w -D_GNU_SOURCE -DTP_VERSION=\"bench\" -c -I. -I/usr/include/postgresql $< -o $@
clean:
	rm -f $(OBJS)
MK

# CPU-seconds of a process so far (utime + stime, of it and its waited children).
proc_cpu_ms() {
	awk -v hz="$(getconf CLK_TCK)" '{ sub(/.*\) /, ""); printf "%d\n", ($12 + $13 + $14 + $15) * 1000 / hz }' "/proc/$1/stat"
}

# One build: "WALL_MS CPU_MS". CPU is everything it cost: make and the compilers,
# `taskprobe run` itself (embedded: the collector's userspace), the BPF programs
# (they run in the task's threads, as their system time), and the daemon's CPU over
# the build. CPU time leaves out steal time: its pairs spread about half as much as
# wall time's on this VM.
compile() {
	local run=() d0=0 d1=0 t
	# --no-db would embed a collector even beside a daemon: the daemon stores the task.
	if [ "$1" = on ] && [ "$mode" = daemon ]; then
		run=("$TP" run --quiet --)
		d0=$(proc_cpu_ms "$daemon")
	elif [ "$1" = on ]; then
		run=("$TP" run --quiet --no-db --)
	fi
	make -s -C "$dir" clean
	/usr/bin/time -f "%e %U %S" -o "$dir/time" "${run[@]}" make -s -j2 -C "$dir" all > /dev/null
	[ "$1" = on ] && [ "$mode" = daemon ] && d1=$(proc_cpu_ms "$daemon")
	read -r -a t < "$dir/time"
	awk -v e="${t[0]}" -v u="${t[1]}" -v s="${t[2]}" -v d=$((d1 - d0)) \
		'BEGIN { printf "%d %d\n", e * 1000, (u + s) * 1000 + d }'
}

compile off > /dev/null # warm the page cache
walls=() cpus=()
for ((i = 0; i < pairs; i++)); do
	if ((i % 2)); then
		read -r won con < <(compile on)
		read -r woff coff < <(compile off)
	else
		read -r woff coff < <(compile off)
		read -r won con < <(compile on)
	fi
	walls+=("$(awk -v a="$won" -v b="$woff" 'BEGIN { printf "%.4f", a / b }')")
	cpus+=("$(awk -v a="$con" -v b="$coff" 'BEGIN { printf "%.4f", a / b }')")
	echo "pair $i: wall $woff -> $won ms (${walls[-1]}), CPU $coff -> $con ms (${cpus[-1]})"
done
wall=$(printf '%s\n' "${walls[@]}" | median)
cpu=$(printf '%s\n' "${cpus[@]}" | median)
awk -v w="$wall" -v c="$cpu" -v p="$pairs" -v m="$mode" -v n="$(ls "$dir"/c*/*.c | wc -l)" 'BEGIN {
	printf "make -j2 (%d C files, gcc -O2), %s: median ratio with/without collector: wall %.4f, CPU %.4f, over %d interleaved pairs\n", n, m, w, c, p }'

# The collector's own cost during one more build, counted directly rather than by
# difference: its BPF programs' run time (kernel.bpf_stats_enabled, all of them, the
# deltas over the build) and the CPU of its process (`taskprobe run`, or the daemon).
stats_prev=$(sysctl -n kernel.bpf_stats_enabled)
sysctl -qw kernel.bpf_stats_enabled=1
who='$PPID'
run=("$TP" run --quiet --no-db --)
if [ "$mode" = daemon ]; then
	who=$daemon
	run=("$TP" run --quiet --)
fi
make -s -C "$dir" clean
"${run[@]}" sh -c "bpftool prog show --json > '$dir/b0'; cat /proc/$who/stat > '$dir/s0'
	/usr/bin/time -f '%U %S' -o '$dir/time' make -s -j2 -C '$dir' all > /dev/null
	bpftool prog show --json > '$dir/b1'; cat /proc/$who/stat > '$dir/s1'"
sysctl -qw kernel.bpf_stats_enabled="$stats_prev"
python3 - "$dir" <<'PY'
import json, os, sys
d = sys.argv[1]
def progs(path):
    return {p["id"]: p for p in json.load(open(path)) if p.get("name", "").startswith("tp_")}
def cpu_s(path):
    f = open(path).read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")
b0, b1 = progs(d + "/b0"), progs(d + "/b1")
bpf = {}
for i, p in b1.items():
    q = b0.get(i, {})
    bpf[p["name"]] = (p.get("run_time_ns", 0) - q.get("run_time_ns", 0),
                      p.get("run_cnt", 0) - q.get("run_cnt", 0))
total = sum(t for t, _ in bpf.values()) / 1e9
own = cpu_s(d + "/s1") - cpu_s(d + "/s0")
u, s = (float(x) for x in open(d + "/time").read().split())
top = sorted(bpf.items(), key=lambda kv: -kv[1][0])[:3]
print("one more build, counted directly: make %.2f CPU-s; the BPF programs %.1f ms (%s);"
      " the collector's process %.0f ms: %.2f %% of the build's CPU"
      % (u + s, total * 1e3, ", ".join("%s %.1f ms/%d" % (n, t / 1e6, c) for n, (t, c) in top),
         own * 1e3, 100 * (total + own) / (u + s)))
PY
