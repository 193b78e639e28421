#!/usr/bin/env bash
# Flood (docs/security.md, "Bounded resources"): one process opens 5,000
# connections at paymentd that finish the SP handshake and stay idle, and
# 500 that send the length of a frame and half its bytes and stall: 250
# declaring 1 MiB (over the frame limit) and 250 declaring 60 KiB (under
# it). Meanwhile a saga runs through the orchestrator's own connection.
# Checked, from /proc and the databases: paymentd's resident size stays
# under 128 MiB and its descriptors under the connection cap plus its own;
# the saga completes with the exact balance; the stalled half frames are
# closed after --idle-timeout; and the log says so in a few lines, not one
# per connection. Bounded to about 40 s.
set -euo pipefail
here=$(dirname "$0")
source "$here/../lib/stack.sh"
CAP=1000
# a short idle timeout so the test sees the stalled frames closed
PAYMENT_FLAGS="--max-connections $CAP --idle-timeout 5000"
stack_start
ctl stock set F1 10 >/dev/null
ctl deposit flo 100.00 >/dev/null
ctl start flo F1 1 1.00 --wait >/dev/null # the orchestrator's connection is up
PID=${STACK_PID_OF[paymentd]}
rss_kb() { awk '/^VmRSS/ {print $2}' "/proc/$PID/status"; }
fds() { find "/proc/$PID/fd" -mindepth 1 -maxdepth 1 | wc -l; }
echo "paymentd before: $(rss_kb) KiB, $(fds) descriptors"

port=${PAYMENT_URL##*:}
python3 "$STACK_ROOT/tests/tools/sp_flood.py" 127.0.0.1 "$port" 5000 250 $((1 << 20)) 12 >"$STACK_DIR/flood1.json" &
big=$!
python3 "$STACK_ROOT/tests/tools/sp_flood.py" 127.0.0.1 "$port" 0 250 $((60 << 10)) 12 >"$STACK_DIR/flood2.json" &
small=$!
max_rss=0 max_fds=0
S=f1000000-0000-4000-8000-000000000001
started=0
for _ in $(seq 1 120); do # 12 s of samples, 100 ms apart
  r=$(rss_kb) f=$(fds)
  [ "$r" -gt "$max_rss" ] && max_rss=$r
  [ "$f" -gt "$max_fds" ] && max_fds=$f
  if [ "$started" = 0 ] && [ "$f" -gt 500 ]; then
    # in the middle of the flood: a saga through the orchestrator
    ctl start flo F1 2 10.00 --id "$S" --wait >"$STACK_DIR/saga.out" 2>&1 &
    saga=$!
    started=1
  fi
  sleep 0.1
done
wait "$big" "$small"
[ "$started" = 1 ] && wait "$saga"
echo "flood (1 MiB half frames): $(cat "$STACK_DIR/flood1.json")"
echo "flood (60 KiB half frames): $(cat "$STACK_DIR/flood2.json")"
echo "paymentd at most: $max_rss KiB, $max_fds descriptors"

assert_eq "a saga started during the flood was started" 1 "$started"
assert_eq "the saga completed" COMPLETED \
  "$(psql_db sagas_orchestrator "SELECT state FROM sagas WHERE saga_id = '$S'")"
assert_eq "flo paid 1.00 and 10.00" 8900 \
  "$(psql_db sagas_payment "SELECT balance FROM accounts WHERE customer = 'flo'")"
assert_eq "RSS under 128 MiB" yes "$([ "$max_rss" -lt $((128 << 10)) ] && echo yes || echo "no: $max_rss KiB")"
# past the cap, connections are closed as nng adds them: paymentd holds at
# most the cap, plus its own, plus those still in their SP handshake
assert_eq "descriptors under the cap, paymentd's own and the handshakes" yes \
  "$([ "$max_fds" -le $((CAP + 512)) ] && echo yes || echo "no: $max_fds")"
j1=$(cat "$STACK_DIR/flood1.json") j2=$(cat "$STACK_DIR/flood2.json")
# past the cap every connection is closed as it comes; the 1 MiB frames
# at once (over --max-msg), the 60 KiB ones by the idle timeout
assert_eq "connections past the cap closed" yes \
  "$([ "$(jq '.closed_idle' <<<"$j1")" -ge $((5000 - CAP)) ] && echo yes || echo "no: $j1")"
assert_eq "1 MiB half frames all closed" 250 "$(jq '.closed_half' <<<"$j1")"
assert_eq "60 KiB half frames all closed (idle timeout)" 250 "$(jq '.closed_half' <<<"$j2")"
lines=$(grep -c 'closed a connection' "$STACK_DIR/paymentd.log" || true)
assert_eq "a few log lines, not one per connection" yes \
  "$([ "$lines" -ge 1 ] && [ "$lines" -le 4 ] && echo yes || echo "no: $lines")"
finish
