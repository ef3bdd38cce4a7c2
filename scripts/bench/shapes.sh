#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Every hackbench shape of docs/PERFORMANCE.md, each as PAIRS interleaved pairs
# (collector on vs off; scripts/bench/overhead.sh): processes in 2, 4 and 8 groups,
# and threads. The target is a median ratio <= 1.02 on each.
# COLLECT=KINDS: the collector collects only those (overhead.sh).
#   [COLLECT=KINDS] scripts/bench/shapes.sh [PAIRS]
set -euo pipefail
dir=$(dirname "$0")
pairs=${1:-21}
for shape in "-g 2 -l 1000" "-g 4 -l 400" "-g 8 -l 200" "-T -g 4 -l 400"; do
	# shellcheck disable=SC2086
	bash "$dir/overhead.sh" "$pairs" $shape | tail -1
done
