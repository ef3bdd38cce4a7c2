#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Checks a Perfherder artifact as Treeherder would take it, and its figures against
the task's record:
   check_perfherder.py REF ARTIFACT RECORD FRAMEWORK
REF is tests/helpers/perfherder-ref.json (scripts/perfherder-ref.py: Treeherder's
schema, its registered frameworks and the artifact names its job loader reads).
Prints what is wrong, one line each, and exits 1 if anything is."""
import json
import sys

import jsonschema


def main():
    ref_path, art_path, rec_path, framework = sys.argv[1:5]
    with open(ref_path, encoding="utf-8") as f:
        ref = json.load(f)
    with open(art_path, encoding="utf-8") as f:
        art = json.load(f)
    with open(rec_path, encoding="utf-8") as f:
        rec = json.load(f)
    bad = []
    # Treeherder's schema: draft 4 (its "id"), formats and all.
    validator = jsonschema.Draft4Validator(ref["schema"])
    for e in validator.iter_errors(art):
        bad.append(f"schema: {'/'.join(map(str, e.path))}: {e.message}")
    name = art_path.rsplit("/", 1)[-1]
    if ref["artifact_name"]["contains"] not in name or not name.endswith(ref["artifact_name"]["suffix"]):
        bad.append(f"artifact name {name}: Treeherder's job loader does not read it")
    fw = art.get("framework", {}).get("name")
    if fw != framework:
        bad.append(f"framework {fw}, not {framework}")
    if fw not in ref["frameworks"]:
        bad.append(f"framework {fw}: Treeherder has not registered it, skips the artifact")
    suites = {}
    for s in art.get("suites", []):
        if s["name"] in suites:
            bad.append(f"suite {s['name']} twice: Treeherder keeps one")
        suites[s["name"]] = s
        names = [t["name"] for t in s.get("subtests", [])]
        if len(names) != len(set(names)):
            bad.append(f"suite {s['name']}: a subtest name twice")

    def expect(suite, wall_ns, figures):
        s = suites.get(suite)
        if not s:
            bad.append(f"no suite {suite}")
            return
        if abs(s.get("value", -1) - wall_ns / 1e9) > 1e-6:
            bad.append(f"{suite}: value {s.get('value')}, wall {wall_ns / 1e9}")
        sub = {t["name"]: t for t in s["subtests"]}
        for name, (want, unit) in figures.items():
            t = sub.get(name)
            if not t:
                bad.append(f"{suite}: no subtest {name}")
            elif abs(t["value"] - want) > 1e-6 * max(1, abs(want)) or t.get("unit") != unit:
                bad.append(f"{suite}.{name}: {t['value']} {t.get('unit')}, the record: {want} {unit}")

    m = rec["metrics"]
    expect("task", rec["wall_ns"], {
        "cpu_time": (m["cpu.time_ns"] / 1e9, "s"),
        "cpu_avg_cores": (m["cpu.time_ns"] / rec["wall_ns"], "cores"),
        "io_read_bytes": (m["io.read_bytes"], "bytes"),
        "io_write_bytes": (m["io.write_bytes"], "bytes"),
        "peak_mem_bytes": (m["mem.peak_bytes"], "bytes"),
        "execs": (m["proc.execs"], "count"),
    })
    seen = {}
    for p in rec.get("phases", []):
        seen[p["name"]] = seen.get(p["name"], 0) + 1
        suite = "phase." + p["name"] + ("" if seen[p["name"]] == 1 else f".{seen[p['name']]}")
        expect(suite, p["wall_ns"], {
            "cpu_time": (p["cpu_ns"] / 1e9, "s"),
            "cpu_avg_cores": (p["cpu_ns"] / p["wall_ns"] if p["wall_ns"] else 0, "cores"),
            "io_read_bytes": (p["read_bytes"], "bytes"),
            "io_write_bytes": (p["write_bytes"], "bytes"),
            "peak_mem_bytes": (p["peak_mem_bytes"], "bytes"),
            "execs": (p["execs"], "count"),
        })
    if len(suites) != 1 + len(rec.get("phases", [])):
        bad.append(f"{len(suites)} suites for {len(rec.get('phases', []))} phases")
    for b in bad:
        print(b)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
