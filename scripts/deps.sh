#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Installs the Debian packages taskprobe needs to build and test. Safe to re-run:
# it asks apt only for what is missing and runs `apt-get update` at most once.
set -euo pipefail

pkgs=(
	make gcc clang llvm pkg-config python3
	# the Perfherder artifact is checked against Treeherder's JSON schema
	python3-jsonschema
	libbpf-dev bpftool libelf-dev zlib1g-dev libsqlite3-dev sqlite3 libpcre2-dev libmicrohttpd-dev clang-format git ansible-core
	libclang-rt-14-dev
	# benchmarks (make bench): hackbench, and /usr/bin/time for a build's CPU time
	rt-tests time
	iproute2 procps coreutils util-linux
	# network tests: namespaces, SYN drops, certificates, TLS clients (OpenSSL, GnuTLS)
	nftables openssl curl ca-certificates libssl3 libgnutls30
	# the daemon test scrapes /metrics with a real Prometheus (started by the test)
	prometheus
	# the HTML report is opened in headless Chromium (networking off) by its test
	chromium
	# the fleet store: libpq to ship and query; the fleet test runs its own PostgreSQL 15
	libpq-dev postgresql-15 postgresql-client-15
	# OTLP/HTTP export to an OpenTelemetry collector (http and https)
	libcurl4-openssl-dev
	# test tools from the npm registry (Mermaid, which renders the job-page charts;
	# protobufjs, which decodes the OTLP documents)
	nodejs
)

missing=()
for p in "${pkgs[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
		missing+=("$p")
	fi
done

if [ ${#missing[@]} -gt 0 ]; then
	if [ "$(id -u)" -ne 0 ]; then
		echo "taskprobe: missing packages: ${missing[*]}; run 'sudo scripts/deps.sh'" >&2
		exit 1
	fi
	echo "taskprobe: installing ${missing[*]}" >&2
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Test tools from npm, at the versions their lock files pin: installed once, here.
here=$(cd "$(dirname "$0")/.." && pwd)
for dir in "$here"/tests/helpers/mermaid "$here"/tests/helpers/otlp; do
	# node_modules/.taskprobe-lock: the lock file it was installed from.
	if ! cmp -s "$dir/package-lock.json" "$dir/node_modules/.taskprobe-lock"; then
		echo "taskprobe: installing the npm test tools in ${dir#"$here"/}" >&2
		(cd "$dir" && npm ci --no-audit --no-fund --loglevel=error >/dev/null &&
			cp package-lock.json node_modules/.taskprobe-lock)
	fi
done
