#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The include rule of docs/ARCHITECTURE.md, checked over the #include lines.

user/ holds one folder per layer, lowest first in LAYERS. A file may include headers
of its own layer and of the layers below it, never above; every header of user/ is
named with its folder ("store/store.h"); within a layer the includes make no circle.
bpf/ sees only include/. Prints one line per breach and exits 1 if there is any.
"""
import os
import re
import sys

LAYERS = ["base", "model", "collector", "store", "session", "view", "cli"]
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def includes(path):
    with open(path, encoding="utf-8") as f:
        return INCLUDE.findall(f.read())


def main(root):
    user = os.path.join(root, "user")
    errors = []
    headers = {}  # "layer/name.h" -> layer
    files = []
    for entry in sorted(os.listdir(user)):
        full = os.path.join(user, entry)
        if not os.path.isdir(full):
            errors.append(f"user/{entry}: outside every layer folder")
            continue
        if entry not in LAYERS:
            errors.append(f"user/{entry}/: not a layer ({', '.join(LAYERS)})")
            continue
        for name in sorted(os.listdir(full)):
            if name.endswith((".c", ".h")):
                files.append((entry, name))
                if name.endswith(".h"):
                    headers[f"{entry}/{name}"] = entry
    bare = {h.split("/")[1]: h for h in headers}
    graph = {}  # module "layer/name" -> modules it includes, for the circles
    for layer, name in files:
        rel = f"user/{layer}/{name}"
        module = f"{layer}/{name[:-2]}"
        graph.setdefault(module, set())
        for inc in includes(os.path.join(user, layer, name)):
            if inc in headers:
                dep = headers[inc]
                if LAYERS.index(dep) > LAYERS.index(layer):
                    errors.append(f"{rel}: includes {inc}, a layer above {layer}")
                if inc[:-2] != module:
                    graph[module].add(inc[:-2])
            elif inc in bare:
                errors.append(f'{rel}: includes "{inc}": name it "{bare[inc]}"')
            elif inc == "taskprobe.skel.h" and layer != "collector":
                errors.append(f"{rel}: the BPF skeleton belongs to the collector")
    for path in sorted(os.listdir(os.path.join(root, "bpf"))):
        for inc in includes(os.path.join(root, "bpf", path)) if path.endswith((".c", ".h")) else []:
            if inc in headers or inc in bare:
                errors.append(f"bpf/{path}: includes {inc} of user/")
    # Circles: a depth-first walk that meets a module still on its path.
    state = {}

    def walk(m, path):
        state[m] = 1
        for d in sorted(graph.get(m, ())):
            if state.get(d) == 1:
                errors.append("circle: " + " -> ".join(path[path.index(d):] + [d]))
            elif d not in state:
                walk(d, path + [d])
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            walk(m, [m])
    for e in errors:
        print(f"check-layers: {e}")
    depth = {}

    def level(m):
        if m not in depth:
            depth[m] = 0
            depth[m] = 1 + max((level(d) for d in graph[m]), default=0)
        return depth[m]

    if not errors:
        print(f"check-layers: {len(files)} files in {len(LAYERS)} layers, includes point "
              f"down, no circle; deepest chain {max(map(level, graph))} modules")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "."))
