#!/usr/bin/env bash
# DNS rebinding (docs/security.md, "DNS rebinding"; issue 32): every HTTP
# listener answers only a Host that is one of its names, with curl against
# each one: gatewayd's client and admin listeners and the /metrics listener
# of gatewayd, orchestratord, stockd, paymentd and shippingd:
#   - Host: evil.example (with and without the port) and no Host at all
#     (HTTP/1.0) are 421, the proper Host (127.0.0.1:PORT, localhost:PORT)
#     200;
#   - a POST whose Origin is foreign is 403 on every listener, one whose
#     Origin is the listener's own is served, one without Origin (curl) too;
#   - a StartSaga and a RetrySaga sent with a foreign Host or Origin change
#     nothing: no saga row, no history row, the retried saga's row as it
#     was; each refusal is counted in sagas_http_refusals_total{listener,
#     reason} (exact counts) and logged;
#   - --http-allowed-hosts adds names (a bare name on any port), and a bad
#     entry is a usage error (exit 2).
set -euo pipefail
source "$(dirname "$0")/../lib/stack.sh"
STACK_GATEWAY=1
stack_start
ctl stock set A1 100 >/dev/null
ctl deposit ali 1000.00 >/dev/null
q() { psql_db sagas_orchestrator "$1"; }
OUT=$STACK_DIR/out.json

# code URL [CURL ARGS...]: the HTTP status of one request (body in $OUT)
code() {
  local u=$1
  shift
  curl -s --max-time 10 -o "$OUT" -w '%{http_code}' "$@" "$u"
}
# refusals DAEMON LISTENER REASON: sagas_http_refusals_total of a daemon
refusals() {
  stack_metrics "$1" | awk -v k="sagas_http_refusals_total{listener=\"$2\",reason=\"$3\"}" '$1 == k { print $2 }'
}
port_of() { sed 's|.*:||' <<<"$1"; }

ID=dd000000-0000-4000-8000-000000000001
START='{"sagaId":"'$ID'","order":{"customer":"ali","sku":"A1","qty":2,"amount":"77700"}}'
R=dd000000-0000-4000-8000-0000000000a1
q "INSERT INTO sagas (saga_id, state, customer, sku, qty, amount, attention, next_attempt_at, retry_at, attempts)
   VALUES ('$R', 'RELEASING', 'ret', 'A1', 1, 100, true, now() + interval '1 hour', now() + interval '1 hour', 12)" >/dev/null
row_r() { q "SELECT version, attention, attempts, state FROM sagas WHERE saga_id = '$R'"; }
before_r=$(row_r)
sagas_before=$(q "SELECT count(*) FROM sagas")
history_before=$(q "SELECT count(*) FROM saga_history")
charges() { psql_db sagas_payment "SELECT count(*) FROM charges"; }
charges_before=$(charges)

# ---- the gateway's client and admin listeners ----
declare -A gw_url=([client]=$GATEWAY_URL [admin]=$GATEWAY_ADMIN_URL)
for l in client admin; do
  u=${gw_url[$l]}
  p=$(port_of "$u")
  assert_eq "$l: Host evil.example:$p" "421 misdirected" \
    "$(code "$u/v1/sagas" -H "Host: evil.example:$p") $(jq -r .reason "$OUT")"
  assert_eq "$l: Host evil.example" "421" "$(code "$u/v1/sagas" -H 'Host: evil.example')"
  assert_eq "$l: no Host (HTTP/1.0)" "421" "$(code "$u/healthz" -0 -H 'Host:')"
  assert_eq "$l: a StartSaga for Host evil.example:$p" "421" \
    "$(code "$u/v1/sagas" -H "Host: evil.example:$p" -H 'Content-Type: application/json' \
      -H "Origin: http://evil.example:$p" --data-binary "$START")"
  assert_eq "$l: a StartSaga from Origin http://evil.example:$p" "403 foreign_origin" \
    "$(code "$u/v1/sagas" -H "Origin: http://evil.example:$p" -H 'Content-Type: application/json' \
      --data-binary "$START") $(jq -r .reason "$OUT")"
  assert_eq "$l: a StartSaga from Origin null" "403" \
    "$(code "$u/v1/sagas" -H 'Origin: null' -H 'Content-Type: application/json' --data-binary "$START")"
  assert_eq "$l: a RetrySaga for Host evil.example:$p" "421" \
    "$(code "$u/v1/sagas/$R/retry" -X POST -H "Host: evil.example:$p" -H 'Content-Type: application/json')"
  assert_eq "$l: a RetrySaga from a foreign Origin" "403" \
    "$(code "$u/v1/sagas/$R/retry" -X POST -H 'Origin: http://evil.example' -H 'Content-Type: application/json')"
  assert_eq "$l: GET /v1/sagas for its own Host" "200" "$(code "$u/v1/sagas")"
  assert_eq "$l: GET /v1/sagas for localhost:$p" "200" "$(code "$u/v1/sagas" -H "Host: localhost:$p")"
done
# nothing changed: no saga, no history row, R as it was, no charge
assert_eq "refused: no saga started" "$sagas_before" "$(q "SELECT count(*) FROM sagas")"
assert_eq "refused: no saga $ID" "0" "$(q "SELECT count(*) FROM sagas WHERE saga_id = '$ID'")"
assert_eq "refused: no history row" "$history_before" "$(q "SELECT count(*) FROM saga_history")"
assert_eq "refused: R's row unchanged" "$before_r" "$(row_r)"
assert_eq "refused: no charge" "$charges_before" "$(charges)"
# counted, per listener: 5 for the Host (two GETs, no Host, the StartSaga,
# the RetrySaga) and 3 for the Origin (two StartSagas, the RetrySaga)
for l in client admin; do
  assert_eq "gatewayd $l: refusals for the Host" "5" "$(refusals gatewayd "$l" host)"
  assert_eq "gatewayd $l: refusals for the Origin" "3" "$(refusals gatewayd "$l" origin)"
done
# logged, once per kind and address a minute (authz_log_limited)
assert_eq "gatewayd: refusals logged" "yes" \
  "$(grep -q 'client: refused a request for Host evil.example' "$STACK_DIR/gatewayd.log" &&
    grep -q 'client: refused a POST from Origin http://evil.example' "$STACK_DIR/gatewayd.log" && echo yes || echo no)"

# served: a POST from the listener's own origin, and one without Origin
p=$(port_of "$GATEWAY_URL")
assert_eq "client: a StartSaga from its own origin" "201" \
  "$(code "$GATEWAY_URL/v1/sagas" -H "Origin: http://127.0.0.1:$p" -H 'Content-Type: application/json' --data-binary "$START")"
completed() { [ "$(q "SELECT state FROM sagas WHERE saga_id = '$1'")" = COMPLETED ]; }
wait_until 20 completed "$ID"
assert_eq "admin: a RetrySaga without Origin (curl)" "200" \
  "$(code "$GATEWAY_ADMIN_URL/v1/sagas/$R/retry" -X POST -H 'Content-Type: application/json')"
assert_eq "admin: R re-armed" "f" "$(q "SELECT attention FROM sagas WHERE saga_id = '$R'")"

# two Host (or Origin) headers: 400, whichever comes first (the attack
# review's F4: the first was taken, a proxy may take the other)
raw_status() { # raw_status PORT HEADER-LINES...: the status of a GET /healthz
  local port=$1; shift
  exec 3<>"/dev/tcp/127.0.0.1/$port"
  { printf 'GET /healthz HTTP/1.1\r\n'; for h in "$@"; do printf '%s\r\n' "$h"; done
    printf 'Connection: close\r\n\r\n'; } >&3
  head -1 <&3 | cut -d' ' -f2
  exec 3<&-
}
assert_eq "two Host headers, the good one first" "400" \
  "$(raw_status "$p" "Host: 127.0.0.1:$p" "Host: evil.example:$p")"
assert_eq "two Host headers, the bad one first" "400" \
  "$(raw_status "$p" "Host: evil.example:$p" "Host: 127.0.0.1:$p")"
assert_eq "two Origin headers" "400" \
  "$(raw_status "$p" "Host: 127.0.0.1:$p" "Origin: http://127.0.0.1:$p" "Origin: http://evil.example")"
assert_eq "one Host: served" "200" "$(raw_status "$p" "Host: 127.0.0.1:$p")"

# ---- every daemon's /metrics ----
for d in gatewayd orchestratord stockd paymentd shippingd; do
  u=${STACK_METRICS_URL_OF[$d]}
  p=$(port_of "$u")
  assert_eq "$d /metrics: Host evil.example:$p" "421" "$(code "$u/metrics" -H "Host: evil.example:$p")"
  assert_eq "$d /metrics: not the page" "no" "$(grep -q sagas_build_info "$OUT" && echo yes || echo no)"
  assert_eq "$d /metrics: Host evil.example" "421" "$(code "$u/metrics" -H 'Host: evil.example')"
  assert_eq "$d /metrics: no Host (HTTP/1.0)" "421" "$(code "$u/metrics" -0 -H 'Host:')"
  assert_eq "$d /metrics: a POST from a foreign Origin" "403" \
    "$(code "$u/metrics" -X POST -H 'Origin: http://evil.example')"
  assert_eq "$d /metrics: its own Host" "200" "$(code "$u/metrics")"
  assert_eq "$d /metrics: Host localhost:$p" "200" "$(code "$u/metrics" -H "Host: localhost:$p")"
  assert_eq "$d /metrics: refusals for the Host" "3" "$(refusals "$d" metrics host)"
  assert_eq "$d /metrics: refusals for the Origin" "1" "$(refusals "$d" metrics origin)"
done

# ---- --http-allowed-hosts ----
stack_kill gatewayd
GATEWAY_FLAGS="--http-allowed-hosts api.example,gw.example:$p"
stack_start_gateway
assert_eq "allowed: a bare name on any port" "200" "$(code "$GATEWAY_URL/healthz" -H 'Host: api.example:8443')"
assert_eq "allowed: host:port on its port" "200" "$(code "$GATEWAY_URL/healthz" -H "Host: gw.example:$p")"
assert_eq "allowed: host:port on another port" "421" "$(code "$GATEWAY_URL/healthz" -H 'Host: gw.example:1')"
assert_eq "allowed: the admin listener too" "200" "$(code "$GATEWAY_ADMIN_URL/healthz" -H 'Host: api.example')"
assert_eq "allowed: the metrics listener too" "200" \
  "$(code "${STACK_METRICS_URL_OF[gatewayd]}/metrics" -H 'Host: api.example')"
assert_eq "allowed: a POST from an allowed origin" "400" \
  "$(code "$GATEWAY_URL/v1/sagas" -H 'Origin: https://api.example' -H 'Content-Type: application/json' --data-binary '{}')"
assert_eq "allowed: still not evil.example" "421" "$(code "$GATEWAY_URL/healthz" -H "Host: evil.example:$p")"
for b in gatewayd stockd orchestratord; do
  rc=0
  "$SAGA_BIN_DIR/$b" --http-allowed-hosts 'stock,*' >"$STACK_DIR/bad.out" 2>&1 || rc=$?
  assert_eq "$b --http-allowed-hosts 'stock,*': a usage error" "2 yes" \
    "$rc $(grep -q 'invalid value for http-allowed-hosts: "\*"' "$STACK_DIR/bad.out" && echo yes || echo no)"
done
finish
