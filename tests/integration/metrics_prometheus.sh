#!/usr/bin/env bash
# Metrics (docs/operations.md, "Metrics") read by a real Prometheus: it
# scrapes all four daemons once a second during the seed lab, and PromQL
# through its HTTP API returns exactly what the databases hold: 3 sagas
# started, 1 COMPLETED, 2 CANCELLED by their reasons, 1 charge applied and
# 1 declined, 1 release, 1 shipment. Every daemon's page passes
# `promtool check metrics`, and no label carries a saga id, a customer or a
# sku.
set -euo pipefail
here=$(dirname "$0")
source "$here/../lib/stack.sh"
source "$here/../lib/seed_lab.sh"
source "$here/../lib/prom.sh"

ORCH_FLAGS="--gauge-interval 300"
stack_start
prom_start
targets_up() { [ "$(prom_query 'count(up == 1)')" = 4 ]; }
wait_until 60 targets_up || { echo "targets: $(curl -s "$PROM_URL/api/v1/targets" | head -c 2000)" >&2; exit 1; }
assert_eq "targets up" 4 "$(prom_query 'count(up == 1)')"

seed_lab_seed
seed_lab_orders >/dev/null
seed_lab_assert

o=sagas_orchestrator
# wait for a scrape after the last saga ended
scraped() { [ "$(prom_query 'sum(sagas_finished_total)')" = 3 ]; }
wait_until 30 scraped || true
assert_eq "started = the sagas table" "$(psql_db $o "SELECT count(*) FROM sagas")" \
  "$(prom_query 'sum(sagas_started_total)')"
assert_eq "finished COMPLETED = the table" "$(psql_db $o "SELECT count(*) FROM sagas WHERE state = 'COMPLETED'")" \
  "$(prom_query 'sum(sagas_finished_total{state="COMPLETED"})')"
for r in out_of_stock payment_declined; do
  assert_eq "finished CANCELLED $r = the table" \
    "$(psql_db $o "SELECT count(*) FROM sagas WHERE state = 'CANCELLED' AND reason = '$r'")" \
    "$(prom_query "sum(sagas_finished_total{state=\"CANCELLED\",reason=\"$r\"})")"
done
assert_eq "saga durations counted" 3 "$(prom_query 'sum(sagas_duration_seconds_count)')"
assert_eq "charges applied = CHARGED records" \
  "$(psql_db sagas_payment "SELECT count(*) FROM charges WHERE status = 'CHARGED'")" \
  "$(prom_query 'sum(sagas_participant_commands_total{command="ChargePayment",outcome="applied"})')"
assert_eq "charges refused = DECLINED records" \
  "$(psql_db sagas_payment "SELECT count(*) FROM charges WHERE status = 'DECLINED'")" \
  "$(prom_query 'sum(sagas_participant_commands_total{command="ChargePayment",outcome="refused"})')"
assert_eq "releases applied = RELEASED records" \
  "$(psql_db sagas_stock "SELECT count(*) FROM reservations WHERE status = 'RELEASED'")" \
  "$(prom_query 'sum(sagas_participant_commands_total{command="ReleaseStock",outcome="applied"})')"
assert_eq "shipments applied = shipments" \
  "$(psql_db sagas_shipping "SELECT count(*) FROM shipments")" \
  "$(prom_query 'sum(sagas_participant_commands_total{command="ShipOrder",outcome="applied"})')"
assert_eq "reserves: 2 applied, 1 refused" "2 1" \
  "$(prom_query 'sum(sagas_participant_commands_total{command="ReserveStock",outcome="applied"})') $(prom_query 'sum(sagas_participant_commands_total{command="ReserveStock",outcome="refused"})')"
assert_eq "the orchestrator's view of the same commands" "2 1 1 1 1 1" \
  "$(for q in 'command="ReserveStock",result="ok"' 'command="ReserveStock",result="refused"' \
    'command="ChargePayment",result="ok"' 'command="ChargePayment",result="refused"' \
    'command="ReleaseStock",result="ok"' 'command="ShipOrder",result="ok"'; do
    printf '%s ' "$(prom_query "sum(sagas_commands_total{$q})")"; done | sed 's/ $//')"
assert_eq "StartSaga calls answered OK" 3 \
  "$(prom_query 'sum(sagas_rpc_requests_total{job="sagas-orchestrator",method="/sagas.v1.Orchestrator/StartSaga",code="OK"})')"
assert_eq "no duplicates, no tombstones, nothing refused" "0 0 0" \
  "$(prom_query 'sum(sagas_participant_duplicates_total)') $(prom_query 'sum(sagas_participant_tombstones_total)') $(prom_query 'sum(sagas_rpc_refusals_total)')"
assert_eq "commits timed on every daemon" 4 "$(prom_query 'count(sagas_db_commit_seconds_count > 0)')"
# the database gauges (the one orchestrator reads them): nothing open now
assert_eq "open sagas, attention, overdue" "0 0 0" \
  "$(prom_query 'sum(sagas_open)') $(prom_query 'sagas_attention') $(prom_query 'sum(sagas_overdue)')"
assert_eq "overdue by its four reasons, open by its five states" "4 5" \
  "$(prom_query 'count(sagas_overdue)') $(prom_query 'count(sagas_open)')"
assert_eq "the gauges were read within 5 s" 1 \
  "$(prom_query 'time() - sagas_db_gauges_timestamp_seconds < bool 5')"
assert_eq "build info of every daemon" 4 "$(prom_query 'count(sagas_build_info == 1)')"

ids="$SEED_SAGA_1|$SEED_SAGA_2|$SEED_SAGA_3"
for d in orchestratord stockd paymentd shippingd; do
  stack_metrics "$d" >"$STACK_DIR/$d.metrics"
  assert_eq "$d: promtool check metrics" "" "$(promtool check metrics <"$STACK_DIR/$d.metrics" 2>&1)"
  assert_eq "$d: no saga id, customer or sku in a label" 0 \
    "$(grep -v '^#' "$STACK_DIR/$d.metrics" | grep -cE "$ids|=\"(ali|sara|A1)\"" || true)"
done
finish
