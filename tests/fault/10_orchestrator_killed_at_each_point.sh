#!/usr/bin/env bash
# Fault 10: the orchestrator killed at each of its fault points in turn, over
# a run of 50 sagas per point (250 in all, one stack): right after the engine
# commits a batch of transitions, right after a new saga is inserted (the
# client gets no reply), and after the reply of ReserveStock, ChargePayment
# and ReleaseStock came back but before it was stored. After each exit (status
# 86) the orchestrator is restarted without the fault; every saga then ends
# terminal with the outcome its order implies (rule 9: restart resumes), and
# every invariant of saga-semantics.md holds with exact numbers.
#
# Each batch of 50: 35 x (c1 orders 1 x X for 10.00) -> COMPLETED,
# 10 x (c2, 5.00 on account, orders 1 x X for 10.00) -> CANCELLED
# (payment_declined) after a ReleaseStock, 5 x (c1 orders 5 x Y, Y = 2)
# -> CANCELLED (out_of_stock). The step deadline is long (10 s) so that a
# restart (the lease is 1.5 s) resumes the sagas before any deadline: the
# outcomes do not depend on timing.
source "$(dirname "$0")/head.inc"
ORCH_BASE="$FAST_ORCH --step-timeout 10000"
ORCH_FLAGS="$ORCH_BASE"
stack_start
ctl stock set X 500 >/dev/null
ctl stock set Y 2 >/dev/null
ctl deposit c1 2000.00 >/dev/null
ctl deposit c2 5.00 >/dev/null

id_of() { printf '5a9a5a9a-%04d-4000-8000-%012d' "$1" "$2"; }
order_of() { # INDEX -> CUSTOMER SKU QTY AMOUNT
  case $(($1 % 10)) in
  7 | 8) echo "c2 X 1 10.00" ;;
  9) echo "c1 Y 5 10.00" ;;
  *) echo "c1 X 1 10.00" ;;
  esac
}

CLIENT_PIDS=()
# start_batch P: 50 `sagactl start` clients at once, ids known in advance
start_batch() {
  local p=$1 i
  CLIENT_PIDS=()
  for i in $(seq 1 50); do
    # shellcheck disable=SC2046
    ctl start $(order_of "$i") --id "$(id_of "$p" "$i")" >/dev/null 2>>"$STACK_DIR/clients.err" &
    CLIENT_PIDS+=("$!")
  done
}

# finish_batch P: reaps the clients one by one (never a bare `wait`: that
# would wait for the daemons); a client that got no reply (its request died
# with the orchestrator) retries StartSaga with the same id, as a real client
# does: that must succeed (created, or the row it had already committed).
# Sets ACKED (clients answered the first time) and RETRIED.
finish_batch() {
  local p=$1 i rc
  ACKED=0 RETRIED=0
  for i in $(seq 1 50); do
    wait "${CLIENT_PIDS[$((i - 1))]}" && rc=0 || rc=$?
    if [ "$rc" = 0 ]; then
      ACKED=$((ACKED + 1))
    else
      RETRIED=$((RETRIED + 1))
      # shellcheck disable=SC2046
      ctl start $(order_of "$i") --id "$(id_of "$p" "$i")" >/dev/null ||
        assert_eq "retried StartSaga $(id_of "$p" "$i")" "0" "$?"
    fi
  done
  echo "batch $p: $ACKED clients answered, $RETRIED retried after the crash"
}

in_batch() { echo "saga_id::text LIKE '$(printf '5a9a5a9a-%04d' "$1")-%'"; }

# check_batch P: the exact outcome of each order of the batch, with its path
check_batch() {
  local p=$1 w
  w=$(in_batch "$p")
  assert_eq "batch $p: sagas" "50" "$(psql_db sagas_orchestrator "SELECT count(*) FROM sagas WHERE $w")"
  assert_eq "batch $p: outcomes" "CANCELLED|out_of_stock|c1|Y:5
CANCELLED|payment_declined|c2|X:10
COMPLETED||c1|X:35" "$(psql_db sagas_orchestrator "SELECT state || '|' || reason || '|' || customer || '|' || sku || ':' || count(*) FROM sagas WHERE $w GROUP BY state, reason, customer, sku ORDER BY 1")"
  assert_eq "batch $p: paths" "RESERVING>CANCELLED:5
RESERVING>CHARGING>RELEASING>CANCELLED:10
RESERVING>CHARGING>SHIPPING>COMPLETED:35" "$(psql_db sagas_orchestrator "SELECT path || ':' || count(*) FROM (SELECT saga_id, string_agg(to_state, '>' ORDER BY version) AS path FROM saga_history WHERE $w AND (from_state IS NULL OR from_state <> to_state) GROUP BY saga_id) h GROUP BY path ORDER BY 1")"
  assert_eq "batch $p: charges" "CHARGED:35
DECLINED:10" "$(psql_db sagas_payment "SELECT status || ':' || count(*) FROM charges WHERE $w GROUP BY status ORDER BY 1")"
  assert_eq "batch $p: reservations" "X:RELEASED:10
X:RESERVED:35
Y:OUT_OF_STOCK:5" "$(psql_db sagas_stock "SELECT sku || ':' || status || ':' || count(*) FROM reservations WHERE $w GROUP BY sku, status ORDER BY 1")"
  assert_eq "batch $p: shipments" "c1:X:1:35" "$(psql_db sagas_shipping "SELECT customer || ':' || sku || ':' || qty || ':' || count(*) FROM shipments WHERE $w GROUP BY customer, sku, qty")"
}

# the orchestrator's exit: status 86, by the fault, exactly once
expect_fault_exit() { # WHAT LOG_LINE COUNT_BEFORE
  wait_daemon_exit orchestratord 60 || true
  assert_eq "$1: orchestratord exited by the fault" "86" "$DAEMON_RC"
  assert_eq "$1: the fault fired once" "$(($3 + 1))" "$(log_count orchestratord "$2")"
}

restart_clean() {
  ORCH_FLAGS="$ORCH_BASE"
  stack_start_orchestrator
}

# ---- point 1: exit_after_commit, no method: right after the engine commits a
# batch of transitions. A fault armed for every method also matches the
# StartSaga point (fault_check: "" matches any name), so it is armed at run
# time once the 50 sagas are inserted; stockd is held (SIGSTOP) meanwhile so
# that the sagas are still in RESERVING, and the first engine commit (a reply
# or a timed-out request) fires it.
line='fault injected: exit_after_commit on *'
before=$(log_count orchestratord "$line")
kill -STOP "${STACK_PID_OF[stockd]}"
start_batch 1
for pid in "${CLIENT_PIDS[@]}"; do wait "$pid" || true; done
assert_eq "engine point: the 50 sagas are inserted, none moved" "RESERVING:50" \
  "$(psql_db sagas_orchestrator "SELECT state || ':' || count(*) FROM sagas WHERE $(in_batch 1) GROUP BY state")"
ctl fault set orchestrator exit_after_commit --count 1 >/dev/null || true
kill -CONT "${STACK_PID_OF[stockd]}"
expect_fault_exit "engine point" "$line" "$before"
restart_clean
wait_all_terminal 60
check_batch 1

# ---- points 2..5: armed at start with --fault
point=2
for spec in exit_after_commit:StartSaga exit_after_send:ReserveStock \
  exit_after_send:ChargePayment exit_after_send:ReleaseStock; do
  kind=${spec%%:*} method=${spec#*:}
  line="fault injected: $kind on $method"
  before=$(log_count orchestratord "$line")
  stack_kill orchestratord
  ORCH_FLAGS="$ORCH_BASE --fault $spec:count=1"
  stack_start_orchestrator
  start_batch "$point"
  expect_fault_exit "$spec" "$line" "$before"
  restart_clean
  finish_batch "$point"
  if [ "$spec" = exit_after_commit:StartSaga ]; then
    # the saga committed right before the exit was never answered: its client
    # failed, or its REQ resend reached the restarted orchestrator
    assert_eq "$spec: every client answered once retried" "50" "$((ACKED + RETRIED))"
  fi
  wait_all_terminal 60
  check_batch "$point"
  point=$((point + 1))
done

# ---- the whole run: exact totals and every invariant
assert_eq "sagas" "250" "$(psql_db sagas_orchestrator "SELECT count(*) FROM sagas")"
assert_eq "COMPLETED" "175" "$(psql_db sagas_orchestrator "SELECT count(*) FROM sagas WHERE state = 'COMPLETED'")"
assert_eq "CANCELLED payment_declined" "50" "$(psql_db sagas_orchestrator "SELECT count(*) FROM sagas WHERE state = 'CANCELLED' AND reason = 'payment_declined'")"
assert_eq "CANCELLED out_of_stock" "25" "$(psql_db sagas_orchestrator "SELECT count(*) FROM sagas WHERE state = 'CANCELLED' AND reason = 'out_of_stock'")"
assert_eq "CHARGED rows" "175" "$(psql_db sagas_payment "SELECT count(*) FROM charges WHERE status = 'CHARGED'")"
assert_eq "no saga charged twice" "0" "$(psql_db sagas_payment "SELECT count(*) FROM (SELECT saga_id FROM charges GROUP BY saga_id HAVING count(*) > 1) d")"
assert_eq "nobody flagged for attention" "0" "$(psql_db sagas_orchestrator "SELECT count(*) FROM sagas WHERE attention")"
assert_eq "c1 = 2000.00 - 175 x 10.00" "25000" "$(balance c1)"
assert_eq "c2" "500" "$(balance c2)"
assert_eq "X = 500 - 175" "325" "$(on_hand X)"
assert_eq "Y" "2" "$(on_hand Y)"
assert_eq "live reservations" "175" "$(psql_db sagas_stock "SELECT count(*) FROM reservations WHERE status = 'RESERVED'")"
check_invariants "X:500 Y:2" "c1:200000 c2:500"
finish
