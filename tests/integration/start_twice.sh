#!/usr/bin/env bash
# StartSaga called twice with the same id creates one saga (idempotent), and
# the same id with another order is refused with ALREADY_EXISTS and changes
# nothing (saga-semantics.md rule 6). The same for sagactl deposit --id
# (Deposit's idempotency key): the same command twice adds once.
set -euo pipefail
source "$(dirname "$0")/../lib/stack.sh"
STACK_FAULTS=1 # it arms faults
stack_start
ctl stock set B2 10 >/dev/null
ctl deposit c1 100.00 >/dev/null
id=44444444-4444-4444-8444-444444444444

ctl start c1 B2 2 30.00 --id "$id" >/dev/null
ctl start c1 B2 2 30.00 --id "$id" --wait >/dev/null
# concurrent duplicates too
pids=()
for _ in 1 2 3 4; do ctl start c1 B2 2 30.00 --id "$id" >/dev/null & pids+=($!); done
for p in "${pids[@]}"; do wait "$p"; done
set +e
out=$(ctl start c1 B2 3 30.00 --id "$id" 2>&1); rc=$?
set -e
assert_eq "other order, same id: exit code" "1" "$rc"
assert_eq "other order, same id: refused" "1" "$(grep -c 'ALREADY_EXISTS' <<<"$out")"

assert_eq "one saga" "1" "$(psql_db sagas_orchestrator "SELECT count(*) FROM sagas")"
assert_eq "saga state" "COMPLETED" "$(psql_db sagas_orchestrator "SELECT state FROM sagas WHERE saga_id = '$id'")"
assert_eq "one start in history" "1" \
  "$(psql_db sagas_orchestrator "SELECT count(*) FROM saga_history WHERE event = 'started'")"
assert_eq "B2 on hand" "8" "$(psql_db sagas_stock "SELECT on_hand FROM stock WHERE sku = 'B2'")"
assert_eq "c1 balance" "7000" "$(psql_db sagas_payment "SELECT balance FROM accounts WHERE customer = 'c1'")"
assert_eq "one charge" "1" "$(psql_db sagas_payment "SELECT count(*) FROM charges")"

# a lost StartSaga reply: sagactl re-sends with its own id, the orchestrator
# answers "already existed", and sagactl knows it was its own first try
ctl fault set orchestrator drop_reply --method StartSaga --count 1 >/dev/null
out=$(ctl --timeout 300 start c1 B2 1 1.00 --json)
assert_eq "a lost StartSaga reply, own id: created, told so" "true 2" \
  "$(jq -r '"\(.created) \(.tries)"' <<<"$out")"
sid=$(jq -r .saga.saga_id <<<"$out")
assert_eq "one saga with that id" "1" "$(psql_db sagas_orchestrator "SELECT count(*) FROM sagas WHERE saga_id = '$sid'")"

# sagactl deposit --id: the same command again adds nothing and says so
did=55555555-5555-4555-8555-555555555555
ctl deposit c2 12.34 --id "$did" >/dev/null
out=$(ctl deposit c2 12.34 --id "$did")
assert_eq "second deposit: said" "1" "$(grep -c "deposit $did was already applied" <<<"$out")"
assert_eq "second deposit: json" "true 1234" "$(ctl deposit c2 12.34 --id "$did" --json | jq -r '"\(.duplicate) \(.balance_minor)"')"
set +e
out=$(ctl deposit c2 99.00 --id "$did" 2>&1); rc=$?
set -e
assert_eq "other amount, same deposit id: exit code" "1" "$rc"
assert_eq "other amount, same deposit id: refused" "1" "$(grep -c 'ALREADY_EXISTS (key_mismatch)' <<<"$out")"
assert_eq "c2 balance" "1234" "$(psql_db sagas_payment "SELECT balance FROM accounts WHERE customer = 'c2'")"
assert_eq "one deposit record" "1" "$(psql_db sagas_payment "SELECT count(*) FROM deposits WHERE customer = 'c2'")"

# lost replies: sagactl re-sends with the same id, and the deposit adds once
ctl fault set payment drop_reply --method Deposit --count 2 >/dev/null
d3=66666666-6666-4666-8666-666666666666
out=$(ctl --timeout 300 deposit c3 7.00 --id "$d3")
assert_eq "two lost replies, --id given: applied once, by this command or an earlier one" "1" \
  "$(grep -c "deposit $d3 is applied (7.00 to c3), once: the call re-sent after a lost reply found it applied by this command's first try or an earlier call with this --id" <<<"$out")"
# without --id the key is sagactl's own, so the re-sent call's duplicate was its own first try
ctl fault set payment drop_reply --method Deposit --count 1 >/dev/null
out=$(ctl --timeout 300 deposit c4 2.00 --json)
assert_eq "a lost reply, own key: added, told so" "true true 2 200" \
  "$(jq -r '"\(.duplicate) \(.added) \(.tries) \(.balance_minor)"' <<<"$out")"
ctl fault set payment drop_reply --method Deposit --count 3 >/dev/null
d4=77777777-7777-4777-8777-777777777777
set +e
out=$(ctl --timeout 300 deposit c3 1.00 --id "$d4" 2>&1); rc=$?
set -e
assert_eq "every reply lost: exit code" "1" "$rc"
assert_eq "every reply lost: the hint names the id" "1" \
  "$(grep -c "hint: the deposit id was $d4; the same command with --id $d4 retries it safely" <<<"$out")"
assert_eq "every reply lost: the retry the hint gives is told it was applied" "1" \
  "$(ctl deposit c3 1.00 --id "$d4" | grep -c "deposit $d4 was already applied")"
assert_eq "c3 balance: each deposit added once" "800" \
  "$(psql_db sagas_payment "SELECT balance FROM accounts WHERE customer = 'c3'")"
assert_eq "c4 balance: added once" "200" \
  "$(psql_db sagas_payment "SELECT balance FROM accounts WHERE customer = 'c4'")"
finish
