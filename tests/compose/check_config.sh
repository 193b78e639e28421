#!/usr/bin/env bash
# ctest compose_config (label lint): compose.yaml, alone and with the test
# override, is valid for docker-compose (1.29's schema is the stricter one:
# no top-level name:, no depends_on.required). No engine needed.
set -euo pipefail
root=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
cd "$root"
# .env.example's change-me-* passwords are refused at `up`: the check-env
# service's script, run here as compose runs it, names each one
passwords=(POSTGRES_PASSWORD SAGA_ORCHESTRATOR_DB_PASSWORD SAGA_STOCK_DB_PASSWORD
  SAGA_PAYMENT_DB_PASSWORD SAGA_SHIPPING_DB_PASSWORD)
example=()
while IFS= read -r line; do example+=("$line"); done < <(grep -E '^[A-Z_]+_PASSWORD=' .env.example)
[ "${#example[@]}" = 5 ] || { echo "compose_config: FAIL: .env.example has ${#example[@]} passwords, not 5" >&2; exit 1; }
if out=$(env -i PATH="$PATH" "${example[@]}" sh deploy/check-env.sh "${passwords[@]}" 2>&1); then
  echo "compose_config: FAIL: check-env accepts .env.example's passwords" >&2
  exit 1
fi
for v in "${passwords[@]}"; do
  grep -q "^check-env: $v is still .env.example's placeholder" <<<"$out" ||
    { echo "compose_config: FAIL: check-env does not name $v: $out" >&2; exit 1; }
done
fresh=()
for v in "${passwords[@]}"; do fresh+=("$v=$(head -c 9 /dev/urandom | od -An -tx1 | tr -d ' \n')"); done
env -i PATH="$PATH" "${fresh[@]}" sh deploy/check-env.sh "${passwords[@]}" >/dev/null ||
  { echo "compose_config: FAIL: check-env refuses passwords of one's own" >&2; exit 1; }
if env -i PATH="$PATH" "${fresh[@]:1}" sh deploy/check-env.sh "${passwords[@]}" >/dev/null 2>&1; then
  echo "compose_config: FAIL: check-env accepts a missing POSTGRES_PASSWORD" >&2
  exit 1
fi
if ! command -v docker-compose >/dev/null; then
  echo "compose_config: SKIPPED: docker-compose not installed (scripts/deps.sh installs it)"
  exit 77
fi
# No .env leaks in: check the file as a user gets it, with passwords given
# and without.
empty=$(mktemp)
pwfile=$(mktemp)
trap 'rm -f "$empty" "$pwfile"' EXIT
printf '%s=x\n' "${passwords[@]}" >"$pwfile"
unset_pw=()
for v in "${passwords[@]}"; do unset_pw+=(-u "$v"); done
dcc() { env -u DOCKER_HOST "${unset_pw[@]}" docker-compose "$@"; }
# passwords are required, never silently defaulted
if out=$(dcc --env-file "$empty" -f compose.yaml config -q 2>&1); then
  echo "compose_config: FAIL: compose.yaml is valid without any password" >&2
  exit 1
fi
grep -q 'set POSTGRES_PASSWORD in .env\|POSTGRES_PASSWORD' <<<"$out" || {
  echo "compose_config: FAIL: the error does not name the missing password: $out" >&2
  exit 1
}
dcc --env-file "$pwfile" -f compose.yaml config -q
dcc --env-file "$pwfile" -f compose.yaml -f tests/compose/override.yaml config -q
dcc --env-file "$pwfile" -f compose.yaml -f deploy/publish.yaml config -q
dcc --env-file "$pwfile" -f compose.yaml --profile cli config --services | grep -qx sagactl
# only the orchestrators' API and Prometheus's are ever published, and only
# with publish.yaml (on loopback)
published=$(dcc --env-file "$pwfile" -f compose.yaml -f deploy/publish.yaml config |
  awk '/^  [a-z0-9_-]+:$/ {svc=$1} /^    ports:/ {print svc}' | tr -d ':' | tr '\n' ' ')
if [ "$published" != "orchestrator orchestrator2 prometheus " ]; then
  echo "compose_config: FAIL: published services: '$published' (expected only orchestrator, orchestrator2 and prometheus)" >&2
  exit 1
fi
# the second of each service is its first one merged in: the same settings
# and environment (only the name differs), and the orchestrators and sagactl
# name both of each
cfg=$(dcc --env-file "$pwfile" -f compose.yaml --profile cli config)
svc_cfg() { # SERVICE: its block of `config`, without its name
  awk -v s="  $1:" '$0 == s {on=1; next} on && !/^    / {on=0} on' <<<"$cfg"
}
for s in stock payment shipping orchestrator; do
  [ -n "$(svc_cfg "$s")" ] || { echo "compose_config: FAIL: no service $s" >&2; exit 1; }
  if [ "$(svc_cfg "$s")" != "$(svc_cfg "${s}2")" ]; then
    echo "compose_config: FAIL: ${s}2 differs from $s:" >&2
    diff <(svc_cfg "$s") <(svc_cfg "${s}2") >&2 || true
    exit 1
  fi
done
for want in "SAGA_STOCK_URL: tls+tcp://stock:7102,tls+tcp://stock2:7102" \
  "SAGA_PAYMENT_URL: tls+tcp://payment:7103,tls+tcp://payment2:7103" \
  "SAGA_SHIPPING_URL: tls+tcp://shipping:7104,tls+tcp://shipping2:7104"; do
  n=$(grep -cxF "      $want" <<<"$cfg" || true)
  [ "$n" = 2 ] || { echo "compose_config: FAIL: '$want' in $n services (expected the two orchestrators)" >&2; exit 1; }
done
grep -qxF "      SAGA_ORCHESTRATOR_URL: tls+tcp://orchestrator:7111,tls+tcp://orchestrator2:7111" <<<"$cfg" || {
  echo "compose_config: FAIL: sagactl is not given both orchestrators" >&2
  exit 1
}
# and on loopback by default
if dcc --env-file "$pwfile" -f compose.yaml -f deploy/publish.yaml config |
  awk '/^    ports:/ {p=1; next} p && /^    - / {print; next} {p=0}' | grep -v '^    - 127\.0\.0\.1:'; then
  echo "compose_config: FAIL: publish.yaml publishes a port off loopback by default" >&2
  exit 1
fi
# the prometheus service scrapes every daemon, both of each (its config is
# deploy/prometheus/prometheus.yml: ctest prometheus_rules), and every daemon
# serves its metrics in https to the ca-metrics CA's certificates
for s in stock stock2 payment payment2 shipping shipping2 orchestrator orchestrator2; do
  grep -qE '^      SAGA_[A-Z]+_METRICS_LISTEN: https://0\.0\.0\.0:947[0-3]$' <<<"$(svc_cfg "$s")" ||
    { echo "compose_config: FAIL: $s has no https metrics listener" >&2; exit 1; }
  grep -qE '^      SAGA_[A-Z]+_METRICS_TLS_CA: /certs/ca-metrics\.crt$' <<<"$(svc_cfg "$s")" ||
    { echo "compose_config: FAIL: $s does not trust ca-metrics on its metrics listener" >&2; exit 1; }
done
# and answers the names prometheus.yml scrapes it by (any other Host is
# 421: DNS rebinding): each target's host is in its --http-allowed-hosts
for s in stock stock2 payment payment2 shipping shipping2 orchestrator orchestrator2; do
  grep -q "\"$s:947[0-3]\"" deploy/prometheus/prometheus.yml ||
    { echo "compose_config: FAIL: prometheus.yml does not scrape $s" >&2; exit 1; }
  hosts=$(sed -n 's/^      SAGA_[A-Z]*_HTTP_ALLOWED_HOSTS: //p' <<<"$(svc_cfg "$s")")
  tr ',' '\n' <<<"$hosts" | grep -qx "$s" ||
    { echo "compose_config: FAIL: $s does not answer to the name prometheus scrapes it by ($s; its allowed hosts: '$hosts')" >&2; exit 1; }
done
[ -n "$(svc_cfg prometheus)" ] || { echo "compose_config: FAIL: no prometheus service" >&2; exit 1; }
if dcc --env-file "$pwfile" -f compose.yaml config | grep -q '^    ports:'; then
  echo "compose_config: FAIL: compose.yaml alone publishes a port" >&2
  exit 1
fi
# postgres (so every daemon, which waits for it) starts only after check-env
# exited 0, and check-env checks all five passwords, with no network
svc_cfg postgres | grep -A1 '^      check-env:$' | grep -q 'condition: service_completed_successfully' ||
  { echo "compose_config: FAIL: postgres does not wait for check-env to succeed" >&2; exit 1; }
for v in "${passwords[@]}"; do
  svc_cfg check-env | grep -qx -- "    - $v" ||
    { echo "compose_config: FAIL: check-env does not check $v" >&2; exit 1; }
done
svc_cfg check-env | grep -qx '    network_mode: none' ||
  { echo "compose_config: FAIL: check-env has a network" >&2; exit 1; }
echo "compose_config: compose.yaml valid ($(docker-compose version --short))"
