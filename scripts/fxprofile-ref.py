#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Writes the reference the Firefox Profiler export is checked against, read off the
profiler's own source (github.com/firefox-devtools/profiler):
   fxprofile-ref.py GIT_DIR_OR_CHECKOUT [COMMIT] > tests/helpers/fxprofile-ref.json
It takes, from src/types/profile.ts and src/types/markers.ts, each object type's
required and optional keys, and the string unions (colors, formats, locations), and
from src/app-logic/constants.ts the format versions and marker phases."""
import json
import os
import re
import subprocess
import sys

OBJECTS = {
    "src/types/profile.ts": [
        "Profile", "ProfileMeta", "RawProfileSharedData", "RawThread", "RawSamplesTable",
        "RawMarkerTable", "RawStackTable", "RawFrameTable", "FuncTable", "ResourceTable",
        "NativeSymbolTable", "SourceTable", "SourceLocationTable", "ExtensionTable",
        "Category", "RawCounter", "RawCounterSamplesTable", "CounterDisplayConfig",
    ],
    "src/types/markers.ts": ["MarkerSchema", "MarkerSchemaField", "MarkerGraph"],
}
UNIONS = {
    "src/types/profile.ts": ["CategoryColor", "GraphColor", "CounterGraphType",
                             "CounterTooltipDataSource"],
    "src/types/markers.ts": ["MarkerDisplayLocation", "MarkerGraphType", "MarkerFormatType"],
}
CONSTANTS = ["GECKO_PROFILE_VERSION", "PROCESSED_PROFILE_VERSION", "INSTANT", "INTERVAL",
             "INTERVAL_START", "INTERVAL_END"]


def reader(src, commit):
    if os.path.isdir(os.path.join(src, "objects")):  # a bare git directory
        return lambda path: subprocess.run(["git", "--git-dir", src, "show",
                                            "%s:%s" % (commit, path)], check=True,
                                           capture_output=True, text=True).stdout
    return lambda path: open(os.path.join(src, path)).read()


def uncomment(text):
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def object_keys(text, name):
    m = re.search(r"^export type %s = \{\n(.*?)^\};" % name, text, flags=re.S | re.M)
    if not m:
        sys.exit("fxprofile-ref: no object type %s" % name)
    req, opt = [], []
    for line in m.group(1).split("\n"):
        k = re.match(r"^  '?([\w+$]+)'?(\??):", line)  # depth one: two spaces
        if k:
            (opt if k.group(2) else req).append(k.group(1))
    return {"required": req, "optional": opt}


def union(text, name):
    m = re.search(r"^export type %s =(.*?);\n" % name, text, flags=re.S | re.M)
    if not m:
        sys.exit("fxprofile-ref: no union %s" % name)
    return re.findall(r"^\s*\|?\s*'([^']+)'", m.group(1), flags=re.M) + \
        re.findall(r"\|\s*'([^']+)'", m.group(1).split("\n")[0])


def main():
    src = sys.argv[1]
    commit = sys.argv[2] if len(sys.argv) > 2 else "HEAD"
    read = reader(src, commit)
    out = {"source": "firefox-devtools/profiler", "commit": commit, "objects": {},
           "unions": {}, "constants": {}}
    if commit == "HEAD" and os.path.isdir(os.path.join(src, "objects")):
        out["commit"] = subprocess.run(["git", "--git-dir", src, "rev-parse", "HEAD"],
                                       check=True, capture_output=True,
                                       text=True).stdout.strip()
    for path, names in OBJECTS.items():
        text = uncomment(read(path))
        for n in names:
            out["objects"][n] = object_keys(text, n)
    for path, names in UNIONS.items():
        text = uncomment(read(path))
        for n in names:
            out["unions"][n] = sorted(set(union(text, n)))
    text = read("src/app-logic/constants.ts")
    for n in CONSTANTS:
        m = re.search(r"export const %s(?:: \w+)? = (\d+);" % n, text)
        if not m:
            sys.exit("fxprofile-ref: no constant %s" % n)
        out["constants"][n] = int(m.group(1))
    json.dump(out, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")


main()
