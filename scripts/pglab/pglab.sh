#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# A PostgreSQL 15 cluster of a test's own, run by nobody (never root), reached on a
# unix socket in its directory and on 127.0.0.1:PORT, with database "fleet" and
# superuser "tp" whose password is in DIR/pw. Nothing outside DIR is touched.
#   pglab.sh up DIR PORT     initdb, start, create the database (DIR/pw made first)
#   pglab.sh stop DIR        stop it (fast shutdown); start DIR starts it again
#   pglab.sh psql DIR SQL    run SQL in "fleet" as tp; rows as a|b lines
#   pglab.sh down DIR        stop it if it runs, and remove DIR
# PGLAB_SHARED_BUFFERS and PGLAB_WORK_MEM size it (64MB and 4MB: a test's).
set -euo pipefail

bin=/usr/lib/postgresql/15/bin
[ -x "$bin/initdb" ] || { echo "pglab: no PostgreSQL 15 ($bin): scripts/deps.sh installs it" >&2; exit 1; }

as_nobody() {
	setpriv --reuid=nobody --regid=nogroup --clear-groups -- "$@"
}

psql_in() {
	local dir=$1 db=$2
	shift 2
	PGPASSFILE="$dir/pgpass" PGOPTIONS="-c client_min_messages=warning" psql -X -q -At -v ON_ERROR_STOP=1 -h "$dir/sock" \
		-p "$(cat "$dir/port")" -U tp -d "$db" "$@"
}

start() {
	local dir=$1
	as_nobody "$bin/pg_ctl" -D "$dir/data" -l "$dir/log" -w -t 60 start >/dev/null
}

case "${1:-}" in
up)
	dir=$2 port=$3
	[ -s "$dir/pw" ] || { echo "pglab: write the password to $dir/pw first" >&2; exit 1; }
	mkdir -p "$dir/sock"
	echo "$port" >"$dir/port"
	printf '*:*:*:tp:%s\n' "$(cat "$dir/pw")" >"$dir/pgpass"
	chmod 0600 "$dir/pgpass"
	chown nobody:nogroup "$dir" "$dir/sock" "$dir/pw"
	chmod 0755 "$dir"
	as_nobody "$bin/initdb" -D "$dir/data" -U tp --pwfile="$dir/pw" --auth=scram-sha-256 \
		-E UTF8 --no-locale -N >"$dir/initdb.log" 2>&1 ||
		{ cat "$dir/initdb.log" >&2; exit 1; }
	cat >>"$dir/data/postgresql.conf" <<CONF
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = '$dir/sock'
fsync = off
max_connections = 40
shared_buffers = ${PGLAB_SHARED_BUFFERS:-64MB}
work_mem = ${PGLAB_WORK_MEM:-4MB}
log_min_messages = warning
CONF
	start "$dir"
	psql_in "$dir" postgres -c 'CREATE DATABASE fleet'
	;;
start)
	start "$2"
	;;
stop)
	as_nobody "$bin/pg_ctl" -D "$2/data" -m fast -w -t 60 stop >/dev/null
	;;
psql)
	dir=$2
	shift 2
	psql_in "$dir" fleet -c "$*"
	;;
down)
	dir=$2
	if [ -f "$dir/data/postmaster.pid" ]; then
		as_nobody "$bin/pg_ctl" -D "$dir/data" -m immediate -w -t 60 stop >/dev/null 2>&1 || true
	fi
	rm -rf "$dir"
	;;
*)
	echo "usage: pglab.sh up DIR PORT | start DIR | stop DIR | psql DIR SQL | down DIR" >&2
	exit 2
	;;
esac
