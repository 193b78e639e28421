#!/usr/bin/env bash
# Fault 15: paymentd hangs (SIGSTOP) while 60 sagas start on an orchestrator
# with room for 8 commands in flight. Sagas retrying a charge or a refund
# every second must not keep older due work (first tries waiting for room,
# whose step deadlines pass meanwhile) out of that room: the sweep takes
# the earliest due first (saga-semantics.md rule 3, nothing dropped
# silently), so every saga leaves RESERVING within seconds, cancelled by
# its deadline. Then paymentd resumes and every saga ends: CANCELLED, or
# COMPLETED if its charge was in flight within its deadline; stock and
# money to the unit. (Found by the attack helper: a sweep that
# took retries first, or the oldest saga first, left sagas in RESERVING for
# minutes, their deadlines long past.)
source "$(dirname "$0")/head.inc"
ORCH_FLAGS="--max-inflight 8 --request-timeout 1000 --backoff-base 50 --backoff-cap 1000 --step-timeout 1000 --sweep-interval 50 --req-resend 0"
stack_start
hang_and_start paymentd 60 f F
wait_none_in RESERVING 30
assert_eq "sagas in RESERVING 30 s after paymentd hung" "0" "$(in_state RESERVING)"
kill -CONT "$HUNG_PID"
wait_all_terminal 180 || true
# a saga whose charge was in flight, within its deadline, when paymentd
# resumed completes; every other one is CANCELLED by its deadline
done=$(in_state COMPLETED)
assert_eq "sagas, all ended" "60" \
  "$(psql_db sagas_orchestrator "SELECT count(*) FROM sagas WHERE state IN ('COMPLETED', 'CANCELLED')")"
assert_eq "at most the 8 in flight completed" "yes" "$([ "$done" -le 8 ] && echo yes || echo "no ($done)")"
assert_eq "F on hand" "$((1000 - done))" "$(on_hand F)"
assert_eq "f balance" "$((10000000 - 100 * done))" "$(balance f)"
check_invariants "F:1000" "f:10000000"
finish
