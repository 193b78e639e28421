#!/usr/bin/env bash
# make test-compose: the compose stack for real, on podman (container-lab).
#
# Installs podman/runc/docker-compose (Debian), makes the base image
# localhost/debian:bookworm, serves podman's Docker API, builds the images and
# starts compose.yaml + tests/compose/override.yaml with docker-compose (every
# service on the host network, on free 127.0.0.1 ports), waits for every
# service to be healthy, checks the database roles, runs the seed lab through
# the sagactl container and asserts its final state (shipments included),
# kills the orchestrator container with sagas in flight and checks they
# finish after `docker-compose start`, and tears everything down (also on
# failure).
#
# Skips (exit 0, saying why) only when containers cannot run here at all.
# Must run as root (the lab's scripts install packages and run podman as
# root); re-runs itself with sudo otherwise. KEEP_STACK=1 leaves the stack up.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo"
t0=$SECONDS
say() { echo "[test-compose $((SECONDS - t0))s] $*"; }
skip() { echo "test-compose: SKIPPED: $*"; exit 0; }
fail() { echo "test-compose: FAILED: $*" >&2; exit 1; }

if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null && exec sudo -E bash "$0" "$@"
  skip "not root and no sudo: podman (container-lab) needs root here"
fi

# container-lab: $CONTAINER_LAB_TOOLS, else ../shared/tools/container-lab next
# to the clone, else /work/shared/tools/container-lab, else the copy in
# tests/compose/lab.
tools=""
for d in "${CONTAINER_LAB_TOOLS:-}" "$repo/../shared/tools/container-lab" \
  /work/shared/tools/container-lab "$repo/tests/compose/lab"; do
  if [ -n "$d" ] && [ -x "$d/install.sh" ]; then tools=$(cd "$d" && pwd); break; fi
done
[ -n "$tools" ] || fail "container-lab not found (set CONTAINER_LAB_TOOLS)"
say "container-lab: $tools"
export LAB="$repo/.container-lab"
mkdir -p "$LAB"

say "installing podman, runc, debootstrap, docker-compose (when missing)"
if ! "$tools/install.sh" >"$LAB/install.log" 2>&1; then
  command -v podman >/dev/null || { tail -5 "$LAB/install.log"; skip "podman is missing and could not be installed"; }
  tail -20 "$LAB/install.log" >&2
  fail "container-lab install.sh failed"
fi
command -v docker-compose >/dev/null || fail "docker-compose missing after install.sh"
command -v jq >/dev/null || bash scripts/deps.sh

say "base image localhost/debian:bookworm"
if ! "$tools/make-base-image.sh" >"$LAB/base-image.log" 2>&1; then
  tail -5 "$LAB/base-image.log"
  skip "the base image could not be made (debootstrap/podman import failed; log $LAB/base-image.log)"
fi
# shellcheck source=/dev/null
source "$tools/env.sh"
if ! out=$(podman run --rm --network host localhost/debian:bookworm true 2>&1); then
  echo "$out"
  skip "podman cannot run a container here (podman run of the base image failed)"
fi

started_service=0
if ! { [ -f "$LAB/api.pid" ] && kill -0 "$(cat "$LAB/api.pid")" 2>/dev/null; }; then started_service=1; fi
"$tools/service-up.sh"

# Free loopback ports below the ephemeral range, one per service.
port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
lo=32768
[ -r /proc/sys/net/ipv4/ip_local_port_range ] && read -r lo _ </proc/sys/net/ipv4/ip_local_port_range
[ "$lo" -gt 12000 ] || lo=32768
ports=()
while [ ${#ports[@]} -lt 13 ]; do
  p=$((10000 + RANDOM % (lo - 10000)))
  if port_free "$p" && [[ " ${ports[*]} " != *" $p "* ]]; then ports+=("$p"); fi
done
export SAGAS_TEST_PG_PORT=${ports[0]} SAGAS_TEST_ORCH_PORT=${ports[1]}
export SAGAS_TEST_STOCK_PORT=${ports[2]} SAGAS_TEST_PAYMENT_PORT=${ports[3]}
export SAGAS_TEST_ORCH_ADMIN_PORT=${ports[4]} SAGAS_TEST_STOCK_ADMIN_PORT=${ports[5]}
export SAGAS_TEST_PAYMENT_ADMIN_PORT=${ports[6]} SAGAS_TEST_ORCH_HEALTH_PORT=${ports[7]}
export SAGAS_TEST_STOCK_HEALTH_PORT=${ports[8]} SAGAS_TEST_PAYMENT_HEALTH_PORT=${ports[9]}
export SAGAS_TEST_SHIPPING_PORT=${ports[10]} SAGAS_TEST_SHIPPING_ADMIN_PORT=${ports[11]}
export SAGAS_TEST_SHIPPING_HEALTH_PORT=${ports[12]}

# Passwords: fresh ones each run, through an env file (never in an image).
envfile="$LAB/test.env"
pw() { head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n'; }
cat >"$envfile" <<EOT
POSTGRES_PASSWORD=$(pw)
SAGA_ORCHESTRATOR_DB_PASSWORD=$(pw)
SAGA_STOCK_DB_PASSWORD=$(pw)
SAGA_PAYMENT_DB_PASSWORD=$(pw)
SAGA_SHIPPING_DB_PASSWORD=$(pw)
EOT
chmod 600 "$envfile"
project=${SAGAS_COMPOSE_PROJECT:-sagas_ctest}
dc() {
  docker-compose --env-file "$envfile" -p "$project" -f compose.yaml -f tests/compose/override.yaml "$@"
}

cleanup() {
  local rc=$?
  set +e
  if [ "$rc" -ne 0 ]; then
    echo "---- container logs (last 30 lines each)"
    for s in postgres stock payment shipping orchestrator; do
      echo "-- $s"; dc logs --no-color --tail 30 "$s" 2>&1
    done
  fi
  if [ "${KEEP_STACK:-0}" = 1 ]; then
    say "KEEP_STACK=1: stack left up (docker-compose -p $project ...)"
  else
    say "tearing down"
    timeout 120 docker-compose --env-file "$envfile" -p "$project" -f compose.yaml \
      -f tests/compose/override.yaml down -v --remove-orphans -t 5 >"$LAB/down.log" 2>&1
    [ "$started_service" = 1 ] && "$tools/service-down.sh"
    # podman leaves its overlay store mounted on itself: without this the
    # clone cannot be removed afterwards (rm: Device or resource busy)
    if [ "$started_service" = 1 ] && mountpoint -q "$LAB/storage/overlay" 2>/dev/null; then
      umount "$LAB/storage/overlay" 2>/dev/null || true
    fi
  fi
  say "done (exit $rc)"
  if [ "$rc" -eq 0 ] && [ -n "${trap_summary:-}" ]; then
    echo "$trap_summary"
  elif [ "$rc" -ne 0 ]; then
    echo "compose: ${passes:-0} passed, $((${failures:-0} > 0 ? ${failures:-0} : 1)) failed"
  fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

dc down -v --remove-orphans -t 1 >/dev/null 2>&1 || true

say "building images (postgres stand-in, sagas)"
dc build --parallel postgres orchestrator >"$LAB/build.log" 2>&1 || { tail -40 "$LAB/build.log"; fail "image build failed (log $LAB/build.log)"; }
say "starting the stack: postgres 127.0.0.1:$SAGAS_TEST_PG_PORT, orchestrator :$SAGAS_TEST_ORCH_PORT, stock :$SAGAS_TEST_STOCK_PORT, payment :$SAGAS_TEST_PAYMENT_PORT, shipping :$SAGAS_TEST_SHIPPING_PORT"
dc up -d --no-build postgres stock payment shipping orchestrator

cname() { echo "${project}_$1_1"; } # docker-compose 1.29's container names
health() { podman inspect --format '{{.State.Health.Status}}' "$(cname "$1")" 2>/dev/null; }
wait_healthy() {
  local deadline=$((SECONDS + ${2:-180})) s
  until [ "$(health "$1")" = healthy ]; do
    if [ "$SECONDS" -ge "$deadline" ]; then fail "$1 not healthy after ${2:-180}s (status: $(health "$1"))"; fi
    sleep 0.5
  done
}
for s in postgres stock payment shipping orchestrator; do wait_healthy "$s"; done
say "every service healthy"

failures=0
passes=0
check() { # NAME EXPECTED ACTUAL
  if [ "$2" == "$3" ]; then echo "  ok   $1: $3"; passes=$((passes + 1)); else
    echo "  FAIL $1: expected '$2', got '$3'"; failures=$((failures + 1)); fi
}

# ---- roles: each reaches its own database and nothing else (one exec: every
# container start costs seconds here)
# shellcheck disable=SC2016
roles=$(dc exec -T postgres bash -c '
  for d in orchestrator stock payment shipping; do
    v=SAGA_${d^^}_DB_PASSWORD
    for db in sagas_orchestrator sagas_stock sagas_payment sagas_shipping postgres template1; do
      if PGPASSWORD=${!v} psql -X -q -t -A -h 127.0.0.1 -U "saga_$d" -d "$db" -c "SELECT 1" >/dev/null 2>&1
      then echo "saga_$d:$db"; fi
    done
  done' | tr '\n' ' ')
check "role reach" "saga_orchestrator:sagas_orchestrator saga_stock:sagas_stock saga_payment:sagas_payment saga_shipping:sagas_shipping " "$roles"
[ "$failures" -eq 0 ] || fail "database roles reach more (or less) than their own database"
say "roles: each daemon's role reaches its own database only"

# ---- the seed lab through the sagactl container
ctl() { dc run --rm -T --no-deps sagactl "$@"; }
S1=11111111-1111-4111-8111-111111111111
S2=22222222-2222-4222-8222-222222222222
S3=33333333-3333-4333-8333-333333333333
ctl stock set A1 5 >/dev/null
ctl deposit ali 500.00 >/dev/null
ctl deposit sara 20.00 >/dev/null
ctl start ali A1 2 200.00 --id "$S1" --wait
ctl start sara A1 1 100.00 --id "$S2" --wait
ctl start ali A1 10 1000.00 --id "$S3" --wait
say "seed lab run; checking its final state"

# The five reads in one sagactl container, one JSON document a line.
# shellcheck disable=SC2016
state=$(dc run --rm -T --no-deps --entrypoint bash sagactl -c \
  'sagactl report --json && sagactl stock list --reservations --json &&
   sagactl history "$1" --json && sagactl history "$2" --json &&
   sagactl shipments --json' _ "$S2" "$S3")
report=$(sed -n 1p <<<"$state")
resv=$(sed -n 2p <<<"$state")
q() { jq -r "$@" <<<"$report"; }
check "saga 1" "COMPLETED|" "$(q --arg id "$S1" '.sagas[] | select(.saga_id == $id) | .state + "|" + .reason')"
check "saga 2" "CANCELLED|payment_declined" "$(q --arg id "$S2" '.sagas[] | select(.saga_id == $id) | .state + "|" + .reason')"
check "saga 3" "CANCELLED|out_of_stock" "$(q --arg id "$S3" '.sagas[] | select(.saga_id == $id) | .state + "|" + .reason')"
check "saga count" 3 "$(q '.sagas | length')"
check "saga 2 path" "RESERVING>CHARGING>RELEASING>CANCELLED" \
  "$(sed -n 3p <<<"$state" | jq -r 'sort_by(.version) | map(.to_state) | join(">")')"
check "saga 3 path" "RESERVING>CANCELLED" \
  "$(sed -n 4p <<<"$state" | jq -r 'sort_by(.version) | map(.to_state) | join(">")')"
check "A1 on hand" 3 "$(q '.stock[] | select(.sku == "A1") | .on_hand')"
check "live reservations" "$S1:2" \
  "$(jq -r '[.reservations[] | select(.status == "RESERVED") | .saga_id + ":" + (.qty | tostring)] | join(",")' <<<"$resv")"
check "saga 2 reservation" RELEASED "$(jq -r --arg id "$S2" '.reservations[] | select(.saga_id == $id) | .status' <<<"$resv")"
check "saga 3 reservation" OUT_OF_STOCK "$(jq -r --arg id "$S3" '.reservations[] | select(.saga_id == $id) | .status' <<<"$resv")"
check "ali balance" "300.00" "$(q '.accounts[] | select(.customer == "ali") | .balance')"
check "sara balance" "20.00" "$(q '.accounts[] | select(.customer == "sara") | .balance')"
check "charges" "$S1:ali:20000" \
  "$(q '[.charges[] | select(.status == "CHARGED") | .saga_id + ":" + .customer + ":" + (.amount_minor | tostring)] | join(",")')"
check "saga 2 charge" DECLINED "$(q --arg id "$S2" '.charges[] | select(.saga_id == $id) | .status')"
check "no charge tried for saga 3" 0 "$(q --arg id "$S3" '[.charges[] | select(.saga_id == $id)] | length')"
check "summary charged" 1 "$(q '.summary.charged')"
# Shipping comes after the charge (the pivot): only the completed order ships.
ships=$(sed -n 5p <<<"$state")
check "shipments" 1 "$(jq -r '.total' <<<"$ships")"
check "order 1 shipped" "$S1" "$(jq -r '[.shipments[].saga_id] | join(",")' <<<"$ships")"
check "orders 2 and 3 not shipped" 0 \
  "$(jq -r --arg a "$S2" --arg b "$S3" '[.shipments[] | select(.saga_id == $a or .saga_id == $b)] | length' <<<"$ships")"
[ "$failures" -eq 0 ] || fail "$failures seed lab check(s) failed"
say "seed lab final state as expected"

# ---- each container holds only its own key: no daemon has another role's
# key or a CA's (docs/security.md)
held=$(for s in stock payment shipping orchestrator; do
  echo "$s: $(dc exec -T "$s" ls /certs | tr '\n' ' ')"
done)
check "stock's certificate files" "stock: ca-admin.crt ca-orchestrator.crt stockd.crt stockd.key " "$(sed -n 1p <<<"$held")"
check "payment's certificate files" "payment: ca-admin.crt ca-orchestrator.crt paymentd.crt paymentd.key " "$(sed -n 2p <<<"$held")"
check "shipping's certificate files" "shipping: ca-admin.crt ca-orchestrator.crt shippingd.crt shippingd.key " "$(sed -n 3p <<<"$held")"
check "orchestrator's certificate files" "orchestrator: ca-admin.crt ca-client.crt ca-server.crt orchestrator.crt orchestrator.key orchestratord.crt orchestratord.key " "$(sed -n 4p <<<"$held")"

# ---- mutual TLS: the certs service made the certificates; without one, or
# with another role's, the daemons refuse the handshake (the test stack
# shares the host's network, so the ports are reachable here: what is
# checked is that reaching them gives nothing)
certs="$LAB/certs"
rm -rf "$certs" && mkdir -p "$certs"
for f in ca-server.crt client.crt client.key; do
  dc run --rm -T --no-deps --entrypoint cat certs "/certs/ca/$f" >"$certs/$f"
done
sagacmd=${SAGA_BIN_DIR:-$repo/build/bin}/sagacmd
if [ -x "$sagacmd" ]; then
  tls_try() { # URL CERT|"" CALL...: sagacmd's first word
    local url=$1 cert=$2 out
    shift 2
    out=$(env SAGACMD_TLS_CA="$certs/ca-server.crt" ${cert:+SAGACMD_TLS_CERT="$certs/$cert.crt"} \
      ${cert:+SAGACMD_TLS_KEY="$certs/$cert.key"} "$sagacmd" "$url" "$@" 2>/dev/null || true)
    echo "${out%% *}"
  }
  charge=(charge 5ec0e000-0000-4000-8000-000000000009 ali 100)
  ship=(ship 5ec0e000-0000-4000-8000-00000000000a ali A1 1)
  check "paymentd, no certificate" HANDSHAKE_REFUSED "$(tls_try "tls+tcp://127.0.0.1:$SAGAS_TEST_PAYMENT_PORT" "" "${charge[@]}")"
  check "paymentd, client certificate" HANDSHAKE_REFUSED "$(tls_try "tls+tcp://127.0.0.1:$SAGAS_TEST_PAYMENT_PORT" client "${charge[@]}")"
  check "paymentd admin listener, client certificate" HANDSHAKE_REFUSED "$(tls_try "tls+tcp://127.0.0.1:$SAGAS_TEST_PAYMENT_ADMIN_PORT" client "${charge[@]}")"
  check "shippingd, no certificate" HANDSHAKE_REFUSED "$(tls_try "tls+tcp://127.0.0.1:$SAGAS_TEST_SHIPPING_PORT" "" "${ship[@]}")"
  check "shippingd, client certificate" HANDSHAKE_REFUSED "$(tls_try "tls+tcp://127.0.0.1:$SAGAS_TEST_SHIPPING_PORT" client "${ship[@]}")"
  check "shippingd admin listener, client certificate" HANDSHAKE_REFUSED "$(tls_try "tls+tcp://127.0.0.1:$SAGAS_TEST_SHIPPING_ADMIN_PORT" client "${ship[@]}")"
  check "orchestrator, client certificate, ChargePayment" PERMISSION_DENIED "$(tls_try "tls+tcp://127.0.0.1:$SAGAS_TEST_ORCH_PORT" client "${charge[@]}")"
  check "ali untouched" "300.00" "$(ctl report --json | jq -r '.accounts[] | select(.customer == "ali") | .balance')"
  check "no shipment added" 1 "$(ctl shipments --json | jq -r '.total')"
else
  echo "  (no $sagacmd: build first for the handshake checks)"
fi
[ "$failures" -eq 0 ] || fail "$failures mutual TLS check(s) failed"
say "mutual TLS: refused without the right certificate"

# ---- kill the orchestrator container with sagas in flight
# stockd holds every ReserveStock 4 s, so the four sagas are still RESERVING
# when the orchestrator is SIGKILLed; after `start` it resumes them (the
# override's step timeout is 60 s, so they complete rather than time out).
K=(44444444-4444-4444-8444-44444444440{1,2,3,4})
# shellcheck disable=SC2016
inflight=$(dc run --rm -T --no-deps --entrypoint bash sagactl -c '
  set -e
  sagactl stock set B1 10 >/dev/null
  sagactl deposit kim 1000.00 >/dev/null
  sagactl fault set stock delay --method ReserveStock --delay 4000 >/dev/null
  for id in "$@"; do sagactl start kim B1 2 100.00 --id "$id" >/dev/null; done
  sagactl list --state RESERVING --json' _ "${K[@]}" | jq 'length')
check "sagas in flight before the kill" 4 "$inflight"
say "killing the orchestrator container ($inflight sagas RESERVING)"
dc kill orchestrator
ctl fault clear stock >/dev/null
[ "$(podman inspect --format '{{.State.Running}}' "$(cname orchestrator)")" = false ] ||
  fail "orchestrator still running after kill"
dc start orchestrator
wait_healthy orchestrator 60
say "orchestrator restarted; waiting for the sagas to finish"
deadline=$((SECONDS + 90))
while :; do
  report=$(ctl report --json)
  open=$(q '.summary.reserving + .summary.charging + .summary.shipping + .summary.refunding + .summary.releasing')
  [ "$open" = 0 ] && break
  [ "$SECONDS" -lt "$deadline" ] || fail "$open sagas still unfinished 90 s after the restart"
  sleep 1
done
resv=$(ctl stock list --reservations --json)
for id in "${K[@]}"; do
  check "resumed saga $id" "COMPLETED|" "$(q --arg id "$id" '.sagas[] | select(.saga_id == $id) | .state + "|" + .reason')"
done
check "attention" 0 "$(q '.summary.attention')"
check "B1 on hand" 2 "$(q '.stock[] | select(.sku == "B1") | .on_hand')"
check "B1 live reservations" "2,2,2,2" \
  "$(jq -r '[.reservations[] | select(.sku == "B1" and .status == "RESERVED") | .qty | tostring] | join(",")' <<<"$resv")"
check "kim balance" "600.00" "$(q '.accounts[] | select(.customer == "kim") | .balance')"
check "one charge per completed saga" "$(q '.summary.completed')" "$(q '.summary.charged')"
check "kim charges" 4 "$(q '[.charges[] | select(.customer == "kim" and .status == "CHARGED")] | length')"
check "one shipment per completed saga" "$(q '.summary.completed')" "$(ctl shipments --json | jq -r '.total')"
# Invariants of the semantics page: stock and money are conserved.
check "A1 conserved" 5 "$(q '.stock[] | select(.sku == "A1") | .on_hand + .reserved_qty')"
check "B1 conserved" 10 "$(q '.stock[] | select(.sku == "B1") | .on_hand + .reserved_qty')"
check "money conserved" "152000" \
  "$(q '([.accounts[].balance_minor] | add) + ([.charges[] | select(.status == "CHARGED") | .amount_minor] | add)')"
check "seed lab unchanged: ali" "300.00" "$(q '.accounts[] | select(.customer == "ali") | .balance')"
[ "$failures" -eq 0 ] || fail "$failures check(s) failed after the orchestrator kill"
say "PASSED"
# the closing line CI reads (after ctest's own summary of the main suite)
trap_summary="compose: $passes passed, 0 failed"
