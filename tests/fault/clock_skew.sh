#!/usr/bin/env bash
# clock_skew.sh DAEMON OFFSET (rules T1, T3): DAEMON (orchestratord, stockd
# or paymentd) runs with its wall clock moved by OFFSET (libfaketime, "+10m"
# or "-1h"; its monotonic clock untouched); PostgreSQL, sagactl and the other
# daemons keep the real clock. Everything must end as with correct clocks:
#   1. the seed lab: the same states, A1 on hand 3, ali 300.00, one charge;
#   2. every ChargePayment reply dropped: REFUNDING one step timeout after
#      CHARGING (history times, the database's clock), not the skew;
#   3. ReserveStock lost and the orchestrator killed (-9) and restarted:
#      RELEASING one step timeout after the saga was created (plus a sweep
#      interval and 500 ms of slack), or, when the restarted orchestrator
#      was back only after the deadline (a slow start: ASan), one sweep and
#      the slack after it was back; never before the deadline.
# Before: an orchestrator 10 min ahead refused every sagactl call (the
# envelope's absolute deadline), one 1 h behind had every command refused
# by the participants, and one behind PostgreSQL resumed a saga an hour late.
source "$(dirname "$0")/head.inc"
source "$here/../lib/seed_lab.sh"
who=${1:?usage: clock_skew.sh DAEMON OFFSET}
offset=${2:?usage: clock_skew.sh DAEMON OFFSET}
STEP=2000
SWEEP=50
SLACK=500
wrap=$(skewed_clock "$offset")
case $who in
  orchestratord) ORCH_WRAP=$wrap ;;
  stockd) STOCK_WRAP=$wrap ;;
  paymentd) PAYMENT_WRAP=$wrap ;;
  *) echo "clock_skew: unknown daemon $who" >&2; exit 2 ;;
esac
ORCH_FLAGS="--step-timeout $STEP --request-timeout 1000 --backoff-base 20 --backoff-cap 500 --sweep-interval $SWEEP"
stack_start
echo "$who runs with its clock at $offset"

# the wrapper works: the skewed daemon's log stamps are off by the offset
if [ "$who" = orchestratord ]; then
  _warned() { [ "$(log_count orchestratord "the database's: sagas keep the database's time")" -ge 1 ]; }
  assert_eq "the orchestrator saw the skew and said so" "ok" "$(wait_until 10 _warned && echo ok)"
fi

# 1. the seed lab
seed_lab_seed
seed_lab_orders >/dev/null || true
seed_lab_assert

# in_window WHAT MS: MS must lie in [STEP - 100, STEP + SWEEP + SLACK]
in_window() {
  echo "$1: $2 ms (step timeout $STEP ms)"
  assert_eq "$1 within [$((STEP - 100)), $((STEP + SWEEP + SLACK))] ms" "yes" \
    "$([ "$2" -ge $((STEP - 100)) ] && [ "$2" -le $((STEP + SWEEP + SLACK)) ] && echo yes || echo "no ($2 ms)")"
}
at_of() { # ID STATE: ms since the epoch of the transition into STATE
  psql_db sagas_orchestrator "SELECT (extract(epoch FROM at) * 1000)::bigint FROM saga_history \
    WHERE saga_id = '$1' AND to_state = '$2' AND (from_state IS NULL OR from_state <> to_state)"
}

# 2. ChargePayment's replies dropped (every try's)
S2=5a9a5a9a-0000-4000-8000-000000000002
fixture
ctl fault set payment drop_reply --method ChargePayment >/dev/null
ctl start c1 X 2 30.00 --id "$S2" >/dev/null
wait_state "$S2" CANCELLED 20
ctl fault clear payment >/dev/null
assert_eq "S2" "CANCELLED|timeout" "$(saga_state "$S2")"
assert_eq "S2 path" "RESERVING>CHARGING>REFUNDING>RELEASING>CANCELLED" "$(path_of "$S2")"
in_window "CHARGING to REFUNDING" $(( $(at_of "$S2" REFUNDING) - $(at_of "$S2" CHARGING) ))

# 3. a lost ReserveStock, and the orchestrator killed and restarted
S3=5a9a5a9a-0000-4000-8000-000000000003
ctl fault set stock drop_request --method ReserveStock --count 1 >/dev/null
ctl start c1 X 1 10.00 --id "$S3" >/dev/null
_dropped() { [ "$(log_count stockd 'fault injected: drop_request')" -ge 1 ]; }
wait_until 10 _dropped
stack_kill orchestratord KILL
stack_start_orchestrator
back_ms=$(psql_db sagas_orchestrator "SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint")
wait_state "$S3" CANCELLED 20
assert_eq "S3" "CANCELLED|timeout" "$(saga_state "$S3")"
assert_eq "S3 path" "RESERVING>RELEASING>CANCELLED" "$(path_of "$S3")"
created=$(at_of "$S3" RESERVING)
took=$(($(at_of "$S3" RELEASING) - created))
due=$((back_ms - created > STEP ? back_ms - created : STEP)) # the deadline, or when it was back
echo "created to RELEASING after the restart: $took ms (step timeout $STEP ms, back after $((back_ms - created)) ms)"
assert_eq "created to RELEASING after the restart within [$((STEP - 100)), max(step, back) + $((SWEEP + SLACK))] ms" "yes" \
  "$([ "$took" -ge $((STEP - 100)) ] && [ "$took" -le $((due + SWEEP + SLACK)) ] && echo yes || echo "no ($took ms, due $due)")"

assert_eq "X" "10" "$(on_hand X)"
assert_eq "c1" "10000" "$(balance c1)"
check_invariants "A1:5 X:10" "ali:50000 sara:2000 c1:10000"
finish
