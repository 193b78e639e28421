#!/usr/bin/env bash
# Participant retention (issue 23; docs/participants.md, "Retention"), on
# real daemons with the default --retention and --max-clock-skew (7 days,
# 5 minutes): the seed lab's records, moved back past the cutoff (7 days
# 10 minutes), are deleted and folded into <records>_retired, exactly, by
# paymentd's and shippingd's elected job (a pass every 200 ms) and by
# `sagactl retention --target stock` (stockd's job is off: interval 0); a
# later saga's records, moved back to 1 minute inside the cutoff, stay;
# stock and money conservation hold before and after, counting the
# summaries.
set -euo pipefail
here=$(dirname "$0")
source "$here/../lib/stack.sh"
source "$here/../lib/fault.sh"
source "$here/../lib/seed_lab.sh"

STOCK_FLAGS="--retention-interval 0"
PAYMENT_FLAGS="--retention-interval 200"
SHIPPING_FLAGS="--retention-interval 200"
stack_start
seed_lab_seed
seed_lab_orders >/dev/null
seed_lab_assert
LATER=44444444-4444-4444-8444-444444444444 # ali 1 x A1, 50.00
ctl start ali A1 1 50.00 --id "$LATER" --wait >/dev/null
check_conservation "A1:5" "ali:50000 sara:2000"
for t in reservations_retired charges_retired shipments_retired; do
  db=sagas_stock
  [ "$t" = charges_retired ] && db=sagas_payment
  [ "$t" = shipments_retired ] && db=sagas_shipping
  assert_eq "$t empty before" "0" "$(psql_db $db "SELECT count(*) FROM $t")"
done

# every record back in time: the seed lab's 1 s past the cutoff, the later
# saga's 1 minute inside it (one statement per database, so the pass that
# deletes the first sees the second too)
age="CASE WHEN saga_id = '$LATER' THEN now() - interval '7 days 9 minutes'
  ELSE now() - interval '7 days 10 minutes 1 second' END"
for t in sagas_stock:reservations sagas_payment:charges sagas_shipping:shipments; do
  psql_db "${t%%:*}" "UPDATE ${t#*:} SET created_at = $age" >/dev/null
done
only_later() { [ "$(psql_db "$1" "SELECT string_agg(saga_id::text, ',') FROM $2")" = "$LATER" ]; }
assert_eq "stock: the dry run" "dry run: would delete 3 reservations" \
  "$(ctl retention --target stock --dry-run)"
assert_eq "stock: the dry run deleted nothing" "4" "$(psql_db sagas_stock "SELECT count(*) FROM reservations")"
assert_eq "stock: the pass" "deleted 3 reservations" "$(ctl retention --target stock)"
assert_eq "stock: a second pass" "deleted 0 reservations" "$(ctl retention --target stock)"
assert_eq "stock: --json" '{"service":"stock","dry_run":true,"table":"reservations","deleted":0,"other_table":"","other_deleted":0}' \
  "$(ctl retention --target stock --dry-run --json | jq -c .)"
wait_until 20 only_later sagas_payment charges || true
wait_until 20 only_later sagas_shipping shipments || true

summary() { # summary DB TABLE: its rows, "key status records total", in order
  psql_db "$1" "SELECT coalesce(string_agg(key || ' ' || status || ' ' || records || ' ' || total, ', '
    ORDER BY key, status), '') FROM $2"
}
assert_eq "the later reservation stays" "RESERVED:1" \
  "$(psql_db sagas_stock "SELECT string_agg(status || ':' || qty, ',') FROM reservations")"
assert_eq "the later charge stays" "CHARGED:ali:5000" \
  "$(psql_db sagas_payment "SELECT string_agg(status || ':' || customer || ':' || amount, ',') FROM charges")"
assert_eq "the later shipment stays" "SHIPPED:ali:A1:1" \
  "$(psql_db sagas_shipping "SELECT string_agg(status || ':' || customer || ':' || sku || ':' || qty, ',') FROM shipments")"
assert_eq "reservations folded" "A1 OUT_OF_STOCK 1 10, A1 RELEASED 1 1, A1 RESERVED 1 2" \
  "$(summary sagas_stock reservations_retired)"
assert_eq "charges folded" "ali CHARGED 1 20000, sara DECLINED 1 10000" \
  "$(summary sagas_payment charges_retired)"
assert_eq "shipments folded" "ali SHIPPED 1 2" "$(summary sagas_shipping shipments_retired)"
assert_eq "the rows untouched" "2|25000|2000" "$(psql_db sagas_stock "SELECT on_hand FROM stock WHERE sku = 'A1'")|$(balance ali)|$(balance sara)"
check_conservation "A1:5" "ali:50000 sara:2000"

# a start ahead of the participant's clock by more than --max-clock-skew (a
# clock fault, or a forged start) is refused past_horizon like one too old:
# taken, it would keep the command young for ever, and a late copy would be
# applied again once its record is deleted (rule R1); one a minute ahead
# (inside the skew) is taken
FUT=f0000000-0000-4000-8000-0000000000f1
IN=f0000000-0000-4000-8000-0000000000f2
fut() { SAGACMD_STARTED_MS=$1 "$SAGA_BIN_DIR/sagacmd" "$STOCK_URL" reserve "$2" A1 1 || true; }
now_ms=$(psql_db sagas_stock "SELECT (extract(epoch FROM now()) * 1000)::bigint")
assert_eq "a start in the year 3000" "FAILED_PRECONDITION past_horizon -" "$(fut 32503680000000 "$FUT")"
assert_eq "a start at INT64_MAX" "FAILED_PRECONDITION past_horizon -" "$(fut 9223372036854775807 "$FUT")"
assert_eq "a start 6 minutes ahead" "FAILED_PRECONDITION past_horizon -" "$(fut $((now_ms + 360000)) "$FUT")"
assert_eq "no record of the refused ones" "0" "$(psql_db sagas_stock "SELECT count(*) FROM reservations WHERE saga_id = '$FUT'")"
assert_eq "each refusal says why" "3" "$(log_count stockd "more than --max-clock-skew ahead")"
assert_eq "a start 1 minute ahead" "OK - 1" "$(fut $((now_ms + 60000)) "$IN")"
psql_db sagas_stock "DELETE FROM reservations WHERE saga_id = '$IN'" >/dev/null
psql_db sagas_stock "UPDATE stock SET on_hand = on_hand + 1 WHERE sku = 'A1'" >/dev/null

# counted in the metrics and the log, once each
for d in stockd:reservations:3 paymentd:charges:2 shippingd:shipments:1; do
  IFS=: read -r name table n <<<"$d"
  assert_eq "$name: sagas_retention_deleted_total" "$n" \
    "$(stack_metrics "$name" | awk -v t="sagas_retention_deleted_total{table=\"$table\"}" '$1 == t {print $2}')"
done
assert_eq "stockd: the admin's pass logged" "1" "$(log_count stockd "retention (an admin's pass): deleted 3 reservations in")"
assert_eq "stockd: no background job" "0" "$(log_count stockd "now leading the retention")"
assert_eq "paymentd: the job's pass logged" "1" "$(log_count paymentd "retention: deleted 2 charges in")"
assert_eq "shippingd: the job's pass logged" "1" "$(log_count shippingd "retention: deleted 1 shipments in")"
finish
