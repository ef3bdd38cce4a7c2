#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# `make demo`: one sample task under `taskprobe run` - a sort, 200 short-lived
# processes, two CPU burners at once - then its summary and a part of its JSON record.
set -euo pipefail
tp=${1:-build/taskprobe}
if [ "$(id -u)" -ne 0 ]; then
	echo "taskprobe: the demo loads BPF programs; run 'sudo make demo'" >&2
	exit 1
fi
json=$(mktemp /tmp/taskprobe-demo.XXXXXX.json)
trap 'rm -f "$json"' EXIT
echo "\$ taskprobe run --label pool=demo --json $json -- sh -c '...'"
"$tp" run --label pool=demo --json "$json" -- sh -c '
	seq 1 300000 | sort -rn | md5sum > /dev/null
	i=0; while [ $i -lt 200 ]; do /bin/true; i=$((i+1)); done
	burn() { end=$(($(date +%s) + 1)); while [ $(date +%s) -lt $end ]; do :; done; }
	burn & burn & wait
	exit 0'
echo
echo "The record in $json begins:"
head -c 700 "$json"
echo "..."
