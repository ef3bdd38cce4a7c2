# SPDX-License-Identifier: GPL-2.0
# Shared by the benchmarks: the binary under test and small statistics helpers.
TP=${TP:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/build/taskprobe}
# The benchmarks' own programs (made by `make bench`): the floor's loader, the floor
# (empty programs on the hot hooks) and the floor plus one lookup, beside TP's build.
FLOOR=${FLOOR:-${BENCH_BIN:-$(dirname "$TP")/bench}/floor}
FLOOR_OBJ=${FLOOR_OBJ:-${BENCH_BPF:-$(dirname "$TP")/bpf}/floor.bpf.o}
LOOKUP_OBJ=${LOOKUP_OBJ:-${BENCH_BPF:-$(dirname "$TP")/bpf}/lookup.bpf.o}

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

# A task that only waits keeps a collector up while a workload runs beside it, outside
# any task: it waits in the shell's read of a fifo, so it makes no fork, exec or exit
# of its own among the events measured. Returns once the task's command runs (the
# collector attached); exits the script if the task ended first or never started.
# Released by waiting_task_end, the task's command then runs AFTER (say, a snapshot of
# the programs' stats) and ends. waiting_task_abort, for a trap, ends it by its pid.
#   waiting_task_start BASE AFTER [RUN OPTIONS...]; ...; waiting_task_end BASE
WAITING_PID=
waiting_task_start() {
	local base=$1 after=$2
	shift 2
	rm -f "$base.go" "$base.ready"
	mkfifo "$base.go"
	"$TP" run --quiet --no-db "$@" -- sh -c ": > '$base.ready'; read x < '$base.go'; $after" \
		> /dev/null &
	WAITING_PID=$!
	for _ in $(seq 200); do
		[ -e "$base.ready" ] && return 0
		kill -0 "$WAITING_PID" 2> /dev/null || break
		sleep 0.05
	done
	echo "${0##*/}: the waiting task did not start" >&2
	exit 1
}

waiting_task_end() {
	echo go > "$1.go"
	wait "$WAITING_PID"
	WAITING_PID=
	rm -f "$1.go" "$1.ready"
}

waiting_task_abort() {
	if [ -n "$WAITING_PID" ]; then
		kill "$WAITING_PID" 2> /dev/null || true
		wait "$WAITING_PID" 2> /dev/null || true
		WAITING_PID=
	fi
}

# A benchmark object's programs ($FLOOR loading OBJ) attached until detach_obj FD:
# they stay while the loader's stdin, the fifo made at FIFO_PATH, is open on fd FD.
# Exits the script if they do not load.
#   attach_obj FD OBJ FIFO_PATH
ATTACHED_PID=()
attach_obj() {
	local fd=$1 obj=$2 fifo=$3 ready=$3.ready
	mkfifo "$fifo"
	"$FLOOR" "$obj" < "$fifo" > "$ready" &
	ATTACHED_PID[fd]=$!
	eval "exec $fd> \"\$fifo\""
	for _ in $(seq 100); do
		grep -q ready "$ready" 2> /dev/null && break
		sleep 0.05
	done
	grep -q ready "$ready" || { echo "${0##*/}: ${obj##*/} did not load" >&2; exit 1; }
	rm -f "$ready"
}

# The programs detached: the loader's stdin closed, the loader waited for.
detach_obj() {
	local fd=$1
	eval "exec $fd>&-" 2> /dev/null || true
	if [ -n "${ATTACHED_PID[fd]:-}" ]; then
		wait "${ATTACHED_PID[fd]}" 2> /dev/null || true
		unset "ATTACHED_PID[fd]"
	fi
}

# The floor (floor.bpf.c: an empty program on each hot hook, $FLOOR_OBJ), on fd 9.
#   start_floor FIFO_PATH
start_floor() {
	attach_obj 9 "$FLOOR_OBJ" "$1"
}

stop_floor() {
	detach_obj 9
}
