#!/usr/bin/env bash
# Cancel on request (docs/saga-semantics.md, rule 11; sagactl cancel,
# CancelSaga) and the audit trail (sagactl audit, ListAudit), on a
# mutual-TLS stack with failure injection:
#   - before the pivot: S1 is charged (30.00 taken) but every ChargePayment
#     reply is dropped, so it waits in CHARGING; a cancel moves it to
#     REFUNDING at once, then CANCELLED: stock and money back, its history
#     names the operator and their reason, one audit row;
#   - the same cancel again (same --id) answers as the first and changes
#     nothing; another cancel of it is refused `cancelled`;
#   - the cancel recorded first, the pivot's reply later: S3's ChargePayment
#     held 1.5 s at paymentd, the cancel written meanwhile; the charge's
#     reply is dropped (no SHIPPING), the refund undoes the charge or its
#     tombstone refuses it: nothing charged, CANCELLED;
#   - after the pivot: S2 waits in SHIPPING (shippingd down): refused
#     FAILED_PRECONDITION past_pivot, exit 1, nothing changed, no audit
#     row; a retry with a reason is audited; it completes; a cancel of the
#     COMPLETED saga is refused past_pivot too;
#   - racing the pivot's reply: 20 orders, each cancelled at a random moment
#     around its ChargePayment; each cancel's answer matches how its saga
#     ended (taken: CANCELLED, no shipment, nothing held; refused
#     past_pivot: COMPLETED, one shipment), and stock and money add up;
#   - the client role: cancel and audit refused PERMISSION_DENIED, nothing
#     changed, logged; a missing or bad reason is refused, nothing changed.
set -euo pipefail
source "$(dirname "$0")/../lib/stack.sh"
source "$(dirname "$0")/../lib/fault.sh"
STACK_TLS=1
STACK_FAULTS=1
ORCH_FLAGS="--step-timeout 60000 --request-timeout 2000 --backoff-base 50 --backoff-cap 500"
stack_start
q() { psql_db sagas_orchestrator "$1"; }
client() {
  # shellcheck disable=SC2046
  "$SAGA_BIN_DIR/sagactl" --orchestrator "$ORCH_URL" $(tls_flags client) "$@"
}
S1=c0c0c0c0-0000-4000-8000-000000000001
S2=c0c0c0c0-0000-4000-8000-000000000002
S3=c0c0c0c0-0000-4000-8000-000000000003
K1=c0c0c0c0-0000-4000-8000-0000000000f1
ctl stock set A1 10 >/dev/null
ctl deposit c1 100.00 >/dev/null

# ---- before the pivot: charged, its reply lost ----
ctl fault set payment drop_reply --method ChargePayment >/dev/null
ctl start --id "$S1" c1 A1 2 30.00 >/dev/null
charged() { [ "$(charge "$S1")" = CHARGED ]; }
wait_until 30 charged || true
assert_eq "S1: charged, waiting in CHARGING" "CHARGING|2|7000|CHARGED|RESERVED" \
  "$(q "SELECT state FROM sagas WHERE saga_id = '$S1'")|$(q "SELECT count(*) FROM saga_history WHERE saga_id = '$S1'")|$(balance c1)|$(charge "$S1")|$(reservation "$S1")"
# an earlier saga of S1's id (deleted by retention, its id then reused:
# rule R5) was cancelled with the same key at the same version: its audit
# row is not S1's (no replay, no clash, not in S1's history)
q "INSERT INTO audit (action, role, peer, reason, saga_id, saga_started_at, version, request_id, outcome)
   VALUES ('cancel', 'admin', '10.0.0.1:1', 'an earlier saga', '$S1', '2020-01-01', 3, '$K1', 'REFUNDING')" >/dev/null
mine="saga_id = '$S1' AND saga_started_at = (SELECT created_at FROM sagas WHERE saga_id = '$S1')"
rc=0
ctl cancel "$S1" --reason "customer called" --id "$K1" --json >"$STACK_DIR/c1.json" 2>&1 || rc=$?
# (the reply is the row as the cancel wrote it; the saga may go on at once)
assert_eq "S1: cancel taken, exit 0, REFUNDING, reason cancel_requested" "0 REFUNDING cancel_requested false" \
  "$rc $(jq -r '[.state, .reason, .replayed] | join(" ")' "$STACK_DIR/c1.json")"
rc=0
ctl cancel "$S1" --reason "customer called" --id "$K1" >"$STACK_DIR/c1.out" 2>&1 || rc=$?
assert_eq "S1: the same cancel in text: replayed, exit 0" "0 yes" \
  "$rc $(grep -q "^this cancel (request $K1) was taken before: nothing changed" "$STACK_DIR/c1.out" && echo yes || echo no)"
ctl fault clear payment >/dev/null
wait_state "$S1" CANCELLED 30 || true
assert_eq "S1: cancelled, stock and money back" "CANCELLED|10|10000|REFUNDED|RELEASED" \
  "$(q "SELECT state FROM sagas WHERE saga_id = '$S1'")|$(on_hand A1)|$(balance c1)|$(charge "$S1")|$(reservation "$S1")"
assert_eq "S1: path" "RESERVING>CHARGING>REFUNDING>RELEASING>CANCELLED" "$(path_of "$S1")"
ctl history "$S1" --json >"$STACK_DIR/h1.json"
assert_eq "S1: its history names the operator and why" "cancel|cancel_requested|admin at 127.0.0.1|customer called" \
  "$(jq -r '.[] | select(.actor != "") | [.event, .reason, (.actor | sub(":[0-9]+$"; "")), .note] | join("|")' "$STACK_DIR/h1.json")"
assert_eq "S1: the history table too" "yes" \
  "$(ctl history "$S1" | grep -q 'cancel_requested by admin at 127.0.0.1:[0-9]*: "customer called"' && echo yes || echo no)"
assert_eq "S1: one audit row of its own" "cancel|admin|customer called|3|$K1|REFUNDING" \
  "$(q "SELECT action, role, reason, version, request_id, outcome FROM audit WHERE $mine")"
assert_eq "S1: the cancel logged" "1" "$(log_count orchestratord "cancelled by an operator (admin at 127.0.0.1:")"

# the same cancel again: answered as the first, nothing changed
before=$(q "SELECT version FROM sagas WHERE saga_id = '$S1'")
rc=0
ctl cancel "$S1" --reason "customer called" --id "$K1" --json >"$STACK_DIR/c1b.json" 2>&1 || rc=$?
assert_eq "S1: the same cancel again: replayed" "0 true CANCELLED" \
  "$rc $(jq -r '[.replayed, .state] | join(" ")' "$STACK_DIR/c1b.json")"
rc=0
ctl cancel "$S1" --reason "another reason" --id "$K1" >"$STACK_DIR/c1k.out" 2>&1 || rc=$?
assert_eq "S1: the same --id with another reason: refused key_mismatch" "1 yes" \
  "$rc $(grep -q 'could not cancel saga: ALREADY_EXISTS (key_mismatch)' "$STACK_DIR/c1k.out" && echo yes || echo no)"
rc=0
ctl cancel "$S1" --reason "again" >"$STACK_DIR/c1c.out" 2>&1 || rc=$?
assert_eq "S1: another cancel: refused cancelled" "1 yes" \
  "$rc $(grep -q 'could not cancel saga: FAILED_PRECONDITION (cancelled)' "$STACK_DIR/c1c.out" && echo yes || echo no)"
assert_eq "S1: nothing changed, still one audit row" "$before|1" \
  "$(q "SELECT version FROM sagas WHERE saga_id = '$S1'")|$(q "SELECT count(*) FROM audit WHERE $mine")"

# ---- the cancel recorded first, the pivot's reply after it ----
# (held 1.5 s, less than a try's 2 s: no second ChargePayment is sent)
ctl fault set payment delay --method ChargePayment --delay 1500 --count 1 >/dev/null
ctl start --id "$S3" c1 A1 1 5.00 >/dev/null
wait_state "$S3" CHARGING 30 || true
ctl cancel "$S3" --reason "fraud check" >"$STACK_DIR/c3.out"
assert_eq "S3: the cancel's text" "yes" \
  "$(grep -q "^cancelled: compensating what may have acted; 'sagactl wait $S3' waits for CANCELLED$" "$STACK_DIR/c3.out" && echo yes || echo no)"
wait_state "$S3" CANCELLED 30 || true
# the cancel was written first: the ChargePayment's reply, whenever it
# came, was dropped (no SHIPPING); the refund either undid the charge or,
# when it reached paymentd first, left a tombstone that refused it
assert_eq "S3: the cancel won: refunded, nothing charged" "CANCELLED|RESERVING>CHARGING>REFUNDING>RELEASING>CANCELLED|10000|10" \
  "$(q "SELECT state FROM sagas WHERE saga_id = '$S3'")|$(path_of "$S3")|$(balance c1)|$(on_hand A1)"
s3_charge=$(charge "$S3")

# ---- after the pivot ----
stack_kill shippingd
ctl start --id "$S2" c1 A1 1 10.00 >/dev/null
wait_state "$S2" SHIPPING 30 || true
before=$(q "SELECT version, state, reason, attempts FROM sagas WHERE saga_id = '$S2'")
rc=0
ctl cancel "$S2" --reason "too late?" >"$STACK_DIR/c2.out" 2>&1 || rc=$?
assert_eq "S2: refused past_pivot, exit 1" "1 yes" \
  "$rc $(grep -q 'could not cancel saga: FAILED_PRECONDITION (past_pivot): saga .* is SHIPPING: nothing changed' "$STACK_DIR/c2.out" && echo yes || echo no)"
assert_eq "S2: nothing changed, no audit row" "$before|0" \
  "$(q "SELECT version, state, reason, attempts FROM sagas WHERE saga_id = '$S2'")|$(q "SELECT count(*) FROM audit WHERE saga_id = '$S2'")"
ctl retry "$S2" --reason "shipping is back" >/dev/null
assert_eq "S2: the retry audited" "retry|shipping is back|SHIPPING" \
  "$(q "SELECT action, reason, outcome FROM audit WHERE saga_id = '$S2'")"
stack_start_shipping
wait_state "$S2" COMPLETED 30 || true
rc=0
ctl cancel "$S2" --reason "after the end" >"$STACK_DIR/c2b.out" 2>&1 || rc=$?
assert_eq "S2: completed, a cancel refused past_pivot" "1 COMPLETED|SHIPPED|9000|9" \
  "$rc $(q "SELECT state FROM sagas WHERE saga_id = '$S2'")|$(shipment "$S2")|$(balance c1)|$(on_hand A1)"

# ---- the client role, and bad input ----
before="$(q "SELECT sum(version) FROM sagas")|$(q "SELECT count(*) FROM audit")"
rc=0
client cancel "$S2" --reason "mine" >"$STACK_DIR/cl.out" 2>&1 || rc=$?
assert_eq "client: cancel refused" "1 yes" \
  "$rc $(grep -q 'PERMISSION_DENIED' "$STACK_DIR/cl.out" && echo yes || echo no)"
rc=0
client audit >"$STACK_DIR/cla.out" 2>&1 || rc=$?
assert_eq "client: audit refused" "1 yes" \
  "$rc $(grep -q 'PERMISSION_DENIED' "$STACK_DIR/cla.out" && echo yes || echo no)"
assert_eq "client: S1's history shows the cancel, not who or why" "cancel||" \
  "$(client history "$S1" --json | jq -r '.[] | select(.event == "cancel") | [.event, .actor, .note] | join("|")')"
assert_eq "the audit trail is append-only" "yes" \
  "$({ q "UPDATE audit SET reason = 'edited'" 2>&1 || true; } | grep -q 'audit is append-only: UPDATE refused' && echo yes || echo no)"
# (one line per peer address per 10 s: the second is counted)
assert_eq "client: logged and counted" "1|2" \
  "$(log_count orchestratord 'refused /sagas.v1.Orchestrator/CancelSaga: PERMISSION_DENIED')|$(stack_metrics orchestratord | awk '$1 == "sagas_rpc_refusals_total{reason=\"permission_denied\"}" { print $2 }')"
rc=0
ctl cancel "$S2" >/dev/null 2>&1 || rc=$?
assert_eq "no --reason: usage error" "2" "$rc"
# sagactl checks a reason as the orchestrator does, before it sends
# anything (the orchestrator's own check: http_api)
for bad in "$(printf 'two\nlines')" "   " $'right\u202eto left' $'c1 \u0085control' "$(head -c 300 /dev/zero | tr '\0' x)"; do
  rc=0
  ctl cancel "$S2" --reason "$bad" >"$STACK_DIR/bad.out" 2>&1 || rc=$?
  assert_eq "a reason of $(wc -c <<<"$bad") bytes, ${bad:0:6}...: usage error" "2 yes" \
    "$rc $(grep -Eq 'invalid --reason: expected at most 255 bytes of printable UTF-8|missing --reason' "$STACK_DIR/bad.out" && echo yes || echo no)"
done
rc=0
ctl cancel "$S2" --reason --json >"$STACK_DIR/bad.out" 2>&1 || rc=$?
assert_eq "--reason followed by an option: usage error" "2 yes" \
  "$rc $(grep -q -- '--reason needs a text, not the option "--json"' "$STACK_DIR/bad.out" && echo yes || echo no)"
rc=0
ctl retry --attention --reason "   " >/dev/null 2>&1 || rc=$?
assert_eq "bulk retry with a blank reason: usage error before any re-arm" "2" "$rc"
assert_eq "refusals changed nothing" "$before" "$(q "SELECT sum(version) FROM sagas")|$(q "SELECT count(*) FROM audit")"

# ---- the same cancel sent twice at once: both answered as taken ----
S4=c0c0c0c0-0000-4000-8000-000000000004
K4=c0c0c0c0-0000-4000-8000-0000000000f4
ctl fault set payment drop_reply --method ChargePayment >/dev/null
ctl start --id "$S4" c1 A1 1 1.00 >/dev/null
s4_charged() { [ "$(charge "$S4")" = CHARGED ]; }
wait_until 30 s4_charged || true
for i in 1 2; do
  (rc=0; ctl cancel "$S4" --reason "twice" --id "$K4" --json >"$STACK_DIR/s4.$i.json" 2>&1 || rc=$?
   echo "$rc" >"$STACK_DIR/s4.$i.rc") &
  pids4+=($!)
done
wait "${pids4[@]}"
ctl fault clear payment >/dev/null
assert_eq "S4: both cancels exit 0, one replayed, one audit row" "0 0 false true 1" \
  "$(cat "$STACK_DIR/s4.1.rc") $(cat "$STACK_DIR/s4.2.rc") $(jq -s -r 'map(.replayed) | sort | map(tostring) | join(" ")' "$STACK_DIR/s4.1.json" "$STACK_DIR/s4.2.json") $(q "SELECT count(*) FROM audit WHERE saga_id = '$S4'")"
wait_state "$S4" CANCELLED 30 || true
assert_eq "S4: cancelled, refunded" "CANCELLED|REFUNDED" "$(q "SELECT state FROM sagas WHERE saga_id = '$S4'")|$(charge "$S4")"

# ---- racing the pivot's reply ----
N=20
ctl stock set B1 100 >/dev/null
ctl deposit c2 1000.00 >/dev/null
ctl fault set payment delay --method ChargePayment --delay 200 >/dev/null
pids=()
for i in $(seq 1 $N); do
  id=$(printf 'c0c0c0c0-0000-4000-8000-1000000000%02d' "$i")
  ctl start --id "$id" c2 B1 1 1.00 >/dev/null
  (
    sleep "0.$((RANDOM % 6))$((RANDOM % 10))"
    rc=0
    ctl cancel "$id" --reason race >"$STACK_DIR/race.$i.out" 2>&1 || rc=$?
    echo "$rc" >"$STACK_DIR/race.$i.rc"
  ) &
  pids+=($!)
done
wait "${pids[@]}"
ctl fault clear payment >/dev/null
wait_all_terminal 60 || true
taken=0 refused=0 bad=""
for i in $(seq 1 $N); do
  id=$(printf 'c0c0c0c0-0000-4000-8000-1000000000%02d' "$i")
  end="$(q "SELECT state FROM sagas WHERE saga_id = '$id'")|$(shipment "$id")|$(reservation "$id")"
  rc=$(cat "$STACK_DIR/race.$i.rc")
  if [ "$rc" = 0 ]; then
    taken=$((taken + 1))
    # a cancel in RESERVING may reach stockd before its ReserveStock
    [[ "$end" =~ ^CANCELLED\|\|(RELEASED|TOMBSTONE)$ ]] || bad+=" $i:taken:$end"
  elif grep -q '(past_pivot)' "$STACK_DIR/race.$i.out"; then
    refused=$((refused + 1))
    [ "$end" = "COMPLETED|SHIPPED|RESERVED" ] || bad+=" $i:refused:$end"
  else
    bad+=" $i:rc=$rc:$(head -c 200 "$STACK_DIR/race.$i.out")"
  fi
done
echo "race: $taken cancels taken, $refused refused past_pivot"
assert_eq "race: each cancel's answer matches its saga's end" "" "$bad"
assert_eq "race: stock and money add up" "$((100 - refused))|$((100000 - refused * 100))" \
  "$(on_hand B1)|$(balance c2)"
assert_eq "race: one audit row per cancel taken" "$taken" \
  "$(q "SELECT count(*) FROM audit WHERE action = 'cancel' AND reason = 'race'")"

# ---- the audit trail ----
ctl audit --json >"$STACK_DIR/audit.json"
assert_eq "audit: every action, newest first" "$((taken + 5))|retry|true" \
  "$(jq -r 'length' "$STACK_DIR/audit.json")|$(jq -r "[.[] | select(.saga_id == \"$S2\")][0].action" "$STACK_DIR/audit.json")|$(jq -r '[.[].id] == ([.[].id] | sort | reverse)' "$STACK_DIR/audit.json")"
assert_eq "audit --saga S1: its cancel, then the earlier saga's" "2 cancel customer called an earlier saga" \
  "$(ctl audit --saga "$S1" --json | jq -r '[length, .[0].action, .[0].reason, .[1].reason] | join(" ")')"
assert_eq "audit --action retry" "1" "$(ctl audit --action retry --json | jq -r length)"
assert_eq "audit table" "yes" \
  "$(ctl audit --saga "$S1" | grep -q "cancel .*$S1 .* 3 .*REFUNDING .*admin at 127.0.0.1:[0-9]* .*customer called" && echo yes || echo no)"
rc=0
ctl audit --action delete >/dev/null 2>&1 || rc=$?
assert_eq "audit --action delete: usage error" "2" "$rc"
assert_eq "S3: its charge record as it was, one" "$s3_charge|1|yes" \
  "$(charge "$S3")|$(psql_db sagas_payment "SELECT count(*) FROM charges WHERE saga_id = '$S3'")|$([[ $s3_charge =~ ^(TOMBSTONE|REFUNDED)$ ]] && echo yes || echo no)"
# conservation, and the live records are exactly the COMPLETED sagas'
check_invariants "A1:10 B1:100" "c1:10000 c2:100000"
finish
