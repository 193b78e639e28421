#!/usr/bin/env bash
# Fault 12: the payment daemon stopped for 2 minutes while 20 sagas run.
# "Stopped" is taken as the process gone (stack_kill paymentd: SIGTERM, the
# port then refuses connections), as when the service is stopped or crashed:
# every connection attempt of the orchestrator fails, which is what makes
# reconnects and file descriptors worth watching. (SIGSTOP would keep the
# TCP connection up and queue the requests in the kernel: no reconnect at
# all.)
# - the orchestrator's open file descriptors stay bounded and do not grow;
# - reconnects are rate-limited: the orchestrator's connect() calls to the
#   payment port, counted with strace over 10 s once the 2 minutes are up,
#   stay under 10 a second (the dialer's backoff is capped at 1 s, with
#   jitter; a reconnect loop without backoff makes thousands). Without strace
#   (or ptrace), the failed TCP connection attempts of the whole network
#   namespace over the 2 minutes (/proc/net/snmp AttemptFails, noisier) must
#   stay under 10 a second instead. The orchestrator's CPU time over the
#   2 minutes stays under 6 s (5 %: near idle, with a 50 ms sweep);
# - every saga's ChargePayment deadline passes: each goes to REFUNDING
#   (timeout), where the refund waits for paymentd (rule 3: retried, never
#   dropped) and is flagged for attention after --attention-after tries;
# - once paymentd is back the refunds (early compensations: tombstones) and
#   releases run: 20 x CANCELLED (timeout), X and c1 at their initial values;
# - a saga started after that completes, with exact numbers.
# X is 40 here (not 10) so that all 20 sagas reserve and reach the charge.
source "$(dirname "$0")/head.inc"
ATTENTION_AFTER=5
ORCH_FLAGS="$FAST_ORCH --attention-after $ATTENTION_AFTER"
stack_start
ctl stock set X 40 >/dev/null
ctl deposit c1 100.00 >/dev/null
ORCH_PID=${STACK_PID_OF[orchestratord]}

fd_count() { ls "/proc/$ORCH_PID/fd" | wc -l; }
cpu_ticks() { awk '{print $14 + $15}' "/proc/$ORCH_PID/stat"; }
# failed TCP connection attempts (SYN_SENT -> CLOSED, e.g. refused) of this
# network namespace: the only cheap counter there is. Other processes add a
# little noise (port probes); an unlimited reconnect loop would add thousands.
attempt_fails() { awk '/^Tcp:/ && $8 ~ /^[0-9]+$/ {print $8}' /proc/net/snmp; }

stack_kill paymentd
fails0=$(attempt_fails)
cpu0=$(cpu_ticks)

ids=()
pids=()
for i in $(seq 1 20); do
  id=$(printf '5a9a5a9a-0000-4000-8000-%012d' "$((100 + i))")
  ids+=("$id")
  ctl start c1 X 2 30.00 --id "$id" >/dev/null &
  pids+=("$!")
done
started=0
for pid in "${pids[@]}"; do wait "$pid" && started=$((started + 1)); done
assert_eq "sagas started while paymentd is down" "20" "$started"

# 2 minutes, one sample a second (bounded loop)
fds=()
for _ in $(seq 1 120); do
  fds+=("$(fd_count)")
  sleep 1
done
cpu1=$(cpu_ticks)
fails1=$(attempt_fails)
fd_max=$(printf '%s\n' "${fds[@]}" | sort -n | tail -1)
first_max=$(printf '%s\n' "${fds[@]:0:30}" | sort -n | tail -1)
last_max=$(printf '%s\n' "${fds[@]:90:30}" | sort -n | tail -1)
echo "fds: first ${fds[0]}, max $fd_max, max of the first 30 s $first_max, of the last 30 s $last_max"
echo "orchestrator CPU: $((cpu1 - cpu0)) ticks of $(getconf CLK_TCK)/s; failed connection attempts: $((fails1 - fails0))"
assert_eq "fds bounded (max <= 64)" "yes" "$([ "$fd_max" -le 64 ] && echo yes || echo "no ($fd_max)")"
assert_eq "fds do not grow (last 30 s <= first 30 s + 2)" "yes" \
  "$([ "$last_max" -le $((first_max + 2)) ] && echo yes || echo "no ($first_max -> $last_max)")"
assert_eq "orchestrator CPU over 2 min < 6 s" "yes" \
  "$([ $((cpu1 - cpu0)) -lt $((6 * $(getconf CLK_TCK))) ] && echo yes || echo "no ($((cpu1 - cpu0)) ticks)")"
strace_rc=1
if command -v strace >/dev/null; then
  # runs until `timeout` ends it (124) when the attach worked
  timeout 10 strace -f -qq -e trace=connect -o "$STACK_DIR/connect.trace" -p "$ORCH_PID" 2>/dev/null &&
    strace_rc=0 || strace_rc=$?
fi
if [ "$strace_rc" = 124 ]; then
  dials=$(grep -c "sin_port=htons($PAYMENT_PORT)" "$STACK_DIR/connect.trace" || true)
  echo "connect() calls to the payment port in 10 s: $dials"
  assert_eq "reconnects rate-limited (1..100 dials in 10 s)" "yes" \
    "$([ "$dials" -ge 1 ] && [ "$dials" -le 100 ] && echo yes || echo "no ($dials)")"
else
  echo "strace unusable here: counting failed TCP connection attempts instead"
  assert_eq "reconnects rate-limited (<= 1200 failed attempts in 120 s)" "yes" \
    "$([ $((fails1 - fails0)) -le 1200 ] && echo yes || echo "no ($((fails1 - fails0)))")"
fi

# every charge deadline passed: the sagas wait in REFUNDING, flagged
assert_eq "sagas while paymentd is down" "REFUNDING|timeout|true:20" "$(psql_db sagas_orchestrator \
  "SELECT state || '|' || reason || '|' || attention || ':' || count(*) FROM sagas GROUP BY state, reason, attention")"
assert_eq "path so far" "RESERVING>CHARGING>REFUNDING:20" "$(psql_db sagas_orchestrator \
  "SELECT path || ':' || count(*) FROM (SELECT saga_id, string_agg(to_state, '>' ORDER BY version) AS path FROM saga_history WHERE from_state IS NULL OR from_state <> to_state GROUP BY saga_id) h GROUP BY path ORDER BY path")"
assert_eq "refund tried at least --attention-after times" "20" "$(psql_db sagas_orchestrator \
  "SELECT count(*) FROM sagas WHERE attempts >= $ATTENTION_AFTER")"
assert_eq "flagged sagas in sagactl list --attention" "20" \
  "$(ctl list --attention --json | grep -o '"saga_id"' | wc -l)"
assert_eq "one attention log line per saga" "20" "$(log_count orchestratord 'saga needs attention: RefundPayment failed')"
assert_eq "X held by the 20 reservations" "0" "$(on_hand X)"
assert_eq "no payment record yet" "0" "$(psql_db sagas_payment "SELECT count(*) FROM charges")"
assert_eq "c1 while down" "10000" "$(balance c1)"

# paymentd returns: the refunds land (tombstones: no charge ever arrived),
# then the releases
PAYMENT_FLAGS=""
stack_start_payment
wait_all_terminal 60
assert_eq "sagas after paymentd returned" "CANCELLED|timeout:20" "$(psql_db sagas_orchestrator \
  "SELECT state || '|' || reason || ':' || count(*) FROM sagas GROUP BY state, reason")"
assert_eq "path" "RESERVING>CHARGING>REFUNDING>RELEASING>CANCELLED:20" "$(psql_db sagas_orchestrator \
  "SELECT path || ':' || count(*) FROM (SELECT saga_id, string_agg(to_state, '>' ORDER BY version) AS path FROM saga_history WHERE from_state IS NULL OR from_state <> to_state GROUP BY saga_id) h GROUP BY path ORDER BY path")"
assert_eq "payment records" "TOMBSTONE:20" "$(psql_db sagas_payment "SELECT status || ':' || count(*) FROM charges GROUP BY status")"
assert_eq "reservations" "RELEASED:20" "$(psql_db sagas_stock "SELECT status || ':' || count(*) FROM reservations GROUP BY status")"
assert_eq "X" "40" "$(on_hand X)"
assert_eq "c1" "10000" "$(balance c1)"
assert_eq "orchestrator never restarted" "$ORCH_PID" "${STACK_PID_OF[orchestratord]}"

# a saga started after paymentd returned completes
ctl start c1 X 2 30.00 --id "$S" --wait >/dev/null
assert_eq "S" "COMPLETED|" "$(saga_state "$S")"
assert_eq "S path" "RESERVING>CHARGING>SHIPPING>COMPLETED" "$(path_of "$S")"
assert_eq "S charge" "CHARGED" "$(charge "$S")"
assert_eq "S reservation" "RESERVED" "$(reservation "$S")"
assert_eq "X after S" "38" "$(on_hand X)"
assert_eq "c1 after S" "7000" "$(balance c1)"
assert_eq "fds after recovery (<= 64)" "yes" "$([ "$(fd_count)" -le 64 ] && echo yes || echo "no ($(fd_count))")"
check_invariants "X:40" "c1:10000"
finish
