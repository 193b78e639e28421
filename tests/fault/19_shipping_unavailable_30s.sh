#!/usr/bin/env bash
# Fault 19: the retriable step after the pivot (docs/saga-semantics.md,
# rule 3: after the pivot, only forward). shippingd answers every ShipOrder
# UNAVAILABLE (a fault), then is stopped, for 30 s in all, while a saga that
# was charged waits to ship:
# - the saga waits in SHIPPING the whole time: never REFUNDING or RELEASING,
#   no deadline compensates it, its charge and reservation stay;
# - it is flagged for attention after --attention-after tries, once (one
#   log line), and keeps retrying;
# - once shippingd is back it completes, with exactly one shipment; nothing
#   was refunded or released.
# Then a ShipOrder refused for good (a shipment already recorded under the
# saga id with other arguments): the saga is flagged with the reason on its
# row (sagactl list --attention shows key_mismatch), never refunded; the
# operator removes the stray shipment and the saga completes by itself.
source "$(dirname "$0")/head.inc"
ATTENTION_AFTER=3
ORCH_FLAGS="$FAST_ORCH --attention-after $ATTENTION_AFTER"
SHIPPING_FLAGS="--fault unavailable:ShipOrder"
stack_start
fixture
t0=$SECONDS
ctl start c1 X 2 30.00 --id "$S" >/dev/null
wait_state "$S" SHIPPING 30

attention() { psql_db sagas_orchestrator "SELECT attention FROM sagas WHERE saga_id = '$S'"; }
attempts() { psql_db sagas_orchestrator "SELECT attempts FROM sagas WHERE saga_id = '$S'"; }
_flagged() { [ "$(attention)" = t ]; }
wait_until 30 _flagged
assert_eq "flagged after --attention-after tries" "SHIPPING|true" "$(psql_db sagas_orchestrator \
  "SELECT state || '|' || (attempts >= $ATTENTION_AFTER) FROM sagas WHERE saga_id = '$S'")"
assert_eq "the fault answered every try" "yes" \
  "$([ "$(log_count shippingd 'fault injected: unavailable on ShipOrder')" -ge "$ATTENTION_AFTER" ] && echo yes || echo no)"
assert_eq "no shipment while the fault answers" "0" "$(psql_db sagas_shipping "SELECT count(*) FROM shipments")"

# then shippingd is gone: connections refused
stack_kill shippingd
tries_before=$(attempts)
# the rest of the 30 s, looked at every second: the saga stays in SHIPPING
# with its charge and reservation (a bounded loop of observations)
states=""
while [ $((SECONDS - t0)) -lt 30 ]; do
  states="$states$(psql_db sagas_orchestrator "SELECT state FROM sagas WHERE saga_id = '$S'")
"
  sleep 1
done
assert_eq "state throughout the 30 s" "SHIPPING" "$(printf '%s' "$states" | sort -u | tr -d '\n')"
assert_eq "retried while shippingd was gone" "yes" \
  "$([ "$(attempts)" -gt "$tries_before" ] && echo yes || echo "no ($tries_before -> $(attempts))")"
assert_eq "charge while waiting" "CHARGED" "$(charge "$S")"
assert_eq "reservation while waiting" "RESERVED" "$(reservation "$S")"
assert_eq "c1 while waiting" "7000" "$(balance c1)"
assert_eq "X while waiting" "8" "$(on_hand X)"

# shippingd is back, without the fault
SHIPPING_FLAGS=""
stack_start_shipping
wait_state "$S" COMPLETED 30
assert_eq "S" "COMPLETED|" "$(saga_state "$S")"
assert_eq "path" "RESERVING>CHARGING>SHIPPING>COMPLETED" "$(path_of "$S")"
assert_eq "shipment" "$S:c1:X:2:SHIPPED" "$(psql_db sagas_shipping \
  "SELECT string_agg(saga_id || ':' || customer || ':' || sku || ':' || qty || ':' || status, ',') FROM shipments")"
assert_eq "one attention log line" "1" "$(log_count orchestratord 'saga needs attention: ShipOrder failed')"
assert_eq "nothing refunded" "0" "$(log_count paymentd 'refund customer=')"
assert_eq "nothing released" "0" "$(log_count stockd 'release sku=')"
assert_eq "charge" "CHARGED" "$(charge "$S")"
assert_eq "reservation" "RESERVED" "$(reservation "$S")"
assert_eq "c1" "7000" "$(balance c1)"
assert_eq "X" "8" "$(on_hand X)"
K=5a9a5a9a-0000-4000-8000-000000000002
psql_db sagas_shipping "INSERT INTO shipments (saga_id, customer, sku, qty, status)
  VALUES ('$K', 'mallory', 'X', 1, 'SHIPPED')" >/dev/null
ctl start c1 X 1 10.00 --id "$K" >/dev/null
_k_flagged() { [ "$(psql_db sagas_orchestrator "SELECT attention || reason FROM sagas WHERE saga_id = '$K'")" = tkey_mismatch ]; }
wait_until 30 _k_flagged || true
assert_eq "refused for good: flagged, the reason on the row" "SHIPPING|key_mismatch|true" \
  "$(psql_db sagas_orchestrator "SELECT state || '|' || reason || '|' || attention FROM sagas WHERE saga_id = '$K'")"
assert_eq "sagactl list --attention names it" "key_mismatch" \
  "$(ctl list --attention --json | jq -r --arg k "$K" '[.. | objects | select(.saga_id? == $k) | .reason] | first')"
assert_eq "K still charged" "CHARGED" "$(charge "$K")"
assert_eq "still nothing refunded" "0" "$(log_count paymentd 'refund customer=')"
# the operator's remedy (docs/operations.md): remove the stray shipment
psql_db sagas_shipping "DELETE FROM shipments WHERE saga_id = '$K'" >/dev/null
wait_state "$K" COMPLETED 30
assert_eq "K" "COMPLETED|" "$(saga_state "$K")"
assert_eq "K shipped as ordered" "c1:X:1:SHIPPED" \
  "$(psql_db sagas_shipping "SELECT customer || ':' || sku || ':' || qty || ':' || status FROM shipments WHERE saga_id = '$K'")"
assert_eq "c1 after K" "6000" "$(balance c1)"
assert_eq "X after K" "7" "$(on_hand X)"
check_invariants "X:10" "c1:10000"
finish
