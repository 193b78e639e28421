#!/usr/bin/python3
"""An HTTP proxy that simulates DNS rebinding, for tests/integration/rebind_browser.sh.

Chromium is started with --proxy-server pointing here, so every request for
a name that is not loopback comes to this proxy (absolute-form request
lines). For the attacker's name (--name, e.g. evil.example):

  GET /rebind.html, /cross.html  the attacker's pages (--pages DIR), as the
                                 attacker's server answers them before the
                                 name is rebound;
  GET /favicon.ico               404, here (so that the listener sees only
                                 what the page's script sends);
  anything else on a port of     forwarded to 127.0.0.1:PORT unchanged (Host,
  --ports                        Origin and all), as a connection to the
                                 rebound name would arrive: the listener
                                 sees Host: evil.example:PORT.

For --trusted-name (a control, e.g. local.example) the same, but the Host
is rewritten to 127.0.0.1:PORT: what a listener sees when a page of its own
name calls it. Anything else: 502. Each forwarded request is logged as one
line "PORT METHOD PATH STATUS" in --log. The proxy's port is written to
--port-file once it listens.
"""
import argparse
import http.client
import http.server
import os
import sys
import threading
import urllib.parse

HOP = {"connection", "keep-alive", "proxy-connection", "proxy-authorization", "te", "trailer",
       "transfer-encoding", "upgrade"}


def make_handler(a, log_lock):
    ports = {int(p) for p in a.ports.split(",") if p}

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.0"

        def log_message(self, fmt, *args):  # quiet: the log file says what matters
            pass

        def answer(self, status, body, ctype="text/plain"):
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(body)

        def handle_any(self):
            u = urllib.parse.urlsplit(self.path)
            host, port = (u.hostname or ""), (u.port or 80)
            if u.scheme != "http" or host not in (a.name, a.trusted_name):
                return self.answer(502, b"not proxied\n")
            if self.command == "GET" and u.path in ("/rebind.html", "/cross.html"):
                with open(os.path.join(a.pages, u.path[1:]), "rb") as f:
                    return self.answer(200, f.read(), "text/html; charset=utf-8")
            if u.path == "/favicon.ico":
                return self.answer(404, b"")
            if port not in ports:
                return self.answer(502, b"no such port\n")
            n = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(n) if n else None
            headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP}
            if host == a.trusted_name:
                headers = {k: v for k, v in headers.items() if k.lower() != "host"}
                headers["Host"] = f"127.0.0.1:{port}"
            path = u.path + ("?" + u.query if u.query else "")
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            try:
                c.putrequest(self.command, path, skip_host=True, skip_accept_encoding=True)
                for k, v in headers.items():
                    c.putheader(k, v)
                c.endheaders(body)
                r = c.getresponse()
                data = r.read()
            except OSError as e:
                return self.answer(502, f"could not reach 127.0.0.1:{port}: {e}\n".encode())
            finally:
                c.close()
            with log_lock, open(a.log, "a") as f:
                f.write(f"{port} {self.command} {u.path} {r.status}\n")
            self.send_response(r.status, r.reason)
            for k, v in r.getheaders():
                if k.lower() not in HOP and k.lower() != "content-length":
                    self.send_header(k, v)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = do_HEAD = handle_any

        def do_CONNECT(self):
            self.answer(405, b"no CONNECT\n")

    return Handler


def main():
    ap = argparse.ArgumentParser(description="a proxy that rebinds a name to loopback")
    ap.add_argument("--name", required=True)
    ap.add_argument("--trusted-name", required=True)
    ap.add_argument("--ports", required=True, help="comma-separated loopback ports")
    ap.add_argument("--pages", required=True, help="directory of rebind.html and cross.html")
    ap.add_argument("--log", required=True)
    ap.add_argument("--port-file", required=True)
    a = ap.parse_args()
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), make_handler(a, threading.Lock()))
    tmp = a.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(f"{srv.server_address[1]}\n")
    os.rename(tmp, a.port_file)
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
