#!/usr/bin/env python3
"""sp_noread: a peer that sends calls and never reads a reply, for the stall
test (tests/integration/stall.sh, docs/security.md "Bounded resources").

    sp_noread.py HOST PORT MODE [CERT KEY CA]

MODE "handshake": opens 300 TCP connections to a TLS port and sends
nothing; prints how many the server closed within 20 s, and when.
MODE "noread": finishes the TLS (with CERT/KEY/CA) and SP handshakes, then
writes Health/Check requests as fast as it can without reading one reply,
until a write fails; prints how many it wrote and how long the server took
to close the connection once writing stalled."""

import json
import socket
import ssl
import struct
import sys
import time

SP_REQ0 = b"\x00SP\x00\x00\x30\x00\x00"


def health_frame(n):
    method = b"/sagas.v1.Health/Check"
    rid = str(n).encode()
    env = b"\x0a" + bytes([len(method)]) + method + b"\x12" + bytes([len(rid)]) + rid
    body = struct.pack(">I", 0x80000000 | (n & 0x7FFFFFFF)) + env  # REQ's request id
    return struct.pack(">Q", len(body)) + body


def handshake(host, port):
    socks = []
    for _ in range(300):
        s = socket.create_connection((host, port))
        s.setblocking(False)
        socks.append(s)
    t0 = time.monotonic()
    closed_at = {}
    while time.monotonic() - t0 < 20 and len(closed_at) < len(socks):
        for i, s in enumerate(socks):
            if i in closed_at:
                continue
            try:
                if s.recv(1) == b"":
                    closed_at[i] = time.monotonic() - t0
            except BlockingIOError:
                pass
            except OSError:
                closed_at[i] = time.monotonic() - t0
        time.sleep(0.1)
    times = sorted(closed_at.values())
    print(json.dumps({"opened": len(socks), "closed": len(times),
                      "first_s": round(times[0], 1) if times else None,
                      "last_s": round(times[-1], 1) if times else None}))


def noread(host, port, cert, key, ca):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.load_verify_locations(ca)
    ctx.load_cert_chain(cert, key)
    ctx.check_hostname = False
    s = ctx.wrap_socket(socket.create_connection((host, port)), server_hostname=host)
    s.sendall(SP_REQ0)
    s.recv(8)
    s.settimeout(0.5)
    n = 0
    stalled = None
    t0 = time.monotonic()
    while time.monotonic() - t0 < 60:
        try:
            s.sendall(b"".join(health_frame(n + i) for i in range(200)))
            n += 200
            stalled = None
        except socket.timeout:
            stalled = stalled or time.monotonic()  # the server stopped taking them
        except OSError:
            break
    closed = time.monotonic()
    print(json.dumps({"written": n, "closed_s_after_stall":
                      round(closed - stalled, 1) if stalled else None,
                      "total_s": round(closed - t0, 1)}))


if sys.argv[3] == "handshake":
    handshake(sys.argv[1], int(sys.argv[2]))
else:
    noread(sys.argv[1], int(sys.argv[2]), sys.argv[4], sys.argv[5], sys.argv[6])
