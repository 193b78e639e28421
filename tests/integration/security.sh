#!/usr/bin/env bash
# Security (docs/security.md): mutual TLS and caller roles on the real
# daemons, with certificates made by the test (scripts/make-certs.sh, a
# rogue CA, an expired certificate). Every refusal is checked three ways:
# the reply (a refused TLS handshake, PERMISSION_DENIED or
# FAILED_PRECONDITION), no row changed in any of the four databases, and
# the daemons' own count of refusals when they stop. The same calls with the
# right role then succeed, with the rows they must write.
set -euo pipefail
here=$(dirname "$0")
source "$here/../lib/stack.sh"

STACK_TLS=1 # and no STACK_FAULTS: failure injection stays off
stack_start
C=$STACK_DIR/certs

# a rogue CA with certificates of the same names, and an expired admin and
# orchestrator certificate from the real CAs (signed in 2020, valid 1 day)
bash "$STACK_ROOT/scripts/make-certs.sh" "$STACK_DIR/rogue" localhost 127.0.0.1 >/dev/null
expired() { # expired NAME CA
  openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$C/expired-$1.key" 2>/dev/null
  openssl req -new -key "$C/expired-$1.key" -subj "/CN=expired $1" 2>/dev/null |
    faketime '2020-01-01 00:00:00' openssl x509 -req -CA "$C/$2.crt" -CAkey "$C/$2.key" \
      -CAcreateserial -days 1 -out "$C/expired-$1.crt" 2>/dev/null
}
expired orchestrator ca-orchestrator
expired admin ca-admin

ctl stock set A1 10 >/dev/null
ctl deposit ali 500.00 >/dev/null
# a COMPLETED order, whose reservation and charge an attacker would undo
DONE=5ec0e000-0000-4000-8000-000000000001
ctl start ali A1 2 200.00 --id "$DONE" --wait >/dev/null
assert_eq "the order completed" "COMPLETED" \
  "$(psql_db sagas_orchestrator "SELECT state FROM sagas WHERE saga_id = '$DONE'")"

# every row of every table a refused call could touch, with its update time
# (a query that fails fails the test: the assignment below is under set -e)
snapshot() {
  psql_db sagas_stock "SELECT sku, on_hand FROM stock ORDER BY sku" &&
    psql_db sagas_stock "SELECT saga_id, sku, qty, status, updated_at FROM reservations ORDER BY saga_id" &&
    psql_db sagas_payment "SELECT customer, balance FROM accounts ORDER BY customer" &&
    psql_db sagas_payment "SELECT saga_id, amount, status, updated_at FROM charges ORDER BY saga_id" &&
    psql_db sagas_payment "SELECT deposit_id, customer, amount FROM deposits ORDER BY deposit_id" &&
    psql_db sagas_shipping "SELECT saga_id, customer, sku, qty, status, updated_at FROM shipments ORDER BY saga_id" &&
    psql_db sagas_orchestrator "SELECT saga_id, state, version, updated_at FROM sagas ORDER BY saga_id" &&
    psql_db sagas_orchestrator "SELECT count(*) FROM saga_history"
}
before=$(snapshot)
assert_eq "the snapshot sees the seeded rows" "A1|8 ali|30000" \
  "$(grep -E '^(A1\|8|ali\|30000)$' <<<"$before" | tr '\n' ' ' | sed 's/ $//')"

# cmd CERTDIR NAME URL VERB ARGS...: sagacmd with the certificate NAME from
# CERTDIR ("" for none): its first output word
cmd() {
  local dir=$1 name=$2; shift 2
  local out
  if [ -n "$name" ]; then
    out=$(SAGACMD_TLS_CA="$C/ca-server.crt" SAGACMD_TLS_CERT="$dir/$name.crt" \
      SAGACMD_TLS_KEY="$dir/$name.key" "$SAGA_BIN_DIR/sagacmd" "$@" 2>/dev/null || true)
  else
    out=$(SAGACMD_TLS_CA="$C/ca-server.crt" "$SAGA_BIN_DIR/sagacmd" "$@" 2>/dev/null || true)
  fi
  echo "${out%% *}"
}
# as NAME ARGS...: sagactl with the certificate NAME (of this stack)
as() {
  local name=$1; shift
  # shellcheck disable=SC2046
  "$SAGA_BIN_DIR/sagactl" $(tls_flags "$name") --timeout 3000 "$@" 2>&1 || true
}
X=5ec0e000-0000-4000-8000-0000000000ff # a made-up saga

# 1. no certificate, an unknown CA, an expired certificate, a certificate of
# another role's CA: the TLS handshake is refused, no call is made
assert_eq "no certificate: ReserveStock" HANDSHAKE_REFUSED "$(cmd "" "" "$STOCK_URL" reserve "$X" A1 1)"
assert_eq "no certificate: ChargePayment" HANDSHAKE_REFUSED "$(cmd "" "" "$PAYMENT_URL" charge "$X" ali 10000)"
assert_eq "rogue CA: ReserveStock" HANDSHAKE_REFUSED "$(cmd "$STACK_DIR/rogue" orchestrator "$STOCK_URL" reserve "$X" A1 1)"
assert_eq "rogue CA: RefundPayment" HANDSHAKE_REFUSED "$(cmd "$STACK_DIR/rogue" orchestrator "$PAYMENT_URL" refund "$DONE" ali 20000)"
assert_eq "rogue CA, admin: ReleaseStock" HANDSHAKE_REFUSED "$(cmd "$STACK_DIR/rogue" admin "$STOCK_ADMIN_URL" release "$DONE" A1 2)"
assert_eq "expired: ChargePayment" HANDSHAKE_REFUSED "$(cmd "$C" expired-orchestrator "$PAYMENT_URL" charge "$X" ali 10000)"
assert_eq "expired admin: ReleaseStock" HANDSHAKE_REFUSED "$(cmd "$C" expired-admin "$STOCK_ADMIN_URL" release "$DONE" A1 2)"
for verb in "reserve $X A1 1" "release $DONE A1 2"; do
  # shellcheck disable=SC2086
  assert_eq "client certificate at stockd: $verb" HANDSHAKE_REFUSED "$(cmd "$C" client "$STOCK_URL" $verb)"
done
for verb in "charge $X ali 10000" "refund $DONE ali 20000"; do
  # shellcheck disable=SC2086
  assert_eq "client certificate at paymentd: $verb" HANDSHAKE_REFUSED "$(cmd "$C" client "$PAYMENT_URL" $verb)"
done
assert_eq "no certificate: ShipOrder" HANDSHAKE_REFUSED "$(cmd "" "" "$SHIPPING_URL" ship "$X" ali A1 1)"
assert_eq "rogue CA: ShipOrder" HANDSHAKE_REFUSED "$(cmd "$STACK_DIR/rogue" orchestrator "$SHIPPING_URL" ship "$X" ali A1 1)"
assert_eq "client certificate at shippingd" HANDSHAKE_REFUSED "$(cmd "$C" client "$SHIPPING_URL" ship "$X" ali A1 1)"
assert_eq "client certificate at shippingd's admin listener" HANDSHAKE_REFUSED "$(cmd "$C" client "$SHIPPING_ADMIN_URL" ship "$X" ali A1 1)"
assert_eq "client certificate at paymentd's admin listener" HANDSHAKE_REFUSED "$(cmd "$C" client "$PAYMENT_ADMIN_URL" refund "$DONE" ali 20000)"
assert_eq "sagactl says why" 1 "$(as client --stock "$STOCK_ADMIN_URL" stock set A1 1000 | grep -c 'TLS handshake failed')"

# 2. a verified certificate of the wrong role: PERMISSION_DENIED before any
# handler runs. Counted per daemon, to compare with what each reports.
denied_stock=0 denied_payment=0 denied_orch=0 denied_shipping=0
assert_eq "admin: ReserveStock" PERMISSION_DENIED "$(cmd "$C" admin "$STOCK_ADMIN_URL" reserve "$X" A1 1)"
assert_eq "admin: ReleaseStock" PERMISSION_DENIED "$(cmd "$C" admin "$STOCK_ADMIN_URL" release "$DONE" A1 2)"
denied_stock=$((denied_stock + 2))
assert_eq "admin: ChargePayment" PERMISSION_DENIED "$(cmd "$C" admin "$PAYMENT_ADMIN_URL" charge "$X" ali 10000)"
assert_eq "admin: RefundPayment" PERMISSION_DENIED "$(cmd "$C" admin "$PAYMENT_ADMIN_URL" refund "$DONE" ali 20000)"
denied_payment=$((denied_payment + 2))
assert_eq "orchestrator: SetStock" 1 "$(as orchestrator --stock "$STOCK_URL" stock set A1 1000 | grep -c PERMISSION_DENIED)"
assert_eq "orchestrator: SetFault" 1 "$(as orchestrator --stock "$STOCK_URL" fault set stock unavailable | grep -c PERMISSION_DENIED)"
assert_eq "orchestrator: ListStock" 1 "$(as orchestrator --stock "$STOCK_URL" stock list | grep -c PERMISSION_DENIED)"
denied_stock=$((denied_stock + 3))
assert_eq "orchestrator: Deposit" 1 "$(as orchestrator --payment "$PAYMENT_URL" deposit mallory 10000000000.00 | grep -c PERMISSION_DENIED)"
assert_eq "orchestrator: ListAccounts" 1 "$(as orchestrator --payment "$PAYMENT_URL" accounts | grep -c PERMISSION_DENIED)"
denied_payment=$((denied_payment + 2))
assert_eq "admin: ShipOrder" PERMISSION_DENIED "$(cmd "$C" admin "$SHIPPING_ADMIN_URL" ship "$X" ali A1 1)"
assert_eq "orchestrator: ListShipments" 1 "$(as orchestrator --shipping "$SHIPPING_URL" shipments | grep -c PERMISSION_DENIED)"
denied_shipping=$((denied_shipping + 2))
# the client role reaches only the orchestrator; whatever it sends there
# outside its methods is refused by the table before the API sees it
assert_eq "client: ChargePayment" PERMISSION_DENIED "$(cmd "$C" client "$ORCH_URL" charge "$X" ali 10000)"
assert_eq "client: RefundPayment" PERMISSION_DENIED "$(cmd "$C" client "$ORCH_URL" refund "$DONE" ali 20000)"
assert_eq "client: ReserveStock" PERMISSION_DENIED "$(cmd "$C" client "$ORCH_URL" reserve "$X" A1 1)"
assert_eq "client: ReleaseStock" PERMISSION_DENIED "$(cmd "$C" client "$ORCH_URL" release "$DONE" A1 2)"
assert_eq "client: ShipOrder" PERMISSION_DENIED "$(cmd "$C" client "$ORCH_URL" ship "$X" ali A1 1)"
assert_eq "client: Deposit" 1 "$(as client --payment "$ORCH_URL" deposit mallory 100.00 | grep -c PERMISSION_DENIED)"
assert_eq "client: SetStock" 1 "$(as client --stock "$ORCH_URL" stock set A1 1000 | grep -c PERMISSION_DENIED)"
assert_eq "client: SetFault" 1 "$(as client --orchestrator "$ORCH_URL" fault set orchestrator drop_reply | grep -c PERMISSION_DENIED)"
assert_eq "client: RetrySaga" 1 "$(as client --orchestrator "$ORCH_URL" retry "$DONE" | grep -c PERMISSION_DENIED)"
denied_orch=$((denied_orch + 9))

# 3. failure injection is off: the admin role itself cannot arm a fault
assert_eq "admin: SetFault with failure injection off" 1 \
  "$(as admin --payment "$PAYMENT_ADMIN_URL" fault set payment drop_request --method ChargePayment | grep -c 'FAILED_PRECONDITION (fault_injection_disabled)')"
assert_eq "admin: SetFault on the orchestrator" 1 \
  "$(as admin --orchestrator "$ORCH_ADMIN_URL" fault set orchestrator exit_after_send | grep -c fault_injection_disabled)"

# nothing changed anywhere
after=$(snapshot)
assert_eq "no row changed by any refused call" "$before" "$after"

# 4. the right roles succeed, and write what they must
Y=5ec0e000-0000-4000-8000-000000000002
assert_eq "orchestrator: ReserveStock" OK "$(cmd "$C" orchestrator "$STOCK_URL" reserve "$Y" A1 1)"
assert_eq "orchestrator: ReleaseStock" OK "$(cmd "$C" orchestrator "$STOCK_URL" release "$Y" A1 1)"
assert_eq "the reservation and its release" "1|RELEASED" \
  "$(psql_db sagas_stock "SELECT qty || '|' || status FROM reservations WHERE saga_id = '$Y'")"
assert_eq "orchestrator: ChargePayment" OK "$(cmd "$C" orchestrator "$PAYMENT_URL" charge "$Y" ali 1000)"
assert_eq "orchestrator: RefundPayment" OK "$(cmd "$C" orchestrator "$PAYMENT_URL" refund "$Y" ali 1000)"
assert_eq "the charge and its refund" "1000|REFUNDED" \
  "$(psql_db sagas_payment "SELECT amount || '|' || status FROM charges WHERE saga_id = '$Y'")"
assert_eq "admin: SetStock" 1 "$(as admin --stock "$STOCK_ADMIN_URL" stock set B2 7 | grep -c 'on hand: 7')"
assert_eq "orchestrator: ShipOrder" OK "$(cmd "$C" orchestrator "$SHIPPING_URL" ship "$Y" ali A1 1)"
assert_eq "the shipment" "ali|A1|1|SHIPPED" \
  "$(psql_db sagas_shipping "SELECT customer || '|' || sku || '|' || qty || '|' || status FROM shipments WHERE saga_id = '$Y'")"
assert_eq "admin: ListShipments" 1 "$(as admin --shipping "$SHIPPING_ADMIN_URL" shipments | grep -c "$Y")"
assert_eq "B2 stored" 7 "$(psql_db sagas_stock "SELECT on_hand FROM stock WHERE sku = 'B2'")"
Z=5ec0e000-0000-4000-8000-000000000003
as client --orchestrator "$ORCH_URL" start ali A1 1 10.00 --id "$Z" --wait >/dev/null
assert_eq "client: StartSaga completes" COMPLETED \
  "$(psql_db sagas_orchestrator "SELECT state FROM sagas WHERE saga_id = '$Z'")"
assert_eq "ali after 200.00 and 10.00" 29000 \
  "$(psql_db sagas_payment "SELECT balance FROM accounts WHERE customer = 'ali'")"

# 5. each refusal was counted, and logged at most once per peer per 10 s
t0=$SECONDS
for _ in $(seq 1 20); do cmd "$C" admin "$PAYMENT_ADMIN_URL" charge "$X" ali 1 >/dev/null; done
denied_payment=$((denied_payment + 20))
lines=$(grep -c 'WARNING: refused /sagas.v1.Payment/' "$STACK_DIR/paymentd.log" || true)
most=$((2 + (SECONDS - t0) / 10))
if [ "$lines" -ge 1 ] && [ "$lines" -le "$most" ]; then
  echo "ok: paymentd logged $lines refusal lines for $denied_payment refusals"
else
  echo "FAIL: paymentd logged $lines refusal lines (expected 1..$most)" >&2
  FAILURES=$((FAILURES + 1))
fi
assert_eq "the line names the peer" 1 \
  "$(grep -m1 'WARNING: refused /sagas.v1.Payment/' "$STACK_DIR/paymentd.log" | grep -c 'PERMISSION_DENIED (caller.s role admin; allowed: orchestrator) (peer 127.0.0.1:')"
for d in stockd paymentd shippingd orchestratord; do stack_kill "$d"; done
count() { grep -o "refused while running: .*" "$STACK_DIR/$1.log" || echo none; }
assert_eq "stockd counted" "refused while running: 0 calls UNAUTHENTICATED, $denied_stock PERMISSION_DENIED, 0 SetFault with failure injection off" "$(count stockd)"
assert_eq "paymentd counted" "refused while running: 0 calls UNAUTHENTICATED, $denied_payment PERMISSION_DENIED, 1 SetFault with failure injection off" "$(count paymentd)"
assert_eq "shippingd counted" "refused while running: 0 calls UNAUTHENTICATED, $denied_shipping PERMISSION_DENIED, 0 SetFault with failure injection off" "$(count shippingd)"
assert_eq "orchestratord counted" "refused while running: 0 calls UNAUTHENTICATED, $denied_orch PERMISSION_DENIED, 1 SetFault with failure injection off" "$(count orchestratord)"
finish
