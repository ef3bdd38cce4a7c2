#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Start-up cost of `taskprobe run -- /bin/true` (BPF load + attach + cgroup + teardown),
# against /bin/true alone. Prints medians in milliseconds.
#   scripts/bench/startup.sh [RUNS]
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_root
runs=${1:-21}
with=()
without=()
for ((i = 0; i < runs; i++)); do
	without+=($(elapsed_us /bin/true))
	with+=($(elapsed_us "$TP" run --quiet -- /bin/true))
done
w=$(printf '%s\n' "${with[@]}" | median)
wo=$(printf '%s\n' "${without[@]}" | median)
awk -v w="$w" -v wo="$wo" -v n="$runs" 'BEGIN {
	printf "taskprobe run -- /bin/true: median %.1f ms over %d runs (/bin/true alone %.1f ms)\n", w / 1000, n, wo / 1000 }'
