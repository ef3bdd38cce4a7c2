#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The peer: what CI systems run today inside a task, a psutil-style sampler. Every
INTERVAL seconds it walks /proc for the descendants of ROOT (psutil's
children(recursive=True) does the same: every process's ppid, from /proc/PID/stat) and
reads each one's CPU times, as a sampler of per-task figures must. On SIGTERM it
writes what it saw to OUT as JSON: the distinct processes and execs it saw, its samples,
and how many of each program (by comm), and its own CPU
time (getrusage).
   poller.py ROOT OUT [INTERVAL]"""
import json
import os
import resource
import signal
import sys
import time

root, out = int(sys.argv[1]), sys.argv[2]
interval = float(sys.argv[3]) if len(sys.argv) > 3 else 1.0
seen = set()  # (pid, start time): a process
programs = set()  # (pid, start time, comm): a program it was seen running
samples = 0
stop = False


def on_term(sig, frame):
    global stop
    stop = True


def stat(pid):
    with open("/proc/%d/stat" % pid) as f:
        s = f.read()
    comm = s[s.index("(") + 1:s.rindex(")")]
    rest = s[s.rindex(")") + 2:].split()
    # fields after comm: state ppid ... utime(12) stime(13) ... starttime(20)
    return comm, int(rest[1]), int(rest[11]) + int(rest[12]), int(rest[19])


signal.signal(signal.SIGTERM, on_term)
me = os.getpid()
while not stop:
    procs = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                procs[int(d)] = stat(int(d))
            except (OSError, ValueError, IndexError):
                pass
    # descendants of root, itself excluded
    kids, todo = set(), [root]
    while todo:
        p = todo.pop()
        for q, (comm, ppid, cpu, start) in procs.items():
            if ppid == p and q not in kids and q != me:
                kids.add(q)
                todo.append(q)
    for q in kids | {root}:
        if q in procs:
            seen.add((q, procs[q][3]))
            programs.add((q, procs[q][3], procs[q][0]))
    samples += 1
    t = time.monotonic() + interval
    while not stop and time.monotonic() < t:
        time.sleep(min(0.05, max(0, t - time.monotonic())))
ru = resource.getrusage(resource.RUSAGE_SELF)
by_comm = {}
for _, _, comm in programs:
    by_comm[comm] = by_comm.get(comm, 0) + 1
json.dump({"processes_seen": len(seen), "execs_seen": len(programs), "by_comm": by_comm,
           "samples": samples, "cpu_s": ru.ru_utime + ru.ru_stime}, open(out, "w"))
