#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The host daemon under load (docs/PERFORMANCE.md: 200 tasks, RSS <= 32 MiB, CPU <= 2 %
# of a core): a daemon of this script's own (socket, database, port, cgroups) tracks
# N idle tasks (a sleep each, 1 s series) for SECS; then the series answer at 1000
# points, and `run -- /bin/true` through the daemon against embedded, interleaved.
#   scripts/bench/daemon.sh [TASKS] [SECS]
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_root
tasks=${1:-200}
secs=${2:-30}
work=$(mktemp -d /tmp/taskprobe-bench-daemon.XXXXXX)
cgroot=$(findmnt -n -t cgroup2 -o TARGET | head -n 1)/taskprobe-bench-$$
port=$((30000 + $$ % 20000))
daemon=
sleepers=()

cleanup() {
	local p
	for p in "${sleepers[@]}"; do
		kill "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
	if [ -n "$daemon" ]; then
		kill -TERM "$daemon" 2>/dev/null || true
		wait "$daemon" 2>/dev/null || true
	fi
	if [ -d "$cgroot" ]; then
		find "$cgroot" -mindepth 1 -depth -type d -exec rmdir {} + 2>/dev/null || true
		rmdir "$cgroot" 2>/dev/null || true
	fi
	rm -rf "$work"
}
trap cleanup EXIT

export TASKPROBE_CONTROL=$work/control.sock TASKPROBE_PIN_DIR=off
unset TASKPROBE_DB
"$TP" daemon --db "$work/d.db" --listen "127.0.0.1:$port" 2>"$work/daemon.log" &
daemon=$!
for _ in $(seq 100); do
	[ -S "$TASKPROBE_CONTROL" ] && break
	sleep 0.05
done
mkdir "$cgroot"
rss_kib() { awk '/^VmRSS/ { print $2 }' "/proc/$daemon/status"; }
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$daemon/stat"; }
rss0=$(rss_kib)

for ((i = 0; i < tasks; i++)); do
	mkdir "$cgroot/t$i"
	sh -c "echo \$\$ > $cgroot/t$i/cgroup.procs; exec sleep $((secs + 60))" &
	sleepers+=($!)
done
t0=$(now_ns)
for ((i = 0; i < tasks; i++)); do
	"$TP" task start "idle-$i" --cgroup "$cgroot/t$i" >/dev/null
done
t1=$(now_ns)
# Let start-up settle, then measure the steady state.
sleep 2
c0=$(cpu_ticks)
sleep "$secs"
c1=$(cpu_ticks)
rss=$(rss_kib)
hz=$(getconf CLK_TCK)
awk -v n="$tasks" -v r="$rss" -v r0="$rss0" -v c="$((c1 - c0))" -v hz="$hz" -v s="$secs" \
	-v st="$(((t1 - t0) / 1000))" 'BEGIN {
	printf "daemon with %d idle tasks (1 s series): RSS %.1f MiB (%.1f MiB with none), CPU %.2f %% of a core over %d s\n",
		n, r / 1024, r0 / 1024, 100 * c / hz / s, s
	printf "  task start: %.2f ms each (%d in a row)\n", st / 1000 / n, n }'

# The series of one task at 1000 points, as a dashboard would ask for it.
lat=()
for _ in $(seq 21); do
	lat+=($(curl -s -o /dev/null -w '%{time_total}\n' \
		"http://127.0.0.1:$port/api/v1/tasks/idle-0/series?points=1000"))
done
printf '%s\n' "${lat[@]}" | median | awk '{ printf "  series?points=1000 of a running task: median %.1f ms over 21 requests\n", $1 * 1000 }'
for ((i = 0; i < tasks; i++)); do
	"$TP" task end "idle-$i" --quiet >/dev/null
done

# run start-up: through the daemon (no BPF load) against embedded, interleaved.
run_daemon() { elapsed_us "$TP" run --quiet -- /bin/true; }
run_embedded() { elapsed_us "$TP" run --quiet --no-daemon --no-db -- /bin/true; }
d=()
e=()
for ((i = 0; i < 21; i++)); do
	if ((i % 2)); then
		d+=($(run_daemon))
		e+=($(run_embedded))
	else
		e+=($(run_embedded))
		d+=($(run_daemon))
	fi
done
dm=$(printf '%s\n' "${d[@]}" | median)
em=$(printf '%s\n' "${e[@]}" | median)
awk -v d="$dm" -v e="$em" 'BEGIN {
	printf "  run -- /bin/true: median %.1f ms through the daemon, %.1f ms embedded (21 interleaved pairs)\n", d / 1000, e / 1000 }'
