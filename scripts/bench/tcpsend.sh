#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# What a TCP send costs with the collector attached: ns per event of
# tp_tcp_sendmsg_locked (which learns the socket under a TLS request) from
# kernel.bpf_stats_enabled, beside the empty program on the same hook in the same run
# (scripts/bench/floor.bpf.c). The sender is a loopback stream of N 100-byte sends
# (TCP_NODELAY), outside any task (a task that only waits keeps the collector up), or
# inside the task with INSIDE=1. Medians of RUNS runs (3).
#   [RUNS=N] [INSIDE=1] scripts/bench/tcpsend.sh [N]
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_root
FLOOR=${FLOOR:-${BENCH_BIN:-$(dirname "$TP")/bench}/floor}
FLOOR_OBJ=${FLOOR_OBJ:-${BENCH_BPF:-$(dirname "$TP")/bpf}/floor.bpf.o}
n=${1:-200000}
runs=${RUNS:-3}
out=$(mktemp -p /var/tmp taskprobe-bench.XXXXXX)
CLEANUP=$out
with_bpf_stats
trap 'stop_floor; sysctl -qw kernel.bpf_stats_enabled="$BPF_STATS_PREV"; rm -f "$out" "$out".*' EXIT
start_floor "$out.fifo"
cat > "$out.py" <<'PY'
import socket, sys, threading
n = int(sys.argv[1])
srv = socket.socket()
srv.bind(("127.0.0.1", 0))
srv.listen(1)
def sink():
    c, _ = srv.accept()
    while c.recv(65536):
        pass
t = threading.Thread(target=sink)
t.start()
s = socket.create_connection(srv.getsockname())
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
for _ in range(n):
    s.send(b"x" * 100)
s.close()
t.join()
PY
for ((run = 0; run < runs; run++)); do
	if [ "${INSIDE:-0}" = 1 ]; then
		"$TP" run --quiet --no-db -- sh -c "bpftool prog show --json > '$out.$run.before';
			python3 '$out.py' $n; bpftool prog show --json > '$out.$run'"
	else
		"$TP" run --quiet --no-db -- sh -c "
			while [ ! -e '$out.done' ]; do sleep 0.05; done
			bpftool prog show --json > '$out.$run'" &
		task=$!
		sleep 0.5
		bpftool prog show --json > "$out.$run.before"
		python3 "$out.py" "$n"
		touch "$out.done"
		wait "$task"
		rm -f "$out.done"
	fi
done
python3 - "$out" "$runs" <<'PY'
import json, statistics, sys
out, runs = sys.argv[1], int(sys.argv[2])
def per(name, r):
    a = {p.get("name", ""): p for p in json.load(open("%s.%d" % (out, r)))}
    b = {p.get("name", ""): p for p in json.load(open("%s.%d.before" % (out, r)))}
    p, q = a.get(name, {}), b.get(name, {})
    n = p.get("run_cnt", 0) - q.get("run_cnt", 0)
    t = p.get("run_time_ns", 0) - q.get("run_time_ns", 0)
    return (t / n if n else 0.0), n
rows = [(per("tp_tcp_sendmsg_locked", r), per("floor_tcp_sendmsg_locked", r)) for r in range(runs)]
med = statistics.median
ns, fl = med(x[0][0] for x in rows), med(x[1][0] for x in rows)
print("tp_tcp_sendmsg_locked %d events %.1f ns/event  floor %.1f ns  ratio %.2f  [%s]" % (
    med(x[0][1] for x in rows), ns, fl, ns / fl if fl else 0,
    " ".join("%.0f/%.0f" % (x[0][0], x[1][0]) for x in rows)))
PY
