#!/usr/bin/env bash
# The https metrics listener (docs/security.md, "Metrics"): stockd serves
# /metrics on https to client certificates of --metrics-tls-ca (ca-metrics,
# the scraper's CA) alone. The prometheus certificate gets 200 and the page;
# no certificate, the admin, client and orchestrator certificates (other
# roles' CAs) and plain http get no HTTP status at all; the count of
# scrapes served moves only for the scraper.
set -euo pipefail
here=$(dirname "$0")
source "$here/../lib/stack.sh"

stack_start
c=$STACK_DIR/certs
port=$(free_port)
stack_kill stockd
STOCK_FLAGS="--metrics-listen https://127.0.0.1:$port --metrics-tls-ca $c/ca-metrics.crt"
stack_start_stock
url="https://127.0.0.1:$port/metrics"

# scrape [CURL ARGS...]: the HTTP status (000: none) of one GET
scrape() {
  curl -s -o "$STACK_DIR/page" -w '%{http_code}' --max-time 5 --cacert "$c/ca-server.crt" "$@" "$url" || true
}
assert_eq "the scraper's certificate: 200" 200 "$(scrape --cert "$c/prometheus.crt" --key "$c/prometheus.key")"
assert_eq "the page is stockd's" 1 "$(grep -c '^sagas_build_info{daemon="stockd"' "$STACK_DIR/page")"
assert_eq "first page: no scrape counted yet" 1 "$(grep -c '^sagas_metrics_scrapes_total 0$' "$STACK_DIR/page")"
assert_eq "no certificate: no HTTP status" 000 "$(scrape)"
for who in admin client orchestrator; do
  assert_eq "the $who certificate: no HTTP status" 000 "$(scrape --cert "$c/$who.crt" --key "$c/$who.key")"
done
assert_eq "plain http: no HTTP status" 000 \
  "$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "http://127.0.0.1:$port/metrics" || true)"
assert_eq "the scraper again: 200" 200 "$(scrape --cert "$c/prometheus.crt" --key "$c/prometheus.key")"
assert_eq "only the scraper's scrapes counted" 1 "$(grep -c '^sagas_metrics_scrapes_total 1$' "$STACK_DIR/page")"
assert_eq "the four without a verified certificate counted" 1 \
  "$(grep -c '^sagas_metrics_refused_total{reason="unverified"} 4$' "$STACK_DIR/page")"
assert_eq "stockd logged the https listener" 1 \
  "$(grep -c "metrics: GET /metrics on https://127.0.0.1:$port (mutual TLS" "$STACK_DIR/stockd.log")"
finish
