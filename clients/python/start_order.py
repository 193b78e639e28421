#!/usr/bin/python3
"""Starts an order saga on the orchestrator, waits until it ends and prints it.

    clients/python/generate.sh build/python
    /usr/bin/python3 clients/python/start_order.py --orchestrator tcp://127.0.0.1:7101 \\
        ali A1 2 20000

CUSTOMER orders QTY units of SKU for AMOUNT_MINOR minor units (20000 = 200.00).
The saga id is a uuid4 made here, so that a retry of StartSaga after a lost
reply finds the same saga instead of starting a second order. Exit status: 0
when the saga ended (COMPLETED or CANCELLED: the outcome is data), 1 on an
error or when --wait-timeout passed, 2 on a usage error.
"""

import argparse
import json
import os
import sys
import time
import uuid

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sagas_client  # noqa: E402

WAIT_MS = 10000  # longest wait of one WaitSaga call
PAUSE_S = 0.05  # pause after an answer that came back at once


def main():
    p = argparse.ArgumentParser(description="Start an order saga and wait for its end.")
    p.add_argument("--orchestrator",
                   default=os.environ.get("SAGA_ORCHESTRATOR_URL", "tcp://127.0.0.1:7101"),
                   help="orchestrator URL, or a comma-separated list of several orchestrators' URLs "
                        "(default %(default)s) [env SAGA_ORCHESTRATOR_URL]")
    p.add_argument("--gen", default=None,
                   help="folder of the generated *_pb2 modules (default $SAGAS_PY_GEN or "
                        "build/python)")
    p.add_argument("--timeout", type=int, default=5000, help="ms per call (default 5000)")
    p.add_argument("--wait-timeout", type=int, default=30000,
                   help="ms to wait for the end (default 30000)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--tls-cert", default=os.environ.get("SAGAS_TLS_CERT"),
                   help="client certificate (PEM) for a tls+tcp:// URL; its CA is its role "
                        "(default $SAGAS_TLS_CERT)")
    p.add_argument("--tls-key", default=os.environ.get("SAGAS_TLS_KEY"),
                   help="the private key of --tls-cert (default $SAGAS_TLS_KEY)")
    p.add_argument("--tls-ca", default=os.environ.get("SAGAS_TLS_CA"),
                   help="the CA (PEM) of the daemons' certificates (default $SAGAS_TLS_CA)")
    p.add_argument("--version", action="version",
                   version=f"start_order.py {sagas_client.__version__}")
    p.add_argument("customer")
    p.add_argument("sku")
    p.add_argument("qty", type=int)
    p.add_argument("amount_minor", type=int)
    a = p.parse_args()
    try:
        sagas_client.parse_urls(a.orchestrator)
    except ValueError as e:  # the same words as sagactl's
        print("error: invalid --orchestrator URL %s" % e, file=sys.stderr)
        return 2

    try:
        sagas_client.use_generated(a.gen)
    except RuntimeError as e:
        print("error: %s" % e, file=sys.stderr)
        return 1
    from sagas.v1 import orchestrator_pb2 as pb

    saga_id = str(uuid.uuid4())
    req = pb.StartSagaRequest(saga_id=saga_id, order=pb.Order(
        customer=a.customer, sku=a.sku, qty=a.qty, amount=a.amount_minor))
    deadline = time.monotonic() + a.wait_timeout / 1000.0
    try:
        client = sagas_client.Client(a.orchestrator, timeout_ms=a.timeout,
                                     tls_cert=a.tls_cert, tls_key=a.tls_key, tls_ca=a.tls_ca)
    except (sagas_client.RpcError, ValueError, OSError) as e:
        print("error: %s" % getattr(e, "message", e), file=sys.stderr)
        return 1
    with client:
        # StartSaga: retried on a transient failure with the same saga id
        backoff = 0.1
        while True:
            try:
                started = client.call("/sagas.v1.Orchestrator/StartSaga", req, pb.StartSagaReply)
                break
            except sagas_client.RpcError as e:
                if not e.transient or time.monotonic() + backoff > deadline:
                    print("error: could not start saga %s: %s" % (saga_id, e), file=sys.stderr)
                    return 1
                time.sleep(backoff)
                backoff = min(backoff * 2, 2.0)
        if not a.json:
            print("started saga %s (%s)" % (saga_id, "created" if started.created else "existed"))

        # WaitSaga: the orchestrator answers when the saga ends (a long poll,
        # at most WAIT_MS per call), so there is nothing to poll
        terminal = (pb.SAGA_STATE_COMPLETED, pb.SAGA_STATE_CANCELLED)
        saga = started.saga
        while saga.state not in terminal:
            left_ms = int((deadline - time.monotonic()) * 1000)
            if left_ms <= 0:
                print("error: saga %s still %s after %d ms" % (
                    saga_id, pb.SagaState.Name(saga.state), a.wait_timeout), file=sys.stderr)
                return 1
            wait_ms = min(left_ms, WAIT_MS)
            began = time.monotonic()
            try:
                saga = client.call("/sagas.v1.Orchestrator/WaitSaga",
                                   pb.WaitSagaRequest(saga_id=saga_id, wait_ms=wait_ms),
                                   pb.WaitSagaReply, timeout_ms=wait_ms + a.timeout).saga
            except sagas_client.RpcError as e:
                if not e.transient:
                    print("error: could not wait for saga %s: %s" % (saga_id, e),
                          file=sys.stderr)
                    return 1
            if time.monotonic() - began < PAUSE_S:
                time.sleep(PAUSE_S)  # answered at once, unfinished: do not spin

    state = pb.SagaState.Name(saga.state).replace("SAGA_STATE_", "")
    if a.json:
        print(json.dumps({"saga_id": saga.saga_id, "state": state, "reason": saga.reason,
                          "customer": saga.order.customer, "sku": saga.order.sku,
                          "qty": saga.order.qty, "amount_minor": saga.order.amount,
                          "version": saga.version}, separators=(",", ":")))
    else:
        print("saga_id  %s" % saga.saga_id)
        print("state    %s" % state)
        print("reason   %s" % (saga.reason or "-"))
        print("order    %s x%d %s for %d minor units" % (
            saga.order.customer, saga.order.qty, saga.order.sku, saga.order.amount))
    return 0


if __name__ == "__main__":
    sys.exit(main())
