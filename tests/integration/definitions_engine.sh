#!/usr/bin/env bash
# The engine sends what its definition says (docs/saga-definitions.md,
# section 2 "Third landing"; orchestratord --definitions):
# - a definition file whose ship step maps qty from a constant (2): a saga
#   for 1 x S1 reserves 1, charges the order's amount and ships 2, read
#   from the participants' databases; the log names the file and the
#   version;
# - what this orchestratord does not run yet refuses the start with exit 2
#   and a line that says why, before any database is touched: another saga
#   type, a step's own deadline, another flow, a participant whose URL
#   option it does not have, a file that is not there, a syntax error (with
#   its line and column).
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
refused "another saga type" "$STACK_ROOT/tests/definitions/booking.yaml" \
  "this orchestratord runs one saga type, order"
sed 's/^        kind: pivot$/        kind: pivot\n        deadline_ms: 30000/' "$order" >"$D/deadline.yaml"
refused "a step's own deadline" "$D/deadline.yaml" \
  "sagas.order.steps[1]: a step's own deadline_ms and retry are not applied yet"
python3 - "$order" "$D/two_steps.yaml" <<'PY'
import sys
t = open(sys.argv[1]).read()
open(sys.argv[2], "w").write(t[:t.index("      - name: ship")])
PY
refused "another flow" "$D/two_steps.yaml" "the file's steps differ"
sed 's/urls: --stock}/urls: --warehouse}/' "$order" >"$D/warehouse.yaml"
refused "an option it does not have" "$D/warehouse.yaml" \
  "participants.stock names --warehouse: orchestratord has no such option"
refused "no file" "$D/none.yaml" "$D/none.yaml: No such file or directory"
printf 'format: 1\nsagas: {order: [\n' >"$D/syntax.yaml"
refused "a syntax error" "$D/syntax.yaml" "$D/syntax.yaml:3:"

# a definition whose ship step ships 2 whatever the order's qty
sed 's/        input: {customer: customer, sku: sku, qty: qty}$/        input: {customer: customer, sku: sku, qty: {const: 2}}/' \
  "$order" >"$D/ship2.yaml"
assert_eq "the constant is in the file" 1 "$(grep -c 'qty: {const: 2}' "$D/ship2.yaml")"
ORCH_FLAGS="--definitions $D/ship2.yaml"
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
finish
