#!/usr/bin/env bash
# Retrying many sagas at once after an outage (sagactl retry FILTERS,
# docs/operations.md "Retrying many sagas"), on a mutual-TLS stack:
#   - shippingd down, 200 orders reach SHIPPING, fail one ShipOrder each and
#     are flagged (--attention-after 1), their next try up to 10 min out
#     (--backoff-base 600000); the orchestrator redials shippingd within 1 s
#     and a try waits 2 s (--request-timeout), so a re-armed try finds it;
#   - `retry --attention --dry-run` counts the 200 (and their ids under
#     --json) and changes nothing;
#   - a client certificate's `retry --attention` is refused at the first
#     saga (PERMISSION_DENIED, exit 1), logged once, nothing changed;
#   - shippingd back, `retry --attention --rate 50` re-arms every one not
#     already ended by its own retry (re-armed + finished = 200) in no less
#     than the 3.98 s that rate allows, and all 200 end COMPLETED with one
#     shipment each, attention cleared, each re-arm logged by the
#     orchestrator;
#   - retry with no ID and no filter is a usage error (exit 2);
#   - the orchestrator killed mid-run over 500 flagged sagas: sagactl stops
#     after 3 re-arms in a row go unanswered (exit 1, says why, prints the
#     counts) instead of waiting a --timeout per saga.
set -euo pipefail
source "$(dirname "$0")/../lib/stack.sh"
STACK_TLS=1
ORCH_FLAGS="--attention-after 1 --backoff-base 600000 --backoff-cap 3600000"
stack_start
N=200
ctl stock set A1 100000 >/dev/null
q() { psql_db sagas_orchestrator "$1"; }

stack_kill shippingd
for i in $(seq 1 $N); do
  ctl deposit "c$i" 100.00 >/dev/null
done
seq 1 $N | xargs -P 4 -I{} "$SAGA_BIN_DIR/sagactl" --orchestrator "$ORCH_ADMIN_URL" \
  "${STACK_CTL_TLS[@]}" start "c{}" A1 1 1.00 >/dev/null
flagged() { [ "$(q "SELECT count(*) FROM sagas WHERE state = 'SHIPPING' AND attention")" = "$N" ]; }
wait_until 120 flagged || true
assert_eq "shippingd down: every order flagged in SHIPPING" "$N" \
  "$(q "SELECT count(*) FROM sagas WHERE state = 'SHIPPING' AND attention")"

before=$(q "SELECT sum(version), count(*) FILTER (WHERE attention) FROM sagas")
rc=0
ctl retry --attention --dry-run >"$STACK_DIR/dry.out" 2>&1 || rc=$?
assert_eq "dry run: counts, exit 0" "0 dry run: $N unfinished sagas match; none re-armed (without --dry-run: at most 50 a second, about 4 s)" \
  "$rc $(cat "$STACK_DIR/dry.out")"
ctl retry --attention --dry-run --json >"$STACK_DIR/dry.json"
assert_eq "dry run --json: the ids" "true $N $N 0" \
  "$(jq -r '[.dry_run, .matched, (.saga_ids | unique | length), .rearmed] | join(" ")' "$STACK_DIR/dry.json")"
assert_eq "dry run --json: the database's ids" "" \
  "$(diff <(jq -r '.saga_ids[]' "$STACK_DIR/dry.json" | sort) <(q "SELECT saga_id FROM sagas WHERE attention ORDER BY 1") | head -3)"
assert_eq "dry run: nothing changed" "$before" "$(q "SELECT sum(version), count(*) FILTER (WHERE attention) FROM sagas")"

# the client role: listing is allowed, RetrySaga is not: it stops at once
rc=0
# shellcheck disable=SC2046
"$SAGA_BIN_DIR/sagactl" --orchestrator "$ORCH_URL" $(tls_flags client) retry --attention \
  >"$STACK_DIR/client.out" 2>&1 || rc=$?
assert_eq "client role: refused, exit 1" "1 yes" \
  "$rc $(grep -q 'could not retry saga .*: PERMISSION_DENIED' "$STACK_DIR/client.out" && echo yes || echo no)"
assert_eq "client role: nothing changed" "$before" "$(q "SELECT sum(version), count(*) FILTER (WHERE attention) FROM sagas")"
assert_eq "client role: one refusal logged" "1" \
  "$(grep -c 'refused /sagas.v1.Orchestrator/RetrySaga: PERMISSION_DENIED' "$STACK_DIR/orchestratord.log" || true)"

# no ID, no filter
rc=0
ctl retry >/dev/null 2>&1 || rc=$?
assert_eq "no ID, no filter: usage error" "2" "$rc"

stack_start_shipping
rc=0
ctl retry --attention --rate 50 --json >"$STACK_DIR/retry.json" 2>"$STACK_DIR/retry.err" || rc=$?
assert_eq "retry: exit 0, none failed" "0 0 $N" \
  "$rc $(jq -r '[.failed, .matched] | join(" ")' "$STACK_DIR/retry.json")"
rearmed=$(jq -r .rearmed "$STACK_DIR/retry.json")
assert_eq "retry: re-armed + finished meanwhile = every match" "$N" \
  "$((rearmed + $(jq -r .finished "$STACK_DIR/retry.json")))"
done_all() { [ "$(q "SELECT count(*) FROM sagas WHERE state = 'COMPLETED'")" = "$N" ]; }
wait_until 120 done_all || true
assert_eq "retry: every order completed, attention cleared" "$N|0" \
  "$(q "SELECT count(*) FILTER (WHERE state = 'COMPLETED'), count(*) FILTER (WHERE attention) FROM sagas")"
assert_eq "retry: one shipment each" "$N|$N" \
  "$(psql_db sagas_shipping "SELECT count(*), count(DISTINCT saga_id) FROM shipments")"
assert_eq "retry: each re-arm logged" "$rearmed" \
  "$(grep -c 're-armed by an operator' "$STACK_DIR/orchestratord.log" || true)"
# the rate: the 200th re-arm is not before 199/50 s after the first
assert_eq "retry: paced at 50 a second (no less than 3.98 s)" "yes" \
  "$(jq -r 'if .seconds >= 3.98 then "yes" else "no: \(.seconds) s" end' "$STACK_DIR/retry.json")"
rc=0
ctl retry --state COMPLETED --rate 50 >"$STACK_DIR/none.out" 2>"$STACK_DIR/none.err" || rc=$?
assert_eq "retry of finished sagas only: none match, a hint why" "0 re-armed 0 of 0 matching sagas yes" \
  "$rc $(cut -d' ' -f1-6 "$STACK_DIR/none.out") $(grep -q 'a finished saga (COMPLETED, CANCELLED, ...) is never re-armed' "$STACK_DIR/none.err" && echo yes || echo no)"


# the orchestrator dies mid-run: sagactl stops after 3 unanswered re-arms
# (it waited a --timeout per saga: hours for thousands), says so, exit 1
q "INSERT INTO sagas (saga_id, state, customer, sku, qty, amount, attempts, attention,
     next_attempt_at, retry_at, step_deadline, created_at, updated_at, finished)
   SELECT ('0e0e0000-0000-4000-8000-' || lpad(g::text, 12, '0'))::uuid, 'SHIPPING', 'c1', 'A1',
          1, 100, 12, true, now() + interval '1 hour', now() + interval '1 hour', NULL, now(),
          now(), false
   FROM generate_series(1, 500) g" >/dev/null
rc=0
timeout 120 "$SAGA_BIN_DIR/sagactl" --orchestrator "$ORCH_ADMIN_URL" "${STACK_CTL_TLS[@]}" \
  --timeout 1000 retry --attention --rate 20 >"$STACK_DIR/dies.out" 2>"$STACK_DIR/dies.err" &
ctl_pid=$!
sleep 2
stack_kill orchestratord KILL
wait "$ctl_pid" || rc=$?
assert_eq "orchestrator killed mid-run: sagactl stops, exit 1, says why" "1 yes" \
  "$rc $(grep -q 'the orchestrator did not answer 3 re-arms in a row: stopped' "$STACK_DIR/dies.err" && echo yes || echo no)"
assert_eq "orchestrator killed mid-run: the counts printed, fewer than 500 re-armed" "yes" \
  "$(awk '/^re-armed [0-9]+ of 500 matching sagas/ { print ($2 < 500) ? "yes" : "no" }' "$STACK_DIR/dies.out")"
finish
