#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Where a process lifecycle's collector time goes: the same exec loop run as a task
# under variants of the collector, each built with one piece of the lifecycle programs
# switched off (TP_OFF bits, bpf/maps.bpf.h), and under the collector as shipped;
# variants interleaved round by round, the floor (an empty program on each hook)
# attached throughout. Prints, per variant, the ns/event of fork, exec, exit and the
# final switch-out (sched_switch), and what switching the piece off saved against
# "shipped" in the same rounds. Variants count less: they are for measuring, never
# for use.
# VARIANTS="shipped ring ..." runs only those.
# BLOCK=1: the block path's pieces instead, on EXECS direct 64 KiB writes (dd) as the
# task: block_io_start and block_rq_complete, with the variants rqtable, rqgate, rqcas.
#   [VARIANTS=...] [BLOCK=1] scripts/bench/pieces.sh [ROUNDS (5)] [EXECS (3000)]
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_root
rounds=${1:-5}
execs=${2:-3000}
root=$(cd "$(dirname "$0")/../.." && pwd)
# name:TP_OFF bits (bpf/maps.bpf.h)
variants=(shipped:0 ring:0x01 adopt:0x02 path:0x04 comm:0x08 stats:0x10 charge:0x20
	query:0x40 storage:0x80 fill:0x100 clock:0x200 all:0xff)
block=${BLOCK:-0}
if [ "$block" = 1 ]; then
	variants=(shipped:0 rqtable:0x400 rqgate:0x800 rqcas:0x1000)
fi
if [ -n "${VARIANTS:-}" ]; then
	keep=()
	for v in "${variants[@]}"; do
		case " $VARIANTS " in *" ${v%%:*} "*) keep+=("$v") ;; esac
	done
	variants=("${keep[@]}")
fi

# Each variant is a build of its own under build/v/NAME. The user objects that do not
# embed the skeleton are the main build's, copied: only the BPF side and the four
# collector files that include the skeleton are rebuilt. The copies' dependency files
# name the main build's objects, so a variant is made afresh whenever the main build
# changed (its binary's time), never updated in place.
make -C "$root" -s -j"$(nproc)" all build/bench/floor build/bpf/floor.bpf.o > /dev/null
stamp="$(stat -c %Y "$root/build/taskprobe")"
for v in "${variants[@]}"; do
	name=${v%%:*} bits=${v#*:}
	out=build/v/$name
	if [ ! -e "$root/$out/stamp" ] || [ "$(cat "$root/$out/stamp")" != "$bits $stamp" ]; then
		rm -rf "${root:?}/$out"
		mkdir -p "$root/$out"
		cp -a "$root/build/user" "$root/$out/user"
		rm -f "$root/$out/user/collector/"{collector,libraries,pins,read}.o
		echo "$bits $stamp" > "$root/$out/stamp"
	fi
	make -C "$root" -s -j"$(nproc)" OUT="$out" BPFOUT="$out/bpf" BPF_EXTRA="-DTP_OFF=$bits" \
		"$out/taskprobe" > /dev/null
done

tmp=$(mktemp -d -p /var/tmp taskprobe-pieces.XXXXXX)
cleanup() {
	stop_floor
	sysctl -qw kernel.bpf_stats_enabled="$BPF_STATS_PREV"
	rm -rf "$tmp"
}
BPF_STATS_PREV=$(sysctl -n kernel.bpf_stats_enabled)
trap cleanup EXIT
sysctl -qw kernel.bpf_stats_enabled=1
start_floor "$tmp/fifo"

if [ "$block" = 1 ]; then
	work="dd if=/dev/zero of='$tmp/dd' bs=64k count=$execs oflag=direct status=none"
else
	work="i=0; while [ \$i -lt $execs ]; do /bin/true; i=\$((i+1)); done"
fi
for ((r = 0; r < rounds; r++)); do
	for v in "${variants[@]}"; do
		name=${v%%:*}
		f=$tmp/$name.$r
		bpftool prog show --json > "$f.before"
		"$root/build/v/$name/taskprobe" run --quiet --no-db --collect cpu,io,mem,net -- sh -c "
			$work
			bpftool prog show --json > '$f'"
		rm -f "$tmp/dd"
	done
done
python3 - "$tmp" "$rounds" "$execs" "$block" "${variants[@]%%:*}" <<'PY'
import json, statistics, sys
tmp, rounds, execs, block, names = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5:]
progs = [("tp_sched_process_fork", "sched_process_fork"),
         ("tp_sched_process_exec", "sched_process_exec"),
         ("tp_sched_process_exit", "sched_process_exit"),
         ("tp_sched_switch", "sched_switch"),
         ("tp_rss_stat", "rss_stat")]
if block == "1":
    progs = [("tp_block_io_start", "block_io_start"),
             ("tp_block_rq_complete", "block_rq_complete"),
             ("tp_sched_switch", "sched_switch")]
def load(path):
    return {p.get("name", ""): p for p in json.load(open(path))}
def per(p, b):
    n = p.get("run_cnt", 0) - (b or {}).get("run_cnt", 0)
    t = p.get("run_time_ns", 0) - (b or {}).get("run_time_ns", 0)
    return (t / n if n else 0.0), n
ns, floor, cnt = {}, {}, {}
for name in names:
    for r in range(rounds):
        a, b = load("%s/%s.%d" % (tmp, name, r)), load("%s/%s.%d.before" % (tmp, name, r))
        for prog, hook in progs:
            if prog in a:
                ns.setdefault((name, prog), []).append(per(a[prog], None)[0])
                cnt.setdefault((name, prog), []).append(per(a[prog], None)[1])
            f = a.get("floor_" + hook)
            if f:
                floor.setdefault(prog, []).append(per(f, b.get(f["name"]))[0])
med = statistics.median
print("median of %d rounds of %s %s, ns/event (sched_switch: all of the host's switches)"
      % (rounds, execs, "direct writes" if block == "1" else "execs"))
print("%-9s" % "variant" + "".join("%20s" % p[0][3:] for p in progs))
print("%-9s" % "events" + "".join("%20d" % med(cnt.get(("shipped", p[0]), [0])) for p in progs))
print("%-9s" % "floor" + "".join("%20.1f" % med(floor.get(p[0], [0])) for p in progs))
base = {p[0]: med(ns.get(("shipped", p[0]), [0])) for p in progs}
for name in names:
    cells = ""
    for prog, _ in progs:
        v = med(ns.get((name, prog), [0]))
        cells += "%20s" % ("%.1f" % v if name == "shipped" else "%.1f (%+.0f)" % (v, v - base[prog]))
    print("%-9s" % name + cells)
PY
