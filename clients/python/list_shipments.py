#!/usr/bin/python3
"""Lists the shipments of the shipping daemon (ListShipments, an admin method).

    clients/python/generate.sh build/python
    /usr/bin/python3 clients/python/list_shipments.py --shipping tcp://127.0.0.1:7104

Prints the total (every shipment recorded) and the newest --limit rows,
newest first, with a note when more exist (--json: one object
{"total":N,"shipments":[...],"truncated":BOOL}, the shape of
`sagactl shipments --json`). ListShipments needs the admin role: over mutual
TLS, a certificate of the admin role at shippingd's admin listener
(--tls-cert, --tls-key, --tls-ca); plain tcp:// only on loopback. Exit
status: 0 listed, 1 an error, 2 a usage error.
"""

import argparse
import datetime
import json
import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sagas_client  # noqa: E402

LIMIT_MAX = 10000  # ListShipmentsRequest.limit: at most 10000


def iso_ms(ms):
    """ms since the epoch as ISO-8601 UTC with milliseconds, "-" for 0."""
    if ms <= 0:
        return "-"
    t = datetime.datetime.fromtimestamp(ms / 1000.0, tz=datetime.timezone.utc)
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (ms % 1000)


def limit_arg(text):
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError("%r is not a whole number" % text)
    if not 1 <= n <= LIMIT_MAX:
        raise argparse.ArgumentTypeError("%d is outside 1..%d" % (n, LIMIT_MAX))
    return n


def main():
    p = argparse.ArgumentParser(description="List the shipments of the shipping daemon.")
    p.add_argument("--shipping",
                   default=os.environ.get("SAGA_SHIPPING_URL", "tcp://127.0.0.1:7104"),
                   help="shipping daemon URL, its admin listener under mutual TLS, or a "
                        "comma-separated list of its replicas' "
                        "(default %(default)s) [env SAGA_SHIPPING_URL]")
    p.add_argument("--gen", default=None,
                   help="folder of the generated *_pb2 modules (default $SAGAS_PY_GEN or "
                        "build/python)")
    p.add_argument("--timeout", type=int, default=5000, help="ms per call (default 5000)")
    p.add_argument("--limit", type=limit_arg, default=1000,
                   help="at most N rows, newest first (1..%d, default 1000)" % LIMIT_MAX)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--tls-cert", default=os.environ.get("SAGAS_TLS_CERT"),
                   help="certificate (PEM) of the admin role for a tls+tcp:// URL "
                        "(default $SAGAS_TLS_CERT)")
    p.add_argument("--tls-key", default=os.environ.get("SAGAS_TLS_KEY"),
                   help="the private key of --tls-cert (default $SAGAS_TLS_KEY)")
    p.add_argument("--tls-ca", default=os.environ.get("SAGAS_TLS_CA"),
                   help="the CA (PEM) of the daemons' certificates (default $SAGAS_TLS_CA)")
    p.add_argument("--version", action="version",
                   version=f"list_shipments.py {sagas_client.__version__}")
    a = p.parse_args()
    try:
        sagas_client.parse_urls(a.shipping)
    except ValueError as e:  # the same words as sagactl's
        print("error: invalid --shipping URL %s" % e, file=sys.stderr)
        return 2

    try:
        sagas_client.use_generated(a.gen)
    except RuntimeError as e:
        print("error: %s" % e, file=sys.stderr)
        return 1
    from sagas.v1 import shipping_pb2 as pb

    try:
        client = sagas_client.Client(a.shipping, timeout_ms=a.timeout,
                                     tls_cert=a.tls_cert, tls_key=a.tls_key, tls_ca=a.tls_ca)
    except (sagas_client.RpcError, ValueError, OSError) as e:
        print("error: %s" % getattr(e, "message", e), file=sys.stderr)
        return 1
    with client:
        try:
            rep = client.call("/sagas.v1.Shipping/ListShipments",
                              pb.ListShipmentsRequest(include_shipments=True, limit=a.limit),
                              pb.ListShipmentsReply)
        except sagas_client.RpcError as e:
            print("error: could not list shipments at %s: %s" % (a.shipping, e),
                  file=sys.stderr)
            return 1

    def status(s):
        return pb.ShipmentStatus.Name(s).replace("SHIPMENT_STATUS_", "")

    if a.json:
        print(json.dumps({"total": rep.total, "shipments": [
            {"saga_id": s.saga_id, "customer": s.customer, "sku": s.sku, "qty": s.qty,
             "status": status(s.status), "created_unix_ms": s.created_unix_ms,
             "created_at": iso_ms(s.created_unix_ms)} for s in rep.shipments],
            "truncated": rep.shipments_truncated}, separators=(",", ":")))
        return 0
    print("shipments: %d" % rep.total)
    for s in rep.shipments:
        print("%s  %-12s %-12s %6d  %-8s %s" % (s.saga_id, s.customer, s.sku, s.qty,
                                              status(s.status), iso_ms(s.created_unix_ms)))
    if rep.shipments_truncated:
        print("(showing the newest %d of more)" % len(rep.shipments))
    return 0


if __name__ == "__main__":
    sys.exit(main())
