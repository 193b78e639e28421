#!/usr/bin/env bash
# Fault 9: the orchestrator dies right after sending ChargePayment, before
# storing the reply, and is restarted: it resumes the saga from its row and
# re-sends the charge under the same saga id (rule 9); the payment daemon
# answers from its record. One charge, S COMPLETED.
source "$(dirname "$0")/head.inc"
# the step deadline (10 s) is far beyond the lease (request timeout 500 ms
# + 1 s) so the restarted orchestrator re-sends the charge rather than
# compensating a step it cannot see the outcome of (rule 4)
ORCH_FLAGS="$FAST_ORCH --step-timeout 10000 --fault exit_after_send:ChargePayment:count=1"
stack_start
fixture
orch_pid=${STACK_PID_OF[orchestratord]}
ctl start c1 X 2 30.00 --id "$S" >/dev/null
wait "$orch_pid" && rc=0 || rc=$?
assert_eq "orchestrator died at the fault point" "86" "$rc"
assert_eq "row still CHARGING" "CHARGING|" "$(saga_state "$S")"
assert_eq "the charge was applied" "CHARGED" "$(charge "$S")"
ORCH_FLAGS="$FAST_ORCH --step-timeout 10000"
stack_start_orchestrator
wait_state "$S" COMPLETED 30
assert_eq "S" "COMPLETED|" "$(saga_state "$S")"
assert_eq "charge re-sent and answered from the record" "1" \
  "$(log_count paymentd 'charge customer=c1 amount=3000: CHARGED, balance 7000')"
assert_eq "one charge" "1" "$(psql_db sagas_payment "SELECT count(*) FROM charges WHERE status = 'CHARGED'")"
assert_eq "c1" "7000" "$(balance c1)"
assert_eq "X" "8" "$(on_hand X)"
check_invariants "X:10" "c1:10000"
finish
