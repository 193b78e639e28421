#!/usr/bin/env bash
# Fault 21: the faults of the order saga's matrix, on the booking
# (tests/definitions/order_booking.yaml: the room on hoteld and the seat on an
# airline stockd held at once as a group, the payment as the pivot, a
# retriable confirmation), each asserted with the exact rooms (hoteld's
# database), seats (the airline's), balances, charges, confirmations and final
# states; nothing applied twice:
# - a lost reply of HoldRoom: the retry is answered from the record, BOOKED;
# - every command sent twice at once (--duplicate-delivery), for a booking
#   that completes and one whose seat is refused (FreeRoom twice), and
#   copies of HoldRoom and FreeRoom sent by hand afterwards: each once;
# - HoldRoom lost and the group's deadline (1 s) passes: both members
#   compensated, FreeRoom first leaves a tombstone, the lost hold replayed
#   is refused; BOOKING_CANCELLED (timeout), nothing held or charged;
# - orchestratord dies at each point: right after HoldRoom's reply came back
#   (exit_after_send, the group in flight), killed (-9) while the seat's
#   requests are lost (the group in flight, the room held), right after
#   ChargePayment's reply came back, and killed (-9) while the confirmation
#   fails; after each restart the booking is BOOKED with each step once.
source "$(dirname "$0")/head.inc"
defs=$STACK_ROOT/tests/definitions/order_booking.yaml
stack_start
declare -A url_of
for p in hotel airline; do
  psql_db postgres "CREATE DATABASE sagas_$p" >/dev/null
  port=$(_stack_free_port)
  url_of[$p]="tcp://127.0.0.1:$port"
  daemon=stockd name=stockd_airline
  [ "$p" = hotel ] && daemon=hoteld name=hoteld
  _stack_metrics_url "$name"
  _stack_daemon "$name" "$port" "$SAGA_BIN_DIR/$daemon" --listen "${url_of[$p]}" \
    --db "$PG_CONN dbname=sagas_$p" --metrics-listen "${STACK_METRICS_URL_OF[$name]}" \
    --enable-fault-injection
done
# the airline and the hotel as sagactl's --stock (their Admin service), sagacmd at the hotel
on() { local p=$1; shift; "$SAGA_BIN_DIR/sagactl" --stock "${url_of[$p]}" "$@"; }
hotel() { "$SAGA_BIN_DIR/sagacmd" "${url_of[hotel]}" "$@"; }
# the group's deadline (--step-timeout) far beyond a restart's, so that a
# restart under load never finds it passed (the deadline's own case sets 1 s)
ORCH_BASE="$FAST_ORCH --step-timeout 60000 --definitions $defs --links hotel=${url_of[hotel]};airline=${url_of[airline]}"
restart() { # restart [FLAGS]: orchestratord again with the booking, and FLAGS
  [ -z "${STACK_PID_OF[orchestratord]:-}" ] || stack_kill orchestratord
  ORCH_FLAGS="$ORCH_BASE ${1:-}"
  stack_start_orchestrator
}
restart

hotel set-rooms R 20 >/dev/null
on airline stock set R 20 >/dev/null
on airline stock set FULL 0 >/dev/null
hotel set-rooms FULL 5 >/dev/null
ctl deposit bk 1000.00 >/dev/null
id() { printf 'b21b21b2-0000-4000-8000-%012d' "$1"; }
book() { ctl start bk "$1" 1 10.00 --type booking --id "$(id "$2")" ${3:+"$3"} >/dev/null; }
free_rooms() { psql_db sagas_hotel "SELECT free FROM rooms WHERE room = '$1'"; }
seats() { psql_db sagas_airline "SELECT on_hand FROM stock WHERE sku = '$1'"; }
# outcome N: state|reason, the hold, the seat, the charge, the confirmation
outcome() {
  local s
  s=$(id "$1")
  echo "$(saga_state "$s") $(psql_db sagas_hotel "SELECT room || ':' || nights || ':' || status FROM holds WHERE saga_id = '$s'") $(psql_db sagas_airline "SELECT sku || ':' || status FROM reservations WHERE saga_id = '$s'") $(psql_db sagas_payment "SELECT amount || ':' || status FROM charges WHERE saga_id = '$s'") $(psql_db sagas_shipping "SELECT sku || ':' || qty FROM shipments WHERE saga_id = '$s'")"
}
BOOKED_ONE="BOOKED| R:1:HELD R:RESERVED 1000:CHARGED R:1"

# ---- a lost reply of HoldRoom
on hotel fault set stock drop_reply --method HoldRoom --count 1 >/dev/null
book R 1 --wait
assert_eq "lost HoldRoom reply: booked, each once" "$BOOKED_ONE" "$(outcome 1)"
assert_eq "lost HoldRoom reply: dropped once, the retry answered from the record" "1|1" \
  "$(log_count hoteld "fault injected: drop_reply on HoldRoom")|$(stack_metrics hoteld | sed -n 's/^sagas_participant_commands_total{command="HoldRoom",outcome="duplicate"} //p')"
assert_eq "one room, one seat taken" "19|19" "$(free_rooms R)|$(seats R)"

# ---- every command twice at once
restart --duplicate-delivery
book R 2 --wait
assert_eq "duplicate delivery: booked, each once" "$BOOKED_ONE" "$(outcome 2)"
book FULL 3 --wait
assert_eq "duplicate delivery, no seat: cancelled, the room freed once" \
  "BOOKING_CANCELLED|out_of_stock FULL:1:FREED FULL:OUT_OF_STOCK  " "$(outcome 3)"
assert_eq "rooms and seats" "18|18|5|0" "$(free_rooms R)|$(seats R)|$(free_rooms FULL)|$(seats FULL)"
# copies by hand, as their sagas' own commands
assert_eq "a HoldRoom copy of a booked saga: HELD, nothing taken" "OK - 1" \
  "$(SAGACMD_STARTED_MS=$(started_of "$(id 2)") hotel hold "$(id 2)" R 1)"
assert_eq "a FreeRoom copy of a cancelled saga: FREED, nothing given" "OK - 4" \
  "$(SAGACMD_STARTED_MS=$(started_of "$(id 3)") hotel free "$(id 3)" FULL 1)"
assert_eq "rooms unchanged by the copies" "18|5" "$(free_rooms R)|$(free_rooms FULL)"

# ---- HoldRoom lost, the group's deadline passes
on hotel fault set stock drop_request --method HoldRoom --count 1 >/dev/null
restart "--step-timeout 1000 --request-timeout 5000"
book R 4
wait_state "$(id 4)" BOOKING_CANCELLED 20
assert_eq "hold lost: cancelled by the deadline, the room tombstoned, the seat released" \
  "BOOKING_CANCELLED|timeout R:1:TOMBSTONE R:RELEASED  " "$(outcome 4)"
assert_eq "hold lost: the group compensated" "ROOM>ROOM_UNDO>BOOKING_CANCELLED" "$(path_of "$(id 4)")"
assert_eq "the lost HoldRoom replayed: refused" "ABORTED tombstone -" \
  "$(SAGACMD_STARTED_MS=$(started_of "$(id 4)") hotel hold "$(id 4)" R 1)"
assert_eq "nothing held" "18|18" "$(free_rooms R)|$(seats R)"

# ---- orchestratord exits right after HoldRoom's reply came back
restart "--fault exit_after_send:HoldRoom:count=1"
book R 5 &
client=$!
wait_daemon_exit orchestratord 30 || true
assert_eq "exit after HoldRoom's reply: by the fault" 86 "$DAEMON_RC"
# restarted at once: the client's own tries (its reply was lost with the
# daemon) may take longer than a step's deadline
restart
wait "$client" || true
wait_state "$(id 5)" BOOKED 30
assert_eq "exit after HoldRoom's reply: booked, each once" "$BOOKED_ONE" "$(outcome 5)"

# ---- killed (-9) with the group in flight: the room held, every request for
# the seat lost (the orchestrator's tries time out)
on airline fault set stock drop_request --method ReserveStock >/dev/null
book R 6
in_flight() { [ "$(psql_db sagas_orchestrator "SELECT state || (attempts >= 1) FROM sagas WHERE saga_id = '$(id 6)'")|$(psql_db sagas_hotel "SELECT status FROM holds WHERE saga_id = '$(id 6)'")" = "ROOMtrue|HELD" ]; }
wait_until 10 in_flight
assert_eq "group in flight: the room held, no seat" "ROOM| R:1:HELD" \
  "$(saga_state "$(id 6)") $(psql_db sagas_hotel "SELECT room || ':' || nights || ':' || status FROM holds WHERE saga_id = '$(id 6)'")$(psql_db sagas_airline "SELECT status FROM reservations WHERE saga_id = '$(id 6)'")"
stack_kill orchestratord KILL
on airline fault clear stock >/dev/null
restart
wait_state "$(id 6)" BOOKED 30
assert_eq "killed with the group in flight: booked, each once" "$BOOKED_ONE" "$(outcome 6)"

# ---- orchestratord exits right after ChargePayment's reply came back
restart "--fault exit_after_send:ChargePayment:count=1"
book R 7
wait_daemon_exit orchestratord 30 || true
assert_eq "exit after the charge's reply: by the fault" 86 "$DAEMON_RC"
assert_eq "the charge committed, not yet stored" "PAY|" "$(saga_state "$(id 7)")"
restart
wait_state "$(id 7)" BOOKED 30
assert_eq "exit after the charge: booked, charged once" "$BOOKED_ONE" "$(outcome 7)"

# ---- killed (-9) during the confirmation (shippingd refusing it)
ctl fault set shipping unavailable --method ShipOrder >/dev/null
book R 8
confirming() { [ "$(psql_db sagas_orchestrator "SELECT state || (attempts >= 1) FROM sagas WHERE saga_id = '$(id 8)'")" = CONFIRMtrue ]; }
wait_until 10 confirming
stack_kill orchestratord KILL
ctl fault clear shipping >/dev/null
restart
wait_state "$(id 8)" BOOKED 30
assert_eq "killed during the confirmation: booked, each once" "$BOOKED_ONE" "$(outcome 8)"

# ---- the totals: 6 booked (1, 2, 5, 6, 7, 8), 2 cancelled (3, 4)
assert_eq "booked" "6" "$(psql_db sagas_orchestrator "SELECT count(*) FROM sagas WHERE state = 'BOOKED'")"
assert_eq "rooms: 20 less 6 held, 6 live holds" "14|6" \
  "$(free_rooms R)|$(psql_db sagas_hotel "SELECT count(*) FROM holds WHERE status = 'HELD'")"
assert_eq "seats: 20 less 6" "14" "$(seats R)"
assert_eq "bk: 1000.00 less 6 x 10.00, 6 charges" "94000|6" \
  "$(balance bk)|$(psql_db sagas_payment "SELECT count(*) FROM charges WHERE status = 'CHARGED'")"
assert_eq "no saga with two holds, charges or confirmations" "0|0|0" \
  "$(psql_db sagas_hotel "SELECT count(*) - count(DISTINCT saga_id) FROM holds")|$(psql_db sagas_payment "SELECT count(*) - count(DISTINCT saga_id) FROM charges")|$(psql_db sagas_shipping "SELECT count(*) - count(DISTINCT saga_id) FROM shipments")"
assert_eq "confirmations: the booked" "6" "$(psql_db sagas_shipping "SELECT count(*) FROM shipments")"
assert_eq "nobody flagged for attention" "0" "$(psql_db sagas_orchestrator "SELECT count(*) FROM sagas WHERE attention")"
finish
