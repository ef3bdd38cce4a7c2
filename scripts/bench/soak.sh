#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# A soak of the host side (not in `make check`): for MINUTES, CONC tasks at a time start
# and end without pause through one daemon of this script's own (each run: 1 to 5
# execs of /bin/true), and the daemon is restarted every RESTART minutes: handed over
# (daemon --keep-tasks, then SIGTERM and a new one), or with KILL=1 killed (SIGKILL).
# Every minute it prints the daemon's RSS, its open fds, and the
# entries of its BPF hash maps (bpftool), which must stay flat; at the end the tasks
# run against the tasks stored, by status.
#   scripts/bench/soak.sh [MINUTES] [CONC] [RESTART]
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_root
# Runs that start while the daemon restarts embed a collector of their own and store
# in the default store: a tmpfs of this script's own over /var/lib, in a mount
# namespace of its own, holds it.
if [ -z "${SOAK_NS:-}" ]; then
	exec unshare -m --propagation private env SOAK_NS=1 bash "$0" "$@"
fi
mount -t tmpfs -o mode=0755 tmpfs /var/lib
minutes=${1:-10}
conc=${2:-8}
restart=${3:-3}
signal=$([ "${KILL:-0}" = 1 ] && echo KILL || echo TERM)
work=$(mktemp -d /tmp/taskprobe-soak.XXXXXX)
daemon=
workers=()

cleanup() {
	local p
	for p in "${workers[@]}"; do
		kill "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
	if [ -n "$daemon" ]; then
		kill -TERM "$daemon" 2>/dev/null || true
		wait "$daemon" 2>/dev/null || true
	fi
	rm -rf "$work" "${TASKPROBE_PIN_DIR:-/nonexistent}"
}
trap cleanup EXIT

mountpoint -q /sys/fs/bpf || mount -t bpf bpf /sys/fs/bpf
export TASKPROBE_CONTROL=$work/control.sock TASKPROBE_PIN_DIR=/sys/fs/bpf/taskprobe-soak-$$
unset TASKPROBE_DB

start_daemon() {
	"$TP" daemon --keep-tasks --db "$work/d.db" --listen off 2>>"$work/daemon.log" &
	daemon=$!
	for _ in $(seq 100); do
		[ -S "$TASKPROBE_CONTROL" ] && return 0
		sleep 0.1
	done
	echo "taskprobe: soak: the daemon did not start; $work/daemon.log says why" >&2
	exit 1
}

# The pinned maps' entries (hash maps only: arrays are always full), summed.
map_entries() {
	local total=0 id n
	for id in $(bpftool map show -j 2>/dev/null | python3 -c '
import json, sys
for m in json.load(sys.stdin):
    if "hash" in m.get("type", ""):
        print(m["id"])'); do
		n=$(bpftool map dump id "$id" -j 2>/dev/null | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))' 2>/dev/null || echo 0)
		total=$((total + n))
	done
	echo "$total"
}

# One worker: runs tasks back to back until the end; counts them in its file.
worker() {
	local w=$1 end=$2 i=0 k
	while [ "$(date +%s)" -lt "$end" ]; do
		k=$((1 + i % 5))
		"$TP" run --quiet --id "soak-$w-$i" -- sh -c \
			"j=0; while [ \$j -lt $k ]; do /bin/true; j=\$((j+1)); done" || true
		i=$((i + 1))
		echo "$i" >"$work/ran.$w"
	done
}

start_daemon
end=$(($(date +%s) + minutes * 60))
for w in $(seq "$conc"); do
	worker "$w" "$end" &
	workers+=($!)
done
echo "minute  rss_kib  fds  bpf_hash_entries  tasks_run"
minute=0
while [ "$(date +%s)" -lt "$end" ]; do
	sleep 60
	minute=$((minute + 1))
	ran=$(cat "$work"/ran.* 2>/dev/null | awk '{ s += $1 } END { print s + 0 }')
	printf '%6d  %7s  %3s  %16s  %9s\n' "$minute" \
		"$(awk '/VmRSS/ { print $2 }' "/proc/$daemon/status")" \
		"$(ls "/proc/$daemon/fd" | wc -l)" "$(map_entries)" "$ran"
	if [ $((minute % restart)) -eq 0 ] && [ "$(date +%s)" -lt "$end" ]; then
		kill "-${signal}" "$daemon"
		wait "$daemon" || true
		start_daemon
		echo "        (daemon restarted after SIG$signal)"
	fi
done
for p in "${workers[@]}"; do
	wait "$p" || true
done
workers=()
# No task runs now: the last hand-over leaves none; the pins go with the cleanup.
kill -TERM "$daemon"
wait "$daemon" || true
daemon=
ran=$(cat "$work"/ran.* | awk '{ s += $1 } END { print s + 0 }')
echo "tasks run: $ran"
for store in "$work/d.db" /var/lib/taskprobe/taskprobe.db; do
	[ -e "$store" ] || continue
	echo "tasks stored in $store, by status ($([ "$store" = "$work/d.db" ] &&
		echo "the daemon's" || echo "runs that embedded while it restarted")):"
	"$TP" list --db "$store" --limit 1000000 --json | python3 -c '
import collections, json, sys
c = collections.Counter(t["status"] for t in json.load(sys.stdin))
for k, v in sorted(c.items()):
    print("  %-12s %d" % (k, v))
print("  %-12s %d" % ("total", sum(c.values())))'
done
