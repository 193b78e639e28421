#!/usr/bin/env bash
# The HTTP API over https (docs/security.md, "Roles"; docs/protocol.md "The
# HTTP API"): a gatewayd whose client listener trusts ca-client and whose
# admin listener trusts ca-admin, dialing a mutual-TLS stack with the
# client's and the admin's certificates. The client certificate gets 200 on
# the client listener and 403 for RetrySaga there; the admin certificate
# retries on the admin listener; no certificate, another role's certificate
# and plain http get no HTTP status at all, and each is counted and logged.
set -euo pipefail
source "$(dirname "$0")/../lib/stack.sh"
stack_start
c=$STACK_DIR/certs
P1=$(free_port) P2=$(free_port)
_stack_daemon gatewayd "$P1" "$SAGA_BIN_DIR/gatewayd" \
  --listen "https://127.0.0.1:$P1" --admin-listen "https://127.0.0.1:$P2" \
  --tls-cert "$c/gatewayd.crt" --tls-key "$c/gatewayd.key" --tls-ca "$c/ca-client.crt" \
  --admin-tls-ca "$c/ca-admin.crt" --orchestrator "$ORCH_URL" --orchestrator-admin "$ORCH_ADMIN_URL" \
  --orchestrator-tls-ca "$c/ca-server.crt" --orchestrator-tls-cert "$c/client.crt" \
  --orchestrator-tls-key "$c/client.key" --orchestrator-admin-tls-cert "$c/admin.crt" \
  --orchestrator-admin-tls-key "$c/admin.key"
wait_until 10 _stack_listening "$P2"
ctl stock set A1 10 >/dev/null
ctl deposit ali 100.00 >/dev/null
OUT=$STACK_DIR/out.json
# call URL ROLE|none [CURL ARGS...]: the HTTP status (000: none)
call() {
  local u=$1 who=$2 cert=()
  shift 2
  [ "$who" = none ] || cert=(--cert "$c/$who.crt" --key "$c/$who.key")
  curl -s -o "$OUT" -w '%{http_code}' --max-time 10 --cacert "$c/ca-server.crt" \
    ${cert[@]+"${cert[@]}"} "$@" "$u" || true
}
G=https://127.0.0.1:$P1 A=https://127.0.0.1:$P2
ID=b2b2b2b2-0000-4000-8000-000000000001
assert_eq "client: start" "201" "$(call "$G/v1/sagas" client -X POST -H 'Content-Type: application/json' \
  --data-binary '{"sagaId":"'$ID'","waitMs":5000,"order":{"customer":"ali","sku":"A1","qty":1,"amount":"100"}}')"
assert_eq "client: finished" "true SAGA_STATE_COMPLETED" "$(jq -r '"\(.finished) \(.saga.state)"' "$OUT")"
assert_eq "client: healthz" "200" "$(call "$G/healthz" client)"
assert_eq "client: retry refused" "403 PERMISSION_DENIED" \
  "$(call "$G/v1/sagas/$ID/retry" client -X POST -H 'Content-Type: application/json') $(jq -r .code "$OUT")"
assert_eq "admin: retry of a finished saga reaches the orchestrator" "400 FAILED_PRECONDITION" \
  "$(call "$A/v1/sagas/$ID/retry" admin -X POST -H 'Content-Type: application/json') $(jq -r .code "$OUT")"
assert_eq "admin: get" "200 $ID" "$(call "$A/v1/sagas/$ID" admin) $(jq -r .saga.sagaId "$OUT")"
assert_eq "no certificate: no HTTP status" 000 "$(call "$G/v1/sagas/$ID" none)"
assert_eq "the admin certificate on the client listener: no HTTP status" 000 "$(call "$G/v1/sagas/$ID" admin)"
assert_eq "the client certificate on the admin listener: no HTTP status" 000 "$(call "$A/v1/sagas/$ID" client)"
assert_eq "the scraper's certificate: no HTTP status" 000 "$(call "$G/v1/sagas/$ID" prometheus)"
assert_eq "plain http: no HTTP status" 000 \
  "$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "http://127.0.0.1:$P1/healthz" || true)"
_logged() { [ "$(grep -c 'gatewayd: closed a connection without a verified client certificate' "$STACK_DIR/gatewayd.log" || true)" -ge 1 ]; }
assert_eq "unverified connections logged" yes "$(wait_until 5 _logged && echo yes || echo no)"
assert_eq "the https listeners logged at start" 2 \
  "$(grep -c 'role: HTTP API on https://127.0.0.1:[0-9]* (mutual TLS' "$STACK_DIR/gatewayd.log" || true)"
finish
