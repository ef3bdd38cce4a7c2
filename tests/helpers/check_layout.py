#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Lays out an HTML report in headless Chromium (networking off) and checks that every
text of its charts stays inside its chart, and which phase names its bands carry:
   check_layout.py REPORT.html PHASE...
Each PHASE must be written on a band. Prints what is off, one line each (a text
outside its chart, with its box), and exits 1 if anything is."""
import html
import json
import os
import re
import sys
import tempfile

import chromium

# The report's body, laid out in a page of the check's own (the report itself runs no
# script): each chart's texts measured against its viewBox, with their rendered boxes.
PAGE = """<!DOCTYPE html><html><head><meta charset="utf-8"><style>%(css)s</style></head>
<body>%(body)s<pre id="layout-result">pending</pre><script>
const out = [];
let texts = 0;
const names = [];
for (const svg of document.querySelectorAll("svg.chart")) {
  const vb = svg.viewBox.baseVal, box = svg.getBoundingClientRect();
  const sx = box.width / vb.width, sy = box.height / vb.height;
  for (const t of svg.querySelectorAll("text")) {
    const r = t.getBoundingClientRect();
    if (!r.width) continue;
    texts++;
    if (t.classList.contains("band-name")) names.push(t.textContent);
    const l = (r.left - box.left) / sx, rt = (r.right - box.left) / sx;
    const tp = (r.top - box.top) / sy, bt = (r.bottom - box.top) / sy;
    if (l < -0.5 || rt > vb.width + 0.5 || tp < -0.5 || bt > vb.height + 0.5)
      out.push("outside " + JSON.stringify(t.textContent) + " [" + l.toFixed(1) + ", " +
               rt.toFixed(1) + "] x [" + tp.toFixed(1) + ", " + bt.toFixed(1) + "] of " +
               vb.width + " x " + vb.height);
  }
}
out.push("names " + JSON.stringify(names));
out.push("texts " + texts);
document.getElementById("layout-result").textContent = out.join("\\n") + "\\ndone";
</script></body></html>
"""


def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        report = f.read()
    want = sys.argv[2:]
    css = re.search(r"<style>(.*?)</style>", report, re.S)
    body = re.search(r"<body>(.*)</body>", report, re.S)
    bad = []
    with tempfile.TemporaryDirectory() as tmp:
        page = os.path.join(tmp, "page.html")
        with open(page, "w", encoding="utf-8") as f:
            f.write(PAGE % {"css": css.group(1) if css else "", "body": body.group(1) if body else ""})
        out, err = chromium.dump_dom(
            "file://" + page, tmp, ["--window-size=1200,900", "--virtual-time-budget=10000"])
    m = re.search(r'<pre id="layout-result">(.*?)</pre>', out, re.S)
    lines = html.unescape(m.group(1)).splitlines() if m else []
    if not lines or lines[-1] != "done":
        sys.exit("check_layout.py: the page did not finish: " + err[-400:])
    names = []
    for line in lines[:-1]:
        print(line)
        if line.startswith("outside "):
            bad.append(line)
        elif line.startswith("names "):
            names = json.loads(line[6:])
        elif line.startswith("texts ") and int(line[6:]) == 0:
            bad.append("no chart text laid out")
    for w in want:
        if w not in names:
            bad.append(f"phase {w} not written on its band")
    for b in bad:
        print(b)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
