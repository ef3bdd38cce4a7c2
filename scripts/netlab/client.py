#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""A raw HTTP/1.1 client for the scripted answers of server.py (cases / tcases).

    client.py [--tls] [--host NAME] ADDR CASE...

Each CASE is one connection to ADDR (port 80, or 443 with --tls) asking /case/CASE, read
to its end (EOF or reset), whatever the answer was: the client does not parse HTTP, so
what taskprobe sees is what the server sent. Cases with more than one request on the
connection: "head" (HEAD, then a last GET) and "nocontent" (a 204, a 304, a last GET).
--host sets the Host header (default ADDR); the TLS name is always ADDR.
"""
import argparse
import socket
import ssl
import sys


def request(method, name, host, close=False):
    return ("%s /case/%s HTTP/1.1\r\nHost: %s\r\nUser-Agent: taskprobe-test\r\n%s\r\n" %
            (method, name, host, "Connection: close\r\n" if close else "")).encode()


def read_heads(conn, buf, n):
    """Reads until n response heads (blank lines) are in buf: for bodiless answers."""
    while buf.count(b"\r\n\r\n") < n:
        chunk = conn.recv(4096)
        if not chunk:
            break
        buf += chunk
    return buf


def read_all(conn):
    got = 0
    try:
        while True:
            chunk = conn.recv(65536)
            if not chunk:
                return got, "eof"
            got += len(chunk)
    except ConnectionResetError:
        return got, "reset"
    except ssl.SSLError as e:
        return got, "tls: %s" % e.reason


def one(addr, host, tls, case):
    raw = socket.create_connection((addr, 443 if tls else 80), timeout=10)
    conn = raw
    if tls:
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        conn = ctx.wrap_socket(raw, server_hostname=addr)
    try:
        if case == "head":
            conn.sendall(request("HEAD", "head", host))
            read_heads(conn, b"", 1)
            conn.sendall(request("GET", "last", host, close=True))
        elif case == "nocontent":
            conn.sendall(request("GET", "nocontent", host))
            buf = read_heads(conn, b"", 1)
            conn.sendall(request("GET", "notmodified", host))
            read_heads(conn, buf, 2)
            conn.sendall(request("GET", "last", host, close=True))
        else:
            conn.sendall(request("GET", case, host))
        got, end = read_all(conn)
    finally:
        conn.close()
    print("%s %d bytes, %s" % (case, got, end))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tls", action="store_true")
    ap.add_argument("--host")
    ap.add_argument("addr")
    ap.add_argument("cases", nargs="+")
    a = ap.parse_args()
    for case in a.cases:
        one(a.addr, a.host or a.addr, a.tls, case)
    return 0


if __name__ == "__main__":
    sys.exit(main())
