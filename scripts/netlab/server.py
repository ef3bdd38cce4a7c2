#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Test servers for the network tests, run inside the lab's server namespace.

Each --serve ADDR:PORT:MODE starts one listener:
  http / https  HTTP/1.1 with keep-alive. GET /status/NNN answers NNN; any other path
                answers the next status of --statuses (then 200). The body is the
                status and a newline, so byte counts are known.
  reset / resets  reads a request, writes "HTTP/1." and resets the connection.
  dns           UDP: A records for the names of DIR/hosts (compressed, as servers
                write them), no records for other types, NXDOMAIN for other names.
Writes DIR/ready once every listener is bound.
"""
import argparse
import os
import socket
import ssl
import struct
import sys
import threading

REASONS = {200: "OK", 404: "Not Found", 429: "Too Many Requests", 500: "Internal Server Error",
           503: "Service Unavailable"}


class Sequence:
    def __init__(self, statuses):
        self.statuses = list(statuses)
        self.lock = threading.Lock()

    def next(self):
        with self.lock:
            return self.statuses.pop(0) if self.statuses else 200


def read_request(conn):
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(4096)
        if not chunk:
            return None
        data += chunk
    head = data.split(b"\r\n\r\n", 1)[0].decode("latin-1")
    return head


def serve_http(conn, seq):
    while True:
        head = read_request(conn)
        if head is None:
            return
        line = head.split("\r\n", 1)[0].split(" ")
        path = line[1] if len(line) > 1 else "/"
        if path.startswith("/status/"):
            status = int(path.split("/")[2].split("?")[0])
        else:
            status = seq.next()
        body = b"%d\n" % status
        close = "connection: close" in head.lower()
        conn.sendall(("HTTP/1.1 %d %s\r\nContent-Length: %d\r\nContent-Type: text/plain\r\n"
                      "%s\r\n" % (status, REASONS.get(status, "Status"), len(body),
                                  "Connection: close\r\n" if close else "")).encode() + body)
        if close:
            return


def serve_reset(conn):
    if read_request(conn) is None:
        return
    conn.sendall(b"HTTP/1.")
    # SO_LINGER 0: close() sends a RST instead of a FIN (and no TLS close_notify).
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))


def dns_server(addr, port, hosts_path):
    names = {}
    with open(hosts_path) as f:
        for line in f:
            parts = line.split()
            for name in parts[1:]:
                names[name.lower()] = socket.inet_aton(parts[0])
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((addr, port))

    def loop():
        while True:
            q, peer = s.recvfrom(512)
            if len(q) < 17:
                continue
            labels, i = [], 12
            while i < len(q) and q[i]:
                labels.append(q[i + 1:i + 1 + q[i]].decode("latin-1"))
                i += 1 + q[i]
            qtype = struct.unpack("!H", q[i + 1:i + 3])[0]
            question = q[12:i + 5]
            addr4 = names.get(".".join(labels).lower())
            if addr4 is None:
                flags, answers = 0x8183, b""  # NXDOMAIN
            elif qtype != 1:
                flags, answers = 0x8180, b""
            else:
                flags = 0x8180
                answers = b"\xc0\x0c" + struct.pack("!HHIH", 1, 1, 60, 4) + addr4
            head = q[:2] + struct.pack("!HHHHH", flags, 1, 1 if answers else 0, 0, 0)
            s.sendto(head + question + answers, peer)

    threading.Thread(target=loop, daemon=True).start()


def listener(addr, port, mode, ctx, seq):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((addr, port))
    s.listen(64)

    def handle(raw):
        conn = raw
        try:
            if mode in ("https", "resets"):
                conn = ctx.wrap_socket(raw, server_side=True)
            if mode in ("http", "https"):
                serve_http(conn, seq)
            else:
                serve_reset(conn)
        except (OSError, ssl.SSLError):
            pass
        finally:
            try:
                conn.close()
            except OSError:
                pass

    def loop():
        while True:
            raw, _ = s.accept()
            threading.Thread(target=handle, args=(raw,), daemon=True).start()

    threading.Thread(target=loop, daemon=True).start()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", required=True)
    ap.add_argument("--serve", action="append", default=[])
    ap.add_argument("--statuses", default="")
    a = ap.parse_args()
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(os.path.join(a.dir, "cert.pem"), os.path.join(a.dir, "key.pem"))
    seq = Sequence(int(x) for x in a.statuses.split(",") if x)
    for spec in a.serve:
        addr, port, mode = spec.split(":")
        if mode == "dns":
            dns_server(addr, int(port), os.path.join(a.dir, "hosts"))
        else:
            listener(addr, int(port), mode, ctx, seq)
    with open(os.path.join(a.dir, "ready"), "w") as f:
        f.write("%d\n" % os.getpid())
    threading.Event().wait()


if __name__ == "__main__":
    sys.exit(main())
