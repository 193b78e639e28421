#!/usr/bin/env bash
# Fault 8: a duplicated reply and a duplicated StartSaga cause no second
# transition and no second saga.
source "$(dirname "$0")/head.inc"
ORCH_FLAGS="$FAST_ORCH --fault duplicate_reply"
stack_start
fixture
ctl start c1 X 2 30.00 --id "$S" >/dev/null
ctl start c1 X 2 30.00 --id "$S" >/dev/null # the duplicated StartSaga
wait_state "$S" COMPLETED 20
ctl start c1 X 2 30.00 --id "$S" >/dev/null # and once more after the end
assert_eq "replies were duplicated" "yes" "$([ "$(log_count orchestratord 'fault injected: duplicate_reply')" -ge 2 ] && echo yes || echo no)"
assert_eq "one saga" "1" "$(psql_db sagas_orchestrator "SELECT count(*) FROM sagas")"
assert_eq "history: one row per transition" "1:RESERVING 2:CHARGING 3:SHIPPING 4:COMPLETED" \
  "$(psql_db sagas_orchestrator "SELECT string_agg(version || ':' || to_state, ' ' ORDER BY version) FROM saga_history WHERE saga_id = '$S'")"
assert_eq "version" "4" "$(psql_db sagas_orchestrator "SELECT version FROM sagas WHERE saga_id = '$S'")"
assert_eq "c1" "7000" "$(balance c1)"
assert_eq "X" "8" "$(on_hand X)"
assert_eq "one charge" "1" "$(psql_db sagas_payment "SELECT count(*) FROM charges")"
check_invariants "X:10" "c1:10000"
finish
