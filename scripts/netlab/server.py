#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Test servers for the network tests, run inside the lab's server namespace.

Each --serve ADDR:PORT:MODE starts one listener:
  http / https  HTTP/1.1 with keep-alive. GET /status/NNN answers NNN; any other path
                answers the next status of --statuses (then 200). The body is the
                status and a newline, so byte counts are known.
  reset / resets  reads a request, writes "HTTP/1." and resets the connection.
  cases / tcases  GET|PUT|HEAD /case/NAME: the scripted answers of CASES below (plaintext,
                TLS), for the HTTP outcome tests. What each answer was (its final status
                and how the connection ended) is appended to DIR/sent.log, one line a
                response: "NAME STATUS complete|reset|truncated|unread|upgrade" (unread:
                the client closed before the body's end, which was not cut by the
                server). That file is the tests' ground truth.
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
import time

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


class Reader:
    """A request reader that keeps what came after the head (a body, the next request)."""

    def __init__(self, conn):
        self.conn, self.buf = conn, b""

    def head(self):
        while b"\r\n\r\n" not in self.buf:
            chunk = self.conn.recv(4096)
            if not chunk:
                return None
            self.buf += chunk
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        return head.decode("latin-1")

    def body(self, n):
        while len(self.buf) < n:
            chunk = self.conn.recv(4096)
            if not chunk:
                break
            self.buf += chunk
        self.buf = self.buf[n:]


def header(head, name):
    for line in head.split("\r\n")[1:]:
        k, _, v = line.partition(":")
        if k.strip().lower() == name:
            return v.strip()
    return None


def drip(conn, data, pieces):
    """Sends data in separate TCP segments (TCP_NODELAY and a pause between them)."""
    step = max(1, len(data) // pieces)
    for i in range(0, len(data), step):
        conn.sendall(data[i:i + step])
        time.sleep(0.01)


def reset_now(conn):
    # SO_LINGER 0: close() sends a RST instead of a FIN (and no TLS close_notify).
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))


def ok_head(status, extra=""):
    return ("HTTP/1.1 %d %s\r\n%s\r\n" % (status, REASONS.get(status, "Status"), extra)).encode()


def until_eof(conn, limit=30.0):
    """Reads until the client's end of the stream: True when it came within limit s."""
    conn.settimeout(limit)
    try:
        while conn.recv(65536):
            pass
        return True
    except (OSError, ssl.SSLError):
        return True
    finally:
        conn.settimeout(None)


def serve_cases(conn, log):
    """Returns True when the connection is to be reset rather than closed."""
    rd = Reader(conn)
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    while True:
        head = rd.head()
        if head is None:
            return False
        line = head.split("\r\n", 1)[0].split(" ")
        method, name = line[0], line[1].rsplit("/", 1)[-1]
        length = int(header(head, "content-length") or 0)
        if name == "continue503":
            # What an S3 PUT meets: 100 Continue, then the final answer after the body.
            if (header(head, "expect") or "").lower() == "100-continue":
                conn.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
            rd.body(length)
            conn.sendall(ok_head(503, "Content-Length: 4\r\n") + b"503\n")
            log(name, 503, "complete")
            return False
        elif name in ("early503", "late503"):
            # An upload answered before its body was whole: before any 100 Continue, or
            # after one and part of the body. The answer is whole; the client stops.
            if name == "late503":
                conn.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
                rd.body(min(length, 256 * 1024))
            conn.sendall(ok_head(503, "Content-Length: 4\r\nConnection: close\r\n"))
            time.sleep(0.02)
            conn.sendall(b"503\n")
            until_eof(conn)
            log(name, 503, "complete")
            return False
        elif name in ("err500", "err429"):
            # The headers, then the body only once the client has gone: a client that
            # stops at the status (urllib on an error) leaves it unread, uncut.
            status = 500 if name == "err500" else 429
            conn.sendall(ok_head(status, "Content-Length: 4\r\n"))
            until_eof(conn)
            log(name, status, "unread")
            return False
        elif name == "stall":
            # Headers and the start of a long body; the client is killed meanwhile.
            conn.sendall(ok_head(200, "Content-Length: 1000000\r\n") + b"s" * 1024)
            until_eof(conn)
            log(name, 200, "unread")
            return False
        elif name == "stream":
            # A chunked body without end, until the client stops reading (head -c).
            conn.sendall(ok_head(200, "Transfer-Encoding: chunked\r\n"))
            chunk = b"1000\r\n" + b"t" * 4096 + b"\r\n"
            end = time.time() + 20
            try:
                while time.time() < end:
                    conn.sendall(chunk)
                    time.sleep(0.005)
                log(name, 200, "complete")
            except (OSError, ssl.SSLError):
                log(name, 200, "unread")
            return False
        elif name == "early":
            rd.body(length)
            conn.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
            conn.sendall(b"HTTP/1.1 103 Early Hints\r\nLink: </s.css>; rel=preload\r\n\r\n")
            conn.sendall(ok_head(200, "Content-Length: 4\r\n") + b"200\n")
            log(name, 200, "complete")
            return False
        elif name == "resethdr":
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\nX-Am")
            time.sleep(0.05)
            log(name, 200, "reset")
            return True
        elif name in ("truncrst", "truncfin"):
            conn.sendall(ok_head(200, "Content-Length: 100\r\n") + b"x" * 50)
            time.sleep(0.05)
            log(name, 200, "truncated")
            return name == "truncrst"
        elif name == "chunked":
            body = b"5;ext=1\r\nhello\r\n1A\r\n" + b"y" * 26 + b"\r\n0\r\nTrailer: t\r\n\r\n"
            drip(conn, ok_head(200, "Transfer-Encoding: chunked\r\n") + body, 12)
            log(name, 200, "complete")
            return False
        elif name == "chunktrunc":
            conn.sendall(ok_head(200, "Transfer-Encoding: chunked\r\n") + b"10\r\n" + b"z" * 16
                         + b"\r\n")
            time.sleep(0.05)
            log(name, 200, "truncated")
            return False
        elif name == "splithdr":
            drip(conn, ok_head(404, "Content-Length: 4\r\nX-Pad: " + "p" * 200 + "\r\n")
                 + b"404\n", 9)
            log(name, 404, "complete")
            return False
        elif name == "untilclose":
            conn.sendall(b"HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\n" + b"w" * 3000)
            log(name, 200, "complete")
            return False
        elif name == "upgrade":
            # After 101 the bytes are another protocol's, even when they look like HTTP.
            conn.sendall(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: x-test\r\n"
                         b"Connection: Upgrade\r\n\r\n")
            time.sleep(0.02)
            conn.sendall(b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\n\r\n")
            log(name, 101, "upgrade")
            return False
        elif method == "HEAD" or name in ("nocontent", "notmodified"):
            # No body follows, whatever Content-Length says; the connection stays open.
            status = {"nocontent": 204, "notmodified": 304}.get(name, 200)
            conn.sendall(ok_head(status, "Content-Length: 1000\r\n" if status != 204 else ""))
            log(name, status, "complete")
        else:
            body = b"%s\n" % name.encode()
            conn.sendall(ok_head(200, "Content-Length: %d\r\nConnection: close\r\n" % len(body))
                         + body)
            log(name, 200, "complete")
            return False


def serve_reset(conn):
    if read_request(conn) is None:
        return
    conn.sendall(b"HTTP/1.")
    reset_now(conn)


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


def listener(addr, port, mode, ctx, seq, log):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((addr, port))
    s.listen(64)

    def handle(raw):
        conn = raw
        try:
            if mode in ("https", "resets", "tcases"):
                conn = ctx.wrap_socket(raw, server_side=True)
            if mode in ("http", "https"):
                serve_http(conn, seq)
            elif mode in ("cases", "tcases"):
                if serve_cases(conn, log):
                    reset_now(conn)
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
    lock = threading.Lock()

    def log(name, status, outcome):
        with lock, open(os.path.join(a.dir, "sent.log"), "a") as f:
            f.write("%s %d %s\n" % (name, status, outcome))
    for spec in a.serve:
        addr, port, mode = spec.split(":")
        if mode == "dns":
            dns_server(addr, int(port), os.path.join(a.dir, "hosts"))
        else:
            listener(addr, int(port), mode, ctx, seq, log)
    with open(os.path.join(a.dir, "ready"), "w") as f:
        f.write("%d\n" % os.getpid())
    threading.Event().wait()


if __name__ == "__main__":
    sys.exit(main())
