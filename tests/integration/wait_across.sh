#!/usr/bin/env bash
# Waits across orchestrators (issue 20): two orchestratord on one database.
# A saga one of them ends is answered to the calls waiting on the other at
# once (a NOTIFY from the terminal write, LISTENed by the other's listener),
# and the NOTIFY is sent only then: never for sagas nobody waits for
# elsewhere (the hot path).
#   1. WaitSaga on B for a saga A drives: answered with the final state
#      within 2 s of the terminal history row, with one notification.
#   2. StartSaga with wait_ms on an orchestrator that cannot reach stockd:
#      the other finishes it, and the StartSaga itself is answered.
#   3. The listener's connection is terminated while new connections are
#      refused, and the saga ends in that gap (its NOTIFY is lost for B):
#      once B's listener is back, it re-reads the waited-for sagas and
#      answers the wait.
#   4. The seed lab, 20 sagas and a WaitSaga on the orchestrator that
#      drives the saga send no notification at all.
set -euo pipefail
source "$(dirname "$0")/../lib/stack.sh"
source "$(dirname "$0")/../lib/seed_lab.sh"
# long step deadlines: stockd is stopped (SIGSTOP) for a while below, and
# the sagas must not be cancelled by a deadline meanwhile
export ORCH_FLAGS="--step-timeout 60000"
stack_start
stack_start_orchestrator_as orch_b
A=orchestratord B=orch_b

# pg_postgres SQL: a value from the cluster's own database (it still takes
# connections while sagas_orchestrator refuses them, case 3)
pg_postgres() { psql -h 127.0.0.1 -p "$PG_PORT" -U postgres -d postgres -qAtc "$1"; }
listeners() {
  pg_postgres "SELECT count(*) FROM pg_stat_activity WHERE datname = 'sagas_orchestrator'
                 AND application_name = 'orchestratord-listen'"
}
listeners_are() { [ "$(listeners)" = "$1" ]; }
wait_until 30 listeners_are 2

# A session of its own LISTENs to the channel and counts every notification
# (psql prints them after each command it runs: notes_sync sends two
# commands and waits for the second's output, so every notification
# delivered before the call is in the file).
mkfifo "$STACK_DIR/notes.in"
psql -h 127.0.0.1 -p "$PG_PORT" -U postgres -d sagas_orchestrator -qAt \
  <"$STACK_DIR/notes.in" >"$STACK_DIR/notes.out" 2>&1 &
NOTES_PID=$!
exec 7>"$STACK_DIR/notes.in"
echo "LISTEN saga_finished;" >&7
notes_have() { grep -qx "$1" "$STACK_DIR/notes.out"; }
notes_sync() { # a tag of its own each time (notes runs in a subshell)
  local tag
  tag="sync-$(date +%s%N)-$RANDOM"
  echo "SELECT '$tag-a';" >&7
  echo "SELECT '$tag-b';" >&7
  wait_until 10 notes_have "$tag-b"
}
# notes [ID]: the notifications received (for saga ID only)
notes() {
  notes_sync
  grep -c "Asynchronous notification \"saga_finished\" with payload \"${1:-}" \
    "$STACK_DIR/notes.out" || true
}
notes_sync
stop_notes() { exec 7>&-; wait "$NOTES_PID" 2>/dev/null || true; }

ctl stock set W1 100 >/dev/null
ctl deposit wc 1000.00 >/dev/null
ctl deposit poor 1.00 >/dev/null
json_id() { jq -r .saga.saga_id; } # of start --json
waiter_of() { psql_db sagas_orchestrator "SELECT coalesce(waiter, 'NULL') FROM sagas WHERE saga_id = '$1'"; }
waiter_is() { [ "$(waiter_of "$1")" = "$2" ]; }
# name_of NAME: the instance name an orchestratord logged at its start
name_of() { grep -o 'orchestratord [^ ]* listening on' "$STACK_DIR/$1.log" | cut -d' ' -f2; }
# last_at ID: ms since the epoch of the saga's last history row
last_at() {
  psql_db sagas_orchestrator "SELECT (extract(epoch from max(at)) * 1000)::bigint
                               FROM saga_history WHERE saga_id = '$1'"
}
now_ms() { date +%s%3N; }
# within_2s T_ANSWERED T_END: the answer came at most 2 s after the end
within_2s() {
  local d=$(($1 - $2))
  echo "answered $d ms after the terminal history row" >&2
  if [ "$d" -ge -50 ] && [ "$d" -le 2000 ]; then echo yes; else echo "no: ${d} ms"; fi
}
stock_pid=${STACK_PID_OF[stockd]}
# stockd is resumed whatever happens, so stack_stop can stop it
trap 'kill -CONT "$stock_pid" 2>/dev/null || true; stop_notes; stack_stop' EXIT

# ---- 4 (first): the hot path sends no NOTIFY ----
seed_lab_seed
seed_lab_orders >/dev/null
seed_lab_assert
for _ in $(seq 1 10); do
  ctl start wc W1 1 1.00 --wait --json >/dev/null         # waits on the instance that drives it
  ctl_on "$B" start wc W1 1 1.00 --json >/dev/null        # nobody waits
done
all_finished() { [ "$(psql_db sagas_orchestrator "SELECT count(*) FROM sagas WHERE NOT finished")" = 0 ]; }
wait_until 30 all_finished
# a WaitSaga on the instance that drives the saga: answered in-process
kill -STOP "$stock_pid"
id0=$(ctl start wc W1 1 1.00 --json | json_id)
ctl wait "$id0" --json --wait-timeout 50000 >"$STACK_DIR/w0.json" 2>&1 &
w0=$!
wait_until 20 waiter_is "$id0" "$(name_of "$A")"
kill -CONT "$stock_pid"
wait "$w0"
assert_eq "hot path: a wait on the driving instance" "COMPLETED" "$(jq -r .state "$STACK_DIR/w0.json")"
assert_eq "hot path: notifications after the seed lab, 20 sagas and a local wait" "0" "$(notes)"
assert_eq "hot path: no saga is marked '*'" "0" \
  "$(psql_db sagas_orchestrator "SELECT count(*) FROM sagas WHERE waiter = '*'")"

# ---- 1: WaitSaga on B for a saga A drives ----
kill -STOP "$stock_pid"
id1=$(ctl start wc W1 1 10.00 --json | json_id)
ctl_on "$B" wait "$id1" --json --wait-timeout 50000 >"$STACK_DIR/w1.json" 2>&1 &
w1=$!
wait_until 20 waiter_is "$id1" "$(name_of "$B")" # B holds the call and marked the row
assert_eq "case 1: still running while stockd is stopped" "RESERVING" \
  "$(psql_db sagas_orchestrator "SELECT state FROM sagas WHERE saga_id = '$id1'")"
kill -CONT "$stock_pid"
wait "$w1"
t1=$(now_ms)
assert_eq "case 1: B answers the final state and reason" "COMPLETED|" \
  "$(jq -r '"\(.state)|\(.reason)"' "$STACK_DIR/w1.json")"
assert_eq "case 1: answered within 2 s of the end" yes "$(within_2s "$t1" "$(last_at "$id1")")"
assert_eq "case 1: one notification, for that saga" "1|1" "$(notes)|$(notes "$id1")"

# ---- 2: StartSaga with wait_ms on C, which cannot reach stockd; B ends it ----
dead=$(_stack_free_port) # nobody listens there
stack_start_orchestrator_as orch_c --stock "tcp://127.0.0.1:$dead" --sweep-interval 60000
wait_until 30 listeners_are 3
ctl_on orch_c start wc W1 1 10.00 --wait --wait-timeout 50000 --json >"$STACK_DIR/s2.json"
t2=$(now_ms)
id2=$(json_id <"$STACK_DIR/s2.json")
assert_eq "case 2: the StartSaga answers the final state" "COMPLETED|true" \
  "$(jq -r '"\(.saga.state)|\(.created)"' "$STACK_DIR/s2.json")"
assert_eq "case 2: answered within 2 s of the end" yes "$(within_2s "$t2" "$(last_at "$id2")")"
assert_eq "case 2: the waiter is C's name" "$(name_of orch_c)" "$(waiter_of "$id2")"
assert_eq "case 2: one notification more, for that saga" "2|1" "$(notes)|$(notes "$id2")"
stack_kill orch_c
wait_until 30 listeners_are 2

# ---- 3: the listener's connection is lost, and the end passes in the gap ----
kill -STOP "$stock_pid"
id3=$(ctl start poor W1 1 10.00 --json | json_id)
ctl_on "$B" wait "$id3" --json --wait-timeout 50000 >"$STACK_DIR/w3.json" 2>&1 &
w3=$!
wait_until 20 waiter_is "$id3" "$(name_of "$B")"
pg_postgres "ALTER DATABASE sagas_orchestrator ALLOW_CONNECTIONS false" >/dev/null
pg_postgres "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
              WHERE application_name = 'orchestratord-listen'" >/dev/null
wait_until 10 listeners_are 0
kill -CONT "$stock_pid"
state3() { ctl get "$id3" --json | jq -r .state; } # A's API keeps its connections
ended3() { [ "$(state3)" = CANCELLED ]; }
wait_until 30 ended3
assert_eq "case 3: the wait is not answered while B's listener is away" "waiting" \
  "$(kill -0 "$w3" 2>/dev/null && echo waiting || echo answered)"
pg_postgres "ALTER DATABASE sagas_orchestrator ALLOW_CONNECTIONS true" >/dev/null
wait "$w3"
assert_eq "case 3: answered once B's listener is back" "CANCELLED|payment_declined" \
  "$(jq -r '"\(.state)|\(.reason)"' "$STACK_DIR/w3.json")"
wait_until 10 listeners_are 2
assert_eq "case 3: B logged the loss and the return" "1|1" \
  "$(grep -c 'lost the connection that listens' "$STACK_DIR/$B.log")|$(grep -c 'listening again' "$STACK_DIR/$B.log" || true)"
# the NOTIFY was sent (our session heard it) but B was not listening
assert_eq "case 3: one notification, for that saga" "1" "$(notes "$id3")"

# ---- after the reconnection, a plain cross-instance wait still works ----
kill -STOP "$stock_pid"
id4=$(ctl_on "$B" start wc W1 1 10.00 --json | json_id)
ctl wait "$id4" --json --wait-timeout 50000 >"$STACK_DIR/w4.json" 2>&1 &
w4=$!
wait_until 20 waiter_is "$id4" "$(name_of "$A")"
kill -CONT "$stock_pid"
wait "$w4"
t4=$(now_ms)
assert_eq "after reconnecting: A answers B's saga" "COMPLETED|" \
  "$(jq -r '"\(.state)|\(.reason)"' "$STACK_DIR/w4.json")"
assert_eq "after reconnecting: within 2 s of the end" yes "$(within_2s "$t4" "$(last_at "$id4")")"
assert_eq "notifications in all: cases 1, 2, 3 and this one" "4" "$(notes)"
finish
