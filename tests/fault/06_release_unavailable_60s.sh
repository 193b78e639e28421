#!/usr/bin/env bash
# Fault 6: ReleaseStock fails with UNAVAILABLE for 60 s. Retries back off to
# a cap: at most about 10 attempts in that time; the orchestrator's CPU stays
# near idle; S ends CANCELLED once the fault clears.
source "$(dirname "$0")/head.inc"
# attention after 3 tries, then one try per backoff cap (8 s): 3 + 60/8 ~ 10
ORCH_FLAGS="$FAST_ORCH --backoff-base 50 --backoff-cap 8000 --attention-after 3"
STOCK_FLAGS="--fault unavailable:ReleaseStock"
stack_start
fixture
orch_pid=${STACK_PID_OF[orchestratord]}
cpu_ticks() { awk '{print $14 + $15}' "/proc/$orch_pid/stat"; }
# 150.00 > c1's 100.00: the charge is declined, so the stock must be released
ctl start c1 X 2 150.00 --id "$S" >/dev/null
wait_state "$S" RELEASING 20
t0=$(cpu_ticks)
start=$SECONDS
while [ $((SECONDS - start)) -lt 60 ]; do
  assert_eq "not terminal while the release is owed" "RELEASING" "$(psql_db sagas_orchestrator "SELECT state FROM sagas WHERE saga_id = '$S'")" >/dev/null
  sleep 5
done
t1=$(cpu_ticks)
tries=$(log_count stockd 'fault injected: unavailable on ReleaseStock')
echo "ReleaseStock attempts in 60 s: $tries; orchestrator CPU: $((t1 - t0)) ticks"
assert_eq "at most about 10 attempts in 60 s" "yes" "$([ "$tries" -ge 4 ] && [ "$tries" -le 12 ] && echo yes || echo "no ($tries)")"
# near idle: under 3 s of CPU (300 ticks at 100 Hz) in 60 s, i.e. < 5 %
assert_eq "orchestrator CPU near idle" "yes" "$([ $((t1 - t0)) -lt 300 ] && echo yes || echo "no ($((t1 - t0)) ticks)")"
ctl fault clear stock >/dev/null
wait_state "$S" CANCELLED 30
assert_eq "S" "CANCELLED|payment_declined" "$(saga_state "$S")"
assert_eq "X" "10" "$(on_hand X)"
assert_eq "c1" "10000" "$(balance c1)"
assert_eq "reservation" "RELEASED" "$(reservation "$S")"
check_invariants "X:10" "c1:10000"
finish
