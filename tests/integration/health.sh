#!/usr/bin/env bash
# Health (sagas.v1.Health/Check) and `sagactl probe`: every daemon is
# SERVING; with PostgreSQL stopped every daemon turns NOT_SERVING within a
# few seconds (probe exits 1) and keeps answering; with PostgreSQL back on
# the same port every daemon is SERVING again and sagas run. Also: a fresh
# start logs no reconnection; sagactl given another daemon's URL says what
# it reached; a second orchestratord on a port in use says why it exits.
set -euo pipefail
source "$(dirname "$0")/../lib/stack.sh"
stack_start
svcs=(orchestrator stock payment shipping)
ctl stock set H1 3 >/dev/null
ctl deposit hc 50.00 >/dev/null

for s in "${svcs[@]}"; do
  set +e; out=$(ctl probe "$s"); rc=$?; set -e
  assert_eq "$s: probe exit code" "0" "$rc"
  assert_eq "$s: status" "$s SERVING" "$out"
done
j=$(ctl probe stock --json)
assert_eq "probe --json" '{"service":"stock","status":"SERVING"}' "$(jq -c '{service, status}' <<<"$j")"
# Health reports the build, as --version prints it
assert_eq "probe --json: the daemon's version and commit" \
  "$("$SAGA_BIN_DIR/stockd" --version)" "stockd $(jq -r '"\(.version) (commit \(.commit))"' <<<"$j")"
set +e
ctl probe stock --stock tcp://127.0.0.1:1 >/dev/null 2>&1; rc=$?
set -e
assert_eq "unreachable daemon: probe exit code" "1" "$rc"

# first-hour messages (issue 37): a fresh start reconnects nothing (the
# participants' clock session, their first, said "reconnected"); a URL
# of another daemon names what was reached; a port in use says why
for d in orchestratord stockd paymentd shippingd; do
  assert_eq "$d: a fresh start logs no reconnection" "0" "$(grep -c 'reconnected to database' "$STACK_DIR/$d.log" || true)"
done
rc=0
ctl --orchestrator "$STOCK_URL" get a1a1a1a1-0000-4000-8000-000000000001 >/dev/null 2>"$STACK_DIR/wrong.err" || rc=$?
assert_eq "sagactl at stockd's URL as --orchestrator: says so" "1 yes" \
  "$rc $(grep -q "the daemon at $STOCK_URL does not serve this method (UNIMPLEMENTED.*): is it orchestratord? (--orchestrator names orchestratord's address)" "$STACK_DIR/wrong.err" && echo yes || echo no)"
# probe names the service: any daemon answered the empty name
rc=0
ctl --orchestrator "$STOCK_URL" probe orchestrator >/dev/null 2>"$STACK_DIR/probe.err" || rc=$?
assert_eq "probe orchestrator at stockd's URL: exit 1, says it is not orchestratord" "1 yes" \
  "$rc $(grep -q "the daemon at $STOCK_URL is not orchestratord" "$STACK_DIR/probe.err" && echo yes || echo no)"
rc=0
timeout 60 "$SAGA_BIN_DIR/orchestratord" --db "$PG_CONN dbname=sagas_orchestrator" \
  --listen "tcp://127.0.0.1:$(free_port)" --metrics-listen "${STACK_METRICS_URL_OF[orchestratord]}" \
  >"$STACK_DIR/second.log" 2>&1 || rc=$?
assert_eq "a second orchestratord on the first one's metrics port: exits 1, says why" "1 yes" \
  "$rc $(grep -q 'Address already in use (something else listens there: another process, or another listener of this one; on one host, each daemon needs ports of its own' "$STACK_DIR/second.log" && echo yes || echo no)"

# the database goes away
bash "$STACK_ROOT/scripts/pg.sh" stop "$STACK_DIR/pg"
not_serving() { [ "$(ctl probe "$1" --timeout 3000 --json 2>/dev/null | jq -r .status)" = NOT_SERVING ]; }
for s in "${svcs[@]}"; do
  if wait_until 10 not_serving "$s"; then
    set +e; ctl probe "$s" >/dev/null 2>&1; rc=$?; set -e
    assert_eq "$s without its database: probe exit code" "1" "$rc"
  else
    assert_eq "$s without its database: status" "NOT_SERVING" "$(ctl probe "$s" 2>&1 || true)"
  fi
done

# and comes back on the same port
PG_FAST=1 bash "$STACK_ROOT/scripts/pg.sh" start "$STACK_DIR/pg" "$PG_PORT" >/dev/null
for s in "${svcs[@]}"; do
  if ! wait_until 15 ctl probe "$s"; then
    assert_eq "$s with its database back: status" "$s SERVING" "$(ctl probe "$s" 2>&1 || true)"
  else
    assert_eq "$s with its database back: status" "$s SERVING" "$(ctl probe "$s")"
  fi
done
# a worker may meet its broken connection once (UNAVAILABLE, transient):
# StartSaga is retried with the same id, as clients do
id=66666666-6666-4666-8666-666666666666
wait_until 30 ctl start hc H1 1 5.00 --id "$id" --wait
assert_eq "a saga after the outage" "COMPLETED" "$(ctl get "$id" --json | jq -r .state)"
finish
