#!/usr/bin/env bash
# The engine sends what its definition says (docs/saga-definitions.md,
# section 2 "Third landing"; orchestratord --definitions):
# - a definition file whose ship step maps qty from a constant (2): a saga
#   for 1 x S1 reserves 1, charges the order's amount and ships 2, read
#   from the participants' databases; the log names the file and the
#   version;
# - versions (schema 9): the file's version is stored once in
#   saga_definitions and each saga names it (sagas.def_id); a saga left
#   unfinished under it (ShipOrder failing) finishes under it after the
#   orchestrator restarts with the built-in order.yaml (ships 2), while a
#   saga started after the restart ships the order's 1; a saga of a version
#   a second orchestrator stored after the first started is finished by the
#   first when the second dies (ships 3); two orchestrators started at
#   the same moment with two new files each store theirs once and ship
#   under it (4 and 5); unfinished sagas whose stored
#   version this orchestratord cannot run (another type, a row missing) are
#   logged at start, named, and wait with nothing sent, while new sagas run;
# - what this orchestratord does not run refuses the start with exit 2
#   and a line that says why, before any database is touched: a participant
#   on a link it is not given (--links), another flow, a participant whose URL
#   option it does not have, a file that is not there, a syntax error (with
#   its line and column), a participant on the link of another service, a
#   state the API does not have, a step's deadline_ms out of the range of
#   --step-timeout;
# - a step's own deadline_ms and retry replace --step-timeout,
#   --backoff-cap and --attention-after for that step: reserve's 600 s
#   (the new saga's first deadline), charge's 1.5 s (the saga is cancelled
#   for timeout although --step-timeout is 60 s, no money moved, the stock
#   back), ship's attention after 2 tries (not 10) with a 50 ms cap.
set -euo pipefail
here=$(dirname "$0")
source "$here/../lib/stack.sh"
orch=$SAGA_BIN_DIR/orchestratord
order=$STACK_ROOT/orchestrator/definitions/order.yaml
mkdir -p "$STACK_DIR/defs"
D=$STACK_DIR/defs

# the refusals: no database is reachable at this conninfo, so a start that
# got past the definitions would fail later with another message
refused() { # refused NAME FILE EXPECTED_TEXT
  local rc=0 out
  out=$("$orch" --db "host=127.0.0.1 port=1 dbname=none connect_timeout=1" --db-wait 0 \
    --definitions "$2" 2>&1 >/dev/null) || rc=$?
  assert_eq "$1: exit 2" 2 "$rc"
  assert_eq "$1: says why" 1 "$(grep -cF -- "$3" <<<"$out" || true)"
}
refused "a link it is not given" "$STACK_ROOT/tests/definitions/booking.yaml" \
  "participants.hotel names --hotel: orchestratord has no such link (it has --stock, --payment, --shipping; give it one with --links hotel=URL[,URL...])"
sed 's/^        kind: pivot$/        kind: pivot\n        deadline_ms: 86400001/' "$order" >"$D/deadline.yaml"
refused "a step's deadline out of range" "$D/deadline.yaml" \
  "sagas.order.steps[1].deadline_ms: 86400001 is out of range (10 to 86400000)"
python3 - "$order" "$D/two_steps.yaml" <<'PY'
import sys
t = open(sys.argv[1]).read()
open(sys.argv[2], "w").write(t[:t.index("      - name: ship")])
PY
refused "another flow for the type named order" "$D/two_steps.yaml" "the file's steps differ"
sed 's/urls: --stock}/urls: --warehouse}/' "$order" >"$D/warehouse.yaml"
refused "an option it does not have" "$D/warehouse.yaml" \
  "participants.stock names --warehouse: orchestratord has no such link (it has --stock, --payment, --shipping; give it one with --links warehouse=URL[,URL...])"
sed 's/urls: --stock}/urls: --payment}/' "$order" >"$D/swapped.yaml"
refused "a link to another service" "$D/swapped.yaml" \
  "participants.stock: --payment is the link to sagas.v1.Payment, not sagas.v1.Stock"
sed 's/state: SHIPPING$/state: DELIVERING/' "$order" >"$D/renamed.yaml"
refused "a state renamed" "$D/renamed.yaml" \
  "sagas.order.steps[2]: the type named order names this step ship, state SHIPPING"
refused "no file" "$D/none.yaml" "$D/none.yaml: No such file or directory"
printf 'format: 1\nsagas: {order: [\n' >"$D/syntax.yaml"
refused "a syntax error" "$D/syntax.yaml" "$D/syntax.yaml:3:"

# a definition whose ship step ships 2 whatever the order's qty
sed 's/        input: {customer: customer, sku: sku, qty: qty}$/        input: {customer: customer, sku: sku, qty: {const: 2}}/' \
  "$order" >"$D/ship2.yaml"
assert_eq "the constant is in the file" 1 "$(grep -c 'qty: {const: 2}' "$D/ship2.yaml")"
ORCH_FLAGS="--definitions $D/ship2.yaml"
STACK_FAULTS=1
stack_start
ctl stock set S1 10 >/dev/null
ctl deposit sam 100.00 >/dev/null
S=def00000-0000-4000-8000-000000000001
ctl start sam S1 1 3.25 --id "$S" --wait >/dev/null
assert_eq "the saga completed" COMPLETED \
  "$(psql_db sagas_orchestrator "SELECT state FROM sagas WHERE saga_id = '$S'")"
assert_eq "reserved as ordered" "S1|1|RESERVED" \
  "$(psql_db sagas_stock "SELECT sku || '|' || qty || '|' || status FROM reservations WHERE saga_id = '$S'")"
assert_eq "charged as ordered" "sam|325|CHARGED" \
  "$(psql_db sagas_payment "SELECT customer || '|' || amount || '|' || status FROM charges WHERE saga_id = '$S'")"
assert_eq "shipped the definition's constant" "sam|S1|2|SHIPPED" \
  "$(psql_db sagas_shipping "SELECT customer || '|' || sku || '|' || qty || '|' || status FROM shipments WHERE saga_id = '$S'")"
assert_eq "the log names the file" 1 \
  "$(grep -c "saga definitions from $D/ship2.yaml: order version [0-9a-f]\{12\}$" "$STACK_DIR/orchestratord.log")"
v1=$(psql_db sagas_orchestrator "SELECT id FROM saga_definitions WHERE source = '$D/ship2.yaml'")
assert_eq "the version stored once" "1|order" \
  "$(psql_db sagas_orchestrator "SELECT count(*) || '|' || min(type) FROM saga_definitions")"
assert_eq "the saga names it" "$v1" \
  "$(psql_db sagas_orchestrator "SELECT def_id FROM sagas WHERE saga_id = '$S'")"

# a saga left in SHIPPING under that version, across a restart with the
# built-in definition
ctl fault set shipping unavailable --method ShipOrder >/dev/null
S2=def00000-0000-4000-8000-000000000002
ctl start sam S1 1 3.25 --id "$S2" >/dev/null
in_shipping() { [ "$(psql_db sagas_orchestrator "SELECT state || '|' || (attempts >= 1) FROM sagas WHERE saga_id = '$S2'")" = "SHIPPING|true" ]; }
wait_until 30 in_shipping
assert_eq "S2 waits in SHIPPING" "SHIPPING|true" \
  "$(psql_db sagas_orchestrator "SELECT state || '|' || (attempts >= 1) FROM sagas WHERE saga_id = '$S2'")"
stack_kill orchestratord
ORCH_FLAGS=""
stack_start_orchestrator
assert_eq "the restart serves S2's version" 1 \
  "$(grep -c "serving definition version [0-9a-f]\{12\} (id $v1) for 1 unfinished saga$" "$STACK_DIR/orchestratord.log")"
ctl fault clear shipping >/dev/null
completed() { [ "$(psql_db sagas_orchestrator "SELECT state FROM sagas WHERE saga_id = '$1'")" = COMPLETED ]; }
wait_until 30 completed "$S2"
assert_eq "S2 completed" COMPLETED "$(psql_db sagas_orchestrator "SELECT state FROM sagas WHERE saga_id = '$S2'")"
assert_eq "S2 shipped under its own version" "S1|2" \
  "$(psql_db sagas_shipping "SELECT sku || '|' || qty FROM shipments WHERE saga_id = '$S2'")"
S3=def00000-0000-4000-8000-000000000003
ctl start sam S1 1 3.25 --id "$S3" --wait >/dev/null
assert_eq "S3, started after, ships the order's qty" "S1|1" \
  "$(psql_db sagas_shipping "SELECT sku || '|' || qty FROM shipments WHERE saga_id = '$S3'")"
assert_eq "two versions stored, S3 under the other" "2|true" \
  "$(psql_db sagas_orchestrator "SELECT (SELECT count(*) FROM saga_definitions) || '|' || (def_id <> $v1) FROM sagas WHERE saga_id = '$S3'")"

# a version another orchestrator stored after this one started, met in a
# saga this one takes over: read then from saga_definitions (the saga ships 3)
sed 's/qty: {const: 2}}$/qty: {const: 3}}/' "$D/ship2.yaml" >"$D/ship3.yaml"
ctl fault set shipping unavailable --method ShipOrder >/dev/null
stack_start_orchestrator_as orch_b --definitions "$D/ship3.yaml" --request-timeout 100 --backoff-cap 100
S5=def00000-0000-4000-8000-000000000005
ctl_on orch_b start sam S1 1 3.25 --id "$S5" >/dev/null
S5_in_shipping() { [ "$(psql_db sagas_orchestrator "SELECT state FROM sagas WHERE saga_id = '$S5'")" = SHIPPING ]; }
wait_until 30 S5_in_shipping
stack_kill orch_b KILL
ctl fault clear shipping >/dev/null
wait_until 30 completed "$S5"
assert_eq "S5 completed by the first orchestrator" COMPLETED \
  "$(psql_db sagas_orchestrator "SELECT state FROM sagas WHERE saga_id = '$S5'")"
assert_eq "S5 shipped under its own version" "S1|3" \
  "$(psql_db sagas_shipping "SELECT sku || '|' || qty FROM shipments WHERE saga_id = '$S5'")"
assert_eq "the first orchestrator loaded it when it met it" 1 \
  "$(grep -c "serving definition version [0-9a-f]\{12\} (id [0-9]*), met in a saga$" "$STACK_DIR/orchestratord.log")"

# two orchestrators started at the same moment with two new files: each
# stores its own version once, and each one's sagas ship under it
declare -A port_of pid_of
for q in 4 5; do
  sed "s/qty: {const: 2}}\$/qty: {const: $q}}/" "$D/ship2.yaml" >"$D/ship$q.yaml"
  port_of[$q]=$(_stack_free_port)
done
for q in 4 5; do
  "$SAGA_BIN_DIR/orchestratord" --listen "tcp://127.0.0.1:${port_of[$q]}" --stock "$STOCK_URL" \
    --payment "$PAYMENT_URL" --shipping "$SHIPPING_URL" --db "$PG_CONN dbname=sagas_orchestrator" \
    --metrics-listen "http://127.0.0.1:$(_stack_free_port)" --definitions "$D/ship$q.yaml" \
    >>"$STACK_DIR/orch_$q.log" 2>&1 &
  STACK_PIDS+=("$!")
  pid_of[$q]=$!
done
both_listen() { _stack_listening "${port_of[4]}" && _stack_listening "${port_of[5]}"; }
wait_until 30 both_listen
for q in 4 5; do
  ORCH_ADMIN_URL="tcp://127.0.0.1:${port_of[$q]}" ctl start sam S1 1 3.25 \
    --id "def00000-0000-4000-8000-00000000010$q" --wait >/dev/null
done
assert_eq "each stored its version once" "1|1" \
  "$(psql_db sagas_orchestrator "SELECT (SELECT count(*) FROM saga_definitions WHERE source = '$D/ship4.yaml') || '|' || (SELECT count(*) FROM saga_definitions WHERE source = '$D/ship5.yaml')")"
assert_eq "each one's saga shipped under its version" "4|5" \
  "$(psql_db sagas_shipping "SELECT string_agg(qty::text, '|' ORDER BY saga_id) FROM shipments WHERE saga_id IN ('def00000-0000-4000-8000-000000000104', 'def00000-0000-4000-8000-000000000105')")"
kill -TERM "${pid_of[4]}" "${pid_of[5]}"
wait "${pid_of[4]}" "${pid_of[5]}" 2>/dev/null || true

# a version this orchestratord cannot run (another type), and one missing,
# each named by an unfinished saga: the start goes on (one bad row must not
# stop every orchestrator), each is logged with its saga, those sagas wait
# and nothing is sent for them, and new sagas run
ctl fault set shipping unavailable --method ShipOrder >/dev/null
S4=def00000-0000-4000-8000-000000000004
S6=def00000-0000-4000-8000-000000000006
ctl start sam S1 1 3.25 --id "$S4" >/dev/null
ctl start sam S1 1 3.25 --id "$S6" >/dev/null
both_shipping() { [ "$(psql_db sagas_orchestrator "SELECT count(*) FROM sagas WHERE saga_id IN ('$S4', '$S6') AND state = 'SHIPPING'")" = 2 ]; }
wait_until 30 both_shipping
stack_kill orchestratord
bad=$(psql_db sagas_orchestrator "INSERT INTO saga_definitions (version, type, body) VALUES (decode(repeat('ab', 32), 'hex'), 'booking', \$b\$$(cat "$STACK_ROOT/tests/definitions/booking.yaml")\$b\$) RETURNING id" | head -1)
psql_db sagas_orchestrator "UPDATE sagas SET def_id = $bad WHERE saga_id = '$S4'" >/dev/null
psql_db sagas_orchestrator "UPDATE sagas SET def_id = 99999 WHERE saga_id = '$S6'" >/dev/null
ships_before=$(psql_db sagas_shipping "SELECT count(*) FROM shipments")
epoch_of() { psql_db sagas_orchestrator "SELECT epoch FROM sagas WHERE saga_id = '$1'"; }
e4=$(epoch_of "$S4") e6=$(epoch_of "$S6")
stack_start_orchestrator
assert_eq "a version it cannot run: logged with its saga" 1 \
  "$(grep -c "ERROR: 1 unfinished saga (saga=$S4) started under a version this orchestratord cannot run, and waits: saga_definitions(id=$bad): participants.hotel names --hotel: orchestratord has no such link" "$STACK_DIR/orchestratord.log")"
assert_eq "a missing version: logged with its saga" 1 \
  "$(grep -c "ERROR: 1 unfinished saga (saga=$S6) started under a version this orchestratord cannot run, and waits: saga_definitions has no row id=99999" "$STACK_DIR/orchestratord.log")"
ctl fault clear shipping >/dev/null
S7=def00000-0000-4000-8000-000000000007
ctl start sam S1 1 3.25 --id "$S7" --wait >/dev/null
assert_eq "a new saga runs beside them" COMPLETED \
  "$(psql_db sagas_orchestrator "SELECT state FROM sagas WHERE saga_id = '$S7'")"
# both claimed again by the new orchestratord (the sweep), and not sent
claimed_both() { [ "$(epoch_of "$S4")" -gt "$e4" ] && [ "$(epoch_of "$S6")" -gt "$e6" ]; }
wait_until 30 claimed_both
assert_eq "nothing shipped for the two" "$((ships_before + 1))|0" \
  "$(psql_db sagas_shipping "SELECT count(*) || '|' || count(*) FILTER (WHERE saga_id IN ('$S4', '$S6')) FROM shipments")"
assert_eq "the two still in SHIPPING" 2 \
  "$(psql_db sagas_orchestrator "SELECT count(*) FROM sagas WHERE saga_id IN ('$S4', '$S6') AND state = 'SHIPPING'")"

# a step's own timing: reserve 600 s, charge 1.5 s, ship's retry capped at
# 50 ms with attention after 2 tries; the options say 60 s and 10 tries
python3 - "$order" "$D/timing.yaml" <<'PY'
import sys
t = open(sys.argv[1]).read()
t = t.replace("deadline_ms: default       # --step-timeout", "deadline_ms: 600000")
t = t.replace("        kind: pivot\n", "        kind: pivot\n        deadline_ms: 1500\n")
t = t.replace("        kind: retriable\n", "        kind: retriable\n        retry: {cap_ms: 50, attention_after: 2}\n")
open(sys.argv[2], "w").write(t)
PY
assert_eq "the timing is in the file" 3 \
  "$(grep -cE 'deadline_ms: (600000|1500)$|retry: \{cap_ms: 50, attention_after: 2\}$' "$D/timing.yaml")"
stack_kill orchestratord
ORCH_FLAGS="--definitions $D/timing.yaml --step-timeout 60000"
stack_start_orchestrator
ms_between() { # ms_between SQL_FROM SQL_TO: milliseconds, from the orchestrator's database
  psql_db sagas_orchestrator "SELECT round(extract(epoch FROM ($2) - ($1)) * 1000)::bigint"
}
ctl fault set stock unavailable --method ReserveStock >/dev/null
T1=def00000-0000-4000-8000-000000000201
ctl start sam S1 1 3.25 --id "$T1" >/dev/null
dl=$(ms_between "SELECT created_at FROM sagas WHERE saga_id = '$T1'" \
  "SELECT step_deadline FROM sagas WHERE saga_id = '$T1' AND state = 'RESERVING'")
assert_eq "reserve's own deadline: 600 s from the start (not 60 s)" true \
  "$([ -n "$dl" ] && [ "$dl" -ge 599000 ] && [ "$dl" -le 601000 ] && echo true || echo "false ($dl)")"
balance() { psql_db sagas_payment "SELECT balance FROM accounts WHERE customer = 'sam'"; }
money=$(balance)
ctl fault set payment unavailable --method ChargePayment >/dev/null
ctl fault clear stock >/dev/null
cancelled() { [ "$(psql_db sagas_orchestrator "SELECT state FROM sagas WHERE saga_id = '$1'")" = CANCELLED ]; }
wait_until 30 cancelled "$T1"
assert_eq "charge's own deadline cancelled it (--step-timeout is 60 s)" "CANCELLED|timeout" \
  "$(psql_db sagas_orchestrator "SELECT state || '|' || reason FROM sagas WHERE saga_id = '$T1'")"
took=$(ms_between "SELECT at FROM saga_history WHERE saga_id = '$T1' AND to_state = 'CHARGING'" \
  "SELECT at FROM saga_history WHERE saga_id = '$T1' AND event = 'deadline'")
assert_eq "no sooner than charge's 1.5 s" true "$([ "$took" -ge 1500 ] && echo true || echo "false ($took)")"
assert_eq "no money moved" "$money" "$(balance)"
assert_eq "the stock back" RELEASED \
  "$(psql_db sagas_stock "SELECT status FROM reservations WHERE saga_id = '$T1'")"
ctl fault clear payment >/dev/null
ctl fault set shipping unavailable --method ShipOrder >/dev/null
T3=def00000-0000-4000-8000-000000000203
ctl start sam S1 1 3.25 --id "$T3" >/dev/null
flagged() { [ "$(psql_db sagas_orchestrator "SELECT state || '|' || attention FROM sagas WHERE saga_id = '$T3'")" = "SHIPPING|true" ]; }
wait_until 30 flagged
assert_eq "ship's attention after its own 2 tries, capped at its 50 ms" 1 \
  "$(grep -c "saga=$T3.*saga needs attention: ShipOrder failed 2 times; retrying, each try waiting up to [0-9]* ms for its reply and then up to 50 ms$" "$STACK_DIR/orchestratord.log")"
ctl fault clear shipping >/dev/null
wait_until 30 completed "$T3"
assert_eq "then shipped once" 1 \
  "$(psql_db sagas_shipping "SELECT count(*) FROM shipments WHERE saga_id = '$T3' AND status = 'SHIPPED'")"
finish
