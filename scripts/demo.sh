#!/usr/bin/env bash
# make demo: the seed lab end to end. Starts a throwaway PostgreSQL cluster
# and the four daemons, seeds stock and accounts, runs three orders through
# the order saga with sagactl, prints the final state as tables and then as
# one JSON object on the last line, and stops everything it started (also
# when interrupted).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../tests/lib/stack.sh"
source "$here/../tests/lib/seed_lab.sh"

PG_FAST=0 # the demo keeps PostgreSQL's durable defaults
# every link mutual TLS, as docs/security.md deploys it (STACK_TLS=0: plain
# loopback, as on a laptop)
STACK_TLS=${STACK_TLS:-1}
STACK_GATEWAY=1 # gatewayd: the HTTP/JSON API and the web console, on loopback
echo "== starting PostgreSQL and the daemons"
stack_start
echo "   logs and the cluster: $STACK_DIR (removed at the end; KEEP_STACK=1 keeps it)"
echo "   orchestratord $ORCH_URL, stockd $STOCK_URL, paymentd $PAYMENT_URL, shippingd $SHIPPING_URL,"
echo "   PostgreSQL 127.0.0.1:$PG_PORT"
echo "   gatewayd (HTTP/JSON API and the web console): $GATEWAY_URL/ (client role), $GATEWAY_ADMIN_URL/ (admin)"
echo "   metrics (Prometheus): orchestratord ${STACK_METRICS_URL_OF[orchestratord]}/metrics, stockd ${STACK_METRICS_URL_OF[stockd]}/metrics, ..."
if [ "$STACK_TLS" = 1 ]; then
  echo "   mutual TLS on every link: certificates in $STACK_DIR/certs (scripts/make-certs.sh);"
  echo "   the orders go in with the client certificate, the seeding and the report with the admin one,"
  echo "   on the admin listeners: orchestratord $ORCH_ADMIN_URL, stockd $STOCK_ADMIN_URL,"
  echo "   paymentd $PAYMENT_ADMIN_URL, shippingd $SHIPPING_ADMIN_URL"
  echo "   (each order below is: sagactl --orchestrator $ORCH_URL --tls-cert certs/client.crt"
  echo "    --tls-key certs/client.key --tls-ca certs/ca-server.crt start CUSTOMER SKU QTY AMOUNT --wait)"
fi
# order ARGS...: sagactl start as an application (the client role)
order() {
  if [ "$STACK_TLS" = 1 ]; then
    # shellcheck disable=SC2046
    "$SAGA_BIN_DIR/sagactl" --orchestrator "$ORCH_URL" $(tls_flags client) start "$@"
  else
    ctl start "$@"
  fi
}
echo
echo "== seeding: stock A1 = 5; accounts ali 500.00, sara 20.00"
seed_lab_seed
echo
echo "== order 1: ali orders 2 x A1 for 200.00"
order ali A1 2 200.00 --wait
echo
echo "== order 2: sara orders 1 x A1 for 100.00"
order sara A1 1 100.00 --wait
echo
echo "== order 3: ali orders 10 x A1 for 1000.00"
order ali A1 10 1000.00 --wait
echo
echo "== final state (a COMPLETED order is charged and shipped and keeps its reservation:"
echo "   the stock is sold; a CANCELLED one has no charge and no shipment)"
ctl report
ctl report --json
echo
echo "== the same, as the orchestrator's metrics count it (GET /metrics; docs/operations.md, \"Metrics\")"
stack_metrics orchestratord | grep -E '^sagas_(started|finished)_total'
echo
echo "== the same sagas through the HTTP API (docs/protocol.md, \"The HTTP API\"):"
jq_filter='.sagas[] | {sagaId, state, reason, customer: .order.customer}'
echo "   curl -s '$GATEWAY_URL/v1/sagas?limit=3' | jq -c '$jq_filter'"
echo "   (a field at its default is left out of the reply: jq prints it as null)"
curl -s "$GATEWAY_URL/v1/sagas?limit=3" | jq -c "$jq_filter"
echo
echo "== every transition, in commit order, from the history feed (sagactl watch --from-start;"
echo "   docs/protocol.md, \"The history feed\")"
ctl watch --from-start 2>/dev/null
echo
echo "== done: the demo's PostgreSQL and daemons stop now (its console and API with them)."
echo "   To keep a stack running and open the console: docs/operations.md, \"Running"
echo "   without containers\" (four daemons and gatewayd on a throwaway PostgreSQL), or"
echo "   \"docker compose up\" (docs/operations.md, \"Containers\")."
