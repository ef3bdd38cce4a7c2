#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Checks a chrome-trace export against the task's record and its CSV export:
   check_trace.py TRACE.json RECORD.json SERIES.csv
Every event well formed (ph, ts, pid, tid; dur on durations), the phases those of
the record and nested as its depths say, the counters the series' values, one
instant per notable event. Prints what it checked; exits 1 on the first mismatch."""
import csv
import json
import sys


def fail(msg):
    print("check_trace: " + msg)
    sys.exit(1)


trace = json.load(open(sys.argv[1]))
record = json.load(open(sys.argv[2]))
rows = list(csv.DictReader(open(sys.argv[3])))
events = trace["traceEvents"]
for e in events:
    for k in ("name", "ph", "ts", "pid", "tid"):
        if k not in e:
            fail("event without %s: %r" % (k, e))
    if not isinstance(e["ts"], int) or e["ts"] < 0:
        fail("bad ts: %r" % e)
    if e["ph"] == "X" and (not isinstance(e.get("dur"), int) or e["dur"] < 0):
        fail("duration without dur: %r" % e)
    if e["ph"] not in ("M", "X", "i", "C"):
        fail("unexpected ph: %r" % e)

task = [e for e in events if e["ph"] == "X" and e.get("cat") == "task"]
if len(task) != 1 or task[0]["dur"] != record["wall_ns"] // 1000:
    fail("the task's duration is not the record's wall time")
phases = [e for e in events if e["ph"] == "X" and e.get("cat") == "phase"]
want = record["phases"] or []
if [p["name"] for p in phases] != [p["name"] for p in want]:
    fail("phases %r, the record has %r" % ([p["name"] for p in phases], [p["name"] for p in want]))
for i, p in enumerate(want):
    t = phases[i]
    if t["ts"] != p["start_ms"] * 1000 or t["dur"] != p["wall_ns"] // 1000:
        fail("phase %s: its time is not the record's" % p["name"])
    if p["depth"] == 0:
        continue
    # its parent: the latest phase before it one level out, which must hold it (1 ms slack)
    parent = [j for j in range(i) if want[j]["depth"] == p["depth"] - 1][-1]
    q = phases[parent]
    if t["ts"] < q["ts"] or t["ts"] + t["dur"] > q["ts"] + q["dur"] + 1000:
        fail("phase %s is not inside %s" % (p["name"], q["name"]))

procs = [e for e in events if e["ph"] == "X" and e.get("cat") == "process"]
want = record.get("processes") or []
if len(procs) != len(want):
    fail("%d process spans, the record has %d" % (len(procs), len(want)))
for t, p in zip(procs, want):
    if (t["tid"] != p["pid"] or t["args"]["ppid"] != p["ppid"] or
            t["args"]["cpu_ns"] != p["cpu_ns"] or t["args"].get("exit") != p.get("exit") or
            t["ts"] != round(p["start_ms"] * 1000) or
            abs(t["ts"] + t["dur"] - p["end_ms"] * 1000) > 1 or
            not p["command"].endswith(t["name"])):
        fail("process %d: %r, the record has %r" % (p["pid"], t, p))
names = {e["tid"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
if names != {p["pid"] for p in want}:
    fail("process tracks are not named")

counters = {}
for e in events:
    if e["ph"] == "C":
        counters.setdefault(e["name"], []).append(e)
for name, col, key, scale in (("cpu", "cpu_millicores", "cores", 1000),
                              ("memory", "mem_bytes", "bytes", 1),
                              ("disk", "read_bytes_per_s", "read_bytes_per_s", 1),
                              ("disk", "write_bytes_per_s", "write_bytes_per_s", 1),
                              ("processes", "procs", "alive", 1),
                              ("network", "net_rx_bytes_per_s", "rx_bytes_per_s", 1),
                              ("network", "net_tx_bytes_per_s", "tx_bytes_per_s", 1)):
    got = counters.get(name, [])
    if len(got) != len(rows):
        fail("%d %s counters, %d samples" % (len(got), name, len(rows)))
    for e, r in zip(got, rows):
        if e["ts"] != int(r["t_ms"]) * 1000 or round(e["args"][key] * scale) != int(r[col]):
            fail("%s at %s: %r, the series has %s" % (name, r["t_ms"], e["args"], r[col]))
instants = [e for e in events if e["ph"] == "i"]
if [e["name"] for e in instants] != [e["kind"] for e in record["events"]]:
    fail("instants are not the record's events")
print("ok: %d events, %d phases, %d processes, %d samples, %d instants" % (
    len(events), len(phases), len(procs), len(rows), len(instants)))
