#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The floor under bpf-cost.sh's figures: ns per event of empty programs on the same
# hooks and workload, measured the same way (kernel.bpf_stats_enabled). On a VM whose
# clock is slow to read, most of a small program's figure is this floor.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_root
top=$(cd "$(dirname "$0")/../.." && pwd)
dir=$(mktemp -d)
prev=$(sysctl -n kernel.bpf_stats_enabled)
trap 'sysctl -qw kernel.bpf_stats_enabled="$prev"; rm -rf "$dir"' EXIT
src="$top/scripts/bench/calibrate"
clang -g -O2 -target bpf -D__TARGET_ARCH_x86 -I"$top/build/bpf" -c "$src/empty.bpf.c" -o "$dir/empty.bpf.o"
cc -O2 "$src/calibrate.c" -o "$dir/calibrate" -lbpf
sysctl -qw kernel.bpf_stats_enabled=1
"$dir/calibrate" "$dir/empty.bpf.o" "hackbench -g 2 -l 1000 >/dev/null 2>&1;
	i=0; while [ \$i -lt 2000 ]; do /bin/true; i=\$((i+1)); done"
