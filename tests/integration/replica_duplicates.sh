#!/usr/bin/env bash
# Participant replicas on one database (issue 20): two stockd and two
# paymentd, every command sent at the same moment to both replicas, three
# copies at each (each on its own connection), 200 saga ids at once. The
# participant kit's records serialise them (docs/participants.md,
# "Replicas"): whatever replica a copy lands on, a saga's units and money
# move exactly once, each saga id has one record, a refund or release
# gives back once, and a release that comes first at one replica while its
# reserve is at the other either tombstones the reserve or undoes it.
# Every value is read from the databases.
set -euo pipefail
source "$(dirname "$0")/../lib/stack.sh"
fire=$SAGA_BIN_DIR/replica_fire
# debug: the replicas log each race they lost (and retried)
STOCK_FLAGS="--log-level debug" PAYMENT_FLAGS="--log-level debug" STACK_REPLICAS=2 stack_start

stock2="${STACK_URL_OF[stockd]},${STACK_URL_OF[stockd2]}"
pay2="${STACK_URL_OF[paymentd]},${STACK_URL_OF[paymentd2]}"
assert_eq "the stock list" "$STOCK_URL" "$stock2"
assert_eq "the payment list" "$PAYMENT_URL" "$pay2"

N=200 COPIES=3 QTY=3 AMOUNT=250
ON_HAND=100000 BALANCE=10000000
ctl stock set R1 "$ON_HAND" >/dev/null
ctl deposit rc "$((BALANCE / 100)).00" >/dev/null
on_hand() { psql_db sagas_stock "SELECT on_hand FROM stock WHERE sku = 'R1'"; }
balance() { psql_db sagas_payment "SELECT balance FROM accounts WHERE customer = 'rc'"; }
# rows PREFIX: "count:status..." of the records whose saga ids start with PREFIX
stock_rows() {
  psql_db sagas_stock "SELECT coalesce(string_agg(s, ','), '') FROM (SELECT status || '=' || count(*) AS s
    FROM reservations WHERE saga_id::text LIKE '$1%' GROUP BY status ORDER BY status) t"
}
pay_rows() {
  psql_db sagas_payment "SELECT coalesce(string_agg(s, ','), '') FROM (SELECT status || '=' || count(*) AS s
    FROM charges WHERE saga_id::text LIKE '$1%' GROUP BY status ORDER BY status) t"
}
copies=$((2 * COPIES)) # per saga id: COPIES at each of the two replicas
# fire_ ARGS...: replica_fire, its "resent" line (commands answered
# UNAVAILABLE or lost, sent again) echoed to the test's log
fire_() {
  local o
  o=$("$fire" "$@")
  echo "replica_fire $2: $(grep '^resent' <<<"$o")" >&2
  echo "$o"
}

# 1. the step at both replicas: each saga reserves / charges once
A=5a1e0001-0000-4000-8000-
out=$(fire_ "$stock2" reserve "$A" 1 "$N" "$COPIES" R1 "$QTY")
assert_eq "every ReserveStock copy answered OK RESERVED" "reserve OK 1 $((N * copies))" \
  "$(grep -v '^resent' <<<"$out")"
assert_eq "one RESERVED record per saga id" "RESERVED=$N" "$(stock_rows 5a1e0001)"
assert_eq "on hand: reserved once per saga" "$((ON_HAND - N * QTY))" "$(on_hand)"
out=$(fire_ "$pay2" charge "$A" 1 "$N" "$COPIES" rc "$AMOUNT")
assert_eq "every ChargePayment copy answered OK CHARGED" "charge OK 1 $((N * copies))" \
  "$(grep -v '^resent' <<<"$out")"
assert_eq "one CHARGED record per saga id" "CHARGED=$N" "$(pay_rows 5a1e0001)"
assert_eq "balance: charged once per saga" "$((BALANCE - N * AMOUNT))" "$(balance)"

# 2. the compensations of half of them at both replicas: given back once
H=$((N / 2))
out=$(fire_ "$stock2" release "$A" 1 "$H" "$COPIES" R1 "$QTY")
assert_eq "every ReleaseStock copy answered OK RELEASED" "release OK 4 $((H * copies))" \
  "$(grep -v '^resent' <<<"$out")"
assert_eq "released once" "RELEASED=$H,RESERVED=$((N - H))" "$(stock_rows 5a1e0001)"
assert_eq "on hand: given back once per release" "$((ON_HAND - (N - H) * QTY))" "$(on_hand)"
out=$(fire_ "$pay2" refund "$A" 1 "$H" "$COPIES" rc "$AMOUNT")
assert_eq "every RefundPayment copy answered OK REFUNDED" "refund OK 4 $((H * copies))" \
  "$(grep -v '^resent' <<<"$out")"
assert_eq "refunded once" "CHARGED=$((N - H)),REFUNDED=$H" "$(pay_rows 5a1e0001)"
assert_eq "balance: refunded once per refund" "$((BALANCE - (N - H) * AMOUNT))" "$(balance)"
# ...and the step again after its compensation: answered from the record
out=$(fire_ "$stock2" reserve "$A" 1 "$H" 1 R1 "$QTY")
assert_eq "a late ReserveStock copy is answered as recorded" "reserve OK 1 $((H * 2))" \
  "$(grep -v '^resent' <<<"$out")"
assert_eq "and moves nothing" "$((ON_HAND - (N - H) * QTY))" "$(on_hand)"

# 3. the compensation first at one replica, the step at the other, at once:
# per saga either the step reserved and the release undid it (RELEASED,
# every reserve copy OK), or the release came first (TOMBSTONE, every
# reserve copy ABORTED); never units or money kept
B=5a1e0002-0000-4000-8000-
before_stock=$(on_hand) before_money=$(balance)
out=$(fire_ "$stock2" release,reserve "$B" 1 "$N" "$COPIES" R1 "$QTY")
rows=$(stock_rows 5a1e0002)
released=$(sed -n 's/.*RELEASED=\([0-9]*\).*/\1/p' <<<"$rows")
tomb=$(sed -n 's/.*TOMBSTONE=\([0-9]*\).*/\1/p' <<<"$rows")
echo "release/reserve race: $rows"
assert_eq "each saga id released or tombstoned" "$N" "$((${released:-0} + ${tomb:-0}))"
assert_eq "no unit kept" "$before_stock" "$(on_hand)"
expect=""
[ "${tomb:-0}" -gt 0 ] && expect+="release OK 5 $((tomb * COPIES))"$'\n'
[ "${released:-0}" -gt 0 ] && expect+="release OK 4 $((released * COPIES))"$'\n'
[ "${tomb:-0}" -gt 0 ] && expect+="reserve ABORTED 0 $((tomb * COPIES))"$'\n'
[ "${released:-0}" -gt 0 ] && expect+="reserve OK 1 $((released * COPIES))"$'\n'
assert_eq "each copy answered as its saga's record says" "$(LC_ALL=C sort <<<"${expect%$'\n'}")" \
  "$(grep -v '^resent' <<<"$out")"
out=$(fire_ "$pay2" refund,charge "$B" 1 "$N" "$COPIES" rc "$AMOUNT")
rows=$(pay_rows 5a1e0002)
refunded=$(sed -n 's/.*REFUNDED=\([0-9]*\).*/\1/p' <<<"$rows")
tomb=$(sed -n 's/.*TOMBSTONE=\([0-9]*\).*/\1/p' <<<"$rows")
echo "refund/charge race: $rows"
assert_eq "each saga id refunded or tombstoned" "$N" "$((${refunded:-0} + ${tomb:-0}))"
assert_eq "no money kept" "$before_money" "$(balance)"
expect=""
[ "${tomb:-0}" -gt 0 ] && expect+="charge ABORTED 0 $((tomb * COPIES))"$'\n'
[ "${refunded:-0}" -gt 0 ] && expect+="charge OK 1 $((refunded * COPIES))"$'\n'
[ "${refunded:-0}" -gt 0 ] && expect+="refund OK 4 $((refunded * COPIES))"$'\n'
[ "${tomb:-0}" -gt 0 ] && expect+="refund OK 5 $((tomb * COPIES))"$'\n'
assert_eq "each copy answered as its saga's record says" "$(LC_ALL=C sort <<<"${expect%$'\n'}")" \
  "$(grep -v '^resent' <<<"$out")"

# the totals, all sagas: stock and money conserved against the records
assert_eq "on hand + live reservations = the start" "$ON_HAND" "$(psql_db sagas_stock \
  "SELECT s.on_hand + coalesce((SELECT sum(qty) FROM reservations WHERE status = 'RESERVED'), 0)
   FROM stock s WHERE sku = 'R1'")"
assert_eq "balance + live charges = the deposit" "$BALANCE" "$(psql_db sagas_payment \
  "SELECT a.balance + coalesce((SELECT sum(amount) FROM charges WHERE status = 'CHARGED'), 0)
   FROM accounts a WHERE customer = 'rc'")"
# the copies did race across the processes: transactions that lost to the
# other replica's (its record committed first) were retried, as logged
races() { grep -c 'lost a race' "$STACK_DIR/$1.log" || true; }
echo "races lost and retried: stockd $(races stockd), stockd2 $(races stockd2)," \
  "paymentd $(races paymentd), paymentd2 $(races paymentd2)"
assert_eq "the copies raced (some transaction lost and was retried)" "yes" \
  "$([ $(($(races stockd) + $(races stockd2) + $(races paymentd) + $(races paymentd2))) -gt 0 ] &&
    echo yes || echo no)"
finish
