#!/usr/bin/env bash
# Fault 4: ReserveStock is never delivered. The release succeeds on its first
# try as an early compensation, S ends CANCELLED within the deadline plus one
# retry interval, and replaying the lost ReserveStock later reserves nothing.
source "$(dirname "$0")/head.inc"
ORCH_FLAGS="$FAST_ORCH --step-timeout 1000 --request-timeout 5000"
STOCK_FLAGS="--fault drop_request:ReserveStock:count=1"
stack_start
fixture
ctl start c1 X 2 30.00 --id "$S" >/dev/null
wait_state "$S" CANCELLED 20
assert_eq "S" "CANCELLED|timeout" "$(saga_state "$S")"
assert_eq "path" "RESERVING>RELEASING>CANCELLED" "$(path_of "$S")"
assert_eq "release on its first try" "0" "$(psql_db sagas_orchestrator \
  "SELECT count(*) FROM saga_history WHERE saga_id = '$S' AND event IN ('transient', 'attention')")"
assert_eq "early compensation recorded a tombstone" "TOMBSTONE" "$(reservation "$S")"
# deadline (1000 ms) + one retry interval (backoff cap 500 ms) + the sweep
# (50 ms) and the database round trips: well under 2500 ms
elapsed=$(psql_db sagas_orchestrator "SELECT (extract(epoch FROM updated_at - created_at) * 1000)::int FROM sagas WHERE saga_id = '$S'")
assert_eq "cancelled within deadline + retry interval" "yes" "$([ "$elapsed" -le 2500 ] && echo yes || echo "no ($elapsed ms)")"
assert_eq "replayed ReserveStock refused" "ABORTED tombstone -" \
  "$(SAGACMD_STARTED_MS=$(started_of "$S") "$SAGA_BIN_DIR/sagacmd" "$STOCK_URL" reserve "$S" X 2 || true)"
assert_eq "X" "10" "$(on_hand X)"
assert_eq "c1" "10000" "$(balance c1)"
check_invariants "X:10" "c1:10000"
finish
