# SPDX-License-Identifier: GPL-2.0
# Shared by the benchmarks: the binary under test and small statistics helpers.
TP=${TP:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/build/taskprobe}

need_root() {
	if [ "$(id -u)" -ne 0 ]; then
		echo "taskprobe: benchmarks load BPF programs; run them as root" >&2
		exit 1
	fi
}

# median of the numbers on stdin
median() {
	sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# bash's own clock: no fork, so it does not add a process to what it times
now_ns() {
	local t=${EPOCHREALTIME/./}
	echo "${t}000"
}

# Runs a command (its output discarded) and prints how long it took, in microseconds.
elapsed_us() {
	local t0 t1
	t0=$(now_ns)
	"$@" > /dev/null
	t1=$(now_ns)
	echo $(((t1 - t0) / 1000))
}

# Turns kernel.bpf_stats_enabled on until the script exits, then back as it was; also
# removes the files named in CLEANUP then.
with_bpf_stats() {
	BPF_STATS_PREV=$(sysctl -n kernel.bpf_stats_enabled)
	trap 'sysctl -qw kernel.bpf_stats_enabled="$BPF_STATS_PREV"; rm -f ${CLEANUP:-}' EXIT
	sysctl -qw kernel.bpf_stats_enabled=1
}

# Interleaved pairs: runs "$@ off" and "$@ on" PAIRS times, alternating which goes
# first so drift in the machine favours neither side; each call prints one number
# (a duration). Prints a line per pair and leaves the median ratio on/off in RATIO.
#   interleave PAIRS UNIT measure_fn
interleave() {
	local pairs=$1 unit=$2 fn=$3 on off r i
	local ratios=()
	for ((i = 0; i < pairs; i++)); do
		if ((i % 2)); then
			on=$("$fn" on)
			off=$("$fn" off)
		else
			off=$("$fn" off)
			on=$("$fn" on)
		fi
		r=$(awk -v a="$on" -v b="$off" 'BEGIN { printf "%.4f", a / b }')
		ratios+=("$r")
		echo "pair $i: without $off$unit, with $on$unit, ratio $r"
	done
	RATIO=$(printf '%s\n' "${ratios[@]}" | median)
}

# The floor (floor.bpf.c: an empty program on each hot hook, $FLOOR loading
# $FLOOR_OBJ) attached until stop_floor: its programs stay while its stdin, the fifo
# made at FIFO_PATH, is open on fd 9. Sets FLOOR_PID; exits the script if it does not
# load.
#   start_floor FIFO_PATH
start_floor() {
	local fifo=$1 ready=$1.ready
	mkfifo "$fifo"
	"$FLOOR" "$FLOOR_OBJ" < "$fifo" > "$ready" &
	FLOOR_PID=$!
	exec 9> "$fifo"
	for _ in $(seq 100); do
		grep -q ready "$ready" 2> /dev/null && break
		sleep 0.05
	done
	grep -q ready "$ready" || { echo "${0##*/}: the floor did not load" >&2; exit 1; }
	rm -f "$ready"
}

# The floor detached: its stdin closed, the loader waited for.
stop_floor() {
	exec 9>&- 2> /dev/null || true
	if [ -n "${FLOOR_PID:-}" ]; then
		wait "$FLOOR_PID" 2> /dev/null || true
	fi
}
