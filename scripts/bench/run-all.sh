#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Every benchmark, in the order docs/PERFORMANCE.md lists them.
set -euo pipefail
dir=$(dirname "$0")
[ $# -gt 0 ] && export TP="$1"
bash "$dir/bpf-cost.sh"
UNTRACKED=1 bash "$dir/bpf-cost.sh"
COLLECT=all bash "$dir/bpf-cost.sh"
bash "$dir/touch.sh"
bash "$dir/tcpsend.sh"
INSIDE=1 bash "$dir/tcpsend.sh"
bash "$dir/startup.sh"
bash "$dir/storage.sh"
bash "$dir/count.sh"
bash "$dir/output.sh"
bash "$dir/shapes.sh"
bash "$dir/build.sh" 21 2
MODE=daemon bash "$dir/build.sh" 21 2
bash "$dir/execstorm.sh"
bash "$dir/peer.sh"
bash "$dir/daemon.sh"
bash "$dir/report.sh"
bash "$dir/fleet.sh"
