#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Writes the reference the Perfherder artifact is checked against, read off
Treeherder's own source (github.com/mozilla/treeherder):
   perfherder-ref.py GIT_DIR_OR_CHECKOUT [COMMIT] > tests/helpers/perfherder-ref.json
It takes the performance-artifact schema Treeherder validates every artifact with
(schemas/performance-artifact.json), the frameworks it registers
(treeherder/perf/fixtures/performance_framework.json: an artifact of any other is
skipped), and the rule its job loader picks artifacts by (etl/job_loader.py)."""
import json
import os
import re
import subprocess
import sys


def read(repo, commit, path):
    if os.path.isdir(os.path.join(repo, ".git")) or not os.path.isdir(os.path.join(repo, "schemas")):
        return subprocess.run(["git", "-C", repo, "show", f"{commit}:{path}"], check=True,
                              capture_output=True, text=True).stdout
    with open(os.path.join(repo, path), encoding="utf-8") as f:
        return f.read()


def main():
    repo = sys.argv[1]
    commit = sys.argv[2] if len(sys.argv) > 2 else "HEAD"
    rev = subprocess.run(["git", "-C", repo, "rev-parse", commit], capture_output=True,
                         text=True).stdout.strip() or commit
    schema = json.loads(read(repo, commit, "schemas/performance-artifact.json"))
    fixtures = json.loads(read(repo, commit, "treeherder/perf/fixtures/performance_framework.json"))
    frameworks = sorted(f["fields"]["name"] for f in fixtures
                        if f.get("model") == "perf.PerformanceFramework")
    loader = read(repo, commit, "treeherder/etl/job_loader.py")
    # The artifact names it reads: '"perfherder-data" in artifact_link' and '.endswith(".json")'.
    contains = re.search(r'"([a-z-]+)" in artifact_link', loader)
    suffix = re.search(r'artifact_link\.endswith\("([^"]+)"\)', loader)
    if not contains or not suffix:
        sys.exit("perfherder-ref.py: the job loader's artifact rule was not found")
    json.dump({"source": f"mozilla/treeherder {rev}", "schema": schema,
               "frameworks": frameworks,
               "artifact_name": {"contains": contains.group(1), "suffix": suffix.group(1)}},
              sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
