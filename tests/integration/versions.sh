#!/usr/bin/env bash
# Versions (docs/operations.md, "Upgrading"): every program answers
# --version (exit 0) with the project version of CMakeLists.txt and the git
# commit it was built from; Health reports the same; each database records
# its schema version and who applied it; a daemon started against a schema
# newer than it knows refuses to start (exit 1, a line naming both
# versions) and changes nothing; an unversioned (older) database is
# migrated and recorded.
set -euo pipefail
source "$(dirname "$0")/../lib/stack.sh"
version=$(sed -n 's/^project(sagas VERSION \([0-9.]*\).*/\1/p' "$STACK_ROOT/CMakeLists.txt")
commit=
if command -v git >/dev/null && git -C "$STACK_ROOT" rev-parse --git-dir >/dev/null 2>&1; then
  commit=$(git -C "$STACK_ROOT" rev-parse --short=12 HEAD)
fi
for p in orchestratord stockd paymentd shippingd gatewayd sagactl sagabench sagacmd sim; do
  set +e; out=$("$SAGA_BIN_DIR/$p" --version 2>&1); rc=$?; set -e
  assert_eq "$p --version: exit code" 0 "$rc"
  # the commit of a checkout with changes ends in -dirty
  assert_eq "$p --version" yes "$(grep -Eq "^$p $version \(commit ${commit:-unknown}(-dirty)?\)$" <<<"$out" &&
    echo yes || echo "no: $out")"
done
assert_eq "start_order.py --version" "start_order.py $version" \
  "$(python3 "$STACK_ROOT/clients/python/start_order.py" --version 2>&1)"
assert_eq "list_shipments.py --version" "list_shipments.py $version" \
  "$(python3 "$STACK_ROOT/clients/python/list_shipments.py" --version 2>&1)"

# each component's schema version (the orchestrator's: SHIPPING, then the claim's fencing epoch and sagas.waiter, then the listing's index, then the history feed's xid, then retention, then R5's saga id tombstones, then the listing indexes of issue 32 (sagas.cancelled), then saga_definitions and sagas.def_id (issue 34); the participants': the <records>_retired summaries of retention, then R5's saga_started_ms)
# (read from the sources: STORE_SCHEMA_VERSION, <SERVICE>_SCHEMA_VERSION)
schema_v() {
  if [ "$1" = orchestrator ]; then
    sed -n 's/^#define STORE_SCHEMA_VERSION \([0-9]*\).*/\1/p' "$STACK_ROOT/orchestrator/core/store.h"
  else
    sed -n 's/^#define [A-Z]*_SCHEMA_VERSION \([0-9]*\).*/\1/p' "$STACK_ROOT/services/$1/service.c"
  fi
}
stack_start
for s in orchestrator stock payment shipping; do
  d=${s}d
  [ "$s" = orchestrator ] && d=orchestratord
  j=$(ctl probe "$s" --json)
  assert_eq "$s: Health reports the build" "$("$SAGA_BIN_DIR/$d" --version)" \
    "$d $(jq -r '"\(.version) (commit \(.commit))"' <<<"$j")"
  assert_eq "$s: schema version recorded" "$(schema_v "$s")|$("$SAGA_BIN_DIR/$d" --version)" \
    "$(psql_db "sagas_$s" "SELECT version || '|' || applied_by FROM schema_version WHERE component = '$s'")"
done

# a schema from the future: each daemon refuses it, and changes nothing
stack_kill orchestratord
stack_kill stockd
stack_kill paymentd
stack_kill shippingd
for s in orchestrator stock payment shipping; do
  psql_db "sagas_$s" "UPDATE schema_version SET version = 999, applied_by = 'a later build' WHERE component = '$s'" >/dev/null
done
port=$(_stack_free_port)
run_refused() { # run_refused NAME VERSION ARGS...: the daemon must exit 1 quickly
  local name=$1 known=$2; shift 2
  set +e
  timeout 60 "$@" --listen "tcp://127.0.0.1:$port" >"$STACK_DIR/$name.future.log" 2>&1
  local rc=$?
  set -e
  assert_eq "$name against a newer schema: exit code" 1 "$rc"
  assert_eq "$name against a newer schema: the line" yes \
    "$(grep -q "holds schema version 999 (applied by a later build), newer than the $known this $name knows: refusing to start" \
      "$STACK_DIR/$name.future.log" && echo yes || echo "no: $(cat "$STACK_DIR/$name.future.log")")"
}
run_refused stockd "$(schema_v stock)" "$SAGA_BIN_DIR/stockd" --db "$PG_CONN dbname=sagas_stock"
run_refused paymentd "$(schema_v payment)" "$SAGA_BIN_DIR/paymentd" --db "$PG_CONN dbname=sagas_payment"
run_refused shippingd "$(schema_v shipping)" "$SAGA_BIN_DIR/shippingd" --db "$PG_CONN dbname=sagas_shipping"
run_refused orchestratord "$(schema_v orchestrator)" "$SAGA_BIN_DIR/orchestratord" --db "$PG_CONN dbname=sagas_orchestrator" \
  --stock "$STOCK_URL" --payment "$PAYMENT_URL" --shipping "$SHIPPING_URL"
for s in orchestrator stock payment shipping; do
  assert_eq "$s: the newer version is left as it was" "999|a later build" \
    "$(psql_db "sagas_$s" "SELECT version || '|' || applied_by FROM schema_version WHERE component = '$s'")"
done

# a table made otherwise is refused, not read as older: a view hiding the
# newer row (an attacker's review found it read as "no version")
psql_db sagas_stock "ALTER TABLE schema_version RENAME TO sv_real;
  CREATE VIEW schema_version AS SELECT * FROM sv_real WHERE version < 2" >/dev/null
set +e
timeout 60 "$SAGA_BIN_DIR/stockd" --db "$PG_CONN dbname=sagas_stock" --listen "tcp://127.0.0.1:$port" \
  >"$STACK_DIR/stockd.view.log" 2>&1
rc=$?
set -e
assert_eq "stockd with schema_version a view: exit code" 1 "$rc"
assert_eq "stockd with schema_version a view: the line" yes \
  "$(grep -q "schema_version is not the table stockd makes" "$STACK_DIR/stockd.view.log" && echo yes || echo "no: $(cat "$STACK_DIR/stockd.view.log")")"
psql_db sagas_stock "DROP VIEW schema_version; ALTER TABLE sv_real RENAME TO schema_version" >/dev/null

# an unversioned database (as every one was before schema versions): migrated
for s in orchestrator stock payment shipping; do
  psql_db "sagas_$s" "DROP TABLE schema_version" >/dev/null
done
stack_start_stock
stack_start_payment
stack_start_shipping
stack_start_orchestrator
for s in orchestrator stock payment shipping; do
  assert_eq "$s: an unversioned database is recorded at its version" "$(schema_v "$s")" \
    "$(psql_db "sagas_$s" "SELECT version FROM schema_version WHERE component = '$s'")"
done
ctl stock set V1 2 >/dev/null
ctl deposit vic 10.00 >/dev/null
id=7e500000-0000-4000-8000-000000000001
ctl start vic V1 1 1.00 --id "$id" --wait >/dev/null
assert_eq "a saga after the migration" COMPLETED "$(ctl get "$id" --json | jq -r .state)"
finish
