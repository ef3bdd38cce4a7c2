#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Context-switch storm (hackbench) with the collector attached vs without, interleaved.
# Prints the median of the per-pair ratios (with / without) of hackbench's own "Time:".
#   scripts/bench/overhead.sh [PAIRS] [HACKBENCH ARGS...]
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_root
pairs=${1:-11}
shift || true
args=("$@")
[ ${#args[@]} -gt 0 ] || args=(-g 2 -l 1000)

hb() { "$@" hackbench "${args[@]}" 2>&1 | awk '/^Time:/ { print $2 }'; }

ratios=()
for ((i = 0; i < pairs; i++)); do
	# Alternate the order so drift in the machine favours neither side.
	if ((i % 2)); then
		on=$(hb "$TP" run --quiet --)
		off=$(hb env)
	else
		off=$(hb env)
		on=$(hb "$TP" run --quiet --)
	fi
	r=$(awk -v a="$on" -v b="$off" 'BEGIN { printf "%.4f", a / b }')
	ratios+=("$r")
	echo "pair $i: without ${off}s with ${on}s ratio $r"
done
printf '%s\n' "${ratios[@]}" | median | awk -v n="$pairs" -v a="${args[*]}" \
	'{ printf "hackbench %s: median ratio with/without collector %.4f over %d interleaved pairs\n", a, $1, n }'
