"""A small client of the sagas daemons, for Python 3 with Debian's python3-protobuf.

The wire contract is docs/protocol.md: one SP REQ socket (here nng's libnng
through ctypes), one request frame (an encoded sagas.v1.RequestEnvelope) and
one reply frame (an encoded sagas.v1.ReplyEnvelope) per call.

The generated modules (clients/python/generate.sh) must be importable as
`sagas.v1.*_pb2`: call use_generated(DIR) first, or put DIR on sys.path.
"""

import ctypes
import ctypes.util
import itertools
import os
import sys

# The project version this client was written for (CMakeLists.txt's
# project(VERSION); tests/integration/versions.sh checks they agree).
__version__ = "0.1.0"

# gRPC status codes (google.rpc.Code) as used in ReplyEnvelope.code
OK = 0
INVALID_ARGUMENT = 3
DEADLINE_EXCEEDED = 4
NOT_FOUND = 5
FAILED_PRECONDITION = 9
INTERNAL = 13
UNAVAILABLE = 14

CODE_NAMES = {
    0: "OK", 1: "CANCELLED", 2: "UNKNOWN", 3: "INVALID_ARGUMENT", 4: "DEADLINE_EXCEEDED",
    5: "NOT_FOUND", 6: "ALREADY_EXISTS", 7: "PERMISSION_DENIED", 8: "RESOURCE_EXHAUSTED",
    9: "FAILED_PRECONDITION", 10: "ABORTED", 11: "OUT_OF_RANGE", 12: "UNIMPLEMENTED",
    13: "INTERNAL", 14: "UNAVAILABLE", 15: "DATA_LOSS", 16: "UNAUTHENTICATED",
}

# Transient outcomes: retry with backoff, same saga id (docs/protocol.md).
TRANSIENT = (UNAVAILABLE, DEADLINE_EXCEEDED, INTERNAL)


def use_generated(path=None):
    """Puts the generated modules on sys.path: `path`, else $SAGAS_PY_GEN,
    else build/python at the top of the repository."""
    if path is None:
        path = os.environ.get("SAGAS_PY_GEN") or os.path.join(
            os.path.dirname(os.path.abspath(__file__)), "..", "..", "build", "python")
    path = os.path.abspath(path)
    if not os.path.isfile(os.path.join(path, "sagas", "v1", "rpc_pb2.py")):
        raise RuntimeError("no generated code in %s: run clients/python/generate.sh %s"
                           % (path, path))
    if path not in sys.path:
        sys.path.insert(0, path)


class RpcError(Exception):
    """A non-OK reply (transport=False) or no usable reply at all (transport=True)."""

    def __init__(self, code, reason, message, transport=False):
        super().__init__("%s%s: %s" % (CODE_NAMES.get(code, str(code)),
                                       " (%s)" % reason if reason else "", message))
        self.code = code
        self.reason = reason
        self.message = message
        self.transport = transport

    @property
    def transient(self):
        return self.transport or self.code in TRANSIENT


# ---- URL lists ----

# The schemes a URL may have, as the C tools accept (common/rpc/rpc_client.c,
# rpc_url_ok), and the most URLs in one list (rpc.h, RPC_URLS_MAX).
_SCHEMES = ("tcp://", "tcp4://", "tcp6://", "ipc://", "inproc://", "abstract://", "ws://",
            "tls+tcp://", "tls+tcp4://", "tls+tcp6://")
URLS_MAX = 16


_SERVER_NAME = "?server_name="


def split_server_name(url):
    """Takes "?server_name=NAME" off a tls+tcp:// URL, as the C tools do
    (common/rpc/rpc_urls.c): returns (the URL to dial, NAME or None). NAME is
    the name checked against the server's certificate in place of the
    URL's host, so that an address can be dialled while the certificate
    names only its service (docs/security.md, "Certificates"). Raises
    ValueError for a query on a plain URL, any other query, or a bad NAME
    (letters, digits, '.', '-' and '_')."""
    if not url.startswith("tls+"):
        if _SERVER_NAME in url:
            raise ValueError('"%s": server_name= is for tls+tcp:// URLs' % url)
        return url, None
    at = url.find("?")
    if at < 0:
        return url, None
    if not url.startswith(_SERVER_NAME, at):
        raise ValueError('"%s": the only query a URL takes is ?server_name=NAME' % url)
    name = url[at + len(_SERVER_NAME):]
    if not name or not all(c.isascii() and (c.isalnum() or c in ".-_") for c in name):
        raise ValueError("\"%s\": bad server_name (letters, digits, '.', '-' and '_')" % url)
    return url[:at], name


def parse_urls(urls):
    """Splits a comma-separated list of URLs ("tcp://a:1,tcp://b:2": several
    orchestrators, or the replicas of one daemon) or takes a list of them;
    spaces around an entry are dropped. Every entry must have a known
    scheme and something after it, and appear once. Returns the list, or
    raises ValueError naming the bad entry as the C tools do:
    '"foo" (entry 2 of 2): expected tls+tcp://HOST:PORT, tcp://HOST:PORT or
    ipc://PATH' (just '"foo": ...' for a single URL)."""
    items = urls.split(",") if isinstance(urls, str) else list(urls)
    if not items or not all(isinstance(u, str) for u in items):
        # an empty list would open a socket dialing nothing (IndexError)
        raise ValueError("%r: expected tls+tcp://HOST:PORT, tcp://HOST:PORT or ipc://PATH, "
                         "or a comma-separated list of them" % (urls,))
    items = [u.strip(" \t") for u in items]
    n = len(items)
    if n > URLS_MAX:
        raise ValueError('"%s": %d URLs: at most %d' % (",".join(items), n, URLS_MAX))
    for i, u in enumerate(items):
        where = '"%s"' % u if n == 1 else '"%s" (entry %d of %d)' % (u, i + 1, n)
        if u == "" and n > 1:
            raise ValueError("%s: empty" % where)
        if not any(u.startswith(s) and len(u) > len(s) for s in _SCHEMES):
            raise ValueError("%s: expected tls+tcp://HOST:PORT, tcp://HOST:PORT or ipc://PATH"
                             % where)
        if u in items[:i]:
            raise ValueError("%s: the same URL as entry %d" % (where, items.index(u) + 1))
        split_server_name(u)  # a bad ?server_name= raises ValueError
    return items


# ---- libnng through ctypes ----

class _Socket(ctypes.Structure):
    _fields_ = [("id", ctypes.c_uint32)]


class _Dialer(ctypes.Structure):
    _fields_ = [("id", ctypes.c_uint32)]


_NNG_TLS_MODE_CLIENT = 0
_NNG_TLS_AUTH_MODE_REQUIRED = 2


_NNG_FLAG_ALLOC = 1
_NNG_FLAG_NONBLOCK = 2
_NNG_ETIMEDOUT = 5
_NNG_ECONNREFUSED = 6
_NNG_ECONNSHUT = 31
_NNG_EPEERAUTH = 27
_NNG_ECRYPTO = 26
_lib = None


def _nng():
    global _lib
    if _lib is not None:
        return _lib
    name = ctypes.util.find_library("nng") or "libnng.so.1"
    lib = ctypes.CDLL(name)
    lib.nng_req0_open.argtypes = [ctypes.POINTER(_Socket)]
    lib.nng_dial.argtypes = [_Socket, ctypes.c_char_p, ctypes.c_void_p, ctypes.c_int]
    lib.nng_send.argtypes = [_Socket, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    lib.nng_recv.argtypes = [_Socket, ctypes.c_void_p, ctypes.POINTER(ctypes.c_size_t),
                             ctypes.c_int]
    lib.nng_free.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    lib.nng_free.restype = None
    lib.nng_setopt_ms.argtypes = [_Socket, ctypes.c_char_p, ctypes.c_int32]
    lib.nng_close.argtypes = [_Socket]
    lib.nng_strerror.argtypes = [ctypes.c_int]
    lib.nng_strerror.restype = ctypes.c_char_p
    lib.nng_dialer_create.argtypes = [ctypes.POINTER(_Dialer), _Socket, ctypes.c_char_p]
    lib.nng_dialer_set_ptr.argtypes = [_Dialer, ctypes.c_char_p, ctypes.c_void_p]
    lib.nng_dialer_start.argtypes = [_Dialer, ctypes.c_int]
    lib.nng_tls_config_alloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_int]
    lib.nng_tls_config_free.argtypes = [ctypes.c_void_p]
    lib.nng_tls_config_free.restype = None
    lib.nng_tls_config_auth_mode.argtypes = [ctypes.c_void_p, ctypes.c_int]
    lib.nng_tls_config_ca_chain.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p]
    lib.nng_tls_config_own_cert.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p,
                                            ctypes.c_char_p]
    lib.nng_tls_config_server_name.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
    _lib = lib
    return lib


def _strerror(rv):
    return _nng().nng_strerror(rv).decode("utf-8", "replace").lower()


def _tls_config(url, cert, key, ca):
    """An nng TLS client configuration for `url`: the server verified against
    the CA file `ca` and the URL's ?server_name=, else its host name,
    `cert`/`key` (PEM files) shown as this client's certificate (its CA is
    its role, docs/security.md)."""
    lib = _nng()
    cfg = ctypes.c_void_p()
    rv = lib.nng_tls_config_alloc(ctypes.byref(cfg), _NNG_TLS_MODE_CLIENT)
    if rv != 0:
        raise OSError("nng_tls_config_alloc: %s" % _strerror(rv))
    url, name = split_server_name(url)
    host = name or url.split("://", 1)[1].rsplit(":", 1)[0].strip("[]")
    with open(ca, "rb") as f:
        ca_pem = f.read()
    steps = [lambda: lib.nng_tls_config_auth_mode(cfg, _NNG_TLS_AUTH_MODE_REQUIRED),
             lambda: lib.nng_tls_config_ca_chain(cfg, ca_pem, None),
             lambda: lib.nng_tls_config_server_name(cfg, host.encode())]
    if cert:
        with open(cert, "rb") as f:
            cert_pem = f.read()
        with open(key, "rb") as f:
            key_pem = f.read()
        steps.append(lambda: lib.nng_tls_config_own_cert(cfg, cert_pem, key_pem, None))
    for step in steps:
        rv = step()
        if rv != 0:
            lib.nng_tls_config_free(cfg)
            raise OSError("TLS configuration for %s: %s" % (url, _strerror(rv)))
    return cfg


class Client:
    """One REQ socket dialed to one daemon; one call at a time.

    `url` may be a comma-separated list (or a list) of URLs: several
    orchestrators, or the replicas of one daemon (docs/operations.md,
    "Replicas"). Each is checked (parse_urls: ValueError naming the bad
    entry) and dialed from the same socket, which sends each call on one of
    those connected; the client fails to open only when none answers (one
    that is down now is dialed again in the background and joins when it is
    back). A call whose connection closes fails (UNAVAILABLE, transport):
    retry it with the same saga id, and it goes to another one.

    A tls+tcp:// URL needs tls_ca (the CA of the daemons' certificates) and,
    to call anything but Health, tls_cert and tls_key: a certificate of the
    role the methods need (the client role for the Orchestrator service, the
    admin role for admin methods such as Shipping/ListShipments)."""

    def __init__(self, url, timeout_ms=5000, tls_cert=None, tls_key=None, tls_ca=None):
        from sagas.v1 import rpc_pb2  # noqa: F401 (fails early without generated code)
        urls = parse_urls(url)
        self.url = ",".join(urls)
        self.timeout_ms = timeout_ms
        self._ids = itertools.count(1)
        self._sock = _Socket()
        lib = _nng()
        tls_urls = [u for u in urls if u.startswith("tls+")]
        if tls_urls and not tls_ca:
            raise ValueError("%s is a TLS URL: give the CA of the daemons' certificates "
                             "(tls_ca; --tls-ca) and a certificate of the role the methods "
                             "need, client for start_order.py, admin for list_shipments.py "
                             "(tls_cert, tls_key; --tls-cert, --tls-key)" % tls_urls[0])
        if bool(tls_cert) != bool(tls_key):
            raise ValueError("tls_cert and tls_key go together")
        rv = lib.nng_req0_open(ctypes.byref(self._sock))
        if rv != 0:
            raise OSError("nng_req0_open: %s" % _strerror(rv))
        # never resend by itself: callers retry, with the same saga id
        lib.nng_setopt_ms(self._sock, b"req:resend-time", -1)
        failed = []  # (url, tls, nng error) of the dials that failed now
        for u in urls:
            try:
                rv = self._dial(u, tls_cert, tls_key, tls_ca, 0)
            except Exception:
                lib.nng_close(self._sock)
                raise
            if rv != 0:
                failed.append((u, u.startswith("tls+"), rv))
        if len(failed) == len(urls):
            lib.nng_close(self._sock)
            u, tls, rv = failed[0]
            why = _strerror(rv)
            if tls and rv in (_NNG_ECONNSHUT, _NNG_ECRYPTO, _NNG_EPEERAUTH):
                why += (" (the TLS handshake failed: does the daemon's certificate name the "
                        "host dialled? dial an address as tls+tcp://ADDR:PORT?server_name=NAME; "
                        "does the daemon trust the CA of the client certificate, and tls_ca the "
                        "daemon's certificate?)")
            raise RpcError(UNAVAILABLE, "transport",
                           "could not reach %s: %s" % (u, why), transport=True)
        for u, _, _ in failed:
            # down now: dialed again in the background, joins when it is back
            self._dial(u, tls_cert, tls_key, tls_ca, _NNG_FLAG_NONBLOCK)

    def _dial(self, url, tls_cert, tls_key, tls_ca, flags):
        """Starts a dialer of `url` on the socket (now, or in the background
        with _NNG_FLAG_NONBLOCK); returns 0 or the nng error."""
        lib = _nng()
        dialer = _Dialer()
        cfg = None
        rv = lib.nng_dialer_create(ctypes.byref(dialer), self._sock,
                                   split_server_name(url)[0].encode())
        if rv == 0 and url.startswith("tls+"):
            cfg = _tls_config(url, tls_cert, tls_key, tls_ca)
            rv = lib.nng_dialer_set_ptr(dialer, b"tls-config", cfg)
        if rv == 0:
            rv = lib.nng_dialer_start(dialer, flags)
        if cfg is not None:
            lib.nng_tls_config_free(cfg)  # the dialer keeps its own reference
        return rv

    def close(self):
        if self._sock is not None:
            _nng().nng_close(self._sock)
            self._sock = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def call(self, method, request, reply_type, timeout_ms=None):
        """Sends `request` (a message) to `method` ("/sagas.v1.Orchestrator/GetSaga")
        and returns the decoded `reply_type`; raises RpcError otherwise."""
        from sagas.v1 import rpc_pb2
        lib = _nng()
        timeout_ms = timeout_ms or self.timeout_ms
        env = rpc_pb2.RequestEnvelope(
            method=method, request_id=str(next(self._ids)),
            # a duration, counted by the server on its own clock (no
            # comparison of this host's clock with the server's)
            timeout_ms=timeout_ms,
            payload=request.SerializeToString())
        frame = env.SerializeToString()
        lib.nng_setopt_ms(self._sock, b"send-timeout", timeout_ms)
        lib.nng_setopt_ms(self._sock, b"recv-timeout", timeout_ms)
        buf = ctypes.create_string_buffer(frame, len(frame))
        rv = lib.nng_send(self._sock, buf, len(frame), 0)
        if rv == 0:
            data = ctypes.c_void_p()
            size = ctypes.c_size_t()
            rv = lib.nng_recv(self._sock, ctypes.byref(data), ctypes.byref(size),
                              _NNG_FLAG_ALLOC)
        if rv != 0:
            code = DEADLINE_EXCEEDED if rv == _NNG_ETIMEDOUT else UNAVAILABLE
            raise RpcError(code, "transport", _strerror(rv), transport=True)
        try:
            raw = ctypes.string_at(data, size.value)
        finally:
            lib.nng_free(data, size)
        rep = rpc_pb2.ReplyEnvelope()
        try:
            rep.ParseFromString(raw)
        except Exception as e:  # a DecodeError: not our protocol
            raise RpcError(UNAVAILABLE, "transport", "malformed reply envelope: %s" % e,
                           transport=True)
        if rep.code != OK:
            raise RpcError(rep.code, rep.reason, rep.message)
        out = reply_type()
        out.ParseFromString(rep.payload)
        return out

    def list_sagas(self, **fields):
        """Yields every saga ListSagas matches, following next_page_token
        to the end (docs/protocol.md, "Paging"). `fields` are those of
        ListSagasRequest (state, limit: the page size, attention_only,
        overdue, older_than_ms, overdue_margin_ms, stuck_after_ms, and
        page_token to start after an earlier page); each saga once, even
        while new sagas start. Raises RpcError as call does."""
        from sagas.v1 import orchestrator_pb2 as pb
        req = pb.ListSagasRequest(**fields)
        while True:
            rep = self.call("/sagas.v1.Orchestrator/ListSagas", req, pb.ListSagasReply)
            for saga in rep.sagas:
                yield saga
            if not rep.next_page_token:
                return
            req.page_token = rep.next_page_token

    def watch_history(self, after="", from_now=False, limit=0):
        """Reads the history feed (WatchHistory; docs/protocol.md, "The
        history feed") after the cursor `after` ("" with from_now False:
        from the first transition; with from_now True: from now on) until
        it is caught up. Yields (entries, cursor) per reply: `entries` the
        FeedEntry messages (saga_id, entry) in order, `cursor` where the
        next read goes on, to be saved by the caller once it has handled
        the entries. Each transaction's rows come once, never skipped.
        Raises RpcError as call does."""
        from sagas.v1 import orchestrator_pb2 as pb
        req = pb.WatchHistoryRequest(after=after, from_now=from_now and not after,
                                     limit=limit)
        while True:
            rep = self.call("/sagas.v1.Orchestrator/WatchHistory", req, pb.WatchHistoryReply)
            yield list(rep.entries), rep.cursor
            if not rep.more:
                return
            req.after = rep.cursor
            req.from_now = False
