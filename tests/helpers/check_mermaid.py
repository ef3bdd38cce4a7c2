#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Renders every Mermaid block of a Markdown file with Mermaid itself (npm mermaid 11,
installed in tests/helpers/mermaid by scripts/deps.sh), in headless Chromium with
networking off, as a GitHub or GitLab job page would:
   check_mermaid.py FILE.md KIND...
KIND: the diagram kinds the file must hold (gantt, xychart-beta). Prints one line a
block (ok, or the error Mermaid gave) and exits 1 on any error, or a kind missing."""
import html
import json
import os
import re
import sys
import tempfile

import chromium

HERE = os.path.dirname(os.path.abspath(__file__))
MERMAID = os.path.join(HERE, "mermaid", "node_modules", "mermaid", "dist", "mermaid.min.js")

PAGE = """<!DOCTYPE html><html><head><meta charset="utf-8">
<script src="%(js)s"></script></head><body><pre id="result">pending</pre><script>
const blocks = %(blocks)s;
mermaid.initialize({startOnLoad: false, securityLevel: "strict"});
(async () => {
  const out = [];
  for (let i = 0; i < blocks.length; i++) {
    try {
      await mermaid.parse(blocks[i]);
      const r = await mermaid.render("m" + i, blocks[i]);
      const bad = /Syntax error in text/.test(r.svg);
      out.push((bad ? "error " : "ok ") + i + " " + r.svg.length);
    } catch (e) {
      out.push("error " + i + " " + String((e && e.message) || e).replace(/\\n/g, " "));
    }
  }
  document.getElementById("result").textContent = out.join("\\n") + "\\ndone";
})();
</script></body></html>
"""


def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        text = f.read()
    kinds = sys.argv[2:]
    blocks = re.findall(r"^```mermaid\n(.*?)^```", text, re.S | re.M)
    if not os.path.exists(MERMAID):
        sys.exit(f"check_mermaid.py: no {MERMAID}: run scripts/deps.sh")
    bad = []
    for k in kinds:
        if not any(b.lstrip().startswith(k) for b in blocks):
            bad.append(f"no {k} block")
    with tempfile.TemporaryDirectory() as tmp:
        page = os.path.join(tmp, "page.html")
        with open(page, "w", encoding="utf-8") as f:
            f.write(PAGE % {"js": "file://" + MERMAID, "blocks": json.dumps(blocks)})
        out, err = chromium.dump_dom(
            "file://" + page, tmp,
            ["--allow-file-access-from-files", "--virtual-time-budget=30000"])
    m = re.search(r'<pre id="result">(.*?)</pre>', out, re.S)
    result = html.unescape(m.group(1)) if m else ""
    lines = result.splitlines()
    if not lines or lines[-1] != "done":
        bad.append("Mermaid did not finish: " + (result or err[-400:]).replace("\n", " "))
    for line in lines[:-1]:
        print(line)
        if not line.startswith("ok "):
            bad.append(line)
    if len([x for x in lines if x.startswith("ok ")]) != len(blocks):
        bad.append(f"{len(blocks)} blocks, not all rendered")
    for b in bad:
        print(b)
    sys.exit(1 if bad or not blocks else 0)


if __name__ == "__main__":
    main()
