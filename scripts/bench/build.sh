#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# A build-like workload: `make -j2` of a C project (taskprobe's own user/ sources,
# COPIES times over, compiled with gcc -O2 from a clean tree; ~25 s here), as a task
# with the collector vs without, interleaved. Prints the median ratio of wall times.
# MODE=daemon: the task runs through a host daemon of this script's own (the collector
# loaded once), not with one embedded in `run` (loaded and attached for each build).
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
	"$TP" daemon --db "$dir/d.db" --listen "127.0.0.1:$((30000 + $$ % 20000))" \
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
	cp "$here"/user/*.c "$dir/c$c/"
done
cp "$here"/user/*.h "$here"/include/taskprobe.h "$here"/build/bpf/taskprobe.skel.h "$dir"/
cat > "$dir/Makefile" <<'MK'
SRCS := $(wildcard c*/*.c)
OBJS := $(SRCS:.c=.o)
all: $(OBJS)
%.o: %.c
	gcc -O2 -g -w -D_GNU_SOURCE -DTP_VERSION=\"bench\" -c -I. $< -o $@
clean:
	rm -f $(OBJS)
MK

compile() {
	local run=()
	# --no-db would embed a collector even beside a daemon: the daemon stores the task.
	if [ "$1" = on ] && [ "$mode" = daemon ]; then
		run=("$TP" run --quiet --)
	elif [ "$1" = on ]; then
		run=("$TP" run --quiet --no-db --)
	fi
	make -s -C "$dir" clean
	echo $(($(elapsed_us "${run[@]}" make -s -j2 -C "$dir" all) / 1000))
}

compile off > /dev/null # warm the page cache
interleave "$pairs" " ms" compile
awk -v r="$RATIO" -v p="$pairs" -v m="$mode" -v n="$(ls "$dir"/c*/*.c | wc -l)" 'BEGIN {
	printf "make -j2 (%d C files, gcc -O2), %s: median ratio with/without collector %.4f over %d interleaved pairs\n", n, m, r, p }'
