#!/usr/bin/env bash
# Participant retention (issue 23; docs/participants.md, "Retention"), on
# real daemons with the default --retention and --max-clock-skew (7 days,
# 5 minutes) and a pass every 200 ms: the seed lab's records, moved back
# past the cutoff (7 days 10 minutes), are deleted by each participant's
# elected job and folded into <records>_retired, exactly; a later saga's
# records, moved back to 1 minute inside the cutoff, stay; stock and money
# conservation hold before and after, counting the summaries.
set -euo pipefail
here=$(dirname "$0")
source "$here/../lib/stack.sh"
source "$here/../lib/fault.sh"
source "$here/../lib/seed_lab.sh"

STOCK_FLAGS="--retention-interval 200"
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
wait_until 20 only_later sagas_stock reservations || true
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

# counted in the metrics and the log, once each
for d in stockd:reservations:3 paymentd:charges:2 shippingd:shipments:1; do
  IFS=: read -r name table n <<<"$d"
  assert_eq "$name: sagas_retention_deleted_total" "$n" \
    "$(stack_metrics "$name" | awk -v t="sagas_retention_deleted_total{table=\"$table\"}" '$1 == t {print $2}')"
  assert_eq "$name: the log line" "1" "$(log_count "$name" "retention: deleted $n $table in")"
done
finish
