# shellcheck shell=bash
# The whole system on one machine, for the demo and the integration tests:
# a throwaway PostgreSQL cluster and the four daemons on free loopback
# ports, stopped again on exit (also when interrupted).
#
#   source tests/lib/stack.sh
#   stack_start            # uses $SAGA_BIN_DIR (default build/bin)
#   ctl start ali A1 2 200.00 --wait
#   stack_stop             # also run by the EXIT trap
#
# Extra daemon flags: ORCH_FLAGS, STOCK_FLAGS, PAYMENT_FLAGS, SHIPPING_FLAGS
# (word-split). A command to start a daemon under: ORCH_WRAP, STOCK_WRAP,
# PAYMENT_WRAP, SHIPPING_WRAP
# (word-split; it must exec the daemon, so the pid is the daemon's), e.g.
# "$(skewed_clock +10m)" for a wall clock ten minutes ahead.
# Logs and the cluster live in $STACK_DIR (a new folder under /tmp), kept
# when KEEP_STACK=1.
#
# STACK_TLS=1: every link is mutual TLS, as docs/security.md deploys it:
# certificates made by scripts/make-certs.sh in $STACK_DIR/certs, each
# daemon with a second listener for the admin role ($ORCH_ADMIN_URL,
# $STOCK_ADMIN_URL, $PAYMENT_ADMIN_URL, $SHIPPING_ADMIN_URL), and `ctl` speaking to those with
# the admin certificate. Without it the daemons listen on plain loopback
# (every role on one listener) and the *_ADMIN_URL are the *_URL.
# The server certificates all name localhost and 127.0.0.1 (STACK_CERT_HOSTS,
# make-certs.sh's bare hosts: one machine, where any daemon's key could
# serve as any other). STACK_TLS_NAMES=1 (with STACK_TLS=1): each certificate
# names only its daemon (make-certs.sh without hosts), and every URL a
# caller dials (STOCK_URL, ..., ORCH_URL, the *_ADMIN_URL and
# STACK_ADMIN_URL_OF) ends in ?server_name=DAEMON (stockd, orchestratord,
# ...): the name its server's certificate must hold (docs/security.md);
# the listeners take the URL without it (_stack_listen_url).
# STACK_FAULTS=1: the daemons start with --enable-fault-injection (tests
# that arm faults; off otherwise, as in production).
# STACK_PG_SETUP=FUNCTION: a shell function run instead of starting the one
# cluster ($STACK_DIR/pg, scripts/pg.sh), e.g. a primary and its standby
# (tests/integration/pg_failover.sh). It must set PG_PORT (the server that
# psql_db reads) and PG_CONN (the daemons' conninfo, before " dbname=...").
# stack_stop stops every cluster in a folder $STACK_DIR/pg*.
# STACK_REPLICAS=N (default 1): N processes of each participant on its one
# database (docs/operations.md, "Replicas"), each on its own port, named
# stockd, stockd2, ... (their logs $STACK_DIR/NAME.log, their pids
# ${STACK_PID_OF[NAME]}, their URLs ${STACK_URL_OF[NAME]}); STOCK_URL,
# PAYMENT_URL and SHIPPING_URL (and the *_ADMIN_URL) are then the
# comma-separated lists the orchestrator and sagactl take.
# stack_start_stock [I] (and _payment, _shipping) starts replica I again
# (default 1) after stack_kill.
# STACK_GATEWAY=1: gatewayd (the HTTP/JSON API, docs/protocol.md) starts
# too, last, with its client listener on $GATEWAY_URL and its admin one on
# $GATEWAY_ADMIN_URL (both http://127.0.0.1:PORT), calling the
# orchestrator on $ORCH_URL (client role) and $ORCH_ADMIN_URL (admin role;
# with the client's and the admin's certificates under STACK_TLS=1); extra
# flags GATEWAY_FLAGS and a wrapper GATEWAY_WRAP (word-split, as the
# others'); `stack_start_gateway` starts it again
# after `stack_kill gatewayd`.
# Metrics: every daemon NAME serves GET /metrics on a port of its own,
# ${STACK_METRICS_URL_OF[NAME]} (http://127.0.0.1:PORT; kept across a
# restart of NAME); `stack_metrics NAME` prints its page.

STACK_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
SAGA_BIN_DIR=${SAGA_BIN_DIR:-$STACK_ROOT/build/bin}
STACK_DIR=""
STACK_PIDS=()
declare -A STACK_PID_OF
# per daemon name (stockd, stockd2, ...): its port, URL and admin URL
declare -A STACK_PORT_OF STACK_URL_OF STACK_ADMIN_URL_OF
# per daemon name: the http:// URL of its --metrics-listen
declare -A STACK_METRICS_URL_OF

# Ports: free and claimed for this test (scripts/ports.sh), so tests running
# at once never draw the same one; released by stack_stop.
export SAGAS_PORT_OWNER=${SAGAS_PORT_OWNER:-$$}
# under ASan (make asan): libnng 1.5.2 loses a request frame when a peer's
# connection dies mid-send (tests/lib/lsan-nng.supp says how); the tests
# that kill daemons under load would otherwise fail on that library leak
export LSAN_OPTIONS="${LSAN_OPTIONS:+$LSAN_OPTIONS:}suppressions=$STACK_ROOT/tests/lib/lsan-nng.supp"
# shellcheck source=scripts/ports.sh
. "$STACK_ROOT/scripts/ports.sh"
_stack_port_free() { port_free "$1"; }
_stack_free_port() { free_port; }

# wait_until TIMEOUT_S CMD...: polls CMD every 50 ms until it succeeds;
# fails after TIMEOUT_S seconds. The way tests wait (never a fixed sleep).
wait_until() {
  local timeout=$1; shift
  local deadline=$((SECONDS + timeout))
  until "$@" >/dev/null 2>&1; do
    if [ "$SECONDS" -ge "$deadline" ]; then
      echo "wait_until: timed out after ${timeout}s: $*" >&2
      return 1
    fi
    sleep 0.05
  done
}

# ctl ARGS...: sagactl against this stack (as the admin role under
# STACK_TLS=1).
ctl() {
  "$SAGA_BIN_DIR/sagactl" --orchestrator "$ORCH_ADMIN_URL" --stock "$STOCK_ADMIN_URL" \
    --payment "$PAYMENT_ADMIN_URL" --shipping "$SHIPPING_ADMIN_URL" \
    ${STACK_CTL_TLS[@]+"${STACK_CTL_TLS[@]}"} "$@"
}

# tls_flags ROLE: sagactl's TLS options for a certificate of ROLE
# (orchestrator, admin, client) of this stack (STACK_TLS=1).
tls_flags() {
  echo "--tls-ca $STACK_DIR/certs/ca-server.crt --tls-cert $STACK_DIR/certs/$1.crt" \
    "--tls-key $STACK_DIR/certs/$1.key"
}

# _stack_common_flags NAME [ADMIN_URL [INSTANCE]]: the flags every daemon NAME
# (orchestratord, stockd, paymentd, shippingd) gets from STACK_TLS and
# STACK_FAULTS; a participant's replica gets its own ADMIN_URL.
_stack_common_flags() {
  local name=$1 c="$STACK_DIR/certs"
  # (a build from before the metrics has no --metrics-listen: bench/ab.sh;
  # no pipe into grep -q here: under pipefail its early exit fails the test)
  if [[ "$("$SAGA_BIN_DIR/$name" --help 2>&1)" == *--metrics-listen* ]]; then
    printf '%s\n' --metrics-listen "${STACK_METRICS_URL_OF[${3:-$name}]}"
  fi
  [ "${STACK_FAULTS:-0}" = 1 ] && printf '%s\n' --enable-fault-injection
  [ "${STACK_TLS:-0}" = 1 ] || return 0
  local admin_url role_ca=ca-orchestrator
  case $name in
  orchestratord) admin_url=$(_stack_listen_url "$ORCH_ADMIN_URL") role_ca=ca-client ;;
  *) admin_url=$(_stack_listen_url "$2") ;;
  esac
  printf '%s\n' --admin-listen "$admin_url" --tls-cert "$c/$name.crt" --tls-key "$c/$name.key" \
    --tls-ca "$c/$role_ca.crt" --admin-tls-ca "$c/ca-admin.crt"
  if [ "$name" = orchestratord ]; then
    printf '%s\n' --participant-tls-cert "$c/orchestrator.crt" \
      --participant-tls-key "$c/orchestrator.key" --participant-tls-ca "$c/ca-server.crt"
  fi
}

_stack_listening() { ! _stack_port_free "$1"; }

# _stack_dial_url URL DAEMON: URL as callers dial it: with
# ?server_name=DAEMON under STACK_TLS_NAMES=1, else URL.
_stack_dial_url() {
  if [ "${STACK_TLS_NAMES:-0}" = 1 ]; then echo "$1?server_name=$2"; else echo "$1"; fi
}

# _stack_listen_url URL: URL without its ?server_name= (a listener's).
_stack_listen_url() { echo "${1%%\?*}"; }

# skewed_clock OFFSET: prints a wrapper (for ORCH_WRAP and the others) that
# runs a daemon with its wall clock moved by OFFSET (libfaketime: "+10m",
# "-1h"), its monotonic clock left alone, as a host whose clock is off.
skewed_clock() {
  local lib
  for lib in /usr/lib/*/faketime/libfaketimeMT.so.1 /usr/lib/faketime/libfaketimeMT.so.1; do
    if [ -e "$lib" ]; then
      # under ASan (make asan) the preloaded library comes before ASan's
      # runtime, which ASan refuses unless told that this is fine
      echo "env LD_PRELOAD=$lib FAKETIME=$1 FAKETIME_DONT_FAKE_MONOTONIC=1 FAKETIME_NO_CACHE=1" \
        "ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0"
      return 0
    fi
  done
  echo "stack: libfaketime is missing (apt-get install libfaketime)" >&2
  return 1
}

# _stack_daemon NAME PORT CMD...: starts a daemon in the background with its
# log in $STACK_DIR/NAME.log and waits until its port accepts connections.
_stack_daemon() {
  local name=$1 port=$2; shift 2
  "$@" >>"$STACK_DIR/$name.log" 2>&1 &
  local pid=$!
  STACK_PIDS+=("$pid")
  STACK_PID_OF[$name]=$pid
  local deadline=$((SECONDS + 30))
  until _stack_listening "$port"; do
    if ! kill -0 "$pid" 2>/dev/null || [ "$SECONDS" -ge "$deadline" ]; then
      echo "stack: $name did not start; its log:" >&2
      tail -20 "$STACK_DIR/$name.log" >&2
      return 1
    fi
    sleep 0.05
  done
}

# _stack_metrics_url NAME: gives daemon NAME a metrics port the first time.
_stack_metrics_url() {
  [ -n "${STACK_METRICS_URL_OF[$1]:-}" ] || STACK_METRICS_URL_OF[$1]="http://127.0.0.1:$(_stack_free_port)"
}

# stack_metrics NAME: the /metrics page of daemon NAME (curl, 5 s at most).
stack_metrics() {
  curl -sf --max-time 5 "${STACK_METRICS_URL_OF[$1]:?stack_metrics: no daemon $1}/metrics"
}

stack_start_orchestrator() {
  local common
  _stack_metrics_url orchestratord
  mapfile -t common < <(_stack_common_flags orchestratord)
  # shellcheck disable=SC2086
  _stack_daemon orchestratord "$ORCH_PORT" ${ORCH_WRAP:-} "$SAGA_BIN_DIR/orchestratord" \
    --listen "$(_stack_listen_url "$ORCH_URL")" --stock "$STOCK_URL" --payment "$PAYMENT_URL" --shipping "$SHIPPING_URL" \
    --db "$PG_CONN dbname=sagas_orchestrator" ${common[@]+"${common[@]}"} ${ORCH_FLAGS:-}
}

# stack_start_orchestrator_as NAME [FLAGS...]: one more orchestratord on
# the stack's database and participants (several orchestrators, issue 20),
# on a port of its own, with ORCH_FLAGS, ORCH_WRAP, STACK_TLS and
# STACK_FAULTS as the first one, then FLAGS (a later flag wins: e.g.
# --stock URL). Its log is $STACK_DIR/NAME.log, its pid
# ${STACK_PID_OF[NAME]} (stack_kill NAME), its URL ${STACK_URL_OF[NAME]}
# and ${STACK_ADMIN_URL_OF[NAME]}; `ctl_on NAME ARGS...` is sagactl
# against it.
stack_start_orchestrator_as() {
  local name=$1; shift
  local port scheme=tcp common
  port=$(_stack_free_port)
  [ "${STACK_TLS:-0}" = 1 ] && scheme=tls+tcp
  STACK_URL_OF[$name]="$scheme://127.0.0.1:$port"
  STACK_ADMIN_URL_OF[$name]=${STACK_URL_OF[$name]}
  if [ "${STACK_TLS:-0}" = 1 ]; then
    STACK_ADMIN_URL_OF[$name]=$(_stack_dial_url "$scheme://127.0.0.1:$(_stack_free_port)" orchestratord)
  fi
  _stack_metrics_url "$name"
  mapfile -t common < <(ORCH_ADMIN_URL=${STACK_ADMIN_URL_OF[$name]} _stack_common_flags orchestratord "" "$name")
  # shellcheck disable=SC2086
  _stack_daemon "$name" "$port" ${ORCH_WRAP:-} "$SAGA_BIN_DIR/orchestratord" \
    --listen "${STACK_URL_OF[$name]}" --stock "$STOCK_URL" --payment "$PAYMENT_URL" \
    --shipping "$SHIPPING_URL" --db "$PG_CONN dbname=sagas_orchestrator" \
    ${common[@]+"${common[@]}"} ${ORCH_FLAGS:-} "$@"
}

# ctl_on NAME ARGS...: ctl against the orchestratord NAME started by
# stack_start_orchestrator_as (the participants as ctl's).
ctl_on() {
  local name=$1; shift
  ORCH_ADMIN_URL=${STACK_ADMIN_URL_OF[$name]:?ctl_on: no orchestrator $name} ctl "$@"
}

# _stack_replica_name BASE I: the name of replica I of daemon BASE
# (stockd, stockd2, ...).
_stack_replica_name() {
  if [ "$2" = 1 ]; then echo "$1"; else echo "$1$2"; fi
}

# _stack_start_participant BASE I DBNAME WRAP FLAGS: starts replica I of
# participant BASE on database DBNAME.
_stack_start_participant() {
  local base=$1 i=$2 db=$3 wrap=$4 flags=$5 name common
  name=$(_stack_replica_name "$base" "$i")
  _stack_metrics_url "$name"
  mapfile -t common < <(_stack_common_flags "$base" "${STACK_ADMIN_URL_OF[$name]}" "$name")
  # shellcheck disable=SC2086
  _stack_daemon "$name" "${STACK_PORT_OF[$name]}" $wrap "$SAGA_BIN_DIR/$base" \
    --listen "${STACK_URL_OF[$name]}" --db "$PG_CONN dbname=$db" ${common[@]+"${common[@]}"} $flags
}

# stack_start_gateway: starts gatewayd (STACK_GATEWAY=1) on the stack's
# orchestrator; its ports are claimed the first time.
stack_start_gateway() {
  local c="$STACK_DIR/certs" tls=()
  [ -n "${GATEWAY_PORT:-}" ] || GATEWAY_PORT=$(_stack_free_port)
  [ -n "${GATEWAY_ADMIN_PORT:-}" ] || GATEWAY_ADMIN_PORT=$(_stack_free_port)
  GATEWAY_URL="http://127.0.0.1:$GATEWAY_PORT"
  GATEWAY_ADMIN_URL="http://127.0.0.1:$GATEWAY_ADMIN_PORT"
  export GATEWAY_URL GATEWAY_ADMIN_URL
  if [ "${STACK_TLS:-0}" = 1 ]; then
    tls=(--orchestrator-tls-ca "$c/ca-server.crt" --orchestrator-tls-cert "$c/client.crt"
      --orchestrator-tls-key "$c/client.key" --orchestrator-admin-tls-cert "$c/admin.crt"
      --orchestrator-admin-tls-key "$c/admin.key")
  fi
  _stack_metrics_url gatewayd
  # shellcheck disable=SC2086
  _stack_daemon gatewayd "$GATEWAY_PORT" ${GATEWAY_WRAP:-} "$SAGA_BIN_DIR/gatewayd" --listen "$GATEWAY_URL" \
    --admin-listen "$GATEWAY_ADMIN_URL" --metrics-listen "${STACK_METRICS_URL_OF[gatewayd]}" \
    --orchestrator "$ORCH_URL" \
    --orchestrator-admin "$ORCH_ADMIN_URL" ${tls[@]+"${tls[@]}"} ${GATEWAY_FLAGS:-}
  wait_until 10 _stack_listening "$GATEWAY_ADMIN_PORT"
}

stack_start_stock() {
  _stack_start_participant stockd "${1:-1}" sagas_stock "${STOCK_WRAP:-}" "${STOCK_FLAGS:-}"
}

stack_start_payment() {
  _stack_start_participant paymentd "${1:-1}" sagas_payment "${PAYMENT_WRAP:-}" "${PAYMENT_FLAGS:-}"
}

stack_start_shipping() {
  _stack_start_participant shippingd "${1:-1}" sagas_shipping "${SHIPPING_WRAP:-}" \
    "${SHIPPING_FLAGS:-}"
}

# stack_kill NAME [SIGNAL]: signals a daemon (default TERM) and waits for it.
stack_kill() {
  local name=$1 sig=${2:-TERM} pid=${STACK_PID_OF[$1]:-}
  [ -n "$pid" ] || return 0
  kill "-$sig" "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  unset "STACK_PID_OF[$name]"
}

stack_start() {
  # sagacmd's commands (tests/tools/sagacmd.c) carry one saga start for the
  # whole test unless it says otherwise: a saga is its id and its start
  # (rule R5), so the commands a test sends by hand for one saga id are one
  # saga's (started_of gives an orchestrator's saga's own)
  export SAGACMD_STARTED_MS=${SAGACMD_STARTED_MS:-$(date +%s%3N)}
  for b in orchestratord stockd paymentd shippingd sagactl; do
    [ -x "$SAGA_BIN_DIR/$b" ] || { echo "stack: $SAGA_BIN_DIR/$b is missing: build first" >&2; return 1; }
  done
  STACK_DIR=$(mktemp -d /tmp/sagas-stack.XXXXXX)
  chmod 755 "$STACK_DIR"
  trap stack_stop EXIT
  trap 'stack_stop; exit 130' INT TERM
  if [ -n "${STACK_PG_SETUP:-}" ]; then
    "$STACK_PG_SETUP" || return 1
  else
    PG_PORT=$(PG_FAST=${PG_FAST:-1} bash "$STACK_ROOT/scripts/pg.sh" start "$STACK_DIR/pg")
    PG_CONN="host=127.0.0.1 port=$PG_PORT user=postgres"
  fi
  ORCH_PORT=$(_stack_free_port)
  STACK_CTL_TLS=()
  local scheme=tcp
  if [ "${STACK_TLS:-0}" = 1 ]; then
    local hosts=()
    [ "${STACK_TLS_NAMES:-0}" = 1 ] || read -ra hosts <<<"${STACK_CERT_HOSTS:-localhost 127.0.0.1}"
    bash "$STACK_ROOT/scripts/make-certs.sh" "$STACK_DIR/certs" ${hosts[@]+"${hosts[@]}"} >/dev/null
    scheme=tls+tcp
    ORCH_ADMIN_URL=$(_stack_dial_url "$scheme://127.0.0.1:$(_stack_free_port)" orchestratord)
    read -ra STACK_CTL_TLS <<<"$(tls_flags admin)"
  fi
  ORCH_URL="$scheme://127.0.0.1:$ORCH_PORT"
  [ "${STACK_TLS:-0}" = 1 ] && ORCH_URL=$(_stack_dial_url "$ORCH_URL" orchestratord)
  [ "${STACK_TLS:-0}" = 1 ] || ORCH_ADMIN_URL=$ORCH_URL
  # each participant's replicas: a port, a URL and an admin URL each; the
  # *_URL and *_ADMIN_URL are their lists
  local base i name port urls admins
  for base in stockd paymentd shippingd; do
    urls="" admins=""
    for i in $(seq 1 "${STACK_REPLICAS:-1}"); do
      name=$(_stack_replica_name "$base" "$i")
      port=$(_stack_free_port)
      STACK_PORT_OF[$name]=$port
      STACK_URL_OF[$name]="$scheme://127.0.0.1:$port"
      if [ "${STACK_TLS:-0}" = 1 ]; then
        STACK_ADMIN_URL_OF[$name]="$scheme://127.0.0.1:$(_stack_free_port)"
      else
        STACK_ADMIN_URL_OF[$name]=${STACK_URL_OF[$name]}
      fi
      if [ "${STACK_TLS:-0}" = 1 ]; then
        STACK_ADMIN_URL_OF[$name]=$(_stack_dial_url "${STACK_ADMIN_URL_OF[$name]}" "$base")
      fi
      urls+="${urls:+,}$(_stack_dial_url "${STACK_URL_OF[$name]}" "$base")"
      admins+="${admins:+,}${STACK_ADMIN_URL_OF[$name]}"
    done
    # shellcheck disable=SC2034 # the *_PORT: replica 1's, for the tests
    case $base in
    stockd) STOCK_PORT=${STACK_PORT_OF[stockd]} STOCK_URL=$urls STOCK_ADMIN_URL=$admins ;;
    paymentd) PAYMENT_PORT=${STACK_PORT_OF[paymentd]} PAYMENT_URL=$urls PAYMENT_ADMIN_URL=$admins ;;
    shippingd) SHIPPING_PORT=${STACK_PORT_OF[shippingd]} SHIPPING_URL=$urls SHIPPING_ADMIN_URL=$admins ;;
    esac
  done
  export ORCH_URL STOCK_URL PAYMENT_URL SHIPPING_URL ORCH_ADMIN_URL STOCK_ADMIN_URL \
    PAYMENT_ADMIN_URL SHIPPING_ADMIN_URL
  export PG_PORT PG_CONN STACK_DIR
  for i in $(seq 1 "${STACK_REPLICAS:-1}"); do
    stack_start_stock "$i"
    stack_start_payment "$i"
    stack_start_shipping "$i"
  done
  stack_start_orchestrator
  if [ "${STACK_GATEWAY:-0}" = 1 ]; then stack_start_gateway; fi
}

stack_stop() {
  trap - EXIT INT TERM
  local pid
  for pid in "${STACK_PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  # A daemon ends itself within its --stop-timeout (15 s) of SIGTERM; one
  # still there after 30 s is named, its log shown, and killed, so a hang
  # names its culprit instead of timing the whole test out.
  local name deadline=$((SECONDS + 30))
  for pid in "${STACK_PIDS[@]}"; do
    while kill -0 "$pid" 2>/dev/null && [ "$SECONDS" -lt "$deadline" ]; do sleep 0.05; done
    if kill -0 "$pid" 2>/dev/null; then
      for name in "${!STACK_PID_OF[@]}"; do
        [ "${STACK_PID_OF[$name]}" = "$pid" ] || continue
        echo "stack: $name (pid $pid) did not stop within 30 s of SIGTERM; killed. Its log:" >&2
        [ -n "$STACK_DIR" ] && tail -20 "$STACK_DIR/$name.log" >&2
      done
      kill -KILL "$pid" 2>/dev/null || true
    fi
    wait "$pid" 2>/dev/null || true
  done
  STACK_PIDS=()
  STACK_METRICS_URL_OF=()
  GATEWAY_PORT="" GATEWAY_ADMIN_PORT=""
  if [ -n "$STACK_DIR" ]; then
    local d
    for d in "$STACK_DIR"/pg*/; do
      if [ -d "$d" ]; then bash "$STACK_ROOT/scripts/pg.sh" stop "${d%/}"; fi
    done
    if [ "${KEEP_STACK:-0}" = 1 ]; then
      echo "stack: kept $STACK_DIR" >&2
    else
      rm -rf "$STACK_DIR"
    fi
    STACK_DIR=""
  fi
  ports_release
}

# psql_db DB SQL: one value (or rows) from a database of this stack.
psql_db() {
  psql -h 127.0.0.1 -p "$PG_PORT" -U postgres -d "$1" -qAtc "$2"
}

# ---- assertions: print what differed and fail the test ----
FAILURES=0
assert_eq() { # assert_eq WHAT EXPECTED ACTUAL
  if [ "$2" == "$3" ]; then
    echo "ok: $1 = $3"
  else
    echo "FAIL: $1: expected '$2', got '$3'" >&2
    FAILURES=$((FAILURES + 1))
  fi
}

# finish: exit non-zero when an assertion failed (keeps the logs).
finish() {
  if [ "$FAILURES" -ne 0 ]; then
    echo "$FAILURES assertion(s) failed; daemon logs:" >&2
    for f in "$STACK_DIR"/*.log; do echo "== $f" >&2; tail -30 "$f" >&2; done
    exit 1
  fi
  echo "all assertions passed"
}
