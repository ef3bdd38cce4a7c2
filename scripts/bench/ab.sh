#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Two builds of taskprobe, A and B, each running the same command as a task, in
# interleaved pairs (which goes first alternates). Per build: the median wall time of
# the task and the median collector time, which is the BPF run time of every
# taskprobe program (kernel.bpf_stats_enabled) over the run. The ratio B/A of each.
# Used to measure a change against the commit before it, e.g.:
#   git worktree add /tmp/a HEAD~1 && make -C /tmp/a
#   scripts/bench/ab.sh /tmp/a/build/taskprobe build/taskprobe 11 \
#       sh -c 'i=0; while [ $i -lt 2000 ]; do /bin/true; i=$((i+1)); done'
#   scripts/bench/ab.sh A B PAIRS CMD [ARG...]
# With PER_PROG=1, also each program's median ns/event per build, and B/A.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_root
if [ $# -lt 4 ]; then
	echo "usage: ab.sh A_BINARY B_BINARY PAIRS CMD [ARG...]" >&2
	exit 2
fi
a=$1 b=$2 pairs=$3
shift 3
out=$(mktemp -d -p /var/tmp taskprobe-ab.XXXXXX)
CLEANUP=
with_bpf_stats
trap 'sysctl -qw kernel.bpf_stats_enabled="$BPF_STATS_PREV"; rm -rf "$out"' EXIT

# One run: the command's wall time (us, taken inside the task, so the collector's own
# start and end are not in it) and the collector's BPF time (ns) appended to $out/NAME.
one() {
	local name=$1 bin=$2 s
	shift 2
	"$bin" run --quiet --no-db -- sh -c 'bpftool prog show --json > "$0"
		t0=$(date +%s%N); "$@"; t1=$(date +%s%N)
		bpftool prog show --json > "$0.after"
		echo $(((t1 - t0) / 1000)) > "$0.wall"' "$out/$name.p" "$@" > /dev/null
	s=$(python3 - "$out/$name.p" <<'PY'
import json, sys
def tot(path):
    return sum(p.get("run_time_ns", 0) for p in json.load(open(path))
               if p.get("name", "").startswith("tp_"))
print(tot(sys.argv[1] + ".after") - tot(sys.argv[1]))
# each program's time and runs over the command, for PER_PROG
def each(path):
    return {p["name"]: (p.get("run_time_ns", 0), p.get("run_cnt", 0))
            for p in json.load(open(path)) if p.get("name", "").startswith("tp_")}
b, a = each(sys.argv[1]), each(sys.argv[1] + ".after")
with open(sys.argv[1] + "s", "a") as f:
    f.write(json.dumps({n: (a[n][0] - b.get(n, (0, 0))[0], a[n][1] - b.get(n, (0, 0))[1])
                        for n in a}) + "\n")
PY
)
	echo "$(cat "$out/$name.p.wall") $s" >> "$out/$name"
}

for ((i = 0; i < pairs; i++)); do
	if ((i % 2)); then
		one b "$b" "$@"
		one a "$a" "$@"
	else
		one a "$a" "$@"
		one b "$b" "$@"
	fi
	echo "pair $i: A $(tail -1 "$out/a"), B $(tail -1 "$out/b") (wall us, BPF ns)"
done
wa=$(cut -d' ' -f1 "$out/a" | median)
wb=$(cut -d' ' -f1 "$out/b" | median)
ba=$(cut -d' ' -f2 "$out/a" | median)
bb=$(cut -d' ' -f2 "$out/b" | median)
echo "A $a: wall $wa us, BPF $ba ns (medians of $pairs)"
echo "B $b: wall $wb us, BPF $bb ns"
awk -v wa="$wa" -v wb="$wb" -v ba="$ba" -v bb="$bb" \
	'BEGIN { printf "B/A: wall %.4f, BPF %.4f\n", wb / wa, (ba ? bb / ba : 0) }'
if [ "${PER_PROG:-0}" = 1 ]; then
	python3 - "$out/a.ps" "$out/b.ps" <<'PY'
import json, statistics, sys
runs = [[json.loads(l) for l in open(p)] for p in sys.argv[1:3]]
names = sorted({n for r in runs for d in r for n in d})
print("%-32s %12s %12s %8s %10s" % ("program", "A ns/event", "B ns/event", "B/A", "events"))
for n in names:
    med = []
    for r in runs:
        v = [d[n][0] / d[n][1] for d in r if n in d and d[n][1] > 0]
        med.append(statistics.median(v) if v else 0)
    cnt = statistics.median([d[n][1] for d in runs[1] if n in d] or [0])
    if cnt:
        print("%-32s %12.1f %12.1f %8.3f %10d" % (n, med[0], med[1], med[1] / med[0] if med[0] else 0, cnt))
PY
fi
