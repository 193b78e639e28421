#!/usr/bin/env bash
# A primary set read-only (ALTER DATABASE ... SET default_transaction_read_only
# = on, sessions terminated: as a provider does when its disk is full) takes
# every new session and refuses every write, so every sweep of every engine
# fails and reconnects, and every client call too. The log stays quiet:
#   - after each thread's first failure (its lines), 10 s read-only add at
#     most a few lines per thread (the read-only WARNING, "reconnected" and "could not
#     claim due sagas" at most once per thread every 10 s), not ~18 a second;
#   - StartSaga calls meanwhile are refused UNAVAILABLE and add no line each;
#   - set writable again, a saga completes.
set -euo pipefail
source "$(dirname "$0")/../lib/stack.sh"
stack_start
ctl stock set A1 10 >/dev/null
ctl deposit c1 100.00 --id 0ead0000-0000-4000-8000-000000000001 >/dev/null
lines() { wc -l <"$STACK_DIR/orchestratord.log"; }
psql_db postgres "ALTER DATABASE sagas_orchestrator SET default_transaction_read_only = on" >/dev/null
psql_db postgres "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
  WHERE datname = 'sagas_orchestrator' AND pid <> pg_backend_pid()" >/dev/null
refused=0
starts() {
  for _ in $(seq 20); do
    if ! ctl start c1 A1 1 1.00 --timeout 2000 >/dev/null 2>&1; then refused=$((refused + 1)); fi
  done
}
# the first failure of each thread (engines, API workers, listener, report)
# says so once: those lines come first
starts
sleep 1
before=$(lines)
t0=$SECONDS
starts
while [ $((SECONDS - t0)) -lt 10 ]; do sleep 0.2; done
after=$(lines)
echo "log lines in 10 s read-only, after the first failures: $((after - before))"
assert_eq "StartSaga refused while read-only" 40 "$refused"
# each thread (2 engines, 4 API workers, the listener, the report) may
# say its lines once in 10 s; before, the engines alone logged ~180
if [ $((after - before)) -le 30 ]; then
  echo "ok: the log stays quiet while read-only"
else
  echo "FAIL: $((after - before)) log lines in 10 s read-only; the last ones:" >&2
  tail -20 "$STACK_DIR/orchestratord.log" >&2
  FAILURES=$((FAILURES + 1))
fi
psql_db postgres "ALTER DATABASE sagas_orchestrator RESET default_transaction_read_only" >/dev/null
psql_db postgres "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
  WHERE datname = 'sagas_orchestrator' AND pid <> pg_backend_pid()" >/dev/null
_completes() { ctl start c1 A1 1 1.00 --wait --timeout 5000 2>/dev/null | grep -q COMPLETED; }
if wait_until 30 _completes; then echo "ok: writable again, a saga completes"; else
  echo "FAIL: no saga completes after the database is writable again" >&2
  FAILURES=$((FAILURES + 1))
fi
finish
