#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# A build-like workload: `make -j2` of a C project (taskprobe's own user/ sources,
# COPIES times over, compiled with gcc -O2 from a clean tree; ~25 s here), as a task
# with the collector vs without, interleaved. Prints the median ratio of wall times.
#   scripts/bench/build.sh [PAIRS] [COPIES]
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_root
pairs=${1:-7}
copies=${2:-8}
here=$(cd "$(dirname "$0")/../.." && pwd)
dir=$(mktemp -d -p /var/tmp taskprobe-bench.XXXXXX)
trap 'rm -rf "$dir"' EXIT
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
	[ "$1" = on ] && run=("$TP" run --quiet --no-db --)
	make -s -C "$dir" clean
	echo $(($(elapsed_us "${run[@]}" make -s -j2 -C "$dir" all) / 1000))
}

compile off > /dev/null # warm the page cache
interleave "$pairs" " ms" compile
awk -v r="$RATIO" -v p="$pairs" -v n="$(ls "$dir"/c*/*.c | wc -l)" 'BEGIN {
	printf "make -j2 (%d C files, gcc -O2): median ratio with/without collector %.4f over %d interleaved pairs\n", n, r, p }'
