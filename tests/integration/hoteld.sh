#!/usr/bin/env bash
# hoteld, the hotel participant (tests/participants/hotel, sagas.v1.Hotel),
# against its own database: every answer of docs/participants.md's table,
# read back from the rooms and holds tables with exact values.
# - HoldRoom takes one room of its kind; a duplicate is answered from the
#   record (rule 2) and takes nothing more; other nights or another room
#   for the same saga id is refused key_mismatch (rule 6), changing nothing;
# - no room free: no_vacancy, recorded; an unknown kind: unknown_room;
# - FreeRoom gives the room back once, however often it comes; a FreeRoom
#   that comes first records a tombstone and succeeds, and the late HoldRoom
#   is refused ABORTED tombstone, holding nothing (rule 5);
# - two copies of each of 20 holds at once on 10 rooms: 10 held, 10
#   refused, both copies answered alike, no room counted twice;
# - rule R1 (past_horizon) and R5 (saga_id_reused) by the kit;
# - an armed fault (unavailable) applies nothing; SetRooms, ListRooms;
#   --help, --version, /metrics.
set -euo pipefail
source "$(dirname "$0")/../lib/stack.sh"
cmd=$SAGA_BIN_DIR/sagacmd
hoteld=$SAGA_BIN_DIR/hoteld

assert_eq "--version" "hoteld" "$("$hoteld" --version | cut -d' ' -f1)"
assert_eq "--help names its service and options" "1|1|1" \
  "$("$hoteld" --help | grep -c '^The hotel participant')|$("$hoteld" --help | grep -c -- '--enable-fault-injection')|$("$hoteld" --help | grep -c -- '^  --metrics-listen')"

stack_start
psql_db postgres "CREATE DATABASE sagas_hotel" >/dev/null
port=$(_stack_free_port)
H="tcp://127.0.0.1:$port"
STACK_METRICS_URL_OF[hoteld]="http://127.0.0.1:$(_stack_free_port)"
_stack_daemon hoteld "$port" "$hoteld" --listen "$H" --db "$PG_CONN dbname=sagas_hotel" \
  --metrics-listen "${STACK_METRICS_URL_OF[hoteld]}" --enable-fault-injection
free_of() { psql_db sagas_hotel "SELECT free FROM rooms WHERE room = '$1'"; }
hold_of() { psql_db sagas_hotel "SELECT room || '|' || nights || '|' || status FROM holds WHERE saga_id = '$1'"; }
id() { printf 'h0000000-0000-4000-8000-%012d' "$1" | sed 's/^h/a/'; }

assert_eq "SetRooms DLX 2" "OK - 2" "$("$cmd" "$H" set-rooms DLX 2)"
assert_eq "SetRooms KING 0" "OK - 0" "$("$cmd" "$H" set-rooms KING 0)"
assert_eq "SetRooms: a negative count refused" "INVALID_ARGUMENT bad_field -" "$("$cmd" "$H" set-rooms DLX -1)"

# a hold, its duplicate, other arguments
assert_eq "HoldRoom: HELD" "OK - 1" "$("$cmd" "$H" hold "$(id 1)" DLX 3)"
assert_eq "the same again: HELD" "OK - 1" "$("$cmd" "$H" hold "$(id 1)" DLX 3)"
assert_eq "other nights: key_mismatch" "ALREADY_EXISTS key_mismatch -" "$("$cmd" "$H" hold "$(id 1)" DLX 4)"
assert_eq "other room: key_mismatch" "ALREADY_EXISTS key_mismatch -" "$("$cmd" "$H" hold "$(id 1)" KING 3)"
assert_eq "one room taken, once" "1|DLX|3|HELD" "$(free_of DLX)|$(hold_of "$(id 1)")"

# refusals, recorded
assert_eq "the last DLX" "OK - 1" "$("$cmd" "$H" hold "$(id 2)" DLX 1)"
assert_eq "no DLX left: no_vacancy" "FAILED_PRECONDITION no_vacancy -" "$("$cmd" "$H" hold "$(id 3)" DLX 1)"
assert_eq "no KING at all: no_vacancy" "FAILED_PRECONDITION no_vacancy -" "$("$cmd" "$H" hold "$(id 4)" KING 1)"
assert_eq "no such kind: unknown_room" "NOT_FOUND unknown_room -" "$("$cmd" "$H" hold "$(id 5)" SUITE 1)"
assert_eq "refused again, from the record" "FAILED_PRECONDITION no_vacancy -" "$("$cmd" "$H" hold "$(id 3)" DLX 1)"
assert_eq "the refusals recorded" "DLX|1|NO_VACANCY KING|1|NO_VACANCY SUITE|1|UNKNOWN_ROOM" \
  "$(hold_of "$(id 3)") $(hold_of "$(id 4)") $(hold_of "$(id 5)")"
assert_eq "nights out of range: bad_field, nothing recorded" "INVALID_ARGUMENT bad_field -|0" \
  "$("$cmd" "$H" hold "$(id 6)" DLX 366)|$(psql_db sagas_hotel "SELECT count(*) FROM holds WHERE saga_id = '$(id 6)'")"
assert_eq "rooms unchanged by refusals" "0|0" "$(free_of DLX)|$(free_of KING)"

# the compensation: once
assert_eq "FreeRoom: FREED" "OK - 4" "$("$cmd" "$H" free "$(id 1)" DLX 3)"
assert_eq "FreeRoom again: FREED" "OK - 4" "$("$cmd" "$H" free "$(id 1)" DLX 3)"
assert_eq "a late HoldRoom copy: HELD as first answered" "OK - 1" "$("$cmd" "$H" hold "$(id 1)" DLX 3)"
assert_eq "the room back once" "1|DLX|3|FREED" "$(free_of DLX)|$(hold_of "$(id 1)")"
assert_eq "FreeRoom of a refused hold: its record" "OK - 2" "$("$cmd" "$H" free "$(id 3)" DLX 1)"
assert_eq "FreeRoom with other nights: key_mismatch" "ALREADY_EXISTS key_mismatch -" "$("$cmd" "$H" free "$(id 2)" DLX 9)"
assert_eq "nothing freed by those" "1|DLX|1|HELD" "$(free_of DLX)|$(hold_of "$(id 2)")"

# a compensation first: tombstone, the late hold refused
assert_eq "FreeRoom first: TOMBSTONE" "OK - 5" "$("$cmd" "$H" free "$(id 7)" DLX 2)"
assert_eq "the late HoldRoom: tombstone" "ABORTED tombstone -" "$("$cmd" "$H" hold "$(id 7)" DLX 2)"
assert_eq "nothing held, the tombstone kept" "1|DLX|2|TOMBSTONE" "$(free_of DLX)|$(hold_of "$(id 7)")"

# rules R1 and R5, by the kit
assert_eq "a saga older than the horizon: past_horizon" "FAILED_PRECONDITION past_horizon -" \
  "$(SAGACMD_STARTED_MS=1000 "$cmd" "$H" hold "$(id 8)" DLX 1)"
assert_eq "the same id, another start: saga_id_reused" "FAILED_PRECONDITION saga_id_reused -" \
  "$(SAGACMD_STARTED_MS=$(( $(date +%s%3N) - 60000 )) "$cmd" "$H" hold "$(id 2)" DLX 1)"
assert_eq "neither applied" "1|0|DLX|1|HELD" \
  "$(free_of DLX)|$(psql_db sagas_hotel "SELECT count(*) FROM holds WHERE saga_id = '$(id 8)'")|$(hold_of "$(id 2)")"

# two copies of each of 20 holds at once, 10 rooms
"$cmd" "$H" set-rooms POOL 10 >/dev/null
pids=()
for i in $(seq 101 120); do
  "$cmd" "$H" hold "$(id "$i")" POOL 2 >"$STACK_DIR/a.$i" &
  pids+=($!)
  "$cmd" "$H" hold "$(id "$i")" POOL 2 >"$STACK_DIR/b.$i" &
  pids+=($!)
done
wait "${pids[@]}"
alike=0 held=0
for i in $(seq 101 120); do
  [ "$(cat "$STACK_DIR/a.$i")" = "$(cat "$STACK_DIR/b.$i")" ] && alike=$((alike + 1))
  [ "$(cat "$STACK_DIR/a.$i")" = "OK - 1" ] && held=$((held + 1))
done
assert_eq "both copies answered alike" 20 "$alike"
assert_eq "10 held, 10 refused, POOL empty" "10|10:10|0" \
  "$held|$(psql_db sagas_hotel "SELECT count(*) FILTER (WHERE status = 'HELD') || ':' || count(*) FILTER (WHERE status = 'NO_VACANCY') FROM holds WHERE room = 'POOL'")|$(free_of POOL)"

# an armed fault applies nothing; cleared, the hold applies
hctl() { "$SAGA_BIN_DIR/sagactl" --stock "$H" "$@"; }
hctl fault set stock unavailable --method HoldRoom >/dev/null
assert_eq "unavailable: refused" "UNAVAILABLE" "$("$cmd" "$H" hold "$(id 9)" DLX 1 | cut -d' ' -f1)"
assert_eq "nothing recorded" "0|1" "$(psql_db sagas_hotel "SELECT count(*) FROM holds WHERE saga_id = '$(id 9)'")|$(free_of DLX)"
hctl fault clear stock >/dev/null
assert_eq "cleared: HELD" "OK - 1" "$("$cmd" "$H" hold "$(id 9)" DLX 1)"
assert_eq "DLX taken" "0" "$(free_of DLX)"

# ListRooms: every kind, its free rooms and live holds
assert_eq "ListRooms" "OK - -|DLX 0 2|KING 0 0|POOL 0 10" "$("$cmd" "$H" list-rooms | paste -sd'|')"
# the kit's metrics, by the hotel's methods
assert_eq "metrics: FreeRoom's tombstone counted, by the hotel's method" 1 \
  "$(stack_metrics hoteld | grep -c '^sagas_participant_commands_total{command="FreeRoom",outcome="tombstone"} 1$' || true)"
finish
