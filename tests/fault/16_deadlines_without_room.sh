#!/usr/bin/env bash
# Fault 16: stockd hangs (SIGSTOP) while 60 sagas start on an orchestrator
# with room for 4 commands in flight and a 3 s request timeout. Every slot
# is held by a command to the hung stockd until it times out, yet the step
# deadlines (1 s) are acted on in time (saga-semantics.md rule 4): with no
# room, the sweep still writes the deadline transitions (RESERVING ->
# RELEASING) and leaves the releases due for when room frees. Before, a
# deadline waited for a slot and the last saga left RESERVING ~40 s late
# (found by the attack helper). Then stockd resumes and every saga ends
# CANCELLED with stock and money to the unit.
source "$(dirname "$0")/head.inc"
ORCH_FLAGS="--max-inflight 4 --request-timeout 3000 --step-timeout 1000 --backoff-base 50 --backoff-cap 1000 --sweep-interval 50 --req-resend 0"
stack_start
hang_and_start stockd 60 g G
# the last saga's deadline is 1 s after it was stored; a few sweeps more
wait_none_in RESERVING 8
assert_eq "sagas in RESERVING 8 s after the last start, stockd hung" "0" "$(in_state RESERVING)"
kill -CONT "$HUNG_PID"
wait_all_terminal 180 || true
assert_eq "sagas" "60 CANCELLED" \
  "$(psql_db sagas_orchestrator "SELECT count(*) || ' ' || string_agg(DISTINCT state, ',') FROM sagas")"
assert_eq "G on hand" "1000" "$(on_hand G)"
assert_eq "g balance" "10000000" "$(balance g)"
check_invariants "G:1000" "g:10000000"
finish
