# shellcheck shell=bash
# Helpers of the fault tests (tests/fault/): the fixture of the fault issue
# (stock X = 10, account c1 = 100.00, saga S orders 2 x X for 30.00), reads
# of the four databases, and the invariants of saga-semantics.md.
# Needs tests/lib/stack.sh.

# Fast timers so that deadlines and retries happen within seconds.
FAST_ORCH="--step-timeout 1500 --request-timeout 500 --backoff-base 20 --backoff-cap 500 --sweep-interval 50 --req-resend 0"
S=5a9a5a9a-0000-4000-8000-000000000001

fixture() {
  ctl stock set X 10 >/dev/null
  ctl deposit c1 100.00 >/dev/null
}

saga_state() { # ID -> STATE|reason
  psql_db sagas_orchestrator "SELECT state || '|' || reason FROM sagas WHERE saga_id = '$1'"
}
_saga_in() { [ "$(psql_db sagas_orchestrator "SELECT state FROM sagas WHERE saga_id = '$1'")" = "$2" ]; }
wait_state() { # ID STATE [TIMEOUT_S]
  wait_until "${3:-30}" _saga_in "$1" "$2"
}
# in_state STATE: how many sagas are in STATE.
in_state() { psql_db sagas_orchestrator "SELECT count(*) FROM sagas WHERE state = '$1'"; }
_none_in() { [ "$(in_state "$1")" = 0 ]; }
# wait_none_in STATE TIMEOUT_S: waits until no saga is in STATE (returns 0
# either way; assert on in_state afterwards).
wait_none_in() { wait_until "$2" _none_in "$1" || true; }

# hang_and_start DAEMON N CUSTOMER SKU: stock SKU = 1000 and CUSTOMER =
# 100000.00, then DAEMON stopped (SIGSTOP; its pid in HUNG_PID) and N
# sagas of 1 x SKU for 1.00 started without waiting.
hang_and_start() {
  local i
  ctl stock set "$4" 1000 >/dev/null
  ctl deposit "$3" 100000.00 >/dev/null
  HUNG_PID=${STACK_PID_OF[$1]}
  kill -STOP "$HUNG_PID"
  for i in $(seq 1 "$2"); do
    ctl start "$3" "$4" 1 1.00 >/dev/null
  done
}

_all_terminal() {
  [ "$(psql_db sagas_orchestrator "SELECT count(*) FROM sagas WHERE state NOT IN ('COMPLETED', 'CANCELLED')")" = 0 ]
}
wait_all_terminal() { wait_until "${1:-60}" _all_terminal; }

on_hand() { psql_db sagas_stock "SELECT on_hand FROM stock WHERE sku = '$1'"; }
balance() { psql_db sagas_payment "SELECT balance FROM accounts WHERE customer = '$1'"; }
reservation() { psql_db sagas_stock "SELECT status FROM reservations WHERE saga_id = '$1'"; }
charge() { psql_db sagas_payment "SELECT status FROM charges WHERE saga_id = '$1'"; }
shipment() { psql_db sagas_shipping "SELECT status FROM shipments WHERE saga_id = '$1'"; }
path_of() {
  psql_db sagas_orchestrator "SELECT string_agg(to_state, '>' ORDER BY version) FROM saga_history WHERE saga_id = '$1' AND (from_state IS NULL OR from_state <> to_state)"
}
# started_of ID: the start of saga ID as its commands carry it
# (saga_started_unix_ms, ms), for a command sent by hand as that saga's.
started_of() {
  psql_db sagas_orchestrator "SELECT (extract(epoch FROM created_at) * 1000)::bigint FROM sagas WHERE saga_id = '$1'"
}
# log_count NAME PATTERN: lines of a daemon's log matching a fixed string.
log_count() { grep -cF -- "$2" "$STACK_DIR/$1.log" || true; }

# check_conservation "SKU:INITIAL ..." "CUSTOMER:INITIAL_MINOR ...": stock
# and money conservation and no negative stock or balance, counting the
# records that retention deleted by their summaries (<records>_retired,
# docs/participants.md "Retention"), so it holds before and after a pass.
check_conservation() {
  local item sku cust init
  for item in $1; do
    sku=${item%%:*}; init=${item#*:}
    assert_eq "stock conservation $sku" "$init" "$(psql_db sagas_stock \
      "SELECT s.on_hand + coalesce((SELECT sum(qty) FROM reservations r WHERE r.sku = s.sku AND r.status = 'RESERVED'), 0)
         + coalesce((SELECT sum(total) FROM reservations_retired t WHERE t.key = s.sku AND t.status = 'RESERVED'), 0)
       FROM stock s WHERE s.sku = '$sku'")"
    assert_eq "no negative stock $sku" "t" "$(psql_db sagas_stock "SELECT on_hand >= 0 FROM stock WHERE sku = '$sku'")"
  done
  for item in $2; do
    cust=${item%%:*}; init=${item#*:}
    assert_eq "money conservation $cust" "$init" "$(psql_db sagas_payment \
      "SELECT a.balance + coalesce((SELECT sum(amount) FROM charges c WHERE c.customer = a.customer AND c.status = 'CHARGED'), 0)
         + coalesce((SELECT sum(total) FROM charges_retired t WHERE t.key = a.customer AND t.status = 'CHARGED'), 0)
       FROM accounts a WHERE a.customer = '$cust'")"
    assert_eq "no negative balance $cust" "t" "$(psql_db sagas_payment "SELECT balance >= 0 FROM accounts WHERE customer = '$cust'")"
  done
}

# check_invariants "SKU:INITIAL ..." "CUSTOMER:INITIAL_MINOR ...": every
# invariant of saga-semantics.md, once every saga is terminal: conservation
# (check_conservation), and the live records are exactly those of the
# COMPLETED sagas (while no record has expired: retention deletes records
# before the sagas they belong to).
check_invariants() {
  check_conservation "$1" "$2"
  assert_eq "every saga terminal" "0" "$(psql_db sagas_orchestrator \
    "SELECT count(*) FROM sagas WHERE state NOT IN ('COMPLETED', 'CANCELLED')")"
  local completed reserved charged
  completed=$(psql_db sagas_orchestrator "SELECT saga_id FROM sagas WHERE state = 'COMPLETED' ORDER BY 1" | tr '\n' ' ')
  reserved=$(psql_db sagas_stock "SELECT saga_id FROM reservations WHERE status = 'RESERVED' ORDER BY 1" | tr '\n' ' ')
  charged=$(psql_db sagas_payment "SELECT saga_id FROM charges WHERE status = 'CHARGED' ORDER BY 1" | tr '\n' ' ')
  shipped=$(psql_db sagas_shipping "SELECT saga_id FROM shipments ORDER BY 1" | tr '\n' ' ')
  # a COMPLETED saga has one reservation, one charge and one shipment; a
  # CANCELLED one none (the shipments table has one row per saga at most)
  assert_eq "live reservations are exactly the COMPLETED sagas" "$completed" "$reserved"
  assert_eq "charges are exactly the COMPLETED sagas" "$completed" "$charged"
  assert_eq "shipments are exactly the COMPLETED sagas" "$completed" "$shipped"
}

# wait_daemon_exit NAME [TIMEOUT_S]: waits until a daemon of the stack ends
# by itself (a fault exit, a crash) and sets DAEMON_RC to its exit status
# ("timeout" when it is still running after TIMEOUT_S). Polls /proc, then
# reaps it with `wait` (the daemon is a child of the test's shell).
_proc_ended() {
  local st
  st=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) || return 0
  [ -z "$st" ] || [ "$st" = Z ]
}
wait_daemon_exit() {
  local pid=${STACK_PID_OF[$1]:-}
  DAEMON_RC=timeout
  [ -n "$pid" ] || return 1
  wait_until "${2:-30}" _proc_ended "$pid" || return 1
  wait "$pid" && DAEMON_RC=0 || DAEMON_RC=$?
  unset "STACK_PID_OF[$1]"
}
