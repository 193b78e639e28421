#!/usr/bin/env bash
# A second saga type beside the order saga, on the same orchestrators, with no
# line of C for it (docs/saga-definitions.md, issue 34): orchestratord, built
# once, loads tests/definitions/order_booking.yaml, whose `booking` holds a room
# and a seat at once (a group of two compensable steps: HoldRoom on hoteld, the
# hotel participant of tests/participants/hotel, and ReserveStock on a stock
# daemon of its own standing in for an airline, both reached through --links),
# charges the payment (the pivot) and confirms (a retriable ShipOrder of qty
# 1). Read from the participants' databases and the API:
# - a booking completes: one room and one seat held (the rooms free read from
#   hoteld's database), one charge, one
#   confirmation of qty 1; GetSaga says type booking, state BOOKED (SagaState
#   UNSPECIFIED: the order saga's enum is the order's); its history names the
#   definition's states; an order started beside it completes as before;
#   over the HTTP API too (a booking POSTed with its type);
# - a seat refused (no seats) cancels the booking: the room, held or not, is
#   freed (every room of its kind free again), nothing charged, nothing
#   shipped, state BOOKING_CANCELLED;
# - the airline unavailable while the orchestrator is killed (kill -9) with the
#   group in flight: after a restart the booking completes, each hold and the
#   charge applied once;
# - an unknown type is refused INVALID_ARGUMENT naming the types it runs, and
#   nothing is stored; listings by type and by any type's state name; a
#   booking's id started again as an order is refused
#   key_mismatch (rule 6), the booking unchanged;
# - a file naming a link orchestratord is not given refuses the start, saying
#   which --links entry it needs.
set -euo pipefail
here=$(dirname "$0")
source "$here/../lib/stack.sh"
defs=$STACK_ROOT/tests/definitions/order_booking.yaml
orch=$SAGA_BIN_DIR/orchestratord

# the refusal: the file names --hotel and --airline, not given
rc=0
out=$("$orch" --db "host=127.0.0.1 port=1 dbname=none connect_timeout=1" --db-wait 0 \
  --definitions "$defs" 2>&1 >/dev/null) || rc=$?
assert_eq "a link not given: exit 2" 2 "$rc"
assert_eq "a link not given: says which" 1 "$(grep -cF -- "participants.hotel names --hotel: orchestratord has no such link (it has --stock, --payment, --shipping; give it one with --links hotel=URL[,URL...])" <<<"$out" || true)"

STACK_FAULTS=1
STACK_GATEWAY=1
stack_start
# the two holds' participants, with databases of their own: hoteld for the
# room, a stockd for the seat
declare -A url_of
for p in hotel airline; do
  psql_db postgres "CREATE DATABASE sagas_$p" >/dev/null
  port=$(_stack_free_port)
  url_of[$p]="tcp://127.0.0.1:$port"
  daemon=stockd
  [ "$p" = hotel ] && daemon=hoteld
  _stack_daemon "${daemon}_$p" "$port" "$SAGA_BIN_DIR/$daemon" --listen "${url_of[$p]}" \
    --db "$PG_CONN dbname=sagas_$p" --metrics-listen "http://127.0.0.1:$(_stack_free_port)" \
    --enable-fault-injection
done
rooms() { "$SAGA_BIN_DIR/sagacmd" "${url_of[hotel]}" set-rooms "$1" "$2" >/dev/null; }
on() { # on hotel|airline SAGACTL_ARGS...: sagactl with that daemon as --stock (its Admin)
  local p=$1; shift
  "$SAGA_BIN_DIR/sagactl" --orchestrator "$ORCH_ADMIN_URL" --stock "${url_of[$p]}" \
    --payment "$PAYMENT_ADMIN_URL" --shipping "$SHIPPING_ADMIN_URL" "$@"
}
stack_kill orchestratord
ORCH_FLAGS="--definitions $defs --links hotel=${url_of[hotel]};airline=${url_of[airline]} --step-timeout 60000"
stack_start_orchestrator
assert_eq "the log names both types" 1 \
  "$(grep -c "saga definitions from $defs: order version [0-9a-f]\{12\}, booking version [0-9a-f]\{12\}$" "$STACK_DIR/orchestratord.log")"

rooms TRIP1 5
on airline stock set TRIP1 5 >/dev/null
rooms TRIP2 5
on airline stock set TRIP2 0 >/dev/null
rooms TRIP3 5
on airline stock set TRIP3 5 >/dev/null
ctl stock set S1 10 >/dev/null
ctl deposit sam 500.00 >/dev/null
balance() { psql_db sagas_payment "SELECT balance FROM accounts WHERE customer = 'sam'"; }
held() { # held hotel|airline ID: the hold's room|nights|status, the seat's sku|qty|status
  if [ "$1" = hotel ]; then
    psql_db sagas_hotel "SELECT room || '|' || nights || '|' || status FROM holds WHERE saga_id = '$2'"
  else
    psql_db sagas_airline "SELECT sku || '|' || qty || '|' || status FROM reservations WHERE saga_id = '$2'"
  fi
}
free_rooms() { psql_db sagas_hotel "SELECT free FROM rooms WHERE room = '$1'"; }
state_of() { psql_db sagas_orchestrator "SELECT type || '|' || state || '|' || reason FROM sagas WHERE saga_id = '$1'"; }

# a booking, and an order beside it
B1=b0000000-0000-4000-8000-000000000001
O1=b0000000-0000-4000-8000-000000000101
ctl start sam TRIP1 2 100.00 --type booking --id "$B1" --wait >/dev/null
ctl start sam S1 1 3.25 --id "$O1" --wait >/dev/null
assert_eq "the booking: BOOKED" "booking|BOOKED|" "$(state_of "$B1")"
assert_eq "the order beside it: COMPLETED" "order|COMPLETED|" "$(state_of "$O1")"
assert_eq "the room held, for 2 nights" "TRIP1|2|HELD" "$(held hotel "$B1")"
assert_eq "one TRIP1 room taken of 5" 4 "$(free_rooms TRIP1)"
assert_eq "the seat held" "TRIP1|2|RESERVED" "$(held airline "$B1")"
assert_eq "the main stock untouched by the booking" "" \
  "$(psql_db sagas_stock "SELECT sku FROM reservations WHERE saga_id = '$B1'")"
assert_eq "the booking charged once" "sam|10000|CHARGED" \
  "$(psql_db sagas_payment "SELECT customer || '|' || amount || '|' || status FROM charges WHERE saga_id = '$B1'")"
assert_eq "confirmed once, qty 1 (the definition's constant)" "TRIP1|1|SHIPPED" \
  "$(psql_db sagas_shipping "SELECT sku || '|' || qty || '|' || status FROM shipments WHERE saga_id = '$B1'")"
assert_eq "the order reserved, charged and shipped" "S1|1|RESERVED sam|325|CHARGED S1|1|SHIPPED" \
  "$(psql_db sagas_stock "SELECT sku || '|' || qty || '|' || status FROM reservations WHERE saga_id = '$O1'") $(psql_db sagas_payment "SELECT customer || '|' || amount || '|' || status FROM charges WHERE saga_id = '$O1'") $(psql_db sagas_shipping "SELECT sku || '|' || qty || '|' || status FROM shipments WHERE saga_id = '$O1'")"
got=$(ctl get "$B1" --json | python3 -c 'import json,sys; s=json.load(sys.stdin); print(s["type"], s["state"])')
assert_eq "sagactl get: its type and state" "booking BOOKED" "$got"
# (a member's success is a transition of its own: ROOM -> ROOM, members 1 or 2)
assert_eq "its history, by the definition's names" "-:ROOM:started ROOM:ROOM:reply_ok ROOM:PAY:reply_ok PAY:CONFIRM:reply_ok CONFIRM:BOOKED:reply_ok" \
  "$(psql_db sagas_orchestrator "SELECT string_agg(coalesce(from_state, '-') || ':' || to_state || ':' || event, ' ' ORDER BY version) FROM saga_history WHERE saga_id = '$B1'")"
# the metrics credit each member of the group its own step and command
# (before, both replies counted as the group's first member, room)
step_tries() { stack_metrics orchestratord | awk -v m="sagas_step_tries_count{type=\"booking\",step=\"$1\",command=\"$2\"}" '$1 == m { v = $2 } END { print v + 0 }'; }
assert_eq "sagas_step_tries: the room and the seat, once each" "1 1" \
  "$(step_tries room HoldRoom) $(step_tries seat ReserveStock)"
assert_eq "sagactl history: no current step once booked" 0 \
  "$(ctl history "$B1" | grep -c '^current step' || true)"
assert_eq "its group's members recorded, then reset" "0" \
  "$(psql_db sagas_orchestrator "SELECT members FROM sagas WHERE saga_id = '$B1'")"

# over the HTTP API (gatewayd): a booking started with its type, read back
# with its type and its state's name
B5=b0000000-0000-4000-8000-000000000005
got=$(curl -s --max-time 30 -X POST -H 'Content-Type: application/json' \
  --data-binary "{\"sagaId\": \"$B5\", \"type\": \"booking\", \"waitMs\": 20000, \"order\": {\"customer\": \"sam\", \"sku\": \"TRIP1\", \"qty\": 1, \"amount\": \"500\"}}" \
  "$GATEWAY_URL/v1/sagas" | jq -r '.saga.type + " " + .saga.stateName + " " + (.saga.state // "UNSPECIFIED")')
assert_eq "HTTP: a booking started, read back by its names" "booking BOOKED UNSPECIFIED" "$got"
assert_eq "HTTP: its room held, a second TRIP1 room taken" "TRIP1|1|HELD|3" "$(held hotel "$B5")|$(free_rooms TRIP1)"
got=$(curl -s --max-time 30 "$GATEWAY_URL/v1/sagas/$O1" | jq -r '.saga.type + " " + .saga.stateName + " " + .saga.state')
assert_eq "HTTP: an order keeps its SagaState" "order COMPLETED SAGA_STATE_COMPLETED" "$got"

# a seat refused: the room released, nothing charged or confirmed
B2=b0000000-0000-4000-8000-000000000002
money=$(balance)
ctl start sam TRIP2 1 50.00 --type booking --id "$B2" --wait >/dev/null
assert_eq "no seat: BOOKING_CANCELLED" "booking|BOOKING_CANCELLED|out_of_stock" "$(state_of "$B2")"
room=$(held hotel "$B2")
assert_eq "the room freed, or its hold tombstoned (FreeRoom first)" true \
  "$([ "$room" = "TRIP2|1|FREED" ] || [ "$room" = "TRIP2|1|TOMBSTONE" ] && echo true || echo "false ($room)")"
assert_eq "every TRIP2 room free again, none held" "5|0" \
  "$(free_rooms TRIP2)|$(psql_db sagas_hotel "SELECT count(*) FROM holds WHERE room = 'TRIP2' AND status = 'HELD'")"
assert_eq "nothing charged" "$money|0" \
  "$(balance)|$(psql_db sagas_payment "SELECT count(*) FROM charges WHERE saga_id = '$B2' AND status = 'CHARGED'")"
assert_eq "nothing confirmed" 0 "$(psql_db sagas_shipping "SELECT count(*) FROM shipments WHERE saga_id = '$B2'")"

# the airline down, the orchestrator killed with the group in flight; after
# the restart the booking completes, each step applied once
on airline fault set stock unavailable --method ReserveStock >/dev/null
B3=b0000000-0000-4000-8000-000000000003
ctl start sam TRIP3 1 20.00 --type booking --id "$B3" >/dev/null
retrying() { [ "$(psql_db sagas_orchestrator "SELECT state || '|' || (attempts >= 1) FROM sagas WHERE saga_id = '$B3'")" = "ROOM|true" ]; }
wait_until 30 retrying
assert_eq "the room held while the seat fails" "TRIP3|1|HELD|4" "$(held hotel "$B3")|$(free_rooms TRIP3)"
assert_eq "the row records the room's member done" 1 \
  "$(psql_db sagas_orchestrator "SELECT members FROM sagas WHERE saga_id = '$B3'")"
assert_eq "sagactl history: the current step by its name" 1 \
  "$(ctl history "$B3" | grep -c '^current step: ROOM$' || true)"
stack_kill orchestratord KILL
on airline fault clear stock >/dev/null
stack_start_orchestrator
booked() { [ "$(psql_db sagas_orchestrator "SELECT state FROM sagas WHERE saga_id = '$1'")" = BOOKED ]; }
wait_until 30 booked "$B3"
assert_eq "B3 booked after the restart" "booking|BOOKED|" "$(state_of "$B3")"
assert_eq "one TRIP3 room taken, once" "TRIP3|1|HELD|4" "$(held hotel "$B3")|$(free_rooms TRIP3)"
assert_eq "each hold once, one charge, one confirmation" "1|1|1|1" \
  "$(psql_db sagas_hotel "SELECT count(*) FROM holds WHERE saga_id = '$B3' AND status = 'HELD'")|$(psql_db sagas_airline "SELECT count(*) FROM reservations WHERE saga_id = '$B3' AND status = 'RESERVED'")|$(psql_db sagas_payment "SELECT count(*) FROM charges WHERE saga_id = '$B3' AND status = 'CHARGED'")|$(psql_db sagas_shipping "SELECT count(*) FROM shipments WHERE saga_id = '$B3'")"

# listings by type and by any type's state name (ListSagas type,
# state_name); the order saga's states keep their SagaState (order only)
ids() { ctl list "$@" --json | python3 -c 'import json,sys; print(" ".join(sorted(s["saga_id"][-3:] for s in json.load(sys.stdin))))'; }
assert_eq "list --type booking" "001 002 003 005" "$(ids --type booking)"
assert_eq "list --type order" "101" "$(ids --type order)"
assert_eq "list --state booked (case-insensitive)" "001 003 005" "$(ids --state booked)"
assert_eq "list --state BOOKING_CANCELLED" "002" "$(ids --state BOOKING_CANCELLED)"
assert_eq "list --state COMPLETED: the order saga's only" "101" "$(ids --state COMPLETED)"
assert_eq "list --type booking --state COMPLETED: none" "" "$(ids --type booking --state COMPLETED)"
rc=0
err=$(ctl list --type 'Bad Type' 2>&1 >/dev/null) || rc=$?
assert_eq "list --type not a name: refused" "1|1" \
  "$rc|$(grep -c 'invalid type: a saga type' <<<"$err" || true)"
rc=0
err=$(ctl list --state 'no;such' 2>&1 >/dev/null) || rc=$?
assert_eq "list --state not a name: usage error" "2|1" \
  "$rc|$(grep -c 'invalid --state' <<<"$err" || true)"

# the id of a booking started again as an order: refused, nothing changed
rc=0
err=$(ctl start sam TRIP1 2 100.00 --id "$B1" 2>&1 >/dev/null) || rc=$?
assert_eq "a booking's id as an order: exit 1" 1 "$rc"
assert_eq "a booking's id as an order: key_mismatch" 1 \
  "$(grep -cF "saga $B1 exists with another type" <<<"$err" || true)"
assert_eq "still the booking, BOOKED" "booking|BOOKED|" "$(state_of "$B1")"

# an unknown type: refused, nothing stored
B4=b0000000-0000-4000-8000-000000000004
rc=0
err=$(ctl start sam TRIP1 1 1.00 --type cruise --id "$B4" 2>&1 >/dev/null) || rc=$?
assert_eq "an unknown type: exit 1" 1 "$rc"
assert_eq "an unknown type: says which it runs" 1 \
  "$(grep -cF 'invalid type: "cruise" is not a saga type of this orchestrator (it runs: order, booking)' <<<"$err" || true)"
assert_eq "nothing stored" 0 "$(psql_db sagas_orchestrator "SELECT count(*) FROM sagas WHERE saga_id = '$B4'")"
finish
