#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Output passthrough with marker parsing: MB/s of a task writing SIZE_MB of lines to
# a pipe, through taskprobe vs directly (interleaved, median of 5 each); and lines
# per second taken on the metrics socket.
#   scripts/bench/output.sh [SIZE_MB]
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_root
mb=${1:-200}
helpers=$(cd "$(dirname "$0")/../.." && pwd)/build/tests/helpers
gen="yes 'a line of build output, about as long as the ones compilers print: 0123456789' | head -c ${mb}M"
on=()
off=()
for _ in 1 2 3 4 5; do
	off+=($(elapsed_us sh -c "$gen | cat"))
	on+=($(elapsed_us sh -c "'$TP' run --quiet --no-db -- sh -c \"$gen\" | cat"))
done
a=$(printf '%s\n' "${on[@]}" | median)
b=$(printf '%s\n' "${off[@]}" | median)
awk -v a="$a" -v b="$b" -v mb="$mb" 'BEGIN {
	printf "output %d MiB: %.0f MB/s through taskprobe (start-up included), %.0f MB/s direct\n", mb, mb * 1.048576 / (a / 1e6), mb * 1.048576 / (b / 1e6) }'
# The same with 20 output rules that most lines do not match, as a build log's rules.
rules=$(mktemp)
trap 'rm -f "$rules"' EXIT
for i in $(seq 1 20); do
	echo "output bench.rule$i ^(?:error|warning)\\[$i\\]: (?<what>\\w+)"
done > "$rules"
on=()
for _ in 1 2 3 4 5; do
	on+=($(elapsed_us sh -c "'$TP' run --quiet --no-db --rules '$rules' -- sh -c \"$gen\" | cat"))
done
c=$(printf '%s\n' "${on[@]}" | median)
awk -v c="$c" -v mb="$mb" 'BEGIN {
	printf "output %d MiB with 20 rules: %.0f MB/s through taskprobe (start-up included)\n", mb, mb * 1.048576 / (c / 1e6) }'
n=100000
t0=$(now_ns)
"$TP" run --quiet --no-db -- "$helpers/sendlines" "$n" 'bench.lines:1|c'
t1=$(now_ns)
awk -v n="$n" -v t="$(((t1 - t0) / 1000))" 'BEGIN {
	printf "metrics socket: %d datagrams in %.2f s = %.0f lines/s (start-up included)\n", n, t / 1e6, n / (t / 1e6) }'
