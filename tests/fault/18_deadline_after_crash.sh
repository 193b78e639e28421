#!/usr/bin/env bash
# Fault 18 (rule T5): a step timeout shorter than the request timeout is a
# valid setting. ReserveStock is lost and the orchestrator is killed (-9)
# right after storing S, then restarted. The row's lease never runs past the
# step deadline (checked in the row while the orchestrator is down), so the
# restarted orchestrator's sweep finds the deadline on time: S moves to
# RELEASING at the stored deadline or after it, never before; how late is
# printed (one sweep interval on a quiet machine) and only bounded by STALL,
# so that a loaded machine's stalls fail nothing. (Before rule T5 the lease,
# request timeout + 1 s = 6 s, hid the 3 s deadline: 3 s late; the row's
# lease assertion catches that.)
source "$(dirname "$0")/head.inc"
SWEEP=50
STALL=60000 # ms
ORCH_FLAGS="--step-timeout 3000 --request-timeout 5000 --backoff-base 20 --backoff-cap 500 --sweep-interval $SWEEP"
STOCK_FLAGS="--fault drop_request:ReserveStock:count=1"
stack_start
fixture
ctl start c1 X 2 30.00 --id "$S" >/dev/null
_dropped() { [ "$(log_count stockd 'fault injected: drop_request')" -ge 1 ]; }
wait_until 10 _dropped
stack_kill orchestratord KILL
deadline=$(psql_db sagas_orchestrator \
  "SELECT (extract(epoch FROM step_deadline) * 1000)::bigint FROM sagas WHERE saga_id = '$S'")
assert_eq "stored RESERVING" "RESERVING|" "$(saga_state "$S")"
assert_eq "the lease ends at the step deadline at the latest" "t" "$(psql_db sagas_orchestrator \
  "SELECT next_attempt_at <= step_deadline FROM sagas WHERE saga_id = '$S'")"
stack_start_orchestrator
wait_state "$S" CANCELLED 90
assert_eq "S" "CANCELLED|timeout" "$(saga_state "$S")"
assert_eq "path" "RESERVING>RELEASING>CANCELLED" "$(path_of "$S")"
late=$(psql_db sagas_orchestrator "SELECT (extract(epoch FROM at) * 1000)::bigint - $deadline \
  FROM saga_history WHERE saga_id = '$S' AND to_state = 'RELEASING'")
echo "RELEASING $late ms after the stored deadline (sweep interval $SWEEP ms)"
assert_eq "deadline fired not before it, under $STALL ms after it" "yes" \
  "$([ "$late" -ge 0 ] && [ "$late" -le $STALL ] && echo yes || echo "no ($late ms)")"
assert_eq "tombstone (the release came first)" "TOMBSTONE" "$(reservation "$S")"
assert_eq "X" "10" "$(on_hand X)"
assert_eq "c1" "10000" "$(balance c1)"
check_invariants "X:10" "c1:10000"
finish
