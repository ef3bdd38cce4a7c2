#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# A private network for the network tests: a client and a server namespace joined by
# a veth pair, test servers, a private hosts file. Nothing of the machine's own is
# touched: the client sees the names through a hosts file bind-mounted in a mount
# namespace of its own.
#
#   netlab.sh up DIR ID [STATUSES]  make it all; DIR holds its state (and must exist);
#                                   the namespaces are IDc (client) and IDs (server)
#   netlab.sh exec DIR CMD...       run CMD in the client namespace with the lab's names
#   netlab.sh snmp DIR              the client namespace's TCP counters (/proc/net/snmp)
#   netlab.sh down DIR              stop the servers and remove the namespaces
#   netlab.sh down-id ID            the same when DIR is gone (a test that was killed)
#
# Addresses (server side), names and what answers there:
#   10.251.0.2  bucket.s3.amazonaws.com   https :443 (STATUSES, then 200), http :80
#   10.251.0.3  slow.s3.amazonaws.com     SYNs dropped by nftables (timeout)
#   10.251.0.4  gone.s3.amazonaws.com     SYNs answered ICMP host-unreachable
#   10.251.0.5  plain.example.test        http :80
#   10.251.0.6  closed.s3.amazonaws.com   nothing listens (refused)
#   10.251.0.7  reset.s3.amazonaws.com    http :80 and https :443 reset mid-response
#   10.251.0.8  edge.example.test         http :80 and https :443 scripted answers
#                                         (/case/NAME, logged to DIR/sent.log)
# and a DNS server at 10.251.0.2:53 (UDP) that answers for these names.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
cmd=${1:-}
dir=${2:-}
[ -n "$cmd" ] && [ -n "$dir" ] || { echo "usage: netlab.sh up|exec|snmp|down DIR ..." >&2; exit 2; }

# The processes in the lab's namespaces are the servers this script started.
down_id() {
	for ns in "${1}s" "${1}c"; do
		[ -e "/run/netns/$ns" ] || continue
		for pid in $(ip netns pids "$ns" 2>/dev/null); do
			kill "$pid" 2>/dev/null || true
		done
		ip netns del "$ns" 2>/dev/null || true
	done
}

if [ "$cmd" = down-id ]; then
	down_id "$dir"
	exit 0
fi
dir=$(cd "$dir" && pwd)

up() {
	id=$1
	statuses=${2:-}
	case "$id" in
	*[!a-z0-9]* | "") echo "netlab: bad id '$id'" >&2; return 1 ;;
	esac
	echo "$id" > "$dir/id"
	ip netns add "${id}c"
	ip netns add "${id}s"
	ip link add "${id}a" type veth peer name "${id}b"
	ip link set "${id}a" netns "${id}c"
	ip link set "${id}b" netns "${id}s"
	ip -n "${id}c" link set lo up
	ip -n "${id}s" link set lo up
	ip -n "${id}c" addr add 10.251.0.1/24 dev "${id}a"
	for a in 2 3 4 5 6 7 8; do
		ip -n "${id}s" addr add "10.251.0.$a/24" dev "${id}b"
	done
	ip -n "${id}c" link set "${id}a" up
	ip -n "${id}s" link set "${id}b" up
	# One SYN retry: a dropped SYN times out after ~3 s, not ~2 min (curl's -m 20
	# would end it first, and no timeout would be seen). Written in the namespace's
	# /proc/sys and read back: a lab without it is refused, not half made.
	nsenter --net="/run/netns/${id}c" sh -c \
		'echo 1 > /proc/sys/net/ipv4/tcp_syn_retries' || return 1
	syn=$(nsenter --net="/run/netns/${id}c" cat /proc/sys/net/ipv4/tcp_syn_retries)
	if [ "$syn" != 1 ]; then
		echo "netlab: tcp_syn_retries in ${id}c is '$syn', not 1" >&2
		return 1
	fi
	ip netns exec "${id}s" nft -f - <<NFT
table inet taskprobe_lab {
	chain input {
		type filter hook input priority 0;
		ip daddr 10.251.0.3 tcp dport 443 drop
		ip daddr 10.251.0.4 tcp flags syn reject with icmp type host-unreachable
	}
}
NFT
	openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=bucket.s3.amazonaws.com \
		-addext "subjectAltName=DNS:bucket.s3.amazonaws.com,DNS:reset.s3.amazonaws.com,DNS:edge.example.test" \
		-keyout "$dir/key.pem" -out "$dir/cert.pem" 2>/dev/null
	cat > "$dir/hosts" <<HOSTS
127.0.0.1 localhost
10.251.0.2 bucket.s3.amazonaws.com
10.251.0.3 slow.s3.amazonaws.com
10.251.0.4 gone.s3.amazonaws.com
10.251.0.5 plain.example.test
10.251.0.6 closed.s3.amazonaws.com
10.251.0.7 reset.s3.amazonaws.com
10.251.0.8 edge.example.test
HOSTS
	rm -f "$dir/ready"
	ip netns exec "${id}s" python3 "$here/server.py" --dir "$dir" --statuses "$statuses" \
		--serve 10.251.0.2:443:https --serve 10.251.0.2:80:http \
		--serve 10.251.0.5:80:http --serve 10.251.0.7:80:reset \
		--serve 10.251.0.7:443:resets --serve 10.251.0.8:80:cases \
		--serve 10.251.0.8:443:tcases --serve 10.251.0.2:53:dns > "$dir/server.log" 2>&1 &
	echo $! > "$dir/server.pid"
	i=0
	while [ ! -s "$dir/ready" ]; do
		i=$((i + 1))
		if [ $i -gt 100 ]; then
			echo "netlab: the servers did not start:" >&2
			cat "$dir/server.log" >&2
			return 1
		fi
		sleep 0.05
	done
}

down() {
	[ -f "$dir/id" ] && down_id "$(cat "$dir/id")"
	rm -f "$dir/id" "$dir/server.pid" "$dir/ready"
}

case "$cmd" in
up)
	shift 2
	up "$@" || { down; exit 1; }
	;;
snmp)
	ip netns exec "$(cat "$dir/id")c" cat /proc/net/snmp
	;;
exec)
	shift 2
	id=$(cat "$dir/id")
	exec nsenter --net="/run/netns/${id}c" unshare -m sh -c \
		'mount --bind "$0" /etc/hosts && exec "$@"' "$dir/hosts" "$@"
	;;
down)
	down
	;;
*)
	echo "netlab: unknown command $cmd" >&2
	exit 2
	;;
esac
