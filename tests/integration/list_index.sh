#!/usr/bin/env bash
# Listings that cannot stall the API (issue 32, part 3), asserted on plans
# and counts, never on timings:
# - with 200,000 finished sagas, every ListSagas filter and the counts by
#   state are planned on an index (auto_explain logs the plans the
#   orchestrator's own statements get): no Seq Scan on sagas, and each
#   filter on the index docs/operations.md ("Listing plans") names;
# - the counts are exact for the unfinished states and bounded for the
#   terminal ones;
# - with --max-listings 2, a third listing in service is refused
#   RESOURCE_EXHAUSTED (counted), while a StartSaga still completes;
# - a listing whose client goes away (sagactl killed) is cancelled in
#   PostgreSQL, and one whose deadline comes (through gatewayd, which keeps
#   its connection) ends by its statement_timeout, answered 504
#   (DEADLINE_EXCEEDED): pg_stat_activity then shows no statement of either
#   left running.
# The fault delay:ListSagasQuery makes a listing sleep in PostgreSQL
# (pg_sleep, inside its transaction) as a slow plan would.
set -euo pipefail
STACK_FAULTS=1
STACK_GATEWAY=1
# a long step deadline: the StartSaga below is about the API answering while
# listings hold its workers, and a loaded machine must not cancel it
ORCH_FLAGS="--workers 4 --max-listings 2 --step-timeout 60000"
# gatewayd gives each call 2 s: the orchestrator's statement_timeout of a
# call through it is what is left of those (the gateway keeps its
# connection, so only the timeout can end the statement)
GATEWAY_FLAGS="--request-timeout 2000"
# auto_explain is loaded in every session, off (its default) until the checks
# turn it on for the orchestrator's database (a -c option here would take
# precedence over that)
export PG_EXTRA_OPTS="-c session_preload_libraries=auto_explain"
source "$(dirname "$0")/../lib/stack.sh"
stack_start

N=200000
ctl stock set A1 100 >/dev/null
ctl deposit ali 1000.00 >/dev/null
ctl start ali A1 1 10.00 --wait >/dev/null

# 200,000 finished sagas over the last week, one in a hundred CANCELLED,
# 500 customers; a saga's columns as the orchestrator writes them
psql_db sagas_orchestrator "INSERT INTO sagas (saga_id, state, reason, customer, sku, qty, amount,
    version, finished, cancelled, created_at, updated_at)
  SELECT md5('li' || g)::uuid, CASE WHEN g % 100 = 0 THEN 'CANCELLED' ELSE 'COMPLETED' END,
         CASE WHEN g % 100 = 0 THEN 'out_of_stock' ELSE '' END, 'c' || (g % 500), 'K1', 1, 100,
         4, true, g % 100 = 0, now() - interval '1 hour' - g * interval '3 s',
         now() - interval '1 hour' - g * interval '3 s'
  FROM generate_series(1, $N) AS g"
psql_db sagas_orchestrator "ANALYZE sagas"
completed=$(psql_db sagas_orchestrator "SELECT count(*) FROM sagas WHERE state = 'COMPLETED'")
cancelled=$(psql_db sagas_orchestrator "SELECT count(*) FROM sagas WHERE state = 'CANCELLED'")
assert_eq "db: cancelled sagas" "$((N / 100))" "$cancelled"

# ---- plans ----
pg_log=$STACK_DIR/pg/server.log
# every plan of the orchestrator's sessions logged: set for its database,
# then the orchestrator started again, so that each of its sessions is new
# (a reload reaches an idle session only after its next statement)
psql_db postgres "ALTER DATABASE sagas_orchestrator SET auto_explain.log_min_duration = 0" >/dev/null
stack_kill orchestratord
stack_start_orchestrator
wait_until 30 ctl list --limit 1
from=$(wc -l <"$pg_log")
day=86400000
now_ms=$(psql_db sagas_orchestrator "SELECT (extract(epoch from now()) * 1000)::bigint")
calls=0
list() { ctl list --json "$@" >/dev/null; calls=$((calls + 1)); }
list
list --customer nobody
list --customer c7 --limit 1000
list --state cancelled --limit 1000
list --state completed --limit 1000
list --state reserving
list --attention
list --overdue
list --older-than $((3 * day))
list --customer c7 --state cancelled
page=$(ctl list --state cancelled --limit 10 --json --page-token "" | jq -r .next_page_token)
calls=$((calls + 1))
list --state cancelled --limit 10 --page-token "$page"
gw() { curl -sf --max-time 10 "$GATEWAY_URL/v1/sagas?$1"; }
gw "created_after_unix_ms=$((now_ms - 2 * day))&limit=1000" >/dev/null
gw "created_before_unix_ms=$((now_ms - 5 * day))&limit=1000" >/dev/null
gw "created_after_unix_ms=$((now_ms - 5 * day))&created_before_unix_ms=$((now_ms - 4 * day))" >/dev/null
counts=$(gw "limit=1&with_counts=true")
calls=$((calls + 5)) # the gateway's four listings, and the counts' statement
psql_db postgres "ALTER DATABASE sagas_orchestrator RESET auto_explain.log_min_duration" >/dev/null
plans=$STACK_DIR/listing_plans.txt
# one block per listing statement: its WHERE, then its plan
awk 'function flush() { if (inq && q ~ /created_us|count\(\*\) > \$1/) print "== " q plan; inq = 0 }
  /^\t/ { if (inq) { if ($0 ~ /Query Text:/) q = $0; else plan = plan "\n" $0 }; next }
  { flush() }
  /LOG:  duration: .* plan:/ { inq = 1; q = ""; plan = "" }
  END { flush() }' < <(tail -n +"$from" "$pg_log") >"$plans"
assert_eq "plans: one per listing statement" "$calls" "$(grep -c '^== ' "$plans")"
assert_eq "plans: no Seq Scan on sagas" "0" "$(grep -c 'Seq Scan on sagas' "$plans" || true)"
# each filter on its index
for ix in sagas_listing sagas_customer sagas_ended sagas_open sagas_retry sagas_attention; do
  assert_eq "plans: some use $ix" "yes" "$(grep -q "using $ix\|on $ix" "$plans" && echo yes || echo no)"
done
plan_of() { # plan_of PATTERN: the plan lines of the first statement whose text matches
  awk -v pat="$1" '/^== / { p = ($0 ~ pat); n += p } p && n == 1' "$plans"
}
assert_eq "plan: customer on sagas_customer" "1" \
  "$(plan_of 'AND customer = \$3\) s' | grep -c 'using sagas_customer')"
assert_eq "plan: CANCELLED on sagas_ended" "1" \
  "$(plan_of 'finished AND cancelled AND state = \$3\) s' | grep -c 'using sagas_ended')"
# COMPLETED, 99 sagas in 100: a walk of sagas_listing from the newest
# finds the page as soon (the planner may take either index)
assert_eq "plan: COMPLETED on an index" "1" \
  "$(plan_of 'finished AND NOT cancelled AND state = \$3\) s' | grep -c 'Index Scan Backward using sagas_\(ended\|listing\)')"
assert_eq "plan: older_than on sagas_listing" "1" \
  "$(plan_of 'created_at < now\(\)' | grep -c 'using sagas_listing')"
assert_eq "plan: counts with no Seq Scan" "0" "$(plan_of 'count\(\*\) > \$1' | grep -c 'Seq Scan' || true)"

# ---- counts ----
count_of() { jq -r --arg s "SAGA_STATE_$1" '.counts[] | select(.state == $s) | "\(.count // 0) \(.more // false)"' <<<"$counts"; }
assert_eq "counts: COMPLETED bounded" "10000 true" "$(count_of COMPLETED)"
assert_eq "counts: CANCELLED exact" "$cancelled false" "$(count_of CANCELLED)"
assert_eq "counts: RESERVING exact" "0 false" "$(count_of RESERVING)"
assert_eq "counts: one per state" "7" "$(jq '.counts | length' <<<"$counts")"
[ "$completed" -gt 10000 ] || { echo "FAIL: only $completed COMPLETED sagas" >&2; exit 1; }

# ---- the cap: two listings in service, a third refused, StartSaga served ----
metric() { # metric NAME_AND_LABELS: its value on the orchestrator's /metrics (0 when absent)
  stack_metrics orchestratord | awk -v m="$1" '$1 == m { v = $2 } END { print v + 0 }'
}
# polled conditions: each wait_until call re-reads them (a "$(...)" in its
# arguments would be read once, before the wait)
metric_is() { [ "$(metric "$1")" = "$2" ]; }
sleeping_is() {
  [ "$(psql_db sagas_orchestrator "SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'SELECT pg_sleep%' AND state = 'active'")" = "$1" ]
}
ctl fault set orchestrator delay --method ListSagasQuery --delay 60000 >/dev/null
bg=()
for i in 1 2; do
  # sagactl itself in the background (not through ctl, a function: $! would
  # be the subshell's), so that killing it closes its connection
  "$SAGA_BIN_DIR/sagactl" --orchestrator "$ORCH_URL" list --timeout 120000 --limit 5 >/dev/null 2>&1 &
  bg+=($!)
done
wait_until 20 metric_is sagas_api_listings 2
wait_until 20 sleeping_is 2
rc=0
out=$(ctl list --limit 5 2>&1) || rc=$?
assert_eq "third listing: refused" "1" "$rc"
assert_eq "third listing: RESOURCE_EXHAUSTED too_many_listings" "1" \
  "$(grep -c 'RESOURCE_EXHAUSTED.*too_many_listings\|too_many_listings.*RESOURCE_EXHAUSTED' <<<"$out")"
assert_eq "refusals counted" "1" "$(metric 'sagas_api_listings_refused_total{cap="overall"}')"
assert_eq "refusal logged" "yes" "$(grep -q 'refused a ListSagas' "$STACK_DIR/orchestratord.log" && echo yes || echo no)"
rc=0
ctl start ali A1 1 10.00 --wait --timeout 10000 >/dev/null || rc=$?
assert_eq "StartSaga while two listings are in service" "0" "$rc"
assert_eq "still two listings in service" "2" "$(metric sagas_api_listings)"

# ---- the client goes: its statements are cancelled in PostgreSQL ----
kill "${bg[@]}"
wait "${bg[@]}" 2>/dev/null || true
wait_until 20 sleeping_is 0
assert_eq "cancelled: client gone" "2" "$(metric 'sagas_api_listings_cancelled_total{why="client_gone"}')"
wait_until 10 metric_is sagas_api_listings 0

# ---- the deadline comes: statement_timeout, DEADLINE_EXCEEDED ----
# through gatewayd, whose connection to the orchestrator stays open: the
# statement ends by its statement_timeout (2 s, less what the call waited),
# never by a cancel for a client gone
status=$(curl -s -o "$STACK_DIR/late.json" -w '%{http_code}' --max-time 30 "$GATEWAY_URL/v1/sagas?limit=5")
assert_eq "deadline through the gateway: 504" "504" "$status"
wait_until 10 metric_is 'sagas_api_listings_cancelled_total{why="statement_timeout"}' 1
assert_eq "deadline: no cancel for a client gone" "2" "$(metric 'sagas_api_listings_cancelled_total{why="client_gone"}')"
assert_eq "deadline: logged" "yes" \
  "$(grep -q 'list sagas for .* cancelled in the database: the call.s deadline came' "$STACK_DIR/orchestratord.log" && echo yes || echo no)"
assert_eq "no statement left running" "0" \
  "$(psql_db sagas_orchestrator "SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'SELECT pg_sleep%' AND state = 'active'")"
ctl fault clear orchestrator >/dev/null
rc=0
ctl list --limit 5 >/dev/null || rc=$?
assert_eq "a listing after the fault" "0" "$rc"
finish
