# shellcheck shell=bash
# The seed lab of saga-semantics.md (the first acceptance case), shared by
# the demo and the integration tests. Needs tests/lib/stack.sh.

SEED_SAGA_1=11111111-1111-4111-8111-111111111111 # ali 2 x A1, 200.00
SEED_SAGA_2=22222222-2222-4222-8222-222222222222 # sara 1 x A1, 100.00
SEED_SAGA_3=33333333-3333-4333-8333-333333333333 # ali 10 x A1, 1000.00

seed_lab_seed() {
  ctl stock set A1 5 >/dev/null
  ctl deposit ali 500.00 >/dev/null
  ctl deposit sara 20.00 >/dev/null
}

# seed_lab_orders [ID_PREFIX_FREE]: the three orders, one after the other,
# each waited for until terminal. With "random" the ids are made by the
# orchestrator (the demo), otherwise the fixed ids above (the tests).
seed_lab_orders() {
  if [ "${1:-}" = random ]; then
    ctl start ali A1 2 200.00 --wait
    ctl start sara A1 1 100.00 --wait
    ctl start ali A1 10 1000.00 --wait
  else
    ctl start ali A1 2 200.00 --id "$SEED_SAGA_1" --wait
    ctl start sara A1 1 100.00 --id "$SEED_SAGA_2" --wait
    ctl start ali A1 10 1000.00 --id "$SEED_SAGA_3" --wait
  fi
}

# seed_lab_assert: every number of the expected final state, read straight
# from the four databases.
seed_lab_assert() {
  local o=sagas_orchestrator s=sagas_stock p=sagas_payment h=sagas_shipping
  assert_eq "saga 1 state" "COMPLETED|" \
    "$(psql_db $o "SELECT state || '|' || reason FROM sagas WHERE saga_id = '$SEED_SAGA_1'")"
  assert_eq "saga 2 state" "CANCELLED|payment_declined" \
    "$(psql_db $o "SELECT state || '|' || reason FROM sagas WHERE saga_id = '$SEED_SAGA_2'")"
  assert_eq "saga 3 state" "CANCELLED|out_of_stock" \
    "$(psql_db $o "SELECT state || '|' || reason FROM sagas WHERE saga_id = '$SEED_SAGA_3'")"
  assert_eq "saga count" "3" "$(psql_db $o "SELECT count(*) FROM sagas")"
  assert_eq "saga 1 path" "RESERVING>CHARGING>SHIPPING>COMPLETED" \
    "$(psql_db $o "SELECT string_agg(to_state, '>' ORDER BY version) FROM saga_history WHERE saga_id = '$SEED_SAGA_1'")"
  assert_eq "saga 2 path" "RESERVING>CHARGING>RELEASING>CANCELLED" \
    "$(psql_db $o "SELECT string_agg(to_state, '>' ORDER BY version) FROM saga_history WHERE saga_id = '$SEED_SAGA_2'")"
  assert_eq "saga 3 path" "RESERVING>CANCELLED" \
    "$(psql_db $o "SELECT string_agg(to_state, '>' ORDER BY version) FROM saga_history WHERE saga_id = '$SEED_SAGA_3'")"
  assert_eq "A1 on hand" "3" "$(psql_db $s "SELECT on_hand FROM stock WHERE sku = 'A1'")"
  assert_eq "live reservations" "$SEED_SAGA_1:2" \
    "$(psql_db $s "SELECT string_agg(saga_id || ':' || qty, ',') FROM reservations WHERE status = 'RESERVED'")"
  assert_eq "saga 2 reservation" "RELEASED" \
    "$(psql_db $s "SELECT status FROM reservations WHERE saga_id = '$SEED_SAGA_2'")"
  assert_eq "saga 3 reservation" "OUT_OF_STOCK" \
    "$(psql_db $s "SELECT status FROM reservations WHERE saga_id = '$SEED_SAGA_3'")"
  assert_eq "ali balance" "30000" "$(psql_db $p "SELECT balance FROM accounts WHERE customer = 'ali'")"
  assert_eq "sara balance" "2000" "$(psql_db $p "SELECT balance FROM accounts WHERE customer = 'sara'")"
  assert_eq "charges" "$SEED_SAGA_1:ali:20000" \
    "$(psql_db $p "SELECT string_agg(saga_id || ':' || customer || ':' || amount, ',') FROM charges WHERE status = 'CHARGED'")"
  assert_eq "saga 2 charge" "DECLINED" \
    "$(psql_db $p "SELECT status FROM charges WHERE saga_id = '$SEED_SAGA_2'")"
  assert_eq "no charge tried for saga 3" "0" \
    "$(psql_db $p "SELECT count(*) FROM charges WHERE saga_id = '$SEED_SAGA_3'")"
  assert_eq "shipments: order 1 only, once" "$SEED_SAGA_1:ali:A1:2:SHIPPED" \
    "$(psql_db $h "SELECT string_agg(saga_id || ':' || customer || ':' || sku || ':' || qty || ':' || status, ',') FROM shipments")"
}
