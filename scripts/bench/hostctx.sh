#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The host context's cost per task (no BPF: the kernel's files), on this host as it is,
# then with EXTRA_PROCS sleeping processes and EXTRA_CGROUPS cgroups more, as on a busy
# CI worker (made by this script, removed after):
#   scripts/bench/hostctx.sh [RUNS] [EXTRA_PROCS] [EXTRA_CGROUPS]
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_root
runs=${1:-51}
procs=${2:-1000}
cgroups=${3:-300}
bin=${BENCH_BIN:-build/bench}/hostctx
root=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
"$bin" "$root" "$runs"
dir=$root/taskprobe-bench-hostctx.$$
pids=()
cleanup() {
	((${#pids[@]})) && kill "${pids[@]}" 2>/dev/null
	wait 2>/dev/null || true
	[ -d "$dir" ] && find "$dir" -depth -type d -exec rmdir {} + 2>/dev/null
	true
}
trap cleanup EXIT
mkdir "$dir"
for ((i = 0; i < cgroups; i++)); do mkdir "$dir/c$i"; done
for ((i = 0; i < procs; i++)); do
	sleep 600 &
	pids+=($!)
done
echo "with $procs more processes and $cgroups more cgroups:"
"$bin" "$root" "$runs"
