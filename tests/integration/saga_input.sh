#!/usr/bin/env bash
# A saga type with an input message of its own (docs/saga-definitions.md,
# "A saga's input"; schema version 11): orchestratord, built once, loads
# tests/definitions/trip.yaml, whose `trip` takes a sagas.v1.Booking
# (proto/sagas/v1/booking.proto, built like any other .proto, no C for it):
# - a trip started with --input JSON books: the room held on stockd (nights
#   units of it), the amount charged, the flight's seats recorded by
#   shippingd, each read from its database; GetSaga gives its input's type
#   and JSON, and its customer; the row keeps the input encoded (qty and
#   amount NULL); the same start again is a duplicate, another input with
#   the same id is refused key_mismatch "another input", the trip unchanged;
# - the refusals, each INVALID_ARGUMENT naming the field, logged and
#   counted, nothing stored: an order given to a type that takes a Booking,
#   a field a step maps missing, a count out of the protocol's 1..10^6 (what
#   a participant takes: seats past it would be refused after the pivot, for
#   ever), an unknown field, JSON that is not an object, an input larger than
#   a row holds, a string with a NUL byte inside (cut short by decoding);
# - the order saga takes its Order as input_json too (the typed columns);
# - a trip whose room is out of stock is cancelled, nothing charged;
# - the orchestrator killed (kill -9) with a trip at its pivot: after a
#   restart the trip, read back from its row, books with one charge;
# - ListSagas by type gives each trip's input; over the HTTP API a trip is
#   started with its inputJson and read back;
# - the metrics count sagas by type and steps by their definition's names.
set -euo pipefail
here=$(dirname "$0")
source "$here/../lib/stack.sh"
source "$here/../lib/fault.sh"
defs=$STACK_ROOT/tests/definitions/trip.yaml

STACK_GATEWAY=1
ORCH_FLAGS="--definitions $defs --gauge-interval 200"
stack_start
ctl stock set R1 10 >/dev/null
ctl stock set R2 0 >/dev/null
ctl deposit ann 500.00 >/dev/null
count_sagas() { psql_db sagas_orchestrator "SELECT count(*) FROM sagas"; }
metric() { stack_metrics orchestratord | awk -v m="$1" '$1 == m { v = $2 } END { print v + 0 }'; }
metric_is() { [ "$(metric "$1")" = "$2" ]; }
trip_json() { # NIGHTS [EXTRA_FIELDS]
  echo "{\"customer\":\"ann\",\"room\":\"R1\",\"nights\":$1,\"flight\":\"F1\",\"seats\":2,\"amount\":\"12000\"${2:-}}"
}

# --- a trip books ---------------------------------------------------------------
T1=7a000000-0000-4000-8000-000000000001
ctl start --type trip --input "$(trip_json 3)" --id "$T1" --wait >"$STACK_DIR/t1.out"
assert_eq "the trip booked" "TRIP_BOOKED" "$(saga_state "$T1" | cut -d'|' -f1)"
assert_eq "the room held: nights units of it" 7 "$(on_hand R1)"
assert_eq "the amount charged" "38000" "$(balance ann)"
assert_eq "the flight's seats recorded" "ann|F1|2|SHIPPED" \
  "$(psql_db sagas_shipping "SELECT customer || '|' || sku || '|' || qty || '|' || status FROM shipments WHERE saga_id = '$T1'")"
assert_eq "sagactl start prints the input" 1 \
  "$(grep -c '^input         ' "$STACK_DIR/t1.out")"
got=$(ctl get "$T1" --json | jq -r '[.type, .state, .customer, .input_type, .input.room, (.input.nights|tostring), .input.amount] | join(" ")')
assert_eq "GetSaga: its input's type and JSON, its customer" \
  "trip TRIP_BOOKED ann sagas.v1.Booking R1 3 12000" "$got"
assert_eq "the row: the input encoded, no order columns" "t|t|ann" \
  "$(psql_db sagas_orchestrator "SELECT (input IS NOT NULL)::text || '|' || (qty IS NULL AND amount IS NULL)::text || '|' || customer FROM sagas WHERE saga_id = '$T1'" | sed 's/true/t/g')"
# the same start again (the JSON's keys in another order, names in
# lowerCamelCase): the same saga, not a new one
got=$(ctl start --type trip --id "$T1" --json \
  --input '{"amount":12000,"seats":2,"flight":"F1","nights":3,"room":"R1","customer":"ann"}' | jq -r .created)
assert_eq "the same input again: a duplicate" "false" "$got"
rc=0
out=$(ctl start --type trip --id "$T1" --input "$(trip_json 4)" 2>&1) || rc=$?
assert_eq "another input with its id: refused" 1 "$rc"
assert_eq "another input with its id: key_mismatch" 1 \
  "$(grep -c "ALREADY_EXISTS (key_mismatch): saga $T1 exists with another input" <<<"$out" || true)"
assert_eq "the trip unchanged" "7|38000" "$(on_hand R1)|$(balance ann)"

# --- refusals: nothing stored -----------------------------------------------------
n0=$(count_sagas)
refused() { # refused WHAT EXPECTED_TEXT SAGACTL_ARGS...
  local what=$1 want=$2 rc=0 out
  shift 2
  out=$(ctl start --type trip "$@" 2>&1) || rc=$?
  assert_eq "$what: exit 1" 1 "$rc"
  assert_eq "$what: says why" 1 "$(grep -cF -- "$want" <<<"$out" || true)"
}
refused "an order to a type of another input" \
  "INVALID_ARGUMENT (bad_field): invalid input: an order: type trip takes a sagas.v1.Booking: give it as input or input_json, not order" \
  ann R1 1 1.00
refused "a mapped field missing" "invalid input.room: missing (a sagas.v1.Booking)" \
  --input '{"customer":"ann","nights":1,"flight":"F1","seats":1,"amount":"100"}'
refused "a count out of the protocol's range" "invalid input.nights: must be 1..1000000 (a sagas.v1.Booking)" \
  --input "$(trip_json -1)"
refused "a count past what a participant takes" "invalid input.seats: must be 1..1000000" \
  --input '{"customer":"ann","room":"R1","nights":1,"flight":"F1","seats":2000000,"amount":"1"}'
# an input decoded as something else than was sent: a string with a NUL
# byte inside (protobuf-c cuts it there), over the HTTP API's encoded input
nul=$(printf '\x0a\x05an\x00xy\x12\x02R1\x18\x01\x22\x02F1\x28\x01\x30\x01' | base64 -w0)
got=$(curl -s --max-time 30 -X POST -H 'Content-Type: application/json' \
  --data-binary "{\"type\": \"trip\", \"input\": \"$nul\"}" "$GATEWAY_URL/v1/sagas" | jq -r '.code + " " + .message')
assert_eq "a NUL inside a string: refused" \
  "INVALID_ARGUMENT invalid input: not exactly a sagas.v1.Booking (a string with a NUL byte inside, an overlong varint or a field given twice)" "$got"
refused "an unknown field" "invalid input_json.rooms" \
  --input "$(trip_json 1 ',"rooms":"R1"')"
refused "not an object" "invalid input_json: not a JSON object" --input '[1]'
refused "not JSON" "invalid input_json:" --input '{"customer":'
# larger than a row holds: a note (a field no step maps, kept with the
# input) of 600 bytes, over the HTTP API (sagactl's options hold 511)
note=$(head -c 600 /dev/zero | tr '\0' 'x')
body=$(jq -nc --arg in "$(trip_json 1 ",\"note\":\"$note\"")" '{type: "trip", inputJson: $in}')
got=$(curl -s --max-time 30 -X POST -H 'Content-Type: application/json' --data-binary "$body" \
  "$GATEWAY_URL/v1/sagas" | jq -r '.code + " " + .message')
assert_eq "larger than a row holds: refused" \
  "INVALID_ARGUMENT invalid input: 623 bytes encoded, at most 512 (a sagas.v1.Booking)" "$got"
assert_eq "no saga stored by a refusal" "$n0" "$(count_sagas)"
assert_eq "each refusal logged" 9 "$(grep -c 'StartSaga refused: invalid input' "$STACK_DIR/orchestratord.log")"
assert_eq "and counted" 9 \
  "$(stack_metrics orchestratord | awk '$1 == "sagas_rpc_refusals_total{reason=\"bad_field\"}" { print $2 }')"

# --- the order saga's Order as input_json ----------------------------------------
O1=7a000000-0000-4000-8000-000000000002
ctl start --input '{"customer":"ann","sku":"R1","qty":1,"amount":"100"}' --id "$O1" --wait >/dev/null
assert_eq "an order from input_json completes" "COMPLETED" "$(saga_state "$O1" | cut -d'|' -f1)"
assert_eq "its typed columns, no encoded input" "ann|R1|1|100|t" \
  "$(psql_db sagas_orchestrator "SELECT customer || '|' || sku || '|' || qty || '|' || amount || '|' || (input IS NULL)::text FROM sagas WHERE saga_id = '$O1'" | sed 's/true/t/')"

# --- a room out of stock: cancelled, nothing charged ------------------------------
T2=7a000000-0000-4000-8000-000000000003
money=$(balance ann)
ctl start --type trip --id "$T2" --wait \
  --input '{"customer":"ann","room":"R2","nights":1,"flight":"F1","seats":1,"amount":"500"}' >/dev/null
assert_eq "no room: cancelled for out_of_stock" "TRIP_CANCELLED|out_of_stock" "$(saga_state "$T2")"
assert_eq "no room: nothing charged" "$money" "$(balance ann)"
assert_eq "no room: no charge row" "" "$(charge "$T2")"

# --- killed at the pivot: the restart books it from its row ----------------------
T3=7a000000-0000-4000-8000-000000000004
stack_kill paymentd
ctl start --type trip --id "$T3" --input "$(trip_json 2)" >/dev/null
wait_state "$T3" PAY 20
# the database gauges count it by its type and its definition's state name
wait_until 20 metric_is 'sagas_open{type="trip",state="PAY"}' 1 || true
assert_eq "sagas_open by type and state" 1 "$(metric 'sagas_open{type="trip",state="PAY"}')"
stack_kill orchestratord KILL
stack_start_payment
stack_start_orchestrator
wait_state "$T3" TRIP_BOOKED 30
assert_eq "after the restart: booked, one charge" "CHARGED|1" \
  "$(charge "$T3")|$(psql_db sagas_payment "SELECT count(*) FROM charges WHERE saga_id = '$T3'")"
assert_eq "after the restart: its room and seats from its input (10 - 3 - 1 - 2)" "4|2" \
  "$(on_hand R1)|$(psql_db sagas_shipping "SELECT qty FROM shipments WHERE saga_id = '$T3'")"

# --- listings and the HTTP API ----------------------------------------------------
got=$(ctl list --type trip --json | jq -r '[.[] | .input.nights | tostring] | join(",")')
assert_eq "ListSagas --type trip: each trip's input" "2,1,3" "$got"
T4=7a000000-0000-4000-8000-000000000005
body=$(jq -nc --arg id "$T4" --arg in "$(trip_json 1)" '{sagaId: $id, type: "trip", waitMs: 20000, inputJson: $in}')
got=$(curl -s --max-time 30 -X POST -H 'Content-Type: application/json' --data-binary "$body" \
  "$GATEWAY_URL/v1/sagas" | jq -r '.saga.type + " " + .saga.stateName')
assert_eq "HTTP: a trip started with its inputJson" "trip TRIP_BOOKED" "$got"
got=$(curl -s --max-time 30 "$GATEWAY_URL/v1/sagas/$T4" | jq -r '.saga.inputType + " " + (.saga.inputJson | fromjson | .room)')
assert_eq "HTTP: read back with its input" "sagas.v1.Booking R1" "$got"

# --- the metrics by type and step (this process: since the restart, T4
# started, T3 and T4 booked, T4's room step done) ---------------------------------
assert_eq "sagas_started_total by type" 1 "$(metric 'sagas_started_total{type="trip"}')"
assert_eq "sagas_finished_total by type and state" 2 \
  "$(metric 'sagas_finished_total{type="trip",state="TRIP_BOOKED",reason=""}')"
assert_eq "sagas_step_tries by type and step" 1 \
  "$(metric 'sagas_step_tries_count{type="trip",step="room",command="ReserveStock"}')"
finish
