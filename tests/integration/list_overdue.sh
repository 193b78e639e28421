#!/usr/bin/env bash
# sagactl list --overdue and store_read_gauges (issue 21), on real daemons:
#   - D, a saga whose ReserveStock a delay fault holds past its step
#     deadline while no sweep runs (the orchestrator restarted with a sweep
#     a minute apart: nobody moves D), is listed past_deadline once its
#     deadline is older than --margin, and not with a margin larger than
#     its age;
#   - R, whose charge is declined and whose ReleaseStock keeps failing
#     (an unavailable fault), is listed compensation_failing after 3 tries;
#   - rows written straight into the database (due in an hour, so no sweep
#     touches them): O1 in SHIPPING unchanged for 20 min (stuck), A1
#     flagged, RELEASING with 12 tries and unchanged for 30 min (two
#     reasons), S1 in SHIPPING whose ShipOrder failed 5 tries (retrying: a
#     retriable step retried forever, its row written at each try, so never
#     stuck), P1 in SHIPPING parked past_horizon after 5 tries (not
#     retrying: no next attempt, nothing retries it), S2 re-armed after
#     such a parking, its reason still past_horizon, failing again
#     (retrying), F1 a healthy RESERVING saga and T1 a
#     COMPLETED one with an old deadline (neither listed), and C a
#     completed saga;
#   - the why column, the margins echoed, --stuck-after from the request;
#   - --older-than lists exactly the sagas psql finds older;
#   - store_read_gauges (gauges_probe) counts what psql counts, each
#     overdue saga once in the total.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../lib/stack.sh"
source "$here/../lib/fault.sh"
PROBE=${1:?usage: list_overdue.sh GAUGES_PROBE}
STACK_FAULTS=1
ORCH_FLAGS="$FAST_ORCH --attention-after 100"
stack_start
fixture
ctl stock set Y 10 >/dev/null

C=0d0e0000-0000-4000-8000-00000000000c
R=0d0e0000-0000-4000-8000-00000000000a
D=0d0e0000-0000-4000-8000-00000000000d
A1=0d0e0000-0000-4000-8000-0000000000a1
O1=0d0e0000-0000-4000-8000-0000000000b1
S1=0d0e0000-0000-4000-8000-0000000000b2
P1=0d0e0000-0000-4000-8000-0000000000b3
S2=0d0e0000-0000-4000-8000-0000000000b4
F1=0d0e0000-0000-4000-8000-0000000000f1
T1=0d0e0000-0000-4000-8000-0000000000e1
q() { psql_db sagas_orchestrator "$1"; }

ctl start c1 X 1 10.00 --id "$C" --wait >/dev/null
assert_eq "C completed" "COMPLETED" "$(q "SELECT state FROM sagas WHERE saga_id = '$C'")"

# R: declined (150.00 > c1's 90.00), then its release fails, try after try
ctl fault set stock unavailable --method ReleaseStock >/dev/null
ctl start c1 X 2 150.00 --id "$R" >/dev/null
_r_failing() { [ "$(q "SELECT state = 'RELEASING' AND attempts >= 3 FROM sagas WHERE saga_id = '$R'")" = t ]; }
wait_until 30 _r_failing

# the rows nobody moves
q "INSERT INTO sagas (saga_id, state, customer, sku, qty, amount, attempts, attention,
     next_attempt_at, retry_at, step_deadline, created_at, updated_at, finished)
   VALUES ('$A1', 'RELEASING', 'c9', 'Z', 1, 100, 12, true, now() + interval '1 hour',
           now() + interval '1 hour', NULL, now() - interval '1 hour', now() - interval '30 minutes', false),
          ('$O1', 'SHIPPING', 'c9', 'Z', 1, 100, 0, false, now() + interval '1 hour',
           NULL, NULL, now() - interval '2 days', now() - interval '20 minutes', false),
          ('$S1', 'SHIPPING', 'c9', 'Z', 1, 100, 5, false, now() + interval '1 hour',
           NULL, NULL, now() - interval '2 hours', now(), false),
          ('$P1', 'SHIPPING', 'c9', 'Z', 1, 100, 5, true, NULL,
           NULL, NULL, now() - interval '3 hours', now(), false),
          ('$S2', 'SHIPPING', 'c9', 'Z', 1, 100, 4, false, now() + interval '1 hour',
           NULL, NULL, now() - interval '4 hours', now(), false),
          ('$F1', 'RESERVING', 'c9', 'Z', 1, 100, 0, false, now() + interval '1 hour',
           NULL, now() + interval '1 hour', now() - interval '2 days 1 second', now(), false),
          ('$T1', 'COMPLETED', 'c9', 'Z', 1, 100, 0, false, NULL,
           NULL, now() - interval '1 hour', now() - interval '3 days', now() - interval '3 days', true)" >/dev/null

q "UPDATE sagas SET reason = 'past_horizon' WHERE saga_id IN ('$P1', '$S2')" >/dev/null

# D: the orchestrator restarted with its sweep a minute apart (its first
# sweep runs at start), ReserveStock held 30 s by stockd: D's try times out,
# its retry and its deadline wait for a sweep that does not come in time
stack_kill orchestratord
ORCH_FLAGS="$FAST_ORCH --attention-after 100 --sweep-interval 60000"
stack_start_orchestrator
ctl fault set stock delay --method ReserveStock --count 1 --delay 30000 >/dev/null
ctl start c1 Y 1 1.00 --id "$D" >/dev/null
_d_past() { [ "$(q "SELECT state = 'RESERVING' AND step_deadline < now() - interval '1000 ms' FROM sagas WHERE saga_id = '$D'")" = t ]; }
wait_until 20 _d_past

# listed: newest first, each with why
out=$(ctl list --overdue --margin 1000 --json)
assert_eq "overdue: the sagas and why" \
  "$D:past_deadline $R:compensation_failing $A1:compensation_failing,stuck $S1:retrying $S2:retrying $O1:stuck" \
  "$(jq -r '[.sagas[] | "\(.saga_id):\(.overdue | join(","))"] | join(" ")' <<<"$out")"
assert_eq "overdue: the margins applied" "1000 600000" \
  "$(jq -r '"\(.overdue_margin_ms) \(.stuck_after_ms)"' <<<"$out")"
assert_eq "overdue: no next page" "" "$(jq -r '.next_page_token' <<<"$out")"
assert_eq "D as psql sees it: RESERVING, its deadline passed over 1 s ago" "RESERVING|true" \
  "$(q "SELECT state || '|' || (step_deadline < now() - interval '1000 ms') FROM sagas WHERE saga_id = '$D'")"
assert_eq "R as psql sees it: RELEASING, 3 failed tries or more, no deadline" "RELEASING|true|none" \
  "$(q "SELECT state || '|' || (attempts >= 3) || '|' || coalesce(step_deadline::text, 'none') FROM sagas WHERE saga_id = '$R'")"

# the request's stuck threshold: an hour, so O1 (20 min) and A1's 30 min are not stuck
out=$(ctl list --overdue --margin 1000 --stuck-after 3600000 --json)
assert_eq "overdue, stuck after 1 h" "$D:past_deadline $R:compensation_failing $A1:compensation_failing $S1:retrying $S2:retrying" \
  "$(jq -r '[.sagas[] | "\(.saga_id):\(.overdue | join(","))"] | join(" ")' <<<"$out")"
assert_eq "overdue, stuck after 1 h: echoed" "1000 3600000" \
  "$(jq -r '"\(.overdue_margin_ms) \(.stuck_after_ms)"' <<<"$out")"
# a margin longer than D's lateness: D is not past_deadline
out=$(ctl list --overdue --margin 3600000 --json)
assert_eq "overdue, margin 1 h" "$R $A1 $S1 $S2 $O1" "$(jq -r '[.sagas[].saga_id] | join(" ")' <<<"$out")"
# the orchestrator's margin (60 s by default): D is only seconds late
out=$(ctl list --overdue --json)
assert_eq "overdue, the default margin" "60000 $R $A1 $S1 $S2 $O1" \
  "$(jq -r '"\(.overdue_margin_ms) \([.sagas[].saga_id] | join(" "))"' <<<"$out")"
# the table's why column
out=$(ctl list --overdue --margin 1000)
assert_eq "table: why column" "why" "$(head -2 <<<"$out" | tail -1 | awk '{print $NF}')"
# (the why column is the last)
why_of() { awk -F'|' -v id="$1" 'index($0, id) { print $NF }' <<<"$out" | sed 's/^ *//; s/ *$//'; }
assert_eq "table: D's why" "past_deadline" "$(why_of "$D")"
assert_eq "table: A1's why, with its tries" "compensation_failing: $(q "SELECT attempts FROM sagas WHERE saga_id = '$A1'") tries, stuck" "$(why_of "$A1")"
q "UPDATE sagas SET reason = 'ship_refused' WHERE saga_id = '$S1'" >/dev/null
out=$(ctl list --overdue --margin 1000)
assert_eq "table: S1's why, its tries and last error (a refusal's reason)" "retrying: 5 tries, last error ship_refused" "$(why_of "$S1")"
assert_eq "table: S2's why, the refusal it was parked for" "retrying: 4 tries, last error past_horizon" "$(why_of "$S2")"
q "UPDATE sagas SET reason = '' WHERE saga_id = '$S2'" >/dev/null
out=$(ctl list --overdue --margin 1000)
assert_eq "table: S2's why, no error on its row" "retrying: 4 tries" "$(why_of "$S2")"
assert_eq "overdue in SHIPPING: retrying, stuck; not the parked one" "$S1 $S2 $O1" \
  "$(ctl list --overdue --margin 1000 --state shipping --json | jq -r '[.sagas[].saga_id] | join(" ")')"
# with a state filter and with --attention too (ANDed)
assert_eq "overdue in RELEASING" "$R $A1" \
  "$(ctl list --overdue --margin 1000 --state releasing --json | jq -r '[.sagas[].saga_id] | join(" ")')"
assert_eq "overdue and flagged" "$A1" \
  "$(ctl list --overdue --margin 1000 --attention --json | jq -r '[.sagas[].saga_id] | join(" ")')"

# --older-than: exactly the sagas created more than a day ago, as psql finds them
assert_eq "older than a day" \
  "$(q "SELECT string_agg(saga_id::text, ' ' ORDER BY created_at DESC, saga_id DESC) FROM sagas WHERE created_at < now() - interval '1 day'")" \
  "$(ctl list --older-than 86400000 --json | jq -r '[.[].saga_id] | join(" ")')"
assert_eq "older than a day: the three" "$O1 $F1 $T1" \
  "$(ctl list --older-than 86400000 --json | jq -r '[.[].saga_id] | join(" ")')"
assert_eq "older than a day, overdue" "$O1" \
  "$(ctl list --older-than 86400000 --overdue --margin 1000 --json | jq -r '[.sagas[].saga_id] | join(" ")')"

# history shows the tries of the current step, from the saga's row
iso_ms() { local ms=$1; date -u -d "@$((ms / 1000)).$(printf '%03d' $((ms % 1000)))" +%Y-%m-%dT%H:%M:%S.%3NZ; }
ms_of() { q "SELECT (extract(epoch from $2) * 1000)::bigint FROM sagas WHERE saga_id = '$1'"; }
out=$(ctl history "$R")
assert_eq "history R: the current step" "current step: RELEASING, ReleaseStock" "$(grep '^current step' <<<"$out")"
assert_eq "history R: failed tries as stored" "$(q "SELECT attempts FROM sagas WHERE saga_id = '$R'")" \
  "$(awk '$1 == "failed" && $2 == "tries" {print $3}' <<<"$out")"
assert_eq "history R: the last failed try, when its row was written" \
  "$(iso_ms "$(ms_of "$R" updated_at)") (no reply, or a transient error)" \
  "$(sed -n 's/^  last failed   //p' <<<"$out")"
assert_eq "history R: the next try" "$(iso_ms "$(ms_of "$R" next_attempt_at)") (a retry's due time, or the lease of the try in flight)" \
  "$(sed -n 's/^  next try      //p' <<<"$out")"
assert_eq "history R: no step deadline" "none: retried until it succeeds" "$(sed -n 's/^  step deadline //p' <<<"$out")"
out=$(ctl history "$D")
assert_eq "history D: the current step" "current step: RESERVING, ReserveStock" "$(grep '^current step' <<<"$out")"
assert_eq "history D: one failed try (the delayed one timed out)" "1 1" \
  "$(q "SELECT attempts FROM sagas WHERE saga_id = '$D'") $(awk '$1 == "failed" && $2 == "tries" {print $3}' <<<"$out")"
assert_eq "history D: the step deadline" "$(iso_ms "$(ms_of "$D" step_deadline)")" "$(sed -n 's/^  step deadline //p' <<<"$out")"
assert_eq "history A1: flagged" "attention     yes (sagactl retry $A1 re-arms it)" \
  "$(ctl history "$A1" | sed -n 's/^  \(attention.*\)/\1/p')"
assert_eq "history C: finished, no current step" "0" "$(ctl history "$C" | grep -c 'current step' || true)"

# store_read_gauges against psql's own count, with the margins above
conn="$PG_CONN dbname=sagas_orchestrator"
expected=$(q "SELECT s || '=' || (SELECT count(*) FROM sagas WHERE state = s) FROM unnest(array['RESERVING', 'CHARGING', 'REFUNDING', 'RELEASING', 'SHIPPING']) s" | tr '\n' ' ')
expected+=$(q "SELECT 'attention=' || count(*) FILTER (WHERE attention)
  || ' past_deadline=' || count(*) FILTER (WHERE step_deadline < now() - interval '1000 ms')
  || ' compensation_failing=' || count(*) FILTER (WHERE state IN ('REFUNDING', 'RELEASING') AND attempts >= 3)
  || ' stuck=' || count(*) FILTER (WHERE updated_at < now() - interval '600000 ms')
  || ' retrying=' || count(*) FILTER (WHERE state = 'SHIPPING' AND attempts >= 3 AND next_attempt_at IS NOT NULL)
  || ' overdue=' || count(*) FILTER (WHERE step_deadline < now() - interval '1000 ms'
       OR (state IN ('REFUNDING', 'RELEASING') AND attempts >= 3) OR updated_at < now() - interval '600000 ms'
       OR (state = 'SHIPPING' AND attempts >= 3 AND next_attempt_at IS NOT NULL))
  FROM sagas WHERE state NOT IN ('COMPLETED', 'CANCELLED')")
got=$("$PROBE" "$conn" 1000 600000 | tr '\n' ' ')
assert_eq "gauges: as psql counts" "$expected " "$got"
assert_eq "gauges: the values" \
  "RESERVING=2 CHARGING=0 REFUNDING=0 RELEASING=2 SHIPPING=4 attention=2 past_deadline=1 compensation_failing=2 stuck=2 retrying=2 overdue=6 " \
  "$got"
finish
