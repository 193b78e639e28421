#!/usr/bin/env bash
# Texts that display as something else (issue 32, parts 4 and 6).
#
# Names: a customer or sku with a bidirectional control (U+202E shows
# "gnp.exe" as "exe.png") or without a visible character (zero-width
# characters, spaces, a combining mark alone) is refused like a name with a
# control character (400 INVALID_ARGUMENT bad_field) at gatewayd and the
# orchestrator (StartSaga, ListSagas' customer filter) and at each
# participant (its commands sent by hand with sagacmd), and nothing is
# stored.
#
# sagactl: a server's strings holding ESC, BEL, CR, LF, a C1 control and
# U+202E (written into the databases by hand, as a fake or broken server
# would send them) reach sagactl's tables and lines escaped: no raw control
# byte, no forged line, in every human-readable verb that shows them.
set -euo pipefail
source "$(dirname "$0")/../lib/stack.sh"
STACK_GATEWAY=1
stack_start
ctl stock set K1 10 >/dev/null
ctl deposit ali 100.00 >/dev/null
q() { psql_db sagas_orchestrator "$1"; }
OUT=$STACK_DIR/out.json
post() {
  curl -s --max-time 30 -o "$OUT" -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
    --data-binary "$2" "$1"
}
get() { curl -s --max-time 30 -o "$OUT" -w '%{http_code}' "$1"; }
# verdict: the status, code and reason of the last answer
verdict() { echo "$1 $(jq -r '.code + " " + .reason' "$OUT")"; }

# ---- names: refused as a control character is, at the API ----
start_as() { # start_as CUSTOMER_JSON SKU_JSON: the verdict of a StartSaga
  local s
  s=$(post "$GATEWAY_URL/v1/sagas" '{"order":{"customer":'"$1"',"sku":'"$2"',"qty":1,"amount":"100"}}')
  verdict "$s"
}
want=$(start_as '"ali\u0001"' '"K1"')
assert_eq "a control character: the refusal every bad name gets" "400 INVALID_ARGUMENT bad_field" "$want"
n=0
for bad in '"ali\u202egnp.exe"' '"\u202dali"' '"a\u2066li"' '"ali\u200f"' '"\u061cali"' \
  '"\u200b\u200b"' '"\u200c\u200d"' '"\u2060"' '"\ufeff"' '" "' '"   "' '"\u00a0"' '"\u3000"' \
  '"\u0301"' '"\u200b \u0301\ufeff"' '"\u3164"' '"\u2800"'; do
  assert_eq "customer $bad: refused as a bad name" "$want" "$(start_as "$bad" '"K1"')"
  assert_eq "sku $bad: refused as a bad name" "$want" "$(start_as '"ali"' "$bad")"
  n=$((n + 1))
done
assert_eq "the message says the rule" "invalid order.customer: must be 1..64 bytes of UTF-8 with a visible character and no control or bidirectional formatting characters, no invisible characters, in Unicode's composed form (NFC)" \
  "$(start_as '"\u202eali"' '"K1"' >/dev/null; jq -r .message "$OUT")"
assert_eq "refused names stored nothing (sagas, history)" "0 0" \
  "$(q "SELECT count(*) FROM sagas") $(q "SELECT count(*) FROM saga_history")"
# an invisible character beside visible ones is refused too ("ali" + U+200B
# shows as "ali": the attack review's F3), and so is a name not in NFC
s=$(post "$GATEWAY_URL/v1/sagas" '{"order":{"customer":"ali\u200b","sku":"K1","qty":1,"amount":"100"}}')
assert_eq "ali + a zero-width space is refused" "400" "$s"
s=$(post "$GATEWAY_URL/v1/sagas" '{"order":{"customer":"e\u0301","sku":"K1","qty":1,"amount":"100"}}')
assert_eq "e + a combining acute (not NFC) is refused" "400" "$s"
assert_eq "ListSagas' customer filter: the same refusal" "$want" \
  "$(verdict "$(get "$GATEWAY_URL/v1/sagas?customer=%E2%80%AEali")")"
assert_eq "ListSagas' customer filter: zero-width only" "$want" \
  "$(verdict "$(get "$GATEWAY_URL/v1/sagas?customer=%E2%80%8B")")"
set +e
ctl stock set $'\u202eK1' 5 >/dev/null 2>&1
rc=$?
set -e
assert_eq "sagactl refuses a bidi sku before sending" "2" "$rc"

# ---- names: refused at each participant, nothing stored ----
CMD=$SAGA_BIN_DIR/sagacmd
ID=d15d15d1-0000-4000-8000-000000000001
assert_eq "stockd: a control character" "INVALID_ARGUMENT bad_field -" "$("$CMD" "$STOCK_URL" reserve "$ID" $'K\x01' 1)"
assert_eq "stockd: RLO in the sku" "INVALID_ARGUMENT bad_field -" "$("$CMD" "$STOCK_URL" reserve "$ID" $'K1\u202e' 1)"
assert_eq "stockd: a zero-width sku" "INVALID_ARGUMENT bad_field -" "$("$CMD" "$STOCK_URL" reserve "$ID" $'\u200b' 1)"
assert_eq "paymentd: RLO in the customer" "INVALID_ARGUMENT bad_field -" "$("$CMD" "$PAYMENT_URL" charge "$ID" $'ali\u202e' 100)"
assert_eq "paymentd: spaces only" "INVALID_ARGUMENT bad_field -" "$("$CMD" "$PAYMENT_URL" charge "$ID" '  ' 100)"
assert_eq "shippingd: an isolate in the customer" "INVALID_ARGUMENT bad_field -" "$("$CMD" "$SHIPPING_URL" ship "$ID" $'\u2067ali' K1 1)"
assert_eq "shippingd: a mark alone as the sku" "INVALID_ARGUMENT bad_field -" "$("$CMD" "$SHIPPING_URL" ship "$ID" ali $'\u0301' 1)"
assert_eq "the participants stored nothing for it" "0 0 0" \
  "$(psql_db sagas_stock "SELECT count(*) FROM reservations WHERE saga_id = '$ID'") $(psql_db sagas_payment "SELECT count(*) FROM charges WHERE saga_id = '$ID'") $(psql_db sagas_shipping "SELECT count(*) FROM shipments WHERE saga_id = '$ID'")"

# ---- sagactl: a server's control characters are shown escaped ----
SID=$(ctl start ali K1 1 1.00 --wait --json | jq -r .saga.saga_id)
assert_eq "a saga to dress up" "COMPLETED" "$(ctl get "$SID" --json | jq -r .state)"
# ESC ] 0 ; ... BEL sets a terminal's title; CR LF forge a line; U+009B is
# a C1 CSI; U+202E reorders (21 bytes: a saga's reason holds 31)
EVIL=$'\e]0;pw\a\r\nFORGED \xc2\x9b\u202e'
q "UPDATE sagas SET reason = '$EVIL', customer = 'ali$EVIL', lease_owner = 'o$EVIL'
   WHERE saga_id = '$SID'" >/dev/null 2>&1 ||
  q "UPDATE sagas SET reason = '$EVIL', customer = 'ali$EVIL' WHERE saga_id = '$SID'" >/dev/null
q "INSERT INTO saga_history (saga_id, version, from_state, to_state, event, reason)
   VALUES ('$SID', 1000, 'COMPLETED', 'COMPLETED', 'ev$EVIL', '$EVIL')" >/dev/null
psql_db sagas_stock "INSERT INTO stock (sku, on_hand) VALUES ('K$EVIL', 3)" >/dev/null
for verb in "list" "list --customer ali$EVIL" "get $SID" "history $SID" "watch --from-start" \
  "stock list" "report"; do
  # shellcheck disable=SC2086 # the verb's words
  ctl $verb >"$STACK_DIR/ctl.out" 2>&1 || true
  out=$STACK_DIR/ctl.out
  raw=$(LC_ALL=C grep -c -P '[\x00-\x08\x0b-\x1f\x7f]|\xc2[\x80-\x9f]|\xe2\x80[\xaa-\xae]' "$out" || true)
  assert_eq "sagactl $(cut -c1-20 <<<"$verb"): no raw control or bidi character" "0" "$raw"
  assert_eq "sagactl $(cut -c1-20 <<<"$verb"): no forged line" "0" "$(grep -c '^FORGED' "$out" || true)"
done
# shown, escaped (so the checks above saw the text)
ctl get "$SID" >"$STACK_DIR/get.out"
assert_eq "get: the reason, escaped" 'reason        \x1B]0;pw\x07\r\nFORGED \u009B\u202E' \
  "$(grep '^reason' "$STACK_DIR/get.out")"
assert_eq "stock list: the sku, escaped" "1" "$(ctl stock list | grep -c -F 'K\x1B]0;pw\x07\r\nFORGED \u009B\u202E')"
# --json keeps JSON's escapes, and the text itself
assert_eq "--json: the reason as it is" "$EVIL" "$(ctl get "$SID" --json | jq -r .reason)"
finish
