#!/usr/bin/env bash
# ListSagas' keyset paging (issue 21): 25,000 finished sagas written
# straight into the orchestrator's sagas table (in runs of 128 sharing one
# created_at, as sagas started in one statement do, and with 64-byte names
# so that a page of 10,000 is cut at one frame) are listed
#   - with --all, pages of 1,000 and of 10,000 (cut by the frame): every
#     saga once, exactly the ids psql holds;
#   - with a --page-token loop, pages of 700, while other sagas are being
#     started (by StartSaga and by SQL): every saga that existed before the
#     loop once, nothing twice, and nothing that is not in the database;
#   - malformed tokens are refused, INVALID_ARGUMENT naming page_token
#     (exit 1), an out-of-range timestamp too, never INTERNAL.
set -euo pipefail
source "$(dirname "$0")/../lib/stack.sh"
stack_start
ctl stock set A1 1000 >/dev/null
ctl deposit ali 10000.00 >/dev/null
q() { psql_db sagas_orchestrator "$1"; }
N=25000
BIG=$(printf 'N%.0s' $(seq 1 64))
q "INSERT INTO sagas (saga_id, state, customer, sku, qty, amount, finished, created_at, updated_at)
   SELECT md5('page' || g)::uuid, 'COMPLETED', '$BIG', '$BIG', 1, 100, true,
          now() - interval '1 hour' - (g / 128) * interval '1 ms', now()
   FROM generate_series(1, $N) AS g" >/dev/null
assert_eq "db: sagas" "$N" "$(q "SELECT count(*) FROM sagas")"
assert_eq "db: runs sharing a created_at" "196" "$(q "SELECT count(DISTINCT created_at) FROM sagas")"
q "SELECT saga_id FROM sagas ORDER BY 1" >"$STACK_DIR/db.ids"

# ids_of FILE: the saga ids of a JSON listing object, one a line
ids_of() { jq -r '.sagas[].saga_id' "$1"; }

# ---- --all ----
ctl list --all --limit 1000 --json >"$STACK_DIR/all.json"
assert_eq "--all: no next page" "" "$(jq -r '.next_page_token' "$STACK_DIR/all.json")"
assert_eq "--all: every saga once" "$N 0" \
  "$(ids_of "$STACK_DIR/all.json" | wc -l) $(ids_of "$STACK_DIR/all.json" | sort | uniq -d | wc -l)"
assert_eq "--all: the database's ids" "" \
  "$(ids_of "$STACK_DIR/all.json" | sort | diff - "$STACK_DIR/db.ids" | head -5)"
assert_eq "--all: in the listing's order" \
  "$(q "SELECT saga_id FROM sagas ORDER BY created_at DESC, saga_id DESC" | md5sum)" \
  "$(ids_of "$STACK_DIR/all.json" | md5sum)"
# pages of 10,000 cut at one frame: the token goes on from the cut
ctl list --limit 10000 --page-token "" --json >"$STACK_DIR/p1.json"
n1=$(jq -r '.sagas | length' "$STACK_DIR/p1.json")
assert_eq "a page of 10,000 long rows is cut at one frame, with a token" "yes" \
  "$([ "$n1" -gt 1000 ] && [ "$n1" -lt 10000 ] && [ "$(jq -r '.next_page_token | length' "$STACK_DIR/p1.json")" = 32 ] && echo yes || echo "no ($n1)")"
ctl list --all --limit 10000 --json >"$STACK_DIR/all10k.json"
assert_eq "--all --limit 10000: every saga once" "$N 0" \
  "$(ids_of "$STACK_DIR/all10k.json" | wc -l) $(ids_of "$STACK_DIR/all10k.json" | sort | uniq -d | wc -l)"
assert_eq "--all --limit 10000: the database's ids" "" \
  "$(ids_of "$STACK_DIR/all10k.json" | sort | diff - "$STACK_DIR/db.ids" | head -5)"
# the table, all pages: one row per saga and the footer
assert_eq "--all table: rows" "($N rows)" "$(ctl list --all --limit 5000 | tail -1)"

# ---- a --page-token loop while sagas are being started ----
stop=$STACK_DIR/stop.inserting
inserter() {
  local i=0
  while [ ! -e "$stop" ]; do
    q "INSERT INTO sagas (saga_id, state, customer, sku, qty, amount, finished)
       SELECT gen_random_uuid(), 'COMPLETED', 'late', 'A1', 1, 100, true FROM generate_series(1, 50)" >/dev/null
    ctl start ali A1 1 1.00 >/dev/null
    i=$((i + 1))
  done
  echo "$i" >"$STACK_DIR/rounds"
}
inserter &
ins_pid=$!
_inserting() { [ "$(q "SELECT count(*) FROM sagas WHERE customer = 'late'")" -ge 100 ]; }
wait_until 30 _inserting
q "SELECT saga_id FROM sagas ORDER BY 1" >"$STACK_DIR/before.ids"
before=$(wc -l <"$STACK_DIR/before.ids")
tok="" pages=0 biggest=0
: >"$STACK_DIR/loop.ids"
while :; do
  ctl list --limit 700 --page-token "$tok" --json >"$STACK_DIR/page.json"
  n=$(jq -r '.sagas | length' "$STACK_DIR/page.json")
  [ "$n" -le "$biggest" ] || biggest=$n
  ids_of "$STACK_DIR/page.json" >>"$STACK_DIR/loop.ids"
  tok=$(jq -r '.next_page_token' "$STACK_DIR/page.json")
  pages=$((pages + 1))
  [ -n "$tok" ] || break
done
touch "$stop"
wait "$ins_pid"
q "SELECT saga_id FROM sagas ORDER BY 1" >"$STACK_DIR/after.ids"
echo "paged $pages pages; sagas before the loop $before, after $(wc -l <"$STACK_DIR/after.ids")"
assert_eq "loop: sagas were started during the paging" "yes" \
  "$([ "$(wc -l <"$STACK_DIR/after.ids")" -gt "$before" ] && echo yes || echo no)"
assert_eq "loop: pages of at most 700" "700" "$biggest"
assert_eq "loop: nothing twice" "0" "$(sort "$STACK_DIR/loop.ids" | uniq -d | wc -l)"
assert_eq "loop: every saga of before the loop" "" \
  "$(sort "$STACK_DIR/loop.ids" | comm -13 - "$STACK_DIR/before.ids" | head -5)"
assert_eq "loop: nothing the database does not hold" "" \
  "$(sort "$STACK_DIR/loop.ids" | comm -23 - "$STACK_DIR/after.ids" | head -5)"

# ---- malformed tokens ----
# refused KIND TOKEN: exit 1, INVALID_ARGUMENT naming page_token
refused() {
  local rc=0
  ctl list --page-token "$2" >/dev/null 2>"$STACK_DIR/err" || rc=$?
  assert_eq "token $1: exit code" 1 "$rc"
  assert_eq "token $1: INVALID_ARGUMENT naming page_token" "yes" \
    "$(grep -q 'INVALID_ARGUMENT' "$STACK_DIR/err" && grep -q 'page_token' "$STACK_DIR/err" && echo yes || cat "$STACK_DIR/err")"
}
good=$(jq -r '.next_page_token' "$STACK_DIR/p1.json")
refused "not base64" 'not a token at all!!!!!!!!!!!!!!'
refused "too short" "${good:0:31}"
refused "too long" "${good}AAAA"
refused "padded" "${good:0:28}===="
refused "with a line break" "${good:0:16}
${good:16:15}"
refused "URL-safe alphabet" "$(tr '+/' '-_' <<<"${good:0:31}")_"
refused "a timestamp past 9999" "A4REDMxzYAAAAAAAAAAAAAAAAAAAAAAA"
refused "a timestamp all ones" "//////////8AAAAAAAAAAAAAAAAAAAAA"
# the last instant a token may carry is read: everything is older
assert_eq "token at 9999-12-31T23:59:59.999999Z: the newest page" \
  "$(ctl list --limit 3 --json | jq -r '[.[].saga_id] | join(" ")')" \
  "$(ctl list --limit 3 --page-token A4REDMxzX/8AAAAAAAAAAAAAAAAAAAAA --json | jq -r '[.sagas[].saga_id] | join(" ")')"
finish
