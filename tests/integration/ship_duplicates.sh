#!/usr/bin/env bash
# ShipOrder, the retriable step, against a real shippingd (issue 19): a
# duplicate is answered from the shipment recorded first, also when both
# copies arrive at the same moment, and creates nothing; the same saga id
# with other arguments is refused and changes nothing. The orchestrator's
# own duplicate delivery is seed_lab_duplicate_delivery.
set -euo pipefail
source "$(dirname "$0")/../lib/stack.sh"
cmd=$SAGA_BIN_DIR/sagacmd
stack_start

id=5a1e0000-0000-4000-8000-000000000001
assert_eq "first ShipOrder" "OK - 1" "$("$cmd" "$SHIPPING_URL" ship "$id" ali A1 2)"
assert_eq "the same again" "OK - 1" "$("$cmd" "$SHIPPING_URL" ship "$id" ali A1 2)"
assert_eq "other qty" "ALREADY_EXISTS key_mismatch -" "$("$cmd" "$SHIPPING_URL" ship "$id" ali A1 3)"
assert_eq "other customer" "ALREADY_EXISTS key_mismatch -" "$("$cmd" "$SHIPPING_URL" ship "$id" sara A1 2)"
assert_eq "one shipment, as first sent" "$id:ali:A1:2:SHIPPED" "$(psql_db sagas_shipping \
  "SELECT string_agg(saga_id || ':' || customer || ':' || sku || ':' || qty || ':' || status, ',') FROM shipments")"

# two copies at the same moment, 30 saga ids
rounds=30
for i in $(seq 1 "$rounds"); do
  sid=$(printf '5a1e0000-0000-4000-8000-%012d' "$((100 + i))")
  "$cmd" "$SHIPPING_URL" ship "$sid" c1 X 1 >"$STACK_DIR/a.$i" &
  a=$!
  "$cmd" "$SHIPPING_URL" ship "$sid" c1 X 1 >"$STACK_DIR/b.$i" &
  b=$!
  wait "$a"
  wait "$b"
done
same=0
for i in $(seq 1 "$rounds"); do
  [ "$(cat "$STACK_DIR/a.$i")" = "OK - 1" ] && [ "$(cat "$STACK_DIR/b.$i")" = "OK - 1" ] && same=$((same + 1))
done
assert_eq "both copies answered OK SHIPPED" "$rounds" "$same"
assert_eq "one shipment per saga id" "$rounds:$rounds" "$(psql_db sagas_shipping \
  "SELECT count(*) || ':' || count(DISTINCT saga_id) FROM shipments WHERE customer = 'c1'")"
assert_eq "shipments created (logged at info)" "$((rounds + 1))" \
  "$(grep -c ': SHIPPED$' "$STACK_DIR/shippingd.log" || true)"
finish
