#!/usr/bin/env bash
# The alert rules end to end (deploy/prometheus/sagas.rules.yml) in a real
# Prometheus: a charged order's charge is applied and its reply lost with
# paymentd (it exits after the commit, fault 1); at the step deadline the
# saga refunds, and with paymentd still down its RefundPayment keeps failing
# until the saga is flagged for attention. sagas_attention (read by the
# elected orchestrator) equals the database's count, 1, and
# SagaNeedsAttention fires; paymentd back, the saga ends CANCELLED
# (refunded, released), the gauge reads 0 and the alert resolves. The rules
# are loaded as shipped, with their `for:` durations cut to 1s so that the
# test needs no minutes (their expressions are the ones under test).
# Also: a second orchestrator exports none of the database gauges (one
# orchestrator reads them), and takes them over when the first is killed.
set -euo pipefail
here=$(dirname "$0")
source "$here/../lib/stack.sh"
source "$here/../lib/fault.sh"
source "$here/../lib/prom.sh"
STACK_FAULTS=1
ORCH_FLAGS="$FAST_ORCH --attention-after 3 --gauge-interval 300"
PAYMENT_FLAGS="--fault exit_after_commit:ChargePayment:count=1"
stack_start
stack_start_orchestrator_as orch2
sed -E 's/^( *)for: .*/\1for: 1s/' "$STACK_ROOT/deploy/prometheus/sagas.rules.yml" >"$STACK_DIR/rules.yml"
prom_start "$STACK_DIR/rules.yml"
targets_up() { [ "$(prom_query 'count(up == 1)')" = 5 ]; }
wait_until 60 targets_up
assert_eq "targets up" 5 "$(prom_query 'count(up == 1)')"
gauges_from_one() { [ "$(prom_query 'count(sagas_db_gauges_timestamp_seconds)')" = 1 ]; }
wait_until 30 gauges_from_one || true
assert_eq "one orchestrator exports the database gauges" 1 "$(prom_query 'count(sagas_db_gauges_timestamp_seconds)')"
# (SagaGaugesStale may fire while no gauge was read yet, the first seconds:
# its `for:` is cut to 1 s here; it resolves at the next evaluation)
no_alerts() { [ -z "$(prom_alerts)" ]; }
wait_until 30 no_alerts || true
assert_eq "healthy: no alert firing" "" "$(prom_alerts)"

S=aaaaaaaa-0000-4000-8000-000000000021
fixture
ctl start c1 X 2 30.00 --id "$S" >/dev/null
wait_until 20 test -n "$(log_count paymentd 'fault injected: exit_after_commit')"
wait_daemon_exit paymentd 20 || true
assert_eq "the charge was committed" CHARGED "$(charge "$S")"
wait_state "$S" REFUNDING 20
flagged() { [ "$(psql_db sagas_orchestrator "SELECT attention FROM sagas WHERE saga_id = '$S'")" = t ]; }
wait_until 60 flagged
db_attention=$(psql_db sagas_orchestrator "SELECT count(*) FROM sagas WHERE attention AND state NOT IN ('COMPLETED','CANCELLED')")
assert_eq "the database: 1 saga needs attention" 1 "$db_attention"
gauge_is() { [ "$(prom_query 'max(sagas_attention)')" = "$1" ]; }
wait_until 30 gauge_is 1 || true
assert_eq "sagas_attention = the database" "$db_attention" "$(prom_query 'max(sagas_attention)')"
assert_eq "open sagas: 1 REFUNDING" 1 "$(prom_query 'max(sagas_open{state="REFUNDING"})')"
firing() { grep -q "^$1" <<<"$(prom_alerts)"; }
wait_until 30 firing SagaNeedsAttention || true
assert_eq "SagaNeedsAttention fires" "SagaNeedsAttention{}" "$(prom_alerts | grep '^SagaNeedsAttention' || true)"
wait_until 30 firing 'SagaDaemonDown{instance=.*job=sagas-payment' || true
assert_eq "SagaDaemonDown fires for paymentd" 1 "$(prom_alerts | grep -c '^SagaDaemonDown{.*job=sagas-payment' || true)"
# the counter is read as Prometheus last scraped it: wait for a scrape after
# the third failed refund instead of reading once
refunds_failed() { prom_query 'sum(sagas_commands_total{command="RefundPayment",result=~"unreachable|timeout"})'; }
refunds_counted() { awk 'BEGIN{exit !(ARGV[1] >= 3)}' "$(refunds_failed)"; }
wait_until 30 refunds_counted || true
assert_eq "the refunds failing were counted" yes \
  "$(refunds_counted && echo yes || echo no)"

PAYMENT_FLAGS=""
stack_start_payment
wait_state "$S" CANCELLED 60
assert_eq "S refunded and released" "CANCELLED|timeout REFUNDED RELEASED" "$(saga_state "$S") $(charge "$S") $(reservation "$S")"
wait_until 30 gauge_is 0 || true
assert_eq "sagas_attention back to 0" 0 "$(prom_query 'max(sagas_attention)')"
not_firing() { ! grep -q "^$1" <<<"$(prom_alerts)"; }
wait_until 30 not_firing SagaNeedsAttention || true
wait_until 30 not_firing SagaDaemonDown || true
# (CompensationsRetrying goes on over its rate window: the refunds did fail)
assert_eq "SagaNeedsAttention and SagaDaemonDown resolved" "" \
  "$(prom_alerts | grep -E '^(SagaNeedsAttention|SagaDaemonDown)' || true)"

# the gauges move with the lock: kill the exporting orchestrator
exporter=$(curl -sf "$PROM_URL/api/v1/query" --data-urlencode 'query=sagas_db_gauges_timestamp_seconds' | jq -r '.data.result[0].metric.instance')
victim=orchestratord
[ "${STACK_METRICS_URL_OF[orch2]#http://}" = "$exporter" ] && victim=orch2
stack_kill "$victim" KILL
other_exports() {
  curl -sf "$PROM_URL/api/v1/query" --data-urlencode 'query=sagas_db_gauges_timestamp_seconds > time() - 3' |
    jq -e --arg e "$exporter" '.data.result | length == 1 and .[0].metric.instance != $e' >/dev/null
}
wait_until 30 other_exports || true
assert_eq "the other orchestrator exports the gauges after a kill -9" yes "$(other_exports && echo yes || echo no)"
finish
