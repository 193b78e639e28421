#!/usr/bin/env bash
# Elected work (issue 20; common/db/elect.h): two orchestratord on one
# database, the report of stuck sagas every 200 ms. One saga is flagged for
# attention (written straight into the database, due in an hour, so no
# sweep touches it) and one is past its step deadline by a minute (due in
# an hour too: as if no orchestrator were moving it).
#   - exactly one orchestrator leads the report and logs the two sagas; the
#     other says once that another process leads it and reports nothing;
#   - the leader killed (kill -9), the other takes the lock and reports the
#     same two sagas;
#   - a leader whose database session is terminated loses the lead and
#     takes it again (or the other does): the report goes on.
set -euo pipefail
source "$(dirname "$0")/../lib/stack.sh"
ORCH_FLAGS="--report-interval 200"
stack_start
stack_start_orchestrator_as orchestratord2
psql_db sagas_orchestrator "
  INSERT INTO sagas (saga_id, state, customer, sku, qty, amount, attention, next_attempt_at, retry_at, attempts)
  VALUES ('e1ec7000-0000-4000-8000-000000000001', 'RELEASING', 'c1', 'X', 1, 100, true,
          now() + interval '1 hour', now() + interval '1 hour', 12);
  INSERT INTO sagas (saga_id, state, customer, sku, qty, amount, next_attempt_at, step_deadline)
  VALUES ('e1ec7000-0000-4000-8000-000000000002', 'CHARGING', 'c1', 'X', 1, 100,
          now() + interval '1 hour', now() - interval '1 minute');" >/dev/null
LINE="report: 1 saga needs attention (sagactl list --attention)"
LINE2="report: 1 saga is past its step deadline by more than 10000 ms: no orchestrator is moving it"
log_count() { grep -cF -- "$2" "$STACK_DIR/$1.log" || true; }
reports() { grep -cF -- "$LINE" "$STACK_DIR/$1.log" || true; }
reports2() { grep -cF -- "$LINE2" "$STACK_DIR/$1.log" || true; }
_reported() { [ "$(reports "$1")" -ge "${2:-1}" ]; }
_one_reports() { _reported orchestratord 2 || _reported orchestratord2 2; }
wait_until 30 _one_reports
if _reported orchestratord 2; then leader=orchestratord other=orchestratord2; else leader=orchestratord2 other=orchestratord; fi
echo "leader: $leader"
assert_eq "the leader says it leads" 1 "$(log_count "$leader" "now leading the report of stuck sagas")"
assert_eq "the other reports nothing" 0 "$(reports "$other")"
assert_eq "the leader reports the overdue saga too" yes \
  "$([ "$(reports2 "$leader")" -ge 1 ] && echo yes || echo no)"
assert_eq "the other reports no overdue saga" 0 "$(reports2 "$other")"
assert_eq "the other says once that another process leads" 1 \
  "$(log_count "$other" "another process leads the report of stuck sagas")"

# the leader killed: the other takes over
kill -KILL "${STACK_PID_OF[$leader]}"
wait "${STACK_PID_OF[$leader]}" 2>/dev/null || true
unset "STACK_PID_OF[$leader]"
wait_until 30 _reported "$other" 2
assert_eq "the other now leads" 1 "$(log_count "$other" "now leading the report of stuck sagas")"

# its session terminated: the lead is lost with it, and taken again
before=$(reports "$other")
psql_db sagas_orchestrator "SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' AND objid = 7111 AND granted" >/dev/null
_more() { [ "$(reports "$other")" -ge $((before + 2)) ]; }
wait_until 30 _more
assert_eq "the lead lost with the session, logged" 1 \
  "$(log_count "$other" "no longer leading the report of stuck sagas")"
assert_eq "and taken again" 2 "$(log_count "$other" "now leading the report of stuck sagas")"
finish
