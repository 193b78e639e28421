#!/usr/bin/env bash
# bench/metrics.sh: what being scraped costs (docs/benchmarks.md, "Metrics"),
# in one run on one machine: the same build with no scraper, and with every
# daemon's /metrics fetched once a second (one process keeping a connection
# to each, as a Prometheus at a 1 s scrape interval would), alternating, RUNS rounds of each: sagabench at
# C=64 for BENCH_SECS s and at C=1 for half as long, on a fresh durable stack
# each time (PG_FAST=0). Prints each run, the medians and their ratio
# (bench/ab.inc). Target (issue 21): scraped/quiet at C=64 >= 0.97.
#
# Environment: SAGA_BIN_DIR (default build/bin), RUNS (3), BENCH_SECS (12).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export SAGA_BIN_DIR=${SAGA_BIN_DIR:-$ROOT/build/bin}
source "$ROOT/tests/lib/stack.sh"
source "$ROOT/bench/ab.inc"
PG_FAST=0

# scrape_loop: every daemon's page once a second until killed, as
# Prometheus scrapes: one long-lived process keeping a connection to each
# (HTTP keep-alive; curl would fork four processes a second, which on two
# cores costs more than what is measured); counts the scrapes in
# $STACK_DIR/scrapes
scrape_loop() {
  local urls=() name
  for name in "${!STACK_METRICS_URL_OF[@]}"; do urls+=("${STACK_METRICS_URL_OF[$name]#http://}"); done
  exec python3 - "$STACK_DIR/scrapes" "${urls[@]}" <<'PY'
import http.client, sys, time
out, targets = sys.argv[1], sys.argv[2:]
conns, n = {}, 0
while True:
    t0 = time.monotonic()
    for t in targets:
        try:
            c = conns.get(t) or http.client.HTTPConnection(t, timeout=1)
            conns[t] = c
            c.request("GET", "/metrics")
            r = c.getresponse()
            r.read()
            n += r.status == 200
        except Exception:
            conns.pop(t, None)
    with open(out, "w") as f:
        f.write(str(n))
    time.sleep(max(0.0, 1.0 - (time.monotonic() - t0)))
PY
}

ab_run() { # ab_run MODE ARGS...: one sagabench run on a fresh stack; its JSON
  local mode=$1 pid=""; shift
  stack_start >/dev/null
  if [ "$mode" = scraped ]; then
    scrape_loop &
    pid=$!
  fi
  "$SAGA_BIN_DIR/sagabench" -o "$ORCH_URL" -s "$STOCK_URL" -p "$PAYMENT_URL" --json --no-progress "$@"
  if [ -n "$pid" ]; then
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    echo "[bench-metrics] scrapes during the run: $(cat "$STACK_DIR/scrapes" 2>/dev/null || echo 0)" >&2
  fi
  stack_stop
}

ab_compare bench-metrics quiet scraped
echo "[bench-metrics] target: C=64 ratio scraped/quiet >= 0.97"
