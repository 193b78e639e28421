#!/usr/bin/env bash
# Fault 20: several orchestrators and participant replicas (issue 20;
# docs/saga-semantics.md rule 10). Two orchestratord (A, B) on one
# database, two stockd and two paymentd on theirs; 2,000 sagas at C=64
# through both orchestrators (sagabench takes the list), started at 200 a
# second (so that the faults below fall in the middle of the run), a fifth
# of them declined or out of stock. Before each orchestrator fault, both
# paymentd are paused (SIGSTOP) for 300 ms, so that every orchestrator
# holds the sagas whose ChargePayment is then unanswered (at 200 a second,
# a saga takes a few ms and there would be none to take over). Meanwhile:
#   - at a third: kill -9 A; B's sweep takes over every saga A held (the
#     time it took is printed, against lease + one sweep); A restarts 2 s
#     later;
#   - at two thirds: SIGSTOP B for three leases, then SIGCONT: the
#     transitions B had decided before it froze are refused (fenced; their
#     count printed, at least one when B held sagas with replies due);
#   - kill -9 one stockd replica (the other serves on).
# At the end, exact values: every saga terminal; sagabench's invariants
# (stock and money to the unit); each COMPLETED saga has one RESERVED, one
# CHARGED and one shipment row, each CANCELLED saga none; no saga's history
# has two rows with one version.
source "$(dirname "$0")/head.inc"
N=2000
# fast leases: a first try's lease is --request-timeout + 1 s of grace
ORCH_FLAGS="--request-timeout 500 --sweep-interval 100 --req-resend 0"
LEASE_MS=1500
SWEEP_MS=100
STACK_REPLICAS=2 stack_start
stack_start_orchestrator_as orchestratord2
instance() { # NAME: the instance name of a running orchestratord, from its log
  sed -n 's/.*orchestratord \([^ ]*\) listening on.*/\1/p' "$STACK_DIR/$1.log" | tail -1
}
A=$(instance orchestratord)
B=$(instance orchestratord2)
echo "orchestrators: A=$A B=$B"

finished() { psql_db sagas_orchestrator "SELECT count(*) FROM sagas WHERE finished"; }
_finished_at_least() { [ "$(finished)" -ge "$1" ]; }
held_by() { # INSTANCE: unfinished sagas it holds
  psql_db sagas_orchestrator "SELECT count(*) FROM sagas WHERE NOT finished AND lease_owner = '$1'"
}
_none_held_by() { [ "$(held_by "$1")" = 0 ]; }

"$SAGA_BIN_DIR/sagabench" -o "$ORCH_URL,${STACK_URL_OF[orchestratord2]}" -s "$STOCK_URL" -p "$PAYMENT_URL" \
  --no-progress -n "$N" -c 64 -r 200 -m 0.2 -t 170 --json >"$STACK_DIR/bench.json" \
  2>"$STACK_DIR/bench.err" &
bench=$!

payments() { kill "-$1" "${STACK_PID_OF[paymentd]}" "${STACK_PID_OF[paymentd2]}"; }

# --- a third: A killed -----------------------------------------------------
wait_until 120 _finished_at_least $((N / 3))
payments STOP
sleep 0.3 # the pause itself: ChargePayments pile up unanswered
held_a=$(held_by "$A")
kill -KILL "${STACK_PID_OF[orchestratord]}"
payments CONT
killed_at=$(date +%s%3N)
wait "${STACK_PID_OF[orchestratord]}" 2>/dev/null || true
unset "STACK_PID_OF[orchestratord]"
echo "A killed holding $held_a unfinished sagas"
wait_until 60 _none_held_by "$A"
took=$(($(date +%s%3N) - killed_at))
echo "takeover: B held every saga A had left within $took ms (lease $LEASE_MS ms + one sweep $SWEEP_MS ms)"
stack_start_orchestrator # A again, a new instance on the same address

# --- the stock replica -----------------------------------------------------
kill -KILL "${STACK_PID_OF[stockd2]}"
wait "${STACK_PID_OF[stockd2]}" 2>/dev/null || true
unset "STACK_PID_OF[stockd2]"
echo "stockd2 killed"

# --- two thirds: B frozen for three leases ----------------------------------
wait_until 120 _finished_at_least $((2 * N / 3))
payments STOP
sleep 0.3
held_b=$(held_by "$B")
kill -STOP "${STACK_PID_OF[orchestratord2]}"
payments CONT # their replies wait in B's socket
sleep "$((3 * LEASE_MS / 1000)).$((3 * LEASE_MS % 1000))" # the freeze itself, not a wait for anything
kill -CONT "${STACK_PID_OF[orchestratord2]}"
echo "B frozen for $((3 * LEASE_MS)) ms holding $held_b unfinished sagas"

# --- the end ------------------------------------------------------------------
rc=0
wait "$bench" || rc=$?
assert_eq "sagabench exit code (its invariants: stock and money to the unit)" 0 "$rc"
[ "$rc" = 0 ] || tail -20 "$STACK_DIR/bench.err" >&2
wait_all_terminal 120 || true
assert_eq "sagas" "$N" "$(psql_db sagas_orchestrator "SELECT count(*) FROM sagas")"
assert_eq "unfinished sagas" 0 \
  "$(psql_db sagas_orchestrator "SELECT count(*) FROM sagas WHERE state NOT IN ('COMPLETED', 'CANCELLED')")"
# the id sets compared by their count and digest (2,000 ids are too many to print)
ids() { # DB SQL: "count digest" of the ids it returns, in order
  psql_db "$1" "SELECT count(*) || ' ' || md5(coalesce(string_agg(saga_id::text, ',' ORDER BY saga_id::text), '')) FROM ($2) i"
}
completed=$(ids sagas_orchestrator "SELECT saga_id FROM sagas WHERE state = 'COMPLETED'")
echo "COMPLETED sagas (count digest): $completed"
assert_eq "RESERVED rows are exactly the COMPLETED sagas, one each" "$completed" \
  "$(ids sagas_stock "SELECT saga_id FROM reservations WHERE status = 'RESERVED'")"
assert_eq "CHARGED rows are exactly the COMPLETED sagas, one each" "$completed" \
  "$(ids sagas_payment "SELECT saga_id FROM charges WHERE status = 'CHARGED'")"
assert_eq "shipments are exactly the COMPLETED sagas, one each" "$completed" \
  "$(ids sagas_shipping "SELECT saga_id FROM shipments")"
assert_eq "history rows sharing a saga and a version" 0 \
  "$(psql_db sagas_orchestrator "SELECT count(*) FROM (SELECT saga_id, version FROM saga_history GROUP BY 1, 2 HAVING count(*) > 1) d")"
assert_eq "every saga's history starts at version 1 and ends at its row's version" 0 \
  "$(psql_db sagas_orchestrator "SELECT count(*) FROM sagas s WHERE (SELECT min(version) FROM saga_history h WHERE h.saga_id = s.saga_id) <> 1 OR (SELECT max(version) FROM saga_history h WHERE h.saga_id = s.saga_id) > s.version")"
fenced=$(log_count orchestratord2 "transition refused: fenced")
echo "B's stale transitions refused after SIGCONT: $fenced (B held $held_b sagas when frozen)"
if [ "$held_b" -gt 0 ]; then
  assert_eq "B's stale writes were refused (at least one)" yes "$([ "$fenced" -ge 1 ] && echo yes || echo "no ($fenced)")"
fi
# what an operator sees: sagactl get names the claim's holder and epoch
taken=$(psql_db sagas_orchestrator "SELECT saga_id FROM sagas WHERE epoch > 1 ORDER BY saga_id LIMIT 1")
assert_eq "sagactl get: lease_owner and epoch, as stored" \
  "$(psql_db sagas_orchestrator "SELECT lease_owner || ' ' || epoch FROM sagas WHERE saga_id = '$taken'")" \
  "$(ctl get "$taken" --json | jq -r '.lease_owner + " " + (.epoch | tostring)')"
echo "outcomes: $(psql_db sagas_orchestrator "SELECT string_agg(state || ':' || n, ' ') FROM (SELECT state, count(*) n FROM sagas GROUP BY 1 ORDER BY 1) c")"
finish
