#!/usr/bin/env bash
# The web console (orchestrator/gatewayd/console, served by gatewayd) in a real
# browser: Debian's chromium, headless, driven through the Chrome DevTools
# Protocol by tests/lib/cdp.py, against a stack with the gateway
# (STACK_GATEWAY=1) after the seed lab:
#   - the list shows exactly the seed lab's three sagas with their states
#     and reasons, and the counts by state;
#   - the payment_declined saga's page shows its timeline as saga_history
#     has it (version, from, to, event, reason, time), and no Retry button;
#   - a customer named <img src=x onerror=alert(1)> shows as text: no
#     element made from it; the creation-time filters around its saga;
#   - the activity view shows a saga started while it is open, each of its
#     transitions as saga_history has them; opened while orchestratord is
#     down, it shows the error, then, once it answers, clears it and shows
#     nothing from before the page opened;
#   - the overdue filter (ticked and applied in the form) shows D, a saga a
#     delay fault holds past its step deadline, with why "past_deadline",
#     and none of the others;
#   - D's Retry on the client listener (GATEWAY_URL) shows the refusal and
#     leaves D's row as it was (its version); on the admin listener
#     (GATEWAY_ADMIN_URL) it re-arms D (the version after);
#   - a trip (a saga type whose input is a sagas.v1.Booking) shows its type
#     and its input's JSON, no sku.
# A page that throws or logs an error (a CSP violation, say) fails its step.
# A screenshot of the list is kept in build/test-artifacts/console.png.
# No chromium, no websockets: the test fails (scripts/deps.sh installs them).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../lib/stack.sh"
source "$here/../lib/fault.sh"
source "$here/../lib/seed_lab.sh"

PY=/usr/bin/python3 # Debian's, with python3-websockets
"$PY" -c 'import websockets' 2>/dev/null ||
  { echo "FAIL: console_browser: python3-websockets missing (scripts/deps.sh installs it)" >&2; exit 1; }
command -v chromium >/dev/null ||
  { echo "FAIL: console_browser: chromium missing (scripts/deps.sh installs it)" >&2; exit 1; }
artifacts=$(cd "$SAGA_BIN_DIR/.." && pwd)/test-artifacts
mkdir -p "$artifacts"

# browse STEPS...: one chromium session (tests/lib/cdp.py); prints what its
# --eval and --text steps print, one JSON value a line
browse() {
  "$PY" "$here/../lib/cdp.py" --timeout 15 "$@" ||
    { echo "FAIL: console_browser: the browser session failed (cdp.py exit $?)" >&2; exit 1; }
}
# line N of a session's output
nth() { sed -n "${1}p" <<<"$2"; }
q() { psql_db sagas_orchestrator "$1"; }
iso_ms() { local ms=$1; date -u -d "@$((ms / 1000)).$(printf '%03d' $((ms % 1000)))" +%Y-%m-%dT%H:%M:%S.%3NZ; }

STACK_GATEWAY=1
STACK_FAULTS=1
# the order saga and trip, a type of an input of its own (the last section)
ORCH_FLAGS="$FAST_ORCH --overdue-margin 1000 --definitions $STACK_ROOT/tests/definitions/trip.yaml"
stack_start
if [ -z "${GATEWAY_URL:-}" ] || [ -z "${GATEWAY_ADMIN_URL:-}" ]; then
  echo "FAIL: console_browser: the stack has no gateway (GATEWAY_URL, GATEWAY_ADMIN_URL)" >&2
  exit 1
fi
echo "gateway: $GATEWAY_URL (admin: $GATEWAY_ADMIN_URL)"
seed_lab_seed
seed_lab_orders >/dev/null
seed_lab_assert

# the console's pages come with the policy that forbids inline script
assert_eq "GET /: its Content-Security-Policy" \
  "default-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'" \
  "$(curl -sf -D - -o /dev/null "$GATEWAY_URL/" | tr -d '\r' | sed -n 's/^[Cc]ontent-[Ss]ecurity-[Pp]olicy: //p')"

LIST_READY='body:not([data-busy]) table#sagas'
SAGA_READY='body:not([data-busy]) #timeline'
ROWS='JSON.stringify([...document.querySelectorAll("table#sagas tbody tr")].map(r => r.dataset.sagaId + ":" + r.dataset.state + ":" + r.querySelector("[data-col=reason]").textContent).sort())'

# ---- the list, the counts and a screenshot ----
shot=$artifacts/console.png
rm -f "$shot"
out=$(browse --goto "$GATEWAY_URL/" --wait "$LIST_READY" --wait '#counts[data-done]' \
  --eval "$ROWS" \
  --eval 'document.querySelector("#counts [data-state=COMPLETED] .n").textContent + " " + document.querySelector("#counts [data-state=CANCELLED] .n").textContent + " " + document.querySelector("#counts [data-state=RESERVING] .n").textContent' \
  --eval 'document.querySelector("header h1").textContent' \
  --shot "$shot")
assert_eq "list: the three sagas, their states and reasons" \
  "$(q "SELECT json_agg(x ORDER BY x)::text FROM (SELECT saga_id || ':' || state || ':' || reason AS x FROM sagas) s" | jq -c .)" \
  "$(nth 1 "$out" | jq -r . | jq -c .)"
assert_eq "list: as the seed lab ends" \
  "[\"$SEED_SAGA_1:COMPLETED:\",\"$SEED_SAGA_2:CANCELLED:payment_declined\",\"$SEED_SAGA_3:CANCELLED:out_of_stock\"]" \
  "$(nth 1 "$out" | jq -r . | jq -c .)"
assert_eq "counts: COMPLETED CANCELLED RESERVING" '"1 2 0"' "$(nth 2 "$out")"
assert_eq "served at /: the console" '"sagas console"' "$(nth 3 "$out")"
assert_eq "screenshot: a PNG" "PNG" "$(head -c 4 "$shot" 2>/dev/null | tail -c 3)"
echo "screenshot: $shot"

# ---- the payment_declined saga's page: its timeline as saga_history has it ----
TIMELINE='JSON.stringify([...document.querySelectorAll("#timeline li")].map(l => [l.dataset.version, l.dataset.from, l.dataset.to, l.dataset.event, l.dataset.reason, l.querySelector(".at").textContent].join("|")))'
out=$(browse --goto "$GATEWAY_URL/#/saga/$SEED_SAGA_2" --wait "$SAGA_READY" --eval "$TIMELINE" \
  --eval '!!document.querySelector("#retry") + " " + !!document.querySelector("#no-retry")' \
  --text '[data-field=state]' --text '[data-field=reason]' --text '[data-field=customer]' \
  --shot "$artifacts/console-saga.png")
expected=""
while IFS='|' read -r v from to ev reason ms; do
  expected+="${expected:+ }$v|${from:-(start)}|$to|$ev|$reason|$(iso_ms "$ms")"
done < <(q "SELECT version, coalesce(from_state, ''), to_state, event, reason, (extract(epoch from at) * 1000)::bigint FROM saga_history WHERE saga_id = '$SEED_SAGA_2' ORDER BY version")
assert_eq "saga 2: its timeline, as saga_history has it" "$expected" \
  "$(nth 1 "$out" | jq -r 'fromjson | join(" ")')"
assert_eq "saga 2: the path" "RESERVING CHARGING RELEASING CANCELLED" \
  "$(nth 1 "$out" | jq -r 'fromjson | map(split("|")[2]) | join(" ")')"
assert_eq "saga 2: finished, no Retry button" '"false true"' "$(nth 2 "$out")"
assert_eq "saga 2: its fields" '"CANCELLED" "payment_declined" "sara"' \
  "$(nth 3 "$out") $(nth 4 "$out") $(nth 5 "$out")"

# ---- a customer's name that is markup: text, no element ----
XSS='<img src=x onerror=alert(1)>'
X=0c0e0000-0000-4000-8000-0000000000c1
ctl start "$XSS" A1 1 1.00 --id "$X" --wait >/dev/null
out=$(browse --goto "$GATEWAY_URL/#/sagas" --wait "$LIST_READY" \
  --fill "#f-customer=$XSS" --click '#apply' \
  --wait-js 'location.hash.includes("customer=") && !document.body.dataset.busy' \
  --eval 'JSON.stringify([...document.querySelectorAll("table#sagas tbody tr")].map(r => r.dataset.sagaId))' \
  --text "tr[data-saga-id=\"$X\"] [data-col=customer]" \
  --eval "document.querySelectorAll('img').length + ' ' + document.querySelector('tr[data-saga-id=\"$X\"] [data-col=customer]').children.length" \
  --goto "$GATEWAY_URL/#/saga/$X" --wait "$SAGA_READY" --text '[data-field=customer]' \
  --eval 'document.querySelectorAll("img").length')
x_created=$(iso_ms "$(q "SELECT floor(extract(epoch from created_at) * 1000)::bigint FROM sagas WHERE saga_id = '$X'")")
out2=$(browse --goto "$GATEWAY_URL/#/sagas" --wait "$LIST_READY" \
  --fill "#f-after=$x_created" --click '#apply' \
  --wait-js 'location.hash.includes("after=") && !document.body.dataset.busy' \
  --eval 'JSON.stringify([...document.querySelectorAll("table#sagas tbody tr")].map(r => r.dataset.sagaId))' \
  --fill "#f-after=" --fill "#f-before=$x_created" --click '#apply' \
  --wait-js 'location.hash.includes("before=") && !document.body.dataset.busy' \
  --eval 'document.querySelectorAll("table#sagas tbody tr").length')
assert_eq "created at or after X's creation ($x_created): X only" "[\"$X\"]" "$(nth 1 "$out2" | jq -r .)"
assert_eq "created before X's creation: the seed lab's three" "3" "$(nth 2 "$out2")"
assert_eq "xss: the customer filter finds its saga only" "[\"$X\"]" "$(nth 1 "$out" | jq -r .)"
assert_eq "xss: the list shows the name as text" "$XSS" "$(nth 2 "$out" | jq -r .)"
assert_eq "xss: no img element, the cell has no child element" '"0 0"' "$(nth 3 "$out")"
assert_eq "xss: the saga's page shows it as text" "$XSS" "$(nth 4 "$out" | jq -r .)"
assert_eq "xss: no img element on the saga's page" "0" "$(nth 5 "$out")"

# ---- activity: a saga started while the page is open, live ----
Y=0c0e0000-0000-4000-8000-0000000000a7
out=$(browse --goto "$GATEWAY_URL/#/activity" --wait 'body:not([data-busy]) table#activity' \
  --sh "$SAGA_BIN_DIR/sagactl --orchestrator $ORCH_ADMIN_URL start bob A1 1 1.00 --id $Y --wait" \
  --wait-js "document.querySelector('#activity tr[data-saga-id=\"$Y\"][data-to=CANCELLED]')" \
  --eval "JSON.stringify([...document.querySelectorAll('#activity tr[data-saga-id=\"$Y\"]')].map(r => r.dataset.version + ':' + r.dataset.to).reverse())")
assert_eq "activity: the new saga's transitions, live, as saga_history has them" \
  "$(q "SELECT json_agg(version || ':' || to_state ORDER BY version)::text FROM saga_history WHERE saga_id = '$Y'" | jq -c .)" \
  "$(nth 1 "$out" | jq -r . | jq -c .)"

# ---- D: held past its deadline (as tests/integration/list_overdue.sh) ----
# the orchestrator restarted with its sweep a minute apart; ReserveStock
# held 30 s by stockd: D's try times out and nothing moves it in time
D=0d0e0000-0000-4000-8000-00000000000d
stack_kill orchestratord

# ---- activity opened while orchestratord is down ----
# the error shows; once it answers again the error goes and the view starts
# from then on (not from the first transition ever stored)
browse --timeout 30 --goto "$GATEWAY_URL/#/activity" --wait '#activity-status .error' \
  --text '#activity-status' \
  --sh "touch $STACK_DIR/activity.down; until [ -e $STACK_DIR/activity.up ]; do sleep 0.1; done" \
  --wait-js "document.querySelector('#activity-status') && !document.querySelector('#activity-status .error')" \
  --sh 'sleep 1.5' \
  --eval "document.querySelectorAll('#activity tbody tr').length" >"$STACK_DIR/activity.out" &
down_browser=$!
wait_until 30 test -e "$STACK_DIR/activity.down"
ORCH_FLAGS="$FAST_ORCH --overdue-margin 1000 --sweep-interval 60000 --definitions $STACK_ROOT/tests/definitions/trip.yaml"
stack_start_orchestrator
touch "$STACK_DIR/activity.up"
rc=0
wait "$down_browser" || rc=$?
assert_eq "activity while orchestratord is down: the browser session" "0" "$rc"
out=$(cat "$STACK_DIR/activity.out")
echo "activity while down: $(nth 1 "$out")"
assert_eq "activity while orchestratord is down: the error shows" "yes" \
  "$(nth 1 "$out" | jq -r . | grep -q '^error: ' && echo yes || echo no)"
assert_eq "activity once it answers again: no row from before the page opened" "0" "$(nth 2 "$out")"

ctl fault set stock delay --method ReserveStock --count 1 --delay 30000 >/dev/null
ctl stock set A1 5 >/dev/null
ctl start ali A1 1 1.00 --id "$D" >/dev/null
_d_past() { [ "$(q "SELECT state = 'RESERVING' AND step_deadline < now() - interval '1000 ms' FROM sagas WHERE saga_id = '$D'")" = t ]; }
wait_until 20 _d_past

out=$(browse --goto "$GATEWAY_URL/#/sagas" --wait "$LIST_READY" \
  --click '#f-overdue' --click '#apply' \
  --wait-js 'location.hash.includes("overdue=1") && !document.body.dataset.busy' \
  --eval 'JSON.stringify([...document.querySelectorAll("table#sagas tbody tr")].map(r => r.dataset.sagaId + ":" + r.dataset.state + ":" + r.querySelector("[data-col=why]").textContent))' \
  --eval 'document.querySelector("table#sagas thead tr").lastElementChild.textContent')
assert_eq "overdue: D only, past its deadline" "[\"$D:RESERVING:past_deadline\"]" "$(nth 1 "$out" | jq -r .)"
assert_eq "overdue: the why column" '"why"' "$(nth 2 "$out")"

# ---- Retry: refused on the client listener, done on the admin one ----
v0=$(q "SELECT version FROM sagas WHERE saga_id = '$D'")
out=$(browse --goto "$GATEWAY_URL/#/saga/$D" --wait "$SAGA_READY" --click '#retry' \
  --wait-js '/^refused/.test(document.querySelector("#retry-result").textContent)' \
  --text '#retry-result')
refusal=$(nth 1 "$out" | jq -r .)
echo "client listener: $refusal"
assert_eq "retry on the client listener: refused" "refused: PERMISSION_DENIED" \
  "$(cut -d' ' -f1,2 <<<"$refusal")"
assert_eq "retry refused: D's row unchanged (its version, RESERVING)" "$v0|RESERVING" \
  "$(q "SELECT version || '|' || state FROM sagas WHERE saga_id = '$D'")"
out=$(browse --goto "$GATEWAY_ADMIN_URL/#/saga/$D" --wait "$SAGA_READY" --click '#retry' \
  --wait-js '/^(retried|refused)/.test(document.querySelector("#retry-result").textContent)' \
  --text '#retry-result')
echo "admin listener: $(nth 1 "$out" | jq -r .)"
assert_eq "retry on the admin listener: re-armed, the version after" \
  "\"retried: RESERVING, version $((v0 + 1))\"" "$(nth 1 "$out")"
_d_moved() { [ "$(q "SELECT version > $v0 FROM sagas WHERE saga_id = '$D'")" = t ]; }
wait_until 10 _d_moved
assert_eq "retry: D's row re-armed (attempts reset or moved on)" "t" \
  "$(q "SELECT version > $v0 FROM sagas WHERE saga_id = '$D'")"

# ---- Cancel (rule 11): a reason first; refused on the client listener,
# taken on the admin one, and the timeline names the operator ----
E=0c0e0000-0000-4000-8000-0000000000e1
q "INSERT INTO sagas (saga_id, state, customer, sku, qty, amount, next_attempt_at, step_deadline)
   VALUES ('$E', 'RESERVING', 'eve', 'A1', 1, 100, now() + interval '1 hour', now() + interval '1 hour')" >/dev/null
v0=$(q "SELECT version FROM sagas WHERE saga_id = '$E'")
out=$(browse --goto "$GATEWAY_URL/#/saga/$E" --wait "$SAGA_READY" --click '#cancel' \
  --text '#cancel-result' --fill '#cancel-reason=customer called' --click '#cancel' \
  --wait-js '/^refused/.test(document.querySelector("#cancel-result").textContent)' \
  --text '#cancel-result')
assert_eq "cancel without a reason: asks for one, sends nothing" \
  '"say why first: the reason is kept in the audit trail"' "$(nth 1 "$out")"
assert_eq "cancel on the client listener: refused" "refused: PERMISSION_DENIED" \
  "$(nth 2 "$out" | jq -r . | cut -d' ' -f1,2)"
assert_eq "cancel refused: E's row unchanged" "$v0|RESERVING|0" \
  "$(q "SELECT version || '|' || state FROM sagas WHERE saga_id = '$E'")|$(q "SELECT count(*) FROM audit WHERE saga_id = '$E'")"
out=$(browse --goto "$GATEWAY_ADMIN_URL/#/saga/$E" --wait "$SAGA_READY" \
  --fill '#cancel-reason=customer called' --click '#cancel' \
  --wait-js '/^(cancelled|refused)/.test(document.querySelector("#cancel-result").textContent)' \
  --text '#cancel-result' \
  --eval '[...document.querySelectorAll("#timeline li")].map(l => l.dataset.event + (l.querySelector(".actor") ? l.querySelector(".actor").textContent : "")).join("|")')
assert_eq "cancel on the admin listener: taken" "\"cancelled: RELEASING, version $((v0 + 1))\"" "$(nth 1 "$out")"
assert_eq "cancel: the timeline names the operator" "yes" \
  "$(nth 2 "$out" | jq -r . | grep -Eq '(^|\|)cancel by .* at 127\.0\.0\.1:[0-9]+: .customer called.$' && echo yes || echo no)"
assert_eq "cancel: the audit row" "cancel|customer called|RELEASING" \
  "$(q "SELECT action || '|' || reason || '|' || outcome FROM audit WHERE saga_id = '$E'")"

# ---- a saga type's own input (tests/definitions/trip.yaml): its page shows
# the input's type and JSON, not an order's sku, qty and amount ----
T=0c0e0000-0000-4000-8000-0000000000d1
ctl start --type trip --id "$T" \
  --input '{"customer":"sara","room":"R1","nights":2,"flight":"F1","seats":1,"amount":"100"}' >/dev/null
out=$(browse --goto "$GATEWAY_URL/#/saga/$T" --wait "$SAGA_READY" --text '[data-field=type]' \
  --text '[data-field=input]' --eval '!!document.querySelector("[data-field=sku]")')
assert_eq "a trip's page: its type, its input, no sku" \
  '"trip" "sagas.v1.Booking {\"customer\":\"sara\",\"room\":\"R1\",\"nights\":2,\"flight\":\"F1\",\"seats\":1,\"amount\":\"100\"}" false' \
  "$(nth 1 "$out") $(nth 2 "$out") $(nth 3 "$out")"
finish
