#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Checks a firefox-profiler export against the profiler's format and the task:
   check_profile.py PROFILE.json RECORD.json SERIES.csv REF.json
REF is tests/helpers/fxprofile-ref.json, read off the profiler's source by
scripts/fxprofile-ref.py: the required keys of each object type, the string unions,
the format versions and marker phases. The profile is then read as the profiler's
loader would (a processed profile at a version it knows, strings by index, markers by
schema, counters by thread) and compared with the record and the series. Prints what
it checked; exits 1 on the first mismatch."""
import csv
import json
import sys


def fail(msg):
    print("check_profile: " + msg)
    sys.exit(1)


prof = json.load(open(sys.argv[1]))
record = json.load(open(sys.argv[2]))
rows = list(csv.DictReader(open(sys.argv[3])))
ref = json.load(open(sys.argv[4]))
objects, unions, consts = ref["objects"], ref["unions"], ref["constants"]
checked = 0


def shape(obj, typename, where):
    """Every required key of the type present; no key the type does not know."""
    global checked
    if not isinstance(obj, dict):
        fail("%s is not an object (%s)" % (where, typename))
    t = objects[typename]
    for k in t["required"]:
        if k not in obj:
            fail("%s (%s) lacks %s" % (where, typename, k))
    for k in obj:
        if k not in t["required"] and k not in t["optional"]:
            fail("%s (%s) has %s, which the profiler does not know" % (where, typename, k))
    checked += 1


def table(obj, typename, where):
    """A struct-of-arrays table: its columns as long as its length."""
    shape(obj, typename, where)
    n = obj["length"]
    for k, v in obj.items():
        if k != "length" and isinstance(v, list) and len(v) != n:
            fail("%s.%s has %d rows, length %d" % (where, k, len(v), n))
    return n


# The loader: a processed profile (meta.preprocessedProfileVersion), at a version it
# has (newer ones are refused), with Gecko's version beside it.
shape(prof, "Profile", "profile")
meta = prof["meta"]
shape(meta, "ProfileMeta", "meta")
if meta["preprocessedProfileVersion"] != consts["PROCESSED_PROFILE_VERSION"]:
    fail("version %r, the reference is %d" % (meta["preprocessedProfileVersion"],
                                             consts["PROCESSED_PROFILE_VERSION"]))
if meta["version"] != consts["GECKO_PROFILE_VERSION"]:
    fail("Gecko version %r" % meta["version"])
if abs(meta["startTime"] - record["start_ns"] / 1e6) > 1:
    fail("meta.startTime is not the task's start")
if meta["stackwalk"] not in (0, 1) or not isinstance(meta["interval"], (int, float)):
    fail("meta.stackwalk or interval")
table(meta["extensions"], "ExtensionTable", "meta.extensions")
cats = meta["categories"]
for i, c in enumerate(cats):
    shape(c, "Category", "category %d" % i)
    if c["color"] not in unions["CategoryColor"] or not c["subcategories"] or \
            c["subcategories"][0] != "Other":
        fail("category %r" % c)
if not any(c["color"] == "grey" for c in cats):
    fail("no grey category (the default one)")
schemas = {}
for s in meta["markerSchema"]:
    shape(s, "MarkerSchema", "schema %s" % s.get("name"))
    for d in s["display"]:
        if d not in unions["MarkerDisplayLocation"]:
            fail("schema %s: display %r" % (s["name"], d))
    for f in s["fields"]:
        shape(f, "MarkerSchemaField", "schema %s field" % s["name"])
        if f["format"] not in unions["MarkerFormatType"]:
            fail("schema %s: format %r" % (s["name"], f["format"]))
    for g in s.get("graphs", []):
        shape(g, "MarkerGraph", "schema %s graph" % s["name"])
        if g["type"] not in unions["MarkerGraphType"] or \
                g.get("color", "blue") not in unions["GraphColor"]:
            fail("schema %s: graph %r" % (s["name"], g))
        if g["key"] not in [f["key"] for f in s["fields"]]:
            fail("schema %s: graph of %s, not a field" % (s["name"], g["key"]))
    schemas[s["name"]] = s

shared = prof["shared"]
shape(shared, "RawProfileSharedData", "shared")
for key, typename in (("stackTable", "RawStackTable"), ("frameTable", "RawFrameTable"),
                      ("funcTable", "FuncTable"), ("resourceTable", "ResourceTable"),
                      ("nativeSymbols", "NativeSymbolTable"), ("sources", "SourceTable"),
                      ("sourceLocationTable", "SourceLocationTable")):
    table(shared[key], typename, "shared." + key)
strings = shared["stringArray"]
if not all(isinstance(s, str) for s in strings) or len(set(strings)) != len(strings):
    fail("stringArray: strings, each once")

if len(prof["threads"]) != 1:
    fail("one thread, the task's")
th = prof["threads"][0]
shape(th, "RawThread", "thread")
if not isinstance(th["pid"], str) or not isinstance(th["tid"], (int, str)):
    fail("thread pid is a string, tid a number or string")
if table(th["samples"], "RawSamplesTable", "thread.samples") != 0:
    fail("samples: none (no stacks)")
m = th["markers"]
n = table(m, "RawMarkerTable", "thread.markers")

# Markers, read as the profiler does: the name by index, the category by index, the
# payload by its schema, the phase deciding which times count.
by_type = {}
for i in range(n):
    name, cat, ph, data = m["name"][i], m["category"][i], m["phase"][i], m["data"][i]
    start, end = m["startTime"][i], m["endTime"][i]
    if not (isinstance(name, int) and 0 <= name < len(strings)):
        fail("marker %d: name %r is not a string index" % (i, name))
    if not (isinstance(cat, int) and 0 <= cat < len(cats)):
        fail("marker %d: category %r" % (i, cat))
    if ph == consts["INSTANT"]:
        if start is None or end is not None:
            fail("marker %d: an instant with times %r %r" % (i, start, end))
    elif ph == consts["INTERVAL"]:
        if start is None or end is None or end < start:
            fail("marker %d: an interval %r to %r" % (i, start, end))
    else:
        fail("marker %d: phase %r" % (i, ph))
    if data is None or data.get("type") not in schemas:
        fail("marker %d: payload without a schema: %r" % (i, data))
    keys = {f["key"]: f["format"] for f in schemas[data["type"]]["fields"]}
    for k, v in data.items():
        if k == "type":
            continue
        if k not in keys:
            fail("marker %d: field %s is not in schema %s" % (i, k, data["type"]))
        fmt = keys[k]
        num = fmt in ("integer", "decimal", "duration", "percentage", "bytes")
        if num != isinstance(v, (int, float)) or (fmt == "integer" and v != int(v)):
            fail("marker %d: %s=%r is not a %s" % (i, k, v, fmt))
    by_type.setdefault(data["type"], []).append(
        {"name": strings[name], "start": start, "end": end, "data": data,
         "cat": cats[cat]["name"]})

# Against the record: every phase, process and notable event, and a CPU value a sample.
phases = by_type.get("Phase", [])
want = record["phases"] or []
if [p["name"] for p in phases] != [p["name"] for p in want]:
    fail("phase markers %r, the record has %r" % ([p["name"] for p in phases],
                                                 [p["name"] for p in want]))
for p, w in zip(phases, want):
    if abs(p["start"] - w["start_ms"]) > 1e-6 or \
            abs(p["end"] - p["start"] - w["wall_ns"] / 1e6) > 1e-3 or \
            abs(p["data"]["cpu"] - w["cpu_ns"] / 1e6) > 1e-3 or p["cat"] != "Phase":
        fail("phase %s: %r, the record has %r" % (w["name"], p, w))
procs = by_type.get("Process", [])
want = record.get("processes") or []
if len(procs) != len(want):
    fail("%d process markers, the record has %d" % (len(procs), len(want)))
for p, w in zip(procs, want):
    d = p["data"]
    if d["pid"] != w["pid"] or d["ppid"] != w["ppid"] or d["command"] != w["command"] or \
            abs(p["start"] - w["start_ms"]) > 1e-6 or abs(p["end"] - w["end_ms"]) > 1e-6 or \
            abs(d["cpu"] - w["cpu_ns"] / 1e6) > 1e-3 or d.get("exit") != w.get("exit"):
        fail("process %d: %r, the record has %r" % (w["pid"], p, w))
fails = by_type.get("Failure", [])
if [(f["name"], f["start"], f["data"]["detail"]) for f in fails] != \
        [(e["kind"], e["t_ms"], e["detail"]) for e in record["events"]]:
    fail("failure markers are not the record's events")
cpu = by_type.get("CPU", [])
if len(cpu) != len(rows):
    fail("%d CPU markers, %d samples" % (len(cpu), len(rows)))
for c, r in zip(cpu, rows):
    if c["end"] != int(r["t_ms"]) or round(c["data"]["cores"] * 1000) != int(r["cpu_millicores"]):
        fail("CPU at %s: %r, the series has %s" % (r["t_ms"], c, r["cpu_millicores"]))

# Counters: the thread's, each sample's value what the series stored (memory summed
# from its changes; a rate as its bytes over the sample's interval).
columns = {"Memory": "mem_bytes", "Disk read": "read_bytes_per_s",
           "Disk write": "write_bytes_per_s", "Network received": "net_rx_bytes_per_s",
           "Network sent": "net_tx_bytes_per_s"}
seen = set()
for c in prof.get("counters", []):
    shape(c, "RawCounter", "counter %s" % c.get("name"))
    shape(c["display"], "CounterDisplayConfig", "counter %s display" % c["name"])
    d = c["display"]
    if d["graphType"] not in unions["CounterGraphType"] or d["color"] not in unions["GraphColor"]:
        fail("counter %s: display %r" % (c["name"], d))
    for row in d["tooltipRows"]:
        if row["type"] == "value" and row["source"] not in unions["CounterTooltipDataSource"]:
            fail("counter %s: tooltip source %r" % (c["name"], row["source"]))
    if c["pid"] != th["pid"] or c["mainThreadIndex"] != 0:
        fail("counter %s: not the thread's" % c["name"])
    s = c["samples"]
    if table(s, "RawCounterSamplesTable", "counter %s samples" % c["name"]) != len(rows) + 1:
        fail("counter %s: a sample at 0, then one per series sample" % c["name"])
    if s["time"] != sorted(s["time"]):
        fail("counter %s: times out of order" % c["name"])
    col = columns.get(c["name"])
    if not col:
        fail("unexpected counter %s" % c["name"])
    seen.add(c["name"])
    acc = 0
    for i, r in enumerate(rows):
        t0 = int(rows[i - 1]["t_ms"]) if i else 0
        if s["time"][i + 1] != int(r["t_ms"]):
            fail("counter %s: time %r at sample %d" % (c["name"], s["time"][i + 1], i))
        if d["graphType"] == "line-accumulated":
            acc += s["count"][i + 1]
            if acc != int(r[col]):
                fail("counter %s at %s: %d, the series has %s" % (c["name"], r["t_ms"], acc,
                                                                  r[col]))
        else:
            want_bytes = int(r[col]) * (int(r["t_ms"]) - t0) / 1000
            if abs(s["count"][i + 1] - want_bytes) > 1:
                fail("counter %s at %s: %r bytes, the series says %r" % (
                    c["name"], r["t_ms"], s["count"][i + 1], want_bytes))
if seen != set(columns):
    fail("counters %r, expected %r" % (sorted(seen), sorted(columns)))
print("ok: version %d, %d objects checked, %d markers (%d phases, %d processes, %d failures, "
      "%d CPU), %d counters" % (meta["preprocessedProfileVersion"], checked, n, len(phases),
                                len(procs), len(fails), len(cpu), len(seen)))
