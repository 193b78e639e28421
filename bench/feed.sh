#!/usr/bin/env bash
# bench/feed.sh: what the console and a follower of the history feed cost
# (docs/benchmarks.md, "The console and the feed"), in one run on one
# machine: the same build with nobody watching, and with
#   - a follower on the feed: sagactl watch --follow (WatchHistory over nng,
#     a page as soon as more is ready, else every 500 ms, its default);
#   - the console open: through gatewayd, what the console's list view asks
#     every 2 s (the newest 50 sagas and the counts by state), as one
#     process keeping its connection (HTTP keep-alive);
# alternating, RUNS rounds of each: sagabench at C=64 for BENCH_SECS s and
# at C=1 for half as long, on a fresh durable stack each time (PG_FAST=0).
# Prints each run, the medians and their ratio (bench/ab.inc). Target
# (issue 22): watched/quiet at C=64 >= 0.95.
#
# Environment: SAGA_BIN_DIR (default build/bin), RUNS (3), BENCH_SECS (12).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export SAGA_BIN_DIR=${SAGA_BIN_DIR:-$ROOT/build/bin}
source "$ROOT/tests/lib/stack.sh"
source "$ROOT/bench/ab.inc"
PG_FAST=0
STACK_GATEWAY=1

# console_loop: the console's list view, every 2 s, until killed; counts the
# pages in $STACK_DIR/console
console_loop() {
  exec python3 - "$STACK_DIR/console" "${GATEWAY_URL#http://}" <<'PY'
import http.client, sys, time
out, target = sys.argv[1], sys.argv[2]
# the list and the counts by state (one request since issue 32)
paths = ["/v1/sagas?limit=50", "/v1/sagas?limit=1&with_counts=true"]
conn, n = None, 0
while True:
    t0 = time.monotonic()
    for p in paths:
        try:
            conn = conn or http.client.HTTPConnection(target, timeout=5)
            conn.request("GET", p)
            r = conn.getresponse()
            r.read()
            n += r.status == 200
        except Exception:
            conn = None
    with open(out, "w") as f:
        f.write(str(n))
    time.sleep(max(0.0, 2.0 - (time.monotonic() - t0)))
PY
}

ab_run() { # ab_run MODE ARGS...: one sagabench run on a fresh stack; its JSON
  local mode=$1 pids=(); shift
  stack_start >/dev/null
  if [ "$mode" = watched ]; then
    console_loop &
    pids+=($!)
    "$SAGA_BIN_DIR/sagactl" --orchestrator "$ORCH_URL" watch --follow --json \
      >"$STACK_DIR/feed" 2>/dev/null &
    pids+=($!)
  fi
  "$SAGA_BIN_DIR/sagabench" -o "$ORCH_URL" -s "$STOCK_URL" -p "$PAYMENT_URL" --json --no-progress "$@"
  if [ "${#pids[@]}" -gt 0 ]; then
    kill "${pids[@]}" 2>/dev/null || true
    wait "${pids[@]}" 2>/dev/null || true
    echo "[bench-feed] console pages: $(cat "$STACK_DIR/console" 2>/dev/null || echo 0)," \
      "transitions followed: $(wc -l <"$STACK_DIR/feed")" >&2
  fi
  stack_stop
}

ab_compare bench-feed quiet watched
echo "[bench-feed] target: C=64 ratio watched/quiet >= 0.95"
