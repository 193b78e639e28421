#!/usr/bin/env bash
# Health (sagas.v1.Health/Check) and `sagactl probe`: every daemon is
# SERVING; with PostgreSQL stopped every daemon turns NOT_SERVING within a
# few seconds (probe exits 1) and keeps answering; with PostgreSQL back on
# the same port every daemon is SERVING again and sagas run.
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
