#!/usr/bin/env bash
# PostgreSQL failover (issue 20; docs/operations.md, "PostgreSQL failover"):
# a primary and its SYNCHRONOUS standby (scripts/pg-standby.sh; fsync and
# synchronous_commit on), the four daemons given both as one multi-host
# conninfo with target_session_attrs=read-write. Three clients start sagas
# one after the other and record every id whose StartSaga was answered; the
# primary is crashed (pg_ctl stop -m immediate) mid-run and the standby
# promoted. Then:
# - every acknowledged saga is on the new primary and ends COMPLETED or
#   CANCELLED, as does every other saga there;
# - stock and money are conserved exactly (the invariants of
#   saga-semantics.md, check_invariants);
# - each daemon logged its reconnection, to the new primary's port;
# - StartSagas are acknowledged again after the failover;
# and it prints the time from the primary's death to the first saga that
# finished after it. Then the new primary is made read-only for a while
# (SQLSTATE 25006 on the open sessions: StartSaga UNAVAILABLE, then the saga
# completes), and stockd is restarted while it is (its schema apply is
# tried again until the server is writable).
# `--any-server`: the conninfo lacks target_session_attrs, so libpq takes
# the standby too; the daemons refuse a session on a hot standby themselves
# (pg_session_is_standby) and the outcome must be the same.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../lib/stack.sh"
source "$here/../lib/fault.sh"

# the clusters of this test: never PG_FAST (pg-standby.sh refuses it)
pg_pair() {
  PG_PRIMARY_PORT=$(PG_FAST=0 bash "$STACK_ROOT/scripts/pg.sh" start "$STACK_DIR/pg")
  PG_STANDBY_PORT=$(bash "$STACK_ROOT/scripts/pg-standby.sh" start "$STACK_DIR/pg" \
    "$STACK_DIR/pg-standby")
  PG_PORT=$PG_PRIMARY_PORT
  PG_CONN="host=127.0.0.1,127.0.0.1 port=$PG_PRIMARY_PORT,$PG_STANDBY_PORT user=postgres"
  PG_CONN="$PG_CONN connect_timeout=5"
  [ "$MODE" = --any-server ] || PG_CONN="$PG_CONN target_session_attrs=read-write"
}
MODE=${1:-}
STACK_PG_SETUP=pg_pair
# quick retries; a step deadline well past the failover
ORCH_FLAGS="--step-timeout 20000 --request-timeout 2000 --backoff-base 20 --backoff-cap 500 --sweep-interval 50"
stack_start
assert_eq "primary's synchronous standby" "sagas_standby:sync" "$(psql_db postgres \
  "SELECT application_name || ':' || sync_state FROM pg_stat_replication")"
assert_eq "primary: synchronous_commit" "on" "$(psql_db postgres "SHOW synchronous_commit")"
assert_eq "primary: fsync" "on" "$(psql_db postgres "SHOW fsync")"

STOCK0=100000 MONEY0=10000000 # A1 and c1's 100000.00, in minor units
ctl stock set A1 "$STOCK0" >/dev/null
ctl deposit c1 100000.00 >/dev/null

# client K: StartSaga after StartSaga (1 x A1 for 1.00, ids of its own)
# until told to stop; an answered one is appended to `acked` with the time
# (ms) of its answer, a refused one to `refused`, its error to client-errors.log.
# Three run at once, so that several sagas are on their way at the crash.
ACKED=$STACK_DIR/acked REFUSED=$STACK_DIR/refused
: >"$ACKED"
: >"$REFUSED"
client() {
  local k=$1 i=0 id
  # ends also when the test does (its shell gone, the stack removed)
  while [ ! -e "$STACK_DIR/stop-client" ] && [ -d "$STACK_DIR" ] && kill -0 $$ 2>/dev/null &&
    [ "$i" -lt 5000 ]; do
    i=$((i + 1))
    id=$(printf 'fa11fa11-%04d-4000-8000-%012d' "$k" "$i")
    if ctl --timeout 10000 start c1 A1 1 1.00 --id "$id" >/dev/null 2>>"$STACK_DIR/client-errors.log"; then
      echo "$id $(date +%s%3N)" >>"$ACKED"
    else
      echo "$id" >>"$REFUSED"
    fi
  done
}
CLIENT_PIDS=()
for k in 1 2 3; do
  client "$k" &
  CLIENT_PIDS+=($!)
done
stop_client() {
  touch "$STACK_DIR/stop-client"
  local pid
  for pid in "${CLIENT_PIDS[@]}"; do wait "$pid" || true; done
}
# give_up WHAT: a wait that timed out fails the test at once, with the logs
give_up() {
  echo "FAIL: $1" >&2
  FAILURES=$((FAILURES + 1))
  stop_client
  finish
}

_acked_at_least() { [ "$(wc -l <"$ACKED")" -ge "$1" ]; }
# _acked_since MS N: N StartSagas answered after time MS
_acked_since() { [ "$(awk -v t="$1" '$2 > t' "$ACKED" | wc -l)" -ge "$2" ]; }
# _busy: two sagas or more on their way (not terminal) while the clients run
_busy() {
  [ "$(psql_db sagas_orchestrator "SELECT count(*) FROM sagas WHERE state NOT IN ('COMPLETED', 'CANCELLED')")" -ge 2 ]
}

wait_until 90 _acked_at_least 20 || give_up "20 StartSagas answered before the crash"
wait_until 30 _busy || true # almost always at once: the crash lands mid-saga
in_flight=$(psql_db sagas_orchestrator "SELECT count(*) FROM sagas WHERE state NOT IN ('COMPLETED', 'CANCELLED')")

# ---- the primary dies (no checkpoint, nothing flushed); the standby is
# promoted at once (what Patroni does after its TTL)
bash "$STACK_ROOT/scripts/pg-standby.sh" crash "$STACK_DIR/pg"
T_DEATH=$(date +%s%3N)
echo "primary crashed with $in_flight sagas unfinished"
bash "$STACK_ROOT/scripts/pg-standby.sh" promote "$STACK_DIR/pg-standby"
echo "standby promoted $(($(date +%s%3N) - T_DEATH)) ms after the crash"
PG_PORT=$PG_STANDBY_PORT
assert_eq "the standby is the primary now" "f" "$(psql_db postgres "SELECT pg_is_in_recovery()")"

# StartSagas are answered again, then the clients stop and every saga ends
wait_until 90 _acked_since "$T_DEATH" 20 || give_up "20 StartSagas answered after the failover"
stop_client
wait_all_terminal 90 || true

acked=$(wc -l <"$ACKED")
before=$(awk -v t="$T_DEATH" '$2 <= t' "$ACKED" | wc -l)
after=$((acked - before))
echo "acknowledged: $acked ($before before the crash, $after after it); refused: $(wc -l <"$REFUSED")"
ids="{$(awk '{print $1}' "$ACKED" | paste -sd, -)}"
assert_eq "acknowledged sagas missing on the new primary" "0" "$(psql_db sagas_orchestrator \
  "SELECT count(*) FROM unnest('$ids'::uuid[]) a(id) WHERE NOT EXISTS (SELECT 1 FROM sagas s WHERE s.saga_id = a.id)")"
assert_eq "acknowledged sagas not terminal" "0" "$(psql_db sagas_orchestrator \
  "SELECT count(*) FROM sagas WHERE saga_id = ANY('$ids'::uuid[]) AND state NOT IN ('COMPLETED', 'CANCELLED')")"
# any other saga there is one whose StartSaga was refused (committed, but
# its answer lost with the primary)
assert_eq "sagas neither acknowledged nor tried" "0" "$(psql_db sagas_orchestrator \
  "SELECT count(*) FROM sagas WHERE NOT saga_id = ANY('$ids'::uuid[]) AND saga_id::text NOT LIKE 'fa11fa11-%'")"
echo "final states: $(psql_db sagas_orchestrator \
  "SELECT string_agg(state || CASE WHEN reason <> '' THEN '(' || reason || ')' ELSE '' END || ':' || n, ' ') FROM (SELECT state, reason, count(*) AS n FROM sagas GROUP BY 1, 2 ORDER BY 1, 2) g")"
check_invariants "A1:$STOCK0" "c1:$MONEY0"

# StartSaga refused only as UNAVAILABLE while there was no primary (each
# refusal is an error line and a hint line naming the id to retry with)
echo "StartSaga errors: $(grep '^sagactl: error' "$STACK_DIR/client-errors.log" | sed 's/saga id [0-9a-f-]*/saga id .../' | sort | uniq -c | sed 's/^ *//' | paste -sd';' -)"
assert_eq "StartSaga errors other than UNAVAILABLE (database_unavailable)" "0" \
  "$(grep '^sagactl: error' "$STACK_DIR/client-errors.log" | grep -vc "UNAVAILABLE (database_unavailable)" || true)"

# each daemon reconnected, to the new primary
for d in orchestratord stockd paymentd shippingd; do
  # "reconnected to database at", or "connected ..." for a worker's first
  # session made after the failover
  assert_eq "$d reconnected to the new primary" "yes" "$([ "$(log_count "$d" \
    "connected to database at 127.0.0.1:$PG_STANDBY_PORT")" -ge 1 ] && echo yes || echo no)"
done

# the time from the primary's death to the first saga finished after it
# (saga_history.at is the database's clock, this host's)
first=$(psql_db sagas_orchestrator "SELECT (extract(epoch FROM min(at)) * 1000)::bigint FROM saga_history WHERE to_state IN ('COMPLETED', 'CANCELLED') AND at > to_timestamp($T_DEATH / 1000.0)")
assert_eq "a saga finished after the crash" "yes" "$([ -n "$first" ] && echo yes || echo no)"
echo "failover: the first saga finished $((first - T_DEATH)) ms after the primary's death"

# ---- a session on a read-only server (SQLSTATE 25006, as on a standby):
# the new primary is set read-only (default_transaction_read_only, reloaded),
# which the daemons' open sessions only learn from a refused write. The
# orchestrator drops its session and finds no writable server (libpq's
# read-write check refuses both), so StartSaga is UNAVAILABLE, never a
# permanent error; once the server takes writes again the saga starts.
R=fa11fa11-9999-4000-8000-000000000001
pg_setting() { # pg_setting VALUE: default_transaction_read_only of the server
  PGOPTIONS="-c default_transaction_read_only=off" psql_db postgres \
    "ALTER SYSTEM SET default_transaction_read_only = $1" >/dev/null
  psql_db postgres "SELECT pg_reload_conf()" >/dev/null
}
_read_only_is() { [ "$(psql_db postgres "SHOW default_transaction_read_only")" = "$1" ]; }
pg_setting on
wait_until 30 _read_only_is on || give_up "the server read-only"
ctl start c1 A1 1 1.00 --id "$R" >/dev/null 2>"$STACK_DIR/read-only.err" && rc=0 || rc=$?
assert_eq "StartSaga on a read-only server: refused as UNAVAILABLE" "1:1" \
  "$([ "$rc" -ne 0 ] && echo 1 || echo 0):$(grep -c UNAVAILABLE "$STACK_DIR/read-only.err" || true)"
assert_eq "orchestratord dropped the read-only session" "yes" "$([ "$(log_count orchestratord \
  "the database session is read-only (SQLSTATE 25006")" -ge 1 ] && echo yes || echo no)"
assert_eq "no saga $R while read-only" "0" \
  "$(psql_db sagas_orchestrator "SELECT count(*) FROM sagas WHERE saga_id = '$R'")"
pg_setting off
wait_until 30 _read_only_is off || give_up "the server writable again"
_started() { ctl start c1 A1 1 1.00 --id "$R"; }
wait_until 60 _started || give_up "StartSaga $R once the server is writable"
wait_state "$R" COMPLETED 60 || true
assert_eq "saga $R after the read-only spell" "COMPLETED|" "$(saga_state "$R")"

# ---- a start on a read-only server: stockd restarted, given this server
# alone (no target_session_attrs: libpq takes it), while it is read-only.
# Its schema apply fails with 25006; stockd tries again within --db-wait
# instead of exiting, and starts once the server takes writes.
stack_kill stockd
pg_setting on
wait_until 30 _read_only_is on || give_up "the server read-only again"
_flip_when_refused() {
  wait_until 60 grep -qF "could not apply the stock schema: database connection lost" \
    "$STACK_DIR/stockd.log" || return 1
  pg_setting off
}
_flip_when_refused &
FLIPPER=$!
PG_CONN_ALL=$PG_CONN
PG_CONN="host=127.0.0.1 port=$PG_STANDBY_PORT user=postgres"
STOCK_FLAGS="--db-wait 60000"
stack_start_stock || give_up "stockd started on a server read-only at first"
PG_CONN=$PG_CONN_ALL
wait "$FLIPPER" && flipped=yes || flipped=no
assert_eq "stockd's schema apply refused while read-only, then tried again" "yes" "$flipped"
R2=fa11fa11-9999-4000-8000-000000000002
ctl start c1 A1 1 1.00 --id "$R2" >/dev/null
wait_state "$R2" COMPLETED 60 || true
assert_eq "saga $R2 after stockd's start" "COMPLETED|" "$(saga_state "$R2")"
check_invariants "A1:$STOCK0" "c1:$MONEY0"
finish
