#!/usr/bin/env bash
# An orchestrator with two replicas of each participant (issue 20):
# orchestratord --stock a,b --payment c,d dials every replica from one REQ
# socket per participant, which spreads the commands over the connected
# ones; one of each is killed (SIGKILL) while sagas run, and nng re-sends
# the commands that were in flight there on the other connection
# (rpc_client_open_urls, docs/operations.md "Replicas").
#   1. 200 sagas: all COMPLETED, and both replicas of stock and of payment
#      served some of their commands (each replica's debug log names every
#      command it decided);
#   2. 2000 sagas, stockd2 and paymentd2 killed with SIGKILL once 200 of
#      them have ended: every saga reaches a terminal state, all COMPLETED
#      (no mix of failures and long step deadlines: a saga cancelled would
#      mean a command lost), and stock and money are conserved to the unit
#      against the orchestrator's own rows;
#   3. in flight at the moment of death: stockd2 back, every ReserveStock it
#      gets held there 60 s (a delay fault), 300 sagas started, stockd2
#      killed while it holds some: nng re-sends them to stockd at once,
#      so they all complete, none of their commands is reported failed
#      (no engine retry, no request timeout), and the time from the kill
#      to the last saga's end is printed (well under the 2 s request
#      timeout that a lost command would wait).
set -euo pipefail
source "$(dirname "$0")/../lib/stack.sh"
STOCK_FLAGS="--log-level debug" PAYMENT_FLAGS="--log-level debug"
ORCH_FLAGS="--step-timeout 60000"
STACK_FAULTS=1 STACK_REPLICAS=2
stack_start
bench() {
  "$SAGA_BIN_DIR/sagabench" -o "$ORCH_URL" -s "$STOCK_URL" -p "$PAYMENT_URL" --no-progress \
    --skus 8 --customers 16 -t 150 "$@"
}
# (the line comes after the listener is up, which is what stack_start
# waits for: under ASan it can come a moment later)
_dials() { grep -c "stock $STOCK_URL, payment $PAYMENT_URL" "$STACK_DIR/orchestratord.log" || true; }
_dials_once() { [ "$(_dials)" = 1 ]; }
wait_until 10 _dials_once || true
assert_eq "orchestratord dials the replicas' lists" "1" "$(_dials)"
# served NAME VERB: how many VERB commands replica NAME decided (one debug or
# info line each, a duplicate included)
served() { grep -c " $2 [a-z]*=" "$STACK_DIR/$1.log" || true; }

# 1. spread
rc=0
bench -n 200 -c 20 >"$STACK_DIR/bench1.out" 2>&1 || rc=$?
assert_eq "sagabench exit code, 200 sagas (its invariants)" "0" "$rc"
assert_eq "all 200 completed" "200" \
  "$(psql_db sagas_orchestrator "SELECT count(*) FROM sagas WHERE state = 'COMPLETED'")"
s1=$(served stockd reserve) s2=$(served stockd2 reserve)
p1=$(served paymentd charge) p2=$(served paymentd2 charge)
echo "ReserveStock served: stockd $s1, stockd2 $s2; ChargePayment: paymentd $p1, paymentd2 $p2"
for v in "stockd:$s1" "stockd2:$s2" "paymentd:$p1" "paymentd2:$p2"; do
  assert_eq "${v%%:*} served some commands" "yes" "$([ "${v#*:}" -gt 0 ] && echo yes || echo no)"
done
assert_eq "every ReserveStock decided once or more" "yes" \
  "$([ $((s1 + s2)) -ge 200 ] && echo yes || echo no)"

# sagactl with a list of orchestrator URLs whose first is down: the saga
# goes to the one that is up
dead="${ORCH_URL%:*}:$(_stack_free_port)"
ctl stock set L1 5 >/dev/null
ctl deposit lc 10.00 >/dev/null
out=$("$SAGA_BIN_DIR/sagactl" --orchestrator "$dead,$ORCH_URL" --json start lc L1 2 3.00 --wait)
assert_eq "sagactl --orchestrator DOWN,UP: the saga completed" "COMPLETED" "$(jq -r .saga.state <<<"$out")"
assert_eq "L1 reserved once" "3" "$(psql_db sagas_stock "SELECT on_hand FROM stock WHERE sku = 'L1'")"

# 2. failover: kill one replica of each mid-run
N=2000
before=$(psql_db sagas_orchestrator "SELECT count(*) FROM sagas")
cbefore=$(psql_db sagas_orchestrator "SELECT count(*) FROM sagas WHERE state = 'COMPLETED'")
rc=0
bench -n "$N" -c 64 -r 400 --json >"$STACK_DIR/bench2.json" 2>"$STACK_DIR/bench2.err" &
bench_pid=$!
ended_some() {
  [ "$(psql_db sagas_orchestrator "SELECT count(*) FROM sagas WHERE finished")" -ge $((before + 200)) ]
}
wait_until 60 ended_some
stack_kill stockd2 KILL
stack_kill paymentd2 KILL
killed_at=$(date +%s.%N)
at_kill=$(psql_db sagas_orchestrator "SELECT count(*) FILTER (WHERE finished) - $before || ' ended, '
  || count(*) FILTER (WHERE NOT finished) || ' in flight' FROM sagas")
echo "killed stockd2 and paymentd2 (SIGKILL) with $at_kill of $N"
wait "$bench_pid" || rc=$?
done_at=$(date +%s.%N)
assert_eq "sagabench exit code, $N sagas across the kill (its invariants)" "0" "$rc"
[ "$rc" = 0 ] || cat "$STACK_DIR/bench2.err" >&2
assert_eq "every saga terminal" "0" \
  "$(psql_db sagas_orchestrator "SELECT count(*) FROM sagas WHERE NOT finished")"
assert_eq "every saga completed" "$((cbefore + N))" \
  "$(psql_db sagas_orchestrator "SELECT count(*) FROM sagas WHERE state = 'COMPLETED'")"
assert_eq "no saga flagged for an operator" "0" \
  "$(psql_db sagas_orchestrator "SELECT count(*) FROM sagas WHERE attention")"
# conservation, exact, against the orchestrator's rows: each completed
# saga holds one reservation of its qty and one charge of its amount,
# nothing else is held
orch=$(psql_db sagas_orchestrator "SELECT count(*) || ':' || sum(qty) || ':' || sum(amount)
  FROM sagas WHERE state = 'COMPLETED'")
assert_eq "reservations held = completed sagas (count:qty)" "${orch%:*}" "$(psql_db sagas_stock \
  "SELECT count(*) || ':' || sum(qty) FROM reservations WHERE status = 'RESERVED'")"
assert_eq "charges held = completed sagas (count:qty:amount)" "${orch%%:*}:${orch##*:}" \
  "$(psql_db sagas_payment "SELECT count(*) || ':' || sum(amount) FROM charges
     WHERE status = 'CHARGED'")"
assert_eq "no record without its saga" "0" "$(psql_db sagas_stock \
  "SELECT count(*) FROM reservations WHERE status NOT IN ('RESERVED')")"
# sagabench set each sku's stock and each customer's balance at its start;
# its invariants (checked above) compare them with what ListStock and
# ListAccounts report after the run. The survivors served after the kill:
echo "in all: stockd2 $(served stockd2 reserve) ReserveStock, paymentd2 $(served paymentd2 charge) ChargePayment;" \
  "the survivors stockd $(served stockd reserve) ReserveStock in all," \
  "paymentd $(served paymentd charge) ChargePayment"
awk -v a="$killed_at" -v b="$done_at" 'BEGIN { printf "the run ended %.1f s after the kill\n", b - a }'
grep -o '"latency_ms":{[^}]*}' "$STACK_DIR/bench2.json" | head -1 || true
assert_eq "no command reported failed by the engine" "0" \
  "$(grep -c ' failed (' "$STACK_DIR/orchestratord.log" || true)"

# 3. commands held by the replica that dies
stack_start_stock 2
ctl --stock "${STACK_ADMIN_URL_OF[stockd2]}" fault set stock delay --method ReserveStock \
  --delay 60000 --count 1000 >/dev/null
base=$(psql_db sagas_orchestrator "SELECT count(*) FROM sagas")
cbase=$(psql_db sagas_orchestrator "SELECT count(*) FROM sagas WHERE state = 'COMPLETED'")
# 300 sagas over 3 s, 4 at a time: ReserveStock alone in its frame, the
# frames spread over both replicas
bench -n 300 -c 4 -r 100 >"$STACK_DIR/bench3.out" 2>&1 &
bench_pid=$!
held() { [ "$(grep -c 'fault injected: delay on ReserveStock' "$STACK_DIR/stockd2.log" || true)" -ge 1 ]; }
wait_until 30 held
# the sagas whose ReserveStock is out now (among them those stockd2 holds)
out_now=$(psql_db sagas_orchestrator "SELECT string_agg(quote_literal(saga_id::text), ',')
  FROM sagas WHERE state = 'RESERVING'")
killed_at=$(date +%s%N)
stack_kill stockd2 KILL
out_ended() {
  [ "$(psql_db sagas_orchestrator "SELECT count(*) FROM sagas WHERE saga_id IN ($out_now)
    AND NOT finished")" = 0 ]
}
wait_until 30 out_ended
ended_at=$(date +%s%N)
rc=0
wait "$bench_pid" || rc=$?
assert_eq "sagabench exit code, 300 sagas, some held by the killed replica" "0" "$rc"
assert_eq "all 300 completed" "$((cbase + 300))" \
  "$(psql_db sagas_orchestrator "SELECT count(*) FROM sagas WHERE state = 'COMPLETED'")"
echo "ReserveStock held by stockd2 when it was killed: at least" \
  "$(grep -c 'fault injected: delay on ReserveStock' "$STACK_DIR/stockd2.log" || true)"
echo "failover: the $(tr -cd , <<<"$out_now" | wc -c | awk '{print $1 + 1}') sagas whose ReserveStock" \
  "was out at the kill all ended $(((ended_at - killed_at) / 1000000)) ms after it"
assert_eq "still no command reported failed (nng re-sent them, not the engine)" "0" \
  "$(grep -c ' failed (' "$STACK_DIR/orchestratord.log" || true)"
finish
