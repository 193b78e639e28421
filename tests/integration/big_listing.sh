#!/usr/bin/env bash
# The admin listings stay usable however many sagas were recorded: with
# 25,000 reservation rows and 25,000 charge rows (more than one 1 MiB frame
# could carry), `stock list`, `accounts` and `report` still answer, their
# counts come from aggregates over every row and are exact, and the rows
# they show are the newest, bounded by --limit (and by the frame size).
set -euo pipefail
source "$(dirname "$0")/../lib/stack.sh"
stack_start

# a sku of the longest allowed name (64 bytes), so that 10,000 of its rows
# would not fit in one frame
BIG=$(printf 'S%.0s' $(seq 1 64))
N=25000            # rows of each kind
RESERVED=12000     # of which RESERVED (the rest are TOMBSTONE)
CHARGED=15000      # of which CHARGED
REFUNDED=5000      # and REFUNDED (the rest are TOMBSTONE)

ctl stock set A1 10 >/dev/null
ctl stock set "$BIG" 5 >/dev/null
ctl deposit ali 100.00 >/dev/null
ctl deposit bigc 1.00 >/dev/null
# two real sagas, recorded after the bulk rows below (which are a day old)
ids=(55555555-5555-4555-8555-555555555501 55555555-5555-4555-8555-555555555502)
for id in "${ids[@]}"; do ctl start ali A1 1 10.00 --id "$id" --wait >/dev/null; done

# the test owns these databases: one INSERT each, a day in the past, one
# millisecond apart (the highest g is the oldest)
psql_db sagas_stock "INSERT INTO reservations (saga_id, sku, qty, status, created_at, updated_at)
  SELECT md5('resv' || g)::uuid, '$BIG', 2,
         CASE WHEN g <= $RESERVED THEN 'RESERVED' ELSE 'TOMBSTONE' END,
         now() - interval '1 day' - g * interval '1 ms', now()
  FROM generate_series(1, $N) AS g"
psql_db sagas_payment "INSERT INTO charges (saga_id, customer, amount, status, created_at, updated_at)
  SELECT md5('chrg' || g)::uuid, CASE WHEN g <= $((CHARGED + REFUNDED)) THEN 'bigc' ELSE 'nobody' END, 100,
         CASE WHEN g <= $CHARGED THEN 'CHARGED' WHEN g <= $((CHARGED + REFUNDED)) THEN 'REFUNDED'
              ELSE 'TOMBSTONE' END,
         now() - interval '1 day' - g * interval '1 ms', now()
  FROM generate_series(1, $N) AS g"

# what the databases hold: the numbers every listing must agree with
db_live=$(psql_db sagas_stock "SELECT count(*) FROM reservations WHERE status = 'RESERVED'")
db_charges=$(psql_db sagas_payment "SELECT count(*) FROM charges")
db_charged=$(psql_db sagas_payment "SELECT count(*) FROM charges WHERE status = 'CHARGED'")
db_refunded=$(psql_db sagas_payment "SELECT count(*) FROM charges WHERE status = 'REFUNDED'")
assert_eq "db: reservation rows" "$((N + 2))" "$(psql_db sagas_stock "SELECT count(*) FROM reservations")"
assert_eq "db: live reservations" "$((RESERVED + 2))" "$db_live"
assert_eq "db: charge rows" "$((N + 2))" "$db_charges"

# run_ok WHAT CMD...: CMD exits 0; its stdout in $out
run_ok() {
  local what=$1 rc=0
  shift
  out=$("$@" 2>"$STACK_DIR/last.err") || rc=$?
  assert_eq "$what: exit code" "0" "$rc"
  [ "$rc" -eq 0 ] || cat "$STACK_DIR/last.err" >&2
}

# ---- stock list ----
run_ok "stock list" ctl stock list
assert_eq "stock list: no reservation rows by default" "0" "$(grep -c "$BIG  *[0-9]* *[A-Z]" <<<"$out" || true)"
run_ok "stock list --json" ctl stock list --json
assert_eq "stock list: big live_reservations" "$RESERVED" \
  "$(jq -r --arg s "$BIG" '.stock[] | select(.sku == $s) | .live_reservations' <<<"$out")"
assert_eq "stock list: big reserved_qty" "$((2 * RESERVED))" \
  "$(jq -r --arg s "$BIG" '.stock[] | select(.sku == $s) | .reserved_qty' <<<"$out")"
assert_eq "stock list: A1 live_reservations" "2" \
  "$(jq -r '.stock[] | select(.sku == "A1") | .live_reservations' <<<"$out")"
assert_eq "stock list: A1 on_hand" "8" "$(jq -r '.stock[] | select(.sku == "A1") | .on_hand' <<<"$out")"
assert_eq "stock list: no reservations key" "false" "$(jq -r 'has("reservations")' <<<"$out")"
run_ok "stock list --reservations --json" ctl stock list --reservations --json
assert_eq "stock list --reservations: rows" "1000" "$(jq -r '.reservations | length' <<<"$out")"
assert_eq "stock list --reservations: truncated" "true" "$(jq -r '.reservations_truncated' <<<"$out")"
assert_eq "stock list --reservations: newest first" "${ids[1]}" "$(jq -r '.reservations[0].saga_id' <<<"$out")"
assert_eq "stock list --reservations: then" "${ids[0]}" "$(jq -r '.reservations[1].saga_id' <<<"$out")"
assert_eq "stock list --reservations: third is the newest bulk row" "$(psql_db sagas_stock "SELECT md5('resv1')::uuid")" \
  "$(jq -r '.reservations[2].saga_id' <<<"$out")"
run_ok "stock list --reservations --limit 5 --json" ctl stock list --reservations --limit 5 --json
assert_eq "stock list --limit 5: rows" "5" "$(jq -r '.reservations | length' <<<"$out")"
# 10,000 rows of a 64-byte sku pass 1 MiB: the server returns fewer, says so
run_ok "stock list --reservations --limit 10000 --json" ctl stock list --reservations --limit 10000 --json
n=$(jq -r '.reservations | length' <<<"$out")
assert_eq "stock list --limit 10000: some rows, fewer than asked" "yes" \
  "$([ "$n" -gt 5000 ] && [ "$n" -lt 10000 ] && echo yes || echo "no ($n)")"
assert_eq "stock list --limit 10000: truncated" "true" "$(jq -r '.reservations_truncated' <<<"$out")"
run_ok "stock list --reservations" ctl stock list --reservations --limit 3
assert_eq "stock list --reservations: note" "1" "$(grep -c '^(showing the newest 3 of more)$' <<<"$out")"

# ---- accounts ----
run_ok "accounts" ctl accounts
assert_eq "accounts: no charge table by default" "0" "$(grep -c 'saga_id' <<<"$out" || true)"
run_ok "accounts --json" ctl accounts --json
assert_eq "accounts: bigc charged_count" "$CHARGED" \
  "$(jq -r '.accounts[] | select(.customer == "bigc") | .charged_count' <<<"$out")"
assert_eq "accounts: bigc charged_amount_minor" "$((100 * CHARGED))" \
  "$(jq -r '.accounts[] | select(.customer == "bigc") | .charged_amount_minor' <<<"$out")"
assert_eq "accounts: ali charged_count" "2" \
  "$(jq -r '.accounts[] | select(.customer == "ali") | .charged_count' <<<"$out")"
assert_eq "accounts: ali balance" "80.00" "$(jq -r '.accounts[] | select(.customer == "ali") | .balance' <<<"$out")"
assert_eq "accounts: no charges key" "false" "$(jq -r 'has("charges")' <<<"$out")"
run_ok "accounts --charges --json" ctl accounts --charges --json
assert_eq "accounts --charges: rows" "1000" "$(jq -r '.charges | length' <<<"$out")"
assert_eq "accounts --charges: truncated" "true" "$(jq -r '.charges_truncated' <<<"$out")"
assert_eq "accounts --charges: newest first" "${ids[1]}" "$(jq -r '.charges[0].saga_id' <<<"$out")"
run_ok "accounts --charges --limit 10000 --json" ctl accounts --charges --limit 10000 --json
assert_eq "accounts --limit 10000: rows" "10000" "$(jq -r '.charges | length' <<<"$out")"
run_ok "accounts --charges" ctl accounts --charges --limit 7
assert_eq "accounts --charges: note" "1" "$(grep -c '^(showing the newest 7 of more)$' <<<"$out")"

# ---- report ----
run_ok "report --json" ctl report --json
assert_eq "report: charged" "$db_charged" "$(jq -r '.summary.charged' <<<"$out")"
assert_eq "report: charges" "$db_charges" "$(jq -r '.summary.charges' <<<"$out")"
assert_eq "report: refunded" "$db_refunded" "$(jq -r '.summary.refunded' <<<"$out")"
assert_eq "report: live_reservations" "$db_live" "$(jq -r '.summary.live_reservations' <<<"$out")"
assert_eq "report: sagas" "2" "$(jq -r '.summary.sagas' <<<"$out")"
assert_eq "report: charge rows" "1000" "$(jq -r '.charges | length' <<<"$out")"
assert_eq "report: charges_truncated" "true" "$(jq -r '.charges_truncated' <<<"$out")"
assert_eq "report: A1 on hand" "8" "$(jq -r '.stock[] | select(.sku == "A1") | .on_hand' <<<"$out")"
assert_eq "report: ali balance" "80.00" "$(jq -r '.accounts[] | select(.customer == "ali") | .balance' <<<"$out")"
run_ok "report --limit 10 --json" ctl report --limit 10 --json
assert_eq "report --limit 10: charge rows" "10" "$(jq -r '.charges | length' <<<"$out")"
assert_eq "report --limit 10: charged still exact" "$db_charged" "$(jq -r '.summary.charged' <<<"$out")"
run_ok "report" ctl report
assert_eq "report: note" "1" "$(grep -c '^(showing the newest 1000 of more)$' <<<"$out")"

# ---- report with more sagas than one frame carries ----
# 9,000 finished sagas with 64-byte names, older than the two real ones:
# fewer than report's 10,000, but the list reply is cut at one frame first
# (ListSagasReply.truncated), and report must say so rather than count
# only what came
psql_db sagas_orchestrator "INSERT INTO sagas (saga_id, state, customer, sku, qty, amount, finished,
    created_at, updated_at)
  SELECT md5('saga' || g)::uuid, 'COMPLETED', '$BIG', '$BIG', 1, 100, true,
         now() - interval '1 day' - g * interval '1 ms', now()
  FROM generate_series(1, 9000) AS g"
run_ok "report --json (9,002 sagas)" ctl report --json
assert_eq "report: sagas truncated" "true" "$(jq -r '.summary.truncated' <<<"$out")"
shown=$(jq -r '.summary.sagas' <<<"$out")
[ "$shown" -lt 9002 ] || { echo "FAIL report: $shown sagas shown, expected the list cut below 9002" >&2; exit 1; }
run_ok "report (9,002 sagas)" ctl report
assert_eq "report: truncated header" "1" "$(grep -c "^sagas (truncated: the newest $shown only)$" <<<"$out")"
finish
