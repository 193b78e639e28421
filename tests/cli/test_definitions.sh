#!/usr/bin/env bash
# CLI test: `sagactl definitions check FILE` (docs/saga-definitions.md): the
# order definition validates (exit 0, its type, version and three steps), a bad
# file is refused with FILE:LINE:COLUMN: PATH: message (exit 1), a missing
# argument is a usage error (exit 2); --model runs the fixed point over each
# type (saga_model.h) and says so. `definitions table FILE` prints each
# type's state table. Needs no daemon.
#   usage: test_definitions.sh PATH/TO/sagactl SOURCE_DIR
set -euo pipefail

SAGACTL=${1:?usage: test_definitions.sh PATH/TO/sagactl SOURCE_DIR}
SRC=${2:?usage: test_definitions.sh PATH/TO/sagactl SOURCE_DIR}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
failures=0
fail() {
	echo "FAIL: $*" >&2
	failures=$((failures + 1))
}

rc=0
"$SAGACTL" definitions check "$SRC/orchestrator/definitions/order.yaml" >"$TMP/out" 2>"$TMP/err" || rc=$?
[[ $rc -eq 0 ]] || fail "order.yaml: exit $rc: $(cat "$TMP/err")"
grep -Eq '^order version [0-9a-f]{64} input sagas\.v1\.Order \(3 steps' "$TMP/out" ||
	fail "order.yaml: no type line: $(cat "$TMP/out")"
for step in 'reserve +compensable RESERVING +RELEASING +stock:ReserveStock/ReleaseStock' \
	'charge +pivot +CHARGING +REFUNDING +payment:ChargePayment/RefundPayment' \
	'ship +retriable +SHIPPING +- +shipping:ShipOrder deadline=none'; do
	grep -Eq "^  $step" "$TMP/out" || fail "order.yaml: no step line /$step/"
done
grep -Eq '^ +input: customer <- customer, qty <- qty, sku <- sku$' "$TMP/out" ||
	fail "order.yaml: no input line of ship: $(cat "$TMP/out")"
[[ "$(tail -n 1 "$TMP/out")" == "orchestratord (this build) runs it" ]] ||
	fail "order.yaml: no verdict: $(cat "$TMP/out")"

rc=0
"$SAGACTL" definitions check "$SRC/tests/definitions/booking.yaml" >"$TMP/out" 2>"$TMP/err" || rc=$?
[[ $rc -eq 0 ]] || fail "booking.yaml: exit $rc: $(cat "$TMP/err")"
grep -q 'input: customer <- customer, qty <- const 1, sku <- sku$' "$TMP/out" ||
	fail "booking.yaml: no constant in confirm's input: $(cat "$TMP/out")"
grep -q '^ *retry: base 100ms, cap 5000ms, attention after 10 tries$' "$TMP/out" ||
	fail "booking.yaml: no retry line of confirm: $(cat "$TMP/out")"
want="orchestratord (this build) runs it, given --links hotel=URL[,URL...];airline=URL[,URL...]"
[[ "$(tail -n 1 "$TMP/out")" == "$want" ]] || fail "booking.yaml: got '$(tail -n 1 "$TMP/out")', want '$want'"
[[ ! -s "$TMP/err" ]] || fail "booking.yaml: a warning: $(cat "$TMP/err")"
rc=0
"$SAGACTL" definitions check --json "$SRC/tests/definitions/booking.yaml" >"$TMP/out" 2>"$TMP/err" || rc=$?
grep -q '"orchestratord":{"runs":true,"why":null,"links":"hotel=URL\[,URL...\];airline=URL\[,URL...\]"}}$' "$TMP/out" ||
	fail "booking.yaml --json: no links: $(cat "$TMP/out")"
# a type named order with another flow: valid, not run (the API's SagaState)
python3 - "$SRC/orchestrator/definitions/order.yaml" "$TMP/two_steps.yaml" <<'PY'
import sys
t = open(sys.argv[1]).read()
open(sys.argv[2], "w").write(t[:t.index("      - name: ship")])
PY
rc=0
"$SAGACTL" definitions check "$TMP/two_steps.yaml" >"$TMP/out" 2>"$TMP/err" || rc=$?
want="sagactl: warning: valid, but orchestratord (this build) cannot run it: $TMP/two_steps.yaml: sagas.order: the type named order is the order saga (the API's SagaState)"
[[ "$(cat "$TMP/err")" == "$want"* ]] || fail "two_steps.yaml: got '$(cat "$TMP/err")', want '$want...'"

# a participant on the link of another service: valid, not run
sed 's/urls: --stock}/urls: --payment}/' "$SRC/orchestrator/definitions/order.yaml" >"$TMP/swapped.yaml"
rc=0
"$SAGACTL" definitions check "$TMP/swapped.yaml" >"$TMP/out" 2>"$TMP/err" || rc=$?
[[ $rc -eq 0 ]] || fail "swapped.yaml: exit $rc"
want="sagactl: warning: valid, but orchestratord (this build) cannot run it: $TMP/swapped.yaml: participants.stock: --payment is the link to sagas.v1.Payment, not sagas.v1.Stock"
[[ "$(cat "$TMP/err")" == "$want" ]] || fail "swapped.yaml: got '$(cat "$TMP/err")', want '$want'"

# a retriable step in a type with no pivot: line 11, column 15 (the kind's value)
cat >"$TMP/bad.yaml" <<'YAML'
format: 1
participants:
  stock: {service: sagas.v1.Stock, urls: --stock}
  shipping: {service: sagas.v1.Shipping, urls: --shipping}
sagas:
  t:
    input: sagas.v1.Order
    completed: DONE
    cancelled: UNDONE
    steps:
      - kind: retriable
        name: ship
        participant: shipping
        command: ShipOrder
        input: {customer: customer, sku: sku, qty: qty}
YAML
rc=0
"$SAGACTL" definitions check "$TMP/bad.yaml" >"$TMP/out" 2>"$TMP/err" || rc=$?
[[ $rc -eq 1 ]] || fail "bad.yaml: exit $rc, want 1"
want="sagactl: error: $TMP/bad.yaml:11:15: sagas.t.steps[0].kind: a retriable step needs the pivot before it (this type has none)"
[[ "$(cat "$TMP/err")" == "$want" ]] || fail "bad.yaml: got '$(cat "$TMP/err")', want '$want'"
[[ ! -s "$TMP/out" ]] || fail "bad.yaml: printed on stdout"

# --json: one JSON value, the order type's three steps
rc=0
"$SAGACTL" definitions check --json "$SRC/orchestrator/definitions/order.yaml" >"$TMP/out" 2>"$TMP/err" || rc=$?
[[ $rc -eq 0 ]] || fail "--json: exit $rc: $(cat "$TMP/err")"
[[ $(wc -l <"$TMP/out") -eq 1 ]] || fail "--json: not one line: $(cat "$TMP/out")"
grep -Eq '^\{"types":\[\{"name":"order","version":"[0-9a-f]{64}","input":"sagas\.v1\.Order","completed":"COMPLETED","cancelled":"CANCELLED","steps":\[\{"name":"reserve","kind":"compensable",' "$TMP/out" ||
	fail "--json: no order type: $(cat "$TMP/out")"
grep -q '"name":"ship","kind":"retriable","state":"SHIPPING","compensating":null,"participant":"shipping","command":"ShipOrder","compensation":null,"deadline_ms":null,"retry":{"base_ms":"default","cap_ms":"default","attention_after":"default"},"group":null,"input":{"customer":"customer","qty":"qty","sku":"sku"}}' "$TMP/out" ||
	fail "--json: no ship step: $(cat "$TMP/out")"
grep -q '"orchestratord":{"runs":true,"why":null,"links":null}}$' "$TMP/out" || fail "--json: no verdict: $(cat "$TMP/out")"

# one step: "(1 step;"
head -n 10 "$TMP/bad.yaml" >"$TMP/one.yaml"
cat >>"$TMP/one.yaml" <<'YAML'
      - {name: reserve, participant: stock, command: ReserveStock, kind: pivot, compensation: ReleaseStock, input: {sku: sku, qty: qty}}
YAML
rc=0
"$SAGACTL" definitions check "$TMP/one.yaml" >"$TMP/out" 2>"$TMP/err" || rc=$?
if [[ $rc -eq 0 ]]; then
	grep -q '(1 step; DONE, UNDONE)' "$TMP/out" || fail "one.yaml: $(cat "$TMP/out")"
else
	fail "one.yaml: exit $rc: $(cat "$TMP/err")"
fi

# a directory as FILE
# --model: the fixed point over each type (saga_model.h), exact end states
rc=0
"$SAGACTL" definitions check --model "$SRC/orchestrator/definitions/order.yaml" >"$TMP/out" 2>"$TMP/err" || rc=$?
[[ $rc -eq 0 ]] || fail "order.yaml --model: exit $rc: $(cat "$TMP/err")"
grep -Eq '^order: model: fixed point reached, no violation: [0-9]+ states, [0-9]+ transitions, depth [0-9]+; ends: 1 completed, 6 cancelled$' "$TMP/out" ||
	fail "order.yaml --model: no model line: $(cat "$TMP/out")"
rc=0
"$SAGACTL" definitions check --model --json "$SRC/tests/definitions/booking.yaml" >"$TMP/out" 2>"$TMP/err" || rc=$?
[[ $rc -eq 0 ]] || fail "booking.yaml --model --json: exit $rc: $(cat "$TMP/err")"
got=$(python3 -c 'import json,sys; m=json.load(sys.stdin)["types"][0]["model"]; print(m["ok"], m["fixed_point"], m["completed"], m["cancelled"], m["violation"], m["path"], m["states"] > 500)' <"$TMP/out")
[[ "$got" == "True True 1 12 None [] True" ]] || fail "booking.yaml --model --json: got '$got'"
# a flow of seven steps with a group of three: 12,360 states, more than
# the bound given
python3 - "$TMP/seven.yaml" <<'PY'
import sys
# each hold on a stock daemon of its own: one daemon takes one ReserveStock
# of a saga (a participant applies each (saga id, method) once)
c = "{name: %s, participant: s_%s, command: ReserveStock, compensation: ReleaseStock, kind: compensable, input: {sku: sku, qty: qty}}"
steps = ["      - " + c % (n, n) for n in ("a", "b", "c")]
steps += ["      - group: g", "        steps:"] + ["          - " + c % (n, n) for n in ("d", "e", "f")]
holds = "".join("  s_%s: {service: sagas.v1.Stock, urls: --s-%s}\n" % (n, n) for n in "abcdef")
steps += ["      - {name: p, participant: payment, command: ChargePayment, compensation: RefundPayment, kind: pivot, input: {customer: customer, amount: amount}}"]
steps += ["      - {name: %s, participant: ship_%s, command: ShipOrder, kind: retriable, input: {customer: customer, sku: sku, qty: qty}}" % (n, n) for n in ("r", "s")]
holds += "".join("  ship_%s: {service: sagas.v1.Shipping, urls: --ship-%s}\n" % (n, n) for n in "rs")
open(sys.argv[1], "w").write("""format: 1
participants:
  stock: {service: sagas.v1.Stock, urls: --stock}
  payment: {service: sagas.v1.Payment, urls: --payment}
  shipping: {service: sagas.v1.Shipping, urls: --shipping}
""" + holds + """sagas:
  seven:
    input: sagas.v1.Order
    completed: DONE
    cancelled: UNDONE
    steps:
""" + "\n".join(steps) + "\n")
PY
rc=0
"$SAGACTL" definitions check --model "$TMP/seven.yaml" >"$TMP/out" 2>"$TMP/err" || rc=$?
[[ $rc -eq 0 ]] || fail "seven.yaml --model: exit $rc: $(cat "$TMP/err")"
grep -q '^seven: model: fixed point reached, no violation: 12360 states, [0-9]* transitions, depth [0-9]*; ends: 1 completed, 39 cancelled$' "$TMP/out" ||
	fail "seven.yaml --model: $(cat "$TMP/out")"
rc=0
"$SAGACTL" definitions check --model --max-states 1000 "$TMP/seven.yaml" >"$TMP/out" 2>"$TMP/err" || rc=$?
[[ $rc -eq 1 ]] || fail "--max-states 1000: exit $rc, want 1"
grep -q '^seven: model: stopped at --max-states before the fixed point: 1000 states' "$TMP/out" ||
	fail "--max-states 1000: $(cat "$TMP/out")"
grep -q 'sagactl: error: seven: the model stopped at 1000 states, before its fixed point: raise --max-states' "$TMP/err" ||
	fail "--max-states 1000: no error: $(cat "$TMP/err")"
rc=0
"$SAGACTL" definitions check --model --max-states 5 "$SRC/tests/definitions/booking.yaml" >"$TMP/out" 2>"$TMP/err" || rc=$?
[[ $rc -eq 2 ]] || fail "--max-states 5: exit $rc, want 2 (below 1000)"

rc=0
"$SAGACTL" definitions check "$TMP" >"$TMP/out" 2>"$TMP/err" || rc=$?
[[ $rc -eq 1 ]] || fail "directory: exit $rc, want 1"
want="sagactl: error: $TMP: is a directory"
[[ "$(cat "$TMP/err")" == "$want" ]] || fail "directory: got '$(cat "$TMP/err")', want '$want'"

rc=0
"$SAGACTL" definitions check >"$TMP/out" 2>"$TMP/err" || rc=$?
[[ $rc -eq 2 ]] || fail "no FILE: exit $rc, want 2"
rc=0
"$SAGACTL" definitions check --help >"$TMP/out" 2>"$TMP/err" || rc=$?
if [[ $rc -ne 0 ]] || ! grep -q '^usage: sagactl definitions check FILE' "$TMP/out" ||
	! grep -q 'Needs no server: the connection options' "$TMP/out"; then
	fail "definitions check --help"
fi

# definitions table: each type's table, a heading per type when several;
# an unknown --type names the file's types (exit 1); a bad file exit 1
rc=0
"$SAGACTL" definitions table "$SRC/tests/definitions/trip.yaml" >"$TMP/out" 2>"$TMP/err" || rc=$?
[[ $rc -eq 0 ]] || fail "table trip.yaml: exit $rc: $(cat "$TMP/err")"
[[ "$(grep '^### ' "$TMP/out" | tr '\n' ' ')" == "### order ### trip " ]] ||
	fail "table trip.yaml: headings: $(grep '^### ' "$TMP/out")"
grep -qxF '| CHARGING (pivot) | ChargePayment | SHIPPING | RELEASING (the reply'"'"'s reason) | REFUNDING (timeout) | REFUNDING (cancel_requested) |' "$TMP/out" ||
	fail "table trip.yaml: no CHARGING row: $(cat "$TMP/out")"
rc=0
"$SAGACTL" definitions table --type order "$SRC/orchestrator/definitions/order.yaml" >"$TMP/out" 2>"$TMP/err" || rc=$?
[[ $rc -eq 0 && "$(wc -l <"$TMP/out")" -eq 8 && "$(head -c 4 "$TMP/out")" == "| st" ]] ||
	fail "table --type order: exit $rc, $(wc -l <"$TMP/out") lines: $(cat "$TMP/out" "$TMP/err")"
rc=0
"$SAGACTL" definitions table --type nope "$SRC/tests/definitions/trip.yaml" >"$TMP/out" 2>"$TMP/err" || rc=$?
want="sagactl: error: $SRC/tests/definitions/trip.yaml has no saga type \"nope\" (its types: order, trip)"
[[ $rc -eq 1 && "$(cat "$TMP/err")" == "$want" && ! -s "$TMP/out" ]] ||
	fail "table --type nope: exit $rc, got '$(cat "$TMP/err")', want '$want'"
printf 'format: 2\n' >"$TMP/bad.yaml"
rc=0
"$SAGACTL" definitions table "$TMP/bad.yaml" >"$TMP/out" 2>"$TMP/err" || rc=$?
[[ $rc -eq 1 && "$(cat "$TMP/err")" == "sagactl: error: $TMP/bad.yaml:"* ]] ||
	fail "table bad.yaml: exit $rc: $(cat "$TMP/err")"

if [[ $failures -gt 0 ]]; then
	echo "$failures failed" >&2
	exit 1
fi
echo "definitions: all passed"
