#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Context-switch storm (hackbench) with the collector attached vs without, interleaved.
# Prints the median of the per-pair ratios (with / without) of hackbench's own "Time:".
# COLLECT=KINDS runs the collector with `run --collect KINDS` (a variant with a piece
# switched off, such as COLLECT=cpu,io,mem,net: no HTTP programs).
#   [COLLECT=KINDS] scripts/bench/overhead.sh [PAIRS] [HACKBENCH ARGS...]
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_root
pairs=${1:-11}
shift || true
args=("$@")
[ ${#args[@]} -gt 0 ] || args=(-g 2 -l 1000)

hb() {
	local run=(env)
	[ "$1" = on ] && run=("$TP" run --quiet ${COLLECT:+--collect "$COLLECT"} --)
	"${run[@]}" hackbench "${args[@]}" 2>&1 | awk '/^Time:/ { print $2 }'
}

interleave "$pairs" s hb
awk -v r="$RATIO" -v n="$pairs" -v a="${args[*]}" 'BEGIN {
	printf "hackbench %s: median ratio with/without collector %.4f over %d interleaved pairs\n", a, r, n }'
