#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# What TCP costs with the collector attached, from kernel.bpf_stats_enabled: ns per
# event of tp_tcp_sendmsg_locked (every TCP send; it learns the socket under a TLS
# request) and of tp_inet_sock_set_state (every TCP state change), each beside the
# empty program on its hook (floor.bpf.c) and the floor plus one lookup (lookup.bpf.c),
# in the same run. The workload: a loopback stream of N 100-byte sends (TCP_NODELAY),
# then C loopback connections opened and closed by both ends (about ten state changes
# each). It runs outside any task, while a task that only waits (in a read of a fifo:
# no events of its own) keeps the collector up, or inside the task with INSIDE=1.
# Medians of RUNS runs (3).
#   [RUNS=N] [INSIDE=1] scripts/bench/tcpsend.sh [N (200000)] [C (5000)]
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_root
n=${1:-200000}
conns=${2:-5000}
runs=${RUNS:-3}
out=$(mktemp -p /var/tmp taskprobe-bench.XXXXXX)
CLEANUP=$out
with_bpf_stats
trap 'waiting_task_abort; detach_obj 8; stop_floor; sysctl -qw kernel.bpf_stats_enabled="$BPF_STATS_PREV"; rm -f "$out" "$out".*' EXIT
start_floor "$out.fifo"
attach_obj 8 "$LOOKUP_OBJ" "$out.lookup"
cat > "$out.py" <<'PY'
import socket, sys, threading
n, conns = int(sys.argv[1]), int(sys.argv[2])
srv = socket.socket()
srv.bind(("127.0.0.1", 0))
srv.listen(64)
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
for _ in range(conns):
    c = socket.create_connection(srv.getsockname())
    a, _ = srv.accept()
    c.close()
    a.close()
srv.close()
PY
for ((run = 0; run < runs; run++)); do
	if [ "${INSIDE:-0}" = 1 ]; then
		"$TP" run --quiet --no-db -- sh -c "bpftool prog show --json > '$out.$run.before';
			python3 '$out.py' $n $conns; bpftool prog show --json > '$out.$run'"
	else
		waiting_task_start "$out" "bpftool prog show --json > '$out.$run'"
		bpftool prog show --json > "$out.$run.before"
		python3 "$out.py" "$n" "$conns"
		waiting_task_end "$out"
	fi
done
python3 - "$out" "$runs" "${INSIDE:-0}" <<'PY'
import json, statistics, sys
out, runs, inside = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1"
def load(path):
    return {p.get("name", ""): p for p in json.load(open(path))}
def per(name, r):
    a, b = load("%s.%d" % (out, r)), load("%s.%d.before" % (out, r))
    p, q = a.get(name, {}), b.get(name, {})
    n = p.get("run_cnt", 0) - q.get("run_cnt", 0)
    return ((p.get("run_time_ns", 0) - q.get("run_time_ns", 0)) / n if n else 0.0), n
med = statistics.median
for hook in ("tcp_sendmsg_locked", "inet_sock_set_state"):
    rows = [[per(p + hook, r) for p in ("tp_", "floor_", "lookup_")] for r in range(runs)]
    ns, fl, lk = (med(x[i][0] for x in rows) for i in range(3))
    # The target, the floor plus one lookup, is the rest of the host's: not the task's.
    verdict = "" if inside else "  (floor + one lookup: %s)" % ("met" if ns <= lk else "NOT met")
    print("tp_%s %d events %.1f ns/event  floor %.1f ns  ratio %.2f  one lookup %.1f ns%s  [%s]"
          % (hook, med(x[0][1] for x in rows), ns, fl, ns / fl if fl else 0, lk, verdict,
             " ".join("%.0f" % x[0][0] for x in rows)))
PY
