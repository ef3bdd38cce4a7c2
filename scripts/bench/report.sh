#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# `taskprobe report` of a three-hour task at 1 s series (10 800 samples, written by
# build/bench/synth-task into a store of this script's own): median time of 5 runs
# and the output's size, HTML and Markdown; then its exports, the same way.
#   scripts/bench/report.sh [HOURS]
set -euo pipefail
. "$(dirname "$0")/lib.sh"
hours=${1:-3}
SYNTH=${SYNTH:-$(dirname "$TP")/bench/synth-task}
work=$(mktemp -d /tmp/taskprobe-bench-report.XXXXXX)
trap 'rm -rf "$work"' EXIT
"$SYNTH" "$work/r.db" long "$hours"
for fmt in html markdown; do
	t=()
	for _ in 1 2 3 4 5; do
		t+=($(elapsed_us "$TP" report long --db "$work/r.db" --format "$fmt" -o "$work/out"))
	done
	size=$(stat -c %s "$work/out")
	printf '%s\n' "${t[@]}" | median | awk -v f="$fmt" -v s="$size" -v h="$hours" '{
		printf "report --format %s of a %g-hour task (1 s series): median %.1f ms of 5, %.1f KiB\n",
			f, h, $1 / 1000, s / 1024 }'
done
for fmt in firefox-profiler chrome-trace csv; do
	t=()
	for _ in 1 2 3 4 5; do
		t+=($(elapsed_us "$TP" export long --db "$work/r.db" --format "$fmt" -o "$work/out"))
	done
	size=$(stat -c %s "$work/out")
	printf '%s
' "${t[@]}" | median | awk -v f="$fmt" -v s="$size" -v h="$hours" '{
		printf "export --format %s of a %g-hour task (1 s series): median %.1f ms of 5, %.1f KiB\n",
			f, h, $1 / 1000, s / 1024 }'
done
