#!/usr/bin/env bash
# The seed lab (saga-semantics.md), end to end on real daemons and a real
# PostgreSQL, asserting every number of its final state. With
# `--duplicate-delivery` the orchestrator sends every command twice at once,
# and the final state must be identical.
set -euo pipefail
here=$(dirname "$0")
source "$here/../lib/stack.sh"
source "$here/../lib/seed_lab.sh"

# `--engines 3`: three engine threads share the sagas (the final state must
# be identical too)
if [ "${1:-}" = "--duplicate-delivery" ]; then
  ORCH_FLAGS="--duplicate-delivery"
elif [ "${1:-}" = "--engines" ]; then
  ORCH_FLAGS="--engines ${2:?}"
fi
stack_start
seed_lab_seed
seed_lab_orders >/dev/null
seed_lab_assert
if [ "${1:-}" = "--duplicate-delivery" ]; then
  assert_eq "orchestrator delivered twice" "1" \
    "$(grep -c 'delivering every command twice' "$STACK_DIR/orchestratord.log")"
fi
# the report verb agrees with the databases
report=$(ctl report --json | tail -n 1)
assert_eq "report: charged" "1" "$(jq -r '.summary.charged' <<<"$report")"
assert_eq "report: A1 on hand" "3" "$(jq -r '.stock[] | select(.sku == "A1") | .on_hand' <<<"$report")"
assert_eq "report: order 1's shipment, none other" "1 $SEED_SAGA_1" \
  "$(jq -r '"\(.shipments.total) \([.shipments.shipments[].saga_id] | join(","))"' <<<"$report")"
assert_eq "report: completed and shipping" "1 0" "$(jq -r '"\(.summary.completed) \(.summary.shipping)"' <<<"$report")"
assert_eq "report: ali" "300.00" "$(jq -r '.accounts[] | select(.customer == "ali") | .balance' <<<"$report")"
accounts=$(ctl accounts --json)
assert_eq "accounts: ali charged once" "1 20000" "$(jq -r '.accounts[] | select(.customer == "ali") | "\(.charged_count) \(.charged_amount_minor)"' <<<"$accounts")"
assert_eq "accounts: sara never charged" "0 0" "$(jq -r '.accounts[] | select(.customer == "sara") | "\(.charged_count) \(.charged_amount_minor)"' <<<"$accounts")"
finish
