#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# N sequential HTTPS requests (one curl each, OpenSSL) to a local TLS server, as a task
# with the collector (TLS uprobes, TCP tracepoints, cgroup_skb) vs without, interleaved;
# then the ns per event of the network programs from kernel.bpf_stats_enabled.
#   scripts/bench/https.sh [PAIRS] [N]
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_root
pairs=${1:-5}
n=${2:-1000}
here=$(cd "$(dirname "$0")/.." && pwd)
dir=$(mktemp -d -p /var/tmp taskprobe-bench.XXXXXX)
port=$((20000 + $$ % 10000))
server=
cleanup() {
	[ -n "$server" ] && kill "$server" 2>/dev/null
	rm -rf "$dir"
	[ -n "${BPF_STATS_PREV:-}" ] && sysctl -qw kernel.bpf_stats_enabled="$BPF_STATS_PREV"
	return 0
}
trap cleanup EXIT
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=localhost \
	-keyout "$dir/key.pem" -out "$dir/cert.pem" 2>/dev/null
python3 "$here/netlab/server.py" --dir "$dir" --serve "127.0.0.1:$port:https" > "$dir/log" 2>&1 &
server=$!
for _ in $(seq 100); do [ -s "$dir/ready" ] && break; sleep 0.05; done
[ -s "$dir/ready" ] || { echo "https.sh: the server did not start" >&2; exit 1; }

loop="i=0; while [ \$i -lt $n ]; do curl -sk -o /dev/null https://localhost:$port/status/200 || exit 1; i=\$((i+1)); done"
fetch() {
	local run=()
	[ "$1" = on ] && run=("$TP" run --quiet --no-db --)
	echo $(($(elapsed_us "${run[@]}" sh -c "$loop") / 1000))
}

interleave "$pairs" " ms" fetch
awk -v r="$RATIO" -v n="$n" -v p="$pairs" 'BEGIN {
	printf "%d HTTPS requests (curl): median ratio with/without collector %.4f over %d interleaved pairs\n", n, r, p }'

# Cost per event, in a run of its own: bpf_stats itself adds a clock read per run.
BPF_STATS_PREV=$(sysctl -n kernel.bpf_stats_enabled)
sysctl -qw kernel.bpf_stats_enabled=1
"$TP" run --quiet --no-db --json "$dir/task.json" -- sh -c "$loop; bpftool prog show --json > '$dir/progs'"
python3 - "$dir/progs" "$dir/task.json" <<'PY'
import json, sys
net = ("tp_inet", "tp_tcp", "tp_sock", "tp_ssl", "tp_tls", "tp_gnutls", "tp_http", "tp_getaddr")
for p in sorted(json.load(open(sys.argv[1])), key=lambda p: p.get("name", "")):
    if not p.get("name", "").startswith(net):
        continue
    cnt, ns = p.get("run_cnt", 0), p.get("run_time_ns", 0)
    print(f"{p['name']:<26} {cnt:>9} events {ns / cnt if cnt else 0:8.1f} ns/event")
m = json.load(open(sys.argv[2]))["metrics"]
print(f"task: {m['http.requests']} HTTP requests seen, {m['net.tcp.connects']} connects")
PY
