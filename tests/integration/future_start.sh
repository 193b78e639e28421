#!/usr/bin/env bash
# A saga whose start is ahead of the participants' clocks by more than
# --max-clock-skew (docs/saga-semantics.md, "Retention", rule R1): the
# orchestrator's database clock an hour ahead when the saga started (its
# created_at moved forward by SQL while ReserveStock fails). stockd refuses
# the next try past_horizon, without effect, saying the start is ahead; the
# orchestrator parks the saga (flagged, left in RESERVING, never due: a
# refused retry may follow a try that was applied, so it is never a
# cancel), with one WARNING and no "try again" line. Taken instead, the
# command would stay young for ever and a late copy would be applied again
# once its record is deleted (rule R2).
set -euo pipefail
here=$(dirname "$0")
source "$here/../lib/stack.sh"
source "$here/../lib/fault.sh"

STACK_FAULTS=1
ORCH_FLAGS="--step-timeout 30000 --request-timeout 300 --backoff-base 100 --backoff-cap 300 --sweep-interval 50"
stack_start
ctl stock set A1 10 >/dev/null
ctl deposit ali 500.00 >/dev/null
ID=a4ead000-0000-4000-8000-000000000001
ctl fault set stock unavailable --method ReserveStock --count 100000 >/dev/null
ctl start ali A1 1 10.00 --id "$ID" >/dev/null
failed_once() { [ "$(log_count orchestratord "ReserveStock failed (UNAVAILABLE")" -ge 1 ]; }
wait_until 20 failed_once
psql_db sagas_orchestrator "UPDATE sagas SET created_at = now() + interval '1 hour' WHERE saga_id = '$ID'" >/dev/null
ctl fault clear stock >/dev/null
parked() { [ "$(psql_db sagas_orchestrator "SELECT attention FROM sagas WHERE saga_id = '$ID'")" = t ]; }
wait_until 20 parked
assert_eq "the saga parked in RESERVING" "RESERVING|t|past_horizon|" \
  "$(psql_db sagas_orchestrator "SELECT state, attention, reason, next_attempt_at FROM sagas WHERE saga_id = '$ID'")"
assert_eq "nothing reserved" "10|0" \
  "$(psql_db sagas_stock "SELECT on_hand FROM stock WHERE sku = 'A1'")|$(psql_db sagas_stock "SELECT count(*) FROM reservations")"
assert_eq "stockd says the start is ahead" "1" "$(log_count stockd "more than --max-clock-skew ahead")"
assert_eq "counted as past_horizon" "1" "$(stack_metrics stockd | awk '
  /^sagas_participant_commands_total\{command="ReserveStock",outcome="past_horizon"/ {print $2}')"
assert_eq "one WARNING of the park" "1" "$(log_count orchestratord "saga needs attention: past the retention horizon")"
assert_eq "no try announced after it" "0" "$(log_count orchestratord "(FAILED_PRECONDITION past_horizon), try")"
sleep 1 # never due again
assert_eq "not sent again" "1" "$(log_count stockd "refused ReserveStock")"
finish
