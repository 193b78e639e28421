#!/usr/bin/env bash
# ctest prometheus_rules (label lint): deploy/prometheus/ as Prometheus reads
# it. promtool (Debian's prometheus package, scripts/deps.sh) checks the
# alert rules, runs their unit tests (sagas.rules.test.yml), and checks both
# scrape configs in full: prometheus.yml (compose) names certificate files
# under /certs, so it is checked on a copy pointing at certificates made for
# the test by scripts/make-certs.sh (which must make the scraper's
# prometheus certificate, signed by ca-metrics). Skipped (exit 77) without
# promtool.
set -euo pipefail
root=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
dir=$root/deploy/prometheus
if ! command -v promtool >/dev/null; then
  echo "prometheus_rules: SKIPPED: promtool not installed (scripts/deps.sh installs prometheus)"
  exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "prometheus_rules: FAIL: $*" >&2; exit 1; }

promtool check rules "$dir/sagas.rules.yml"
(cd "$dir" && promtool test rules sagas.rules.test.yml)
promtool check config "$dir/prometheus-local.yml"

# the compose config, with the certificate paths made real
bash "$root/scripts/make-certs.sh" "$tmp/certs" stock >/dev/null
for f in ca-metrics.crt prometheus.crt prometheus.key; do
  [ -s "$tmp/certs/$f" ] || fail "make-certs.sh made no $f"
done
openssl verify -CAfile "$tmp/certs/ca-metrics.crt" "$tmp/certs/prometheus.crt" >/dev/null ||
  fail "prometheus.crt is not signed by ca-metrics.crt"
openssl x509 -in "$tmp/certs/prometheus.crt" -noout -ext extendedKeyUsage | grep -q 'TLS Web Client Authentication' ||
  fail "prometheus.crt is not a client certificate"
mkdir "$tmp/etc"
cp "$dir/sagas.rules.yml" "$tmp/etc/"
sed "s|/certs/|$tmp/certs/|g" "$dir/prometheus.yml" >"$tmp/etc/prometheus.yml"
grep -q "$tmp/certs/prometheus.key" "$tmp/etc/prometheus.yml" || fail "prometheus.yml names no /certs/prometheus.key"
promtool check config "$tmp/etc/prometheus.yml"

# one job per daemon kind, the names the rules and the docs use, in both
for cfg in prometheus-local.yml prometheus.yml; do
  jobs=$(sed -n 's/^ *- job_name: *//p' "$dir/$cfg" | tr '\n' ' ')
  [ "$jobs" = "sagas-orchestrator sagas-stock sagas-payment sagas-shipping " ] ||
    fail "$cfg: jobs '$jobs'"
done
# compose: every daemon service, both of each
targets=$(grep -o '"[a-z0-9]*:947[0-3]"' "$dir/prometheus.yml" | tr -d '"' | tr '\n' ' ')
[ "$targets" = "orchestrator:9470 orchestrator2:9470 stock:9471 stock2:9471 payment:9472 payment2:9472 shipping:9473 shipping2:9473 " ] ||
  fail "prometheus.yml targets '$targets'"
# every alert's runbook_url is a heading of docs/operations.md ("Alerts")
doc=$root/docs/operations.md
for url in $(sed -n 's/^ *runbook_url: *//p' "$dir/sagas.rules.yml"); do
  anchor=${url#docs/operations.md#}
  [ "$anchor" != "$url" ] || fail "runbook_url $url is not docs/operations.md#..."
  grep -qix "### $anchor" "$doc" || fail "runbook_url $url: no heading '### $anchor' in docs/operations.md"
done
[ "$(grep -c '^ *runbook_url:' "$dir/sagas.rules.yml")" = "$(grep -c '^ *- alert:' "$dir/sagas.rules.yml")" ] ||
  fail "an alert without runbook_url"
echo "prometheus_rules: rules, their tests and both scrape configs pass"
