# SPDX-License-Identifier: GPL-2.0
"""Headless Chromium with networking off, as the browser tests run it: a page's DOM
once its scripts have run (virtual time), for check_mermaid.py and check_layout.py."""
import subprocess


def dump_dom(url, tmp, extra=()):
    """The DOM of url after its scripts ran; tmp: a folder for the profile."""
    r = subprocess.run(
        ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
         "--no-first-run", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", f"--user-data-dir={tmp}/udd", "--proxy-server=http://127.0.0.1:9",
         "--host-resolver-rules=MAP * ~NOTFOUND", *extra, "--dump-dom", url],
        capture_output=True, text=True, timeout=120)
    return r.stdout, r.stderr
