#!/usr/bin/env bash
# A saga id means one saga for ever (issue 32, part 1; docs/saga-semantics.md
# rule R5), on real daemons with the default --retention and
# --max-clock-skew (7 days, 5 minutes). Time passing is simulated by moving
# created_at/updated_at back in all four databases. Every participant's
# retention job is off (--retention-interval 0: it remembers for ever, the
# worst case of a participant whose --retention is longer than the
# orchestrator's), so only what this test deletes by hand is gone.
#   1. "stock from nothing": a COMPLETED order of 2 x K1 (shipped) is deleted
#      by the orchestrator's retention; StartSaga with its id, another
#      customer, the same sku and qty: refused saga_id_retired while the
#      orchestrator keeps the tombstone; once the tombstone is gone too,
#      started, and its ReserveStock refused saga_id_reused by stockd, which
#      parks it (attention) with nothing changed; a ReleaseStock of that new
#      saga sent straight to stockd is refused too and releases nothing.
#   2. "charge twice": paymentd's record of a COMPLETED order expired,
#      stockd's and shippingd's not, the orchestrator's saga and tombstone
#      gone; the same order re-sent with the old id: parked in RESERVING, the
#      customer not charged again. Once stockd and shippingd forget the old
#      saga, `sagactl retry` completes the new order as a new one.
# Stock, balances, charges and shipments are exact after each step.
set -euo pipefail
here=$(dirname "$0")
source "$here/../lib/stack.sh"
source "$here/../lib/fault.sh"

STOCK_FLAGS="--retention-interval 0"
PAYMENT_FLAGS="--retention-interval 0"
SHIPPING_FLAGS="--retention-interval 0"
ORCH_FLAGS="--retention-interval 0 --backoff-cap 500 --attention-after 2"
stack_start
ctl stock set K1 10 >/dev/null
ctl deposit ali 1000.00 >/dev/null
ctl deposit sara 1000.00 >/dev/null
X=a0000000-0000-4000-8000-000000000032
Y=b0000000-0000-4000-8000-000000000032
assert_eq "X completes" "COMPLETED" "$(ctl start ali K1 2 200.00 --id "$X" --wait --json | jq -r .saga.state)"
assert_eq "Y completes" "COMPLETED" "$(ctl start ali K1 1 100.00 --id "$Y" --wait --json | jq -r .saga.state)"
state_of() { # stock on hand|ali|sara|live charges|shipments
  echo "$(on_hand K1)|$(balance ali)|$(balance sara)|$(psql_db sagas_payment \
    "SELECT count(*) FROM charges WHERE status = 'CHARGED'")|$(psql_db sagas_shipping "SELECT count(*) FROM shipments")"
}
BEFORE="7|70000|100000|2|2"
assert_eq "after the two orders" "$BEFORE" "$(state_of)"
check_conservation "K1:10" "ali:100000 sara:100000"

# eight days later: every record and saga of both orders is past --retention
back() { # back DB TABLE INTERVAL [WHERE]
  psql_db "$1" "UPDATE $2 SET created_at = created_at - interval '$3', updated_at = updated_at - interval '$3' ${4:-}" >/dev/null
}
back sagas_orchestrator sagas '8 days'
back sagas_stock reservations '8 days'
back sagas_payment charges '8 days'
back sagas_shipping shipments '8 days'
assert_eq "the orchestrator's pass" "deleted 2 sagas and 8 saga_history rows" \
  "$(ctl retention | sed 's/ in .*//')"
assert_eq "two tombstones" "$X $Y" "$(psql_db sagas_orchestrator \
  "SELECT string_agg(saga_id::text, ' ' ORDER BY saga_id) FROM saga_ids_retired")"

# --- 1. while the orchestrator keeps the id: StartSaga is refused ---
set +e
out=$(ctl start sara K1 2 200.00 --id "$X" 2>&1)
rc=$?
set -e
assert_eq "StartSaga of a retired id: exit code" "1" "$rc"
assert_eq "StartSaga of a retired id: the reason" "1" "$(grep -c 'saga_id_retired' <<<"$out")"
assert_eq "no saga started" "0" "$(psql_db sagas_orchestrator "SELECT count(*) FROM sagas")"
assert_eq "nothing changed" "$BEFORE" "$(state_of)"

# the tombstone kept longer than its cutoff (--saga-id-retention, 30 days
# by default, past --retention + 4 x skew) goes with the next pass: here
# X's (it is past), and not Y's yet
psql_db sagas_orchestrator "UPDATE saga_ids_retired SET created_at = created_at - interval '30 days'
  WHERE saga_id = '$X'" >/dev/null
assert_eq "the dry run counts the tombstone" "1" \
  "$(psql_db sagas_orchestrator "SELECT ids FROM saga_retention_batch(now(), now(), now() - interval '37 days 20 minutes', 0, true)")"
assert_eq "the pass says so" "deleted 0 sagas and 0 saga_history rows; forgot 1 saga ids (saga_ids_retired: none of them is refused any more)" \
  "$(ctl retention)"
assert_eq "the orchestrator logged it" "1" "$(log_count orchestratord "retention (an admin's pass): deleted 1 saga_ids_retired")"
assert_eq "X's tombstone gone, Y's kept" "$Y" "$(psql_db sagas_orchestrator \
  "SELECT string_agg(saga_id::text, ' ') FROM saga_ids_retired")"
assert_eq "sagas_retention_deleted_total{table=saga_ids_retired}" "1" \
  "$(stack_metrics orchestratord | awk '$1 == "sagas_retention_deleted_total{table=\"saga_ids_retired\"}" {print $2}')"

# --- 1. the orchestrator forgot X, stockd did not: stockd refuses ---
ctl start sara K1 2 200.00 --id "$X" >/dev/null
parked() {
  [ "$(psql_db sagas_orchestrator "SELECT state || ' ' || reason || ' ' || attention::text || ' ' ||
    (next_attempt_at IS NULL)::text FROM sagas WHERE saga_id = '$1'")" = "RESERVING saga_id_reused true true" ]
}
wait_until 20 parked "$X"
assert_eq "X's new saga parked" "RESERVING saga_id_reused" \
  "$(ctl get "$X" --json | jq -r '.state + " " + .reason')"
assert_eq "the old reservation untouched" "RESERVED" "$(reservation "$X")"
assert_eq "nothing changed" "$BEFORE" "$(state_of)"
reused_metric='sagas_participant_commands_total{command="ReserveStock",outcome="saga_id_reused"}'
assert_eq "stockd counted it" "1" "$(stack_metrics stockd | awk -v m="$reused_metric" '$1 == m {print $2}')"
assert_eq "stockd logged it" "1" "$(log_count stockd "reserve sku=K1 qty=2: refused saga_id_reused")"
assert_eq "orchestratord says what to do" "1" "$(log_count orchestratord "refused saga_id_reused")"
# a ReleaseStock of the new saga, straight to stockd: refused, nothing released
new_start=$(psql_db sagas_orchestrator "SELECT (extract(epoch FROM created_at) * 1000)::bigint FROM sagas WHERE saga_id = '$X'")
old_start=$((new_start - 8 * 86400000))
assert_eq "ReleaseStock of the new saga" "FAILED_PRECONDITION saga_id_reused -" \
  "$(SAGACMD_STARTED_MS=$new_start "$SAGA_BIN_DIR/sagacmd" "$STOCK_URL" release "$X" K1 2 || true)"
assert_eq "ShipOrder of the new saga" "FAILED_PRECONDITION saga_id_reused -" \
  "$(SAGACMD_STARTED_MS=$new_start "$SAGA_BIN_DIR/sagacmd" "$SHIPPING_URL" ship "$X" sara K1 2 || true)"
assert_eq "still nothing changed" "$BEFORE" "$(state_of)"
assert_eq "each refusal logged" "1|1" "$(log_count stockd "release sku=K1 qty=2: refused saga_id_reused")|$(log_count shippingd "ship customer=sara sku=K1 qty=2: refused saga_id_reused")"
assert_eq "the old reservation still held" "RESERVED" "$(reservation "$X")"
check_conservation "K1:10" "ali:100000 sara:100000"
# an old command that R1 refuses is still refused past_horizon
assert_eq "a late ReleaseStock of the old saga" "FAILED_PRECONDITION past_horizon -" \
  "$(SAGACMD_STARTED_MS=$old_start "$SAGA_BIN_DIR/sagacmd" "$STOCK_URL" release "$X" K1 2 || true)"

# --- 2. paymentd forgot Y, stockd and shippingd did not ---
assert_eq "paymentd's pass" "deleted 2 charges" "$(ctl retention --target payment | sed 's/ in .*//')"
psql_db sagas_orchestrator "UPDATE saga_ids_retired SET created_at = created_at - interval '30 days'" >/dev/null
ctl retention >/dev/null
assert_eq "no tombstone left" "0" "$(psql_db sagas_orchestrator "SELECT count(*) FROM saga_ids_retired")"
# waited for, it returns as soon as it is parked (not at --wait-timeout)
set +e
out=$(ctl start ali K1 1 100.00 --id "$Y" --wait --wait-timeout 60000 2>&1)
rc=$?
set -e
assert_eq "start --wait of a parked saga: exit code" "1" "$rc"
assert_eq "start --wait of a parked saga: says so" "1" \
  "$(grep -c "saga $Y is parked in RESERVING (saga_id_reused)" <<<"$out")"
wait_until 20 parked "$Y"
assert_eq "Y's new saga: no charge" "" "$(charge "$Y")"
AFTER="7|70000|100000|0|2" # the two charges retired: in charges_retired
assert_eq "nothing charged twice" "$AFTER" "$(state_of)"
assert_eq "the retired charges" "ali CHARGED 2 30000" "$(psql_db sagas_payment \
  "SELECT key || ' ' || status || ' ' || records || ' ' || total FROM charges_retired")"
check_conservation "K1:10" "ali:100000 sara:100000"

# --- once stockd and shippingd forget the old Y, a retry completes it as a
# new order (the client reused its id on purpose: a second order) ---
assert_eq "stockd's pass" "deleted 2 reservations" "$(ctl retention --target stock | sed 's/ in .*//')"
assert_eq "shippingd's pass" "deleted 2 shipments" "$(ctl retention --target shipping | sed 's/ in .*//')"
ctl retry "$Y" >/dev/null
completed() { [ "$(psql_db sagas_orchestrator "SELECT state FROM sagas WHERE saga_id = '$1'")" = COMPLETED ]; }
wait_until 20 completed "$Y"
assert_eq "the new Y: reserved, charged, shipped" "RESERVED CHARGED SHIPPED" \
  "$(reservation "$Y") $(charge "$Y") $(shipment "$Y")"
assert_eq "one more order's worth" "6|60000|100000|1|1" "$(state_of)"
check_conservation "K1:10" "ali:100000 sara:100000"

# --- 3. records made before R5 (no start kept: saga_started_ms NULL) judge
# a command by when they were made: a new saga with the id, started long
# after the record, is refused; nothing released (the third attack's F1) ---
Z=c0000000-0000-4000-8000-000000000032
assert_eq "Z completes" "COMPLETED" "$(ctl start ali K1 1 100.00 --id "$Z" --wait --json | jq -r .saga.state)"
for t in sagas_stock:reservations sagas_payment:charges sagas_shipping:shipments; do
  psql_db "${t%%:*}" "UPDATE ${t#*:} SET saga_started_ms = NULL WHERE saga_id = '$Z'" >/dev/null
  back "${t%%:*}" "${t#*:}" '8 days' "WHERE saga_id = '$Z'"
done
back sagas_orchestrator sagas '8 days' "WHERE saga_id = '$Z'"
ctl retention >/dev/null
psql_db sagas_orchestrator "DELETE FROM saga_ids_retired" >/dev/null # as if deleted before R5
LEGACY="5|50000|100000|2|2"
assert_eq "before the reuse" "$LEGACY" "$(state_of)"
ctl start sara K1 1 100.00 --id "$Z" >/dev/null
wait_until 20 parked "$Z"
assert_eq "the old reservation untouched" "RESERVED" "$(reservation "$Z")"
assert_eq "nothing changed" "$LEGACY" "$(state_of)"
assert_eq "stockd said why" "1" "$(log_count stockd "reserve sku=K1 qty=1: refused saga_id_reused: the record is another saga's (made at")"
check_conservation "K1:10" "ali:100000 sara:100000"
finish
