#!/usr/bin/env bash
# A database link that stalls (issue 32, part 5; docs/operations.md, "A
# database link that stalls" and "The stop bound"): packets dropped, no
# reset, TCP still open, as in a network partition. The test runs in a
# network namespace of its own (unshare -n, as root), where nft drops every
# TCP packet to and from PostgreSQL's port; the participants and a second
# orchestrator (orch2) reach PostgreSQL over its Unix socket, which the rule
# leaves alone, and the orchestrators under test over TCP.
#   1. `victim` (--db-link-timeout 4000) leads the report and the retention.
#      Before the stall both ends of its connections carry a keepalive timer
#      (ss). Its link stalls: orch2 takes both leads within the stated time
#      (4 s + 1 s + the jobs' 0.3 s: docs/operations.md), the advisory locks
#      7111 and 7112 are then held by socket sessions and the victim's
#      backends are gone (pg_locks, pg_stat_activity); the victim says it no
#      longer leads (its own bound); SIGTERM ends it within --stop-timeout.
#   2. `victim2` with keepalives=0 tcp_user_timeout=0 in its conninfo (kept:
#      its sockets carry no keepalive timer) and a link timeout of 60 s: its
#      link stalls, its threads wait in libpq for good (no state change of
#      its sessions for 1.5 s while it sweeps every 100 ms); SIGTERM ends it
#      by the stop bound (the line says so) within --stop-timeout (2 s).
# Each exit is asserted within --stop-timeout + 5 s and the times printed.
set -euo pipefail
if [ "${DB_STALL_NETNS:-}" != 1 ]; then
  command -v nft >/dev/null || { echo "nft is missing (apt-get install nftables): skipped"; exit 77; }
  unshare -n true 2>/dev/null || { echo "no network namespace (needs root): skipped"; exit 77; }
  exec unshare -n env DB_STALL_NETNS=1 bash "$0" "$@"
fi
ip link set lo up
source "$(dirname "$0")/../lib/stack.sh"

pg_socket_setup() {
  PG_PORT=$(PG_FAST=1 bash "$STACK_ROOT/scripts/pg.sh" start "$STACK_DIR/pg")
  PG_CONN="host=$STACK_DIR/pg port=$PG_PORT user=postgres"
}
STACK_PG_SETUP=pg_socket_setup
psql_db() { psql -h "$STACK_DIR/pg" -p "$PG_PORT" -U postgres -d "$1" -qAtc "$2"; }
ORCH_FLAGS="--report-interval 300 --gauge-interval 300 --retention-interval 300 --db-link-timeout 4000 --stop-timeout 3000"
stack_start
stack_kill orchestratord # the stack's own, on the socket: the victim must lead
TCP_DB="host=127.0.0.1 port=$PG_PORT user=postgres dbname=sagas_orchestrator"

now_ms() { echo $(($(date +%s%N) / 1000000)); }
logged() { grep -qF -- "$2" "$STACK_DIR/$1.log"; }
REPORT="the report of stuck sagas and the database gauges"
RETENTION="the retention of finished sagas"
stall() {
  nft add table inet stall
  nft add chain inet stall out '{ type filter hook output priority 0; }'
  nft add rule inet stall out tcp dport "$PG_PORT" drop
  nft add rule inet stall out tcp sport "$PG_PORT" drop
}
unstall() { nft delete table inet stall; }
# the TCP sockets of PostgreSQL's port: the server's ends or the clients'
server_ends() { ss -tnoH state established "( sport = :$PG_PORT )"; }
client_ends() { ss -tnoH state established "( dport = :$PG_PORT )"; }
# stop_and_time NAME: SIGTERM, waits for the exit; prints the ms it took
stop_and_time() {
  local pid=${STACK_PID_OF[$1]} t0
  t0=$(now_ms)
  kill -TERM "$pid"
  while kill -0 "$pid" 2>/dev/null && [ $(($(now_ms) - t0)) -lt 60000 ]; do sleep 0.02; done
  echo $(($(now_ms) - t0))
  kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  unset "STACK_PID_OF[$1]"
}

# ---- 1. the leads move; the victim stops leading; SIGTERM ----
stack_start_orchestrator_as victim --db "$TCP_DB"
wait_until 30 logged victim "now leading $REPORT"
wait_until 30 logged victim "now leading $RETENTION"
stack_start_orchestrator_as orch2
wait_until 30 logged orch2 "another process leads $REPORT"
wait_until 30 logged orch2 "another process leads $RETENTION"
n_tcp=$(client_ends | wc -l)
echo "victim: $n_tcp TCP connections to PostgreSQL"
# one snapshot at a time (the count and the timers of the same moment): an
# end sending at that moment shows its retransmission timer instead of its
# keepalive one (the sweep queries every 100 ms), so a snapshot with every
# end idle is waited for; an end without keepalives never shows one
keepalive_snapshot() {
  local snap
  snap=$(client_ends)
  echo "$(grep -c . <<<"$snap")|$(grep -c 'timer:(keepalive' <<<"$snap" || true)"
}
k=$(keepalive_snapshot)
for _ in $(seq 1 100); do
  [ "${k%|*}" = "${k#*|}" ] && break
  sleep 0.1
  k=$(keepalive_snapshot)
done
assert_eq "the victim's connections carry keepalives" "${k%|*}" "${k#*|}"
# the server's ends: the sessions set tcp_keepalives_idle to 2 s (the
# server's default here is the kernel's 7200 s); an end sending at that
# moment shows its retransmission timer instead
server_ends | sed 's/^/server end: /'
keep_s() { grep -oE 'timer:\(keepalive,[0-9.]+(ms|sec|min)' | awk -F, '{v=$2; s=(v ~ /ms$/) ? v/1000 : (v ~ /min$/) ? v*60 : v+0; print s}'; }
assert_eq "no server end keeps the 7200 s default" 0 "$(server_ends | keep_s | awk '$1 > 2.1' | wc -l)"
assert_eq "the server's ends idle 2 s" yes "$([ "$(server_ends | keep_s | awk '$1 <= 2.1' | wc -l)" -ge $((n_tcp / 2)) ] && echo yes || echo no)"
stall
t0=$(now_ms)
_orch2_leads() { logged orch2 "now leading $REPORT" && logged orch2 "now leading $RETENTION"; }
wait_until 60 _orch2_leads
moved=$(($(now_ms) - t0))
echo "leadership moved after $moved ms (stated: within 5300 ms)"
assert_eq "both leads moved within the stated time + 5 s" yes "$([ "$moved" -le 10300 ] && echo yes || echo "no: $moved ms")"
# the locks, read from the database: held by socket sessions (orch2's),
# none by a TCP session
locks() {
  psql_db sagas_orchestrator "SELECT count(*) FILTER (WHERE a.client_addr IS NULL), count(*)
    FROM pg_locks l JOIN pg_stat_activity a USING (pid)
    WHERE l.locktype = 'advisory' AND l.objid IN (7111, 7112) AND l.granted
      AND a.datname = 'sagas_orchestrator'"
}
assert_eq "locks 7111 and 7112 held by orch2's socket sessions, by no other" "2|2" "$(locks)"
_no_tcp_backend() {
  [ "$(psql_db sagas_orchestrator "SELECT count(*) FROM pg_stat_activity WHERE client_addr IS NOT NULL")" = 0 ]
}
wait_until 30 _no_tcp_backend
assert_eq "the victim's backends ended by the server" 0 \
  "$(psql_db sagas_orchestrator "SELECT count(*) FROM pg_stat_activity WHERE client_addr IS NOT NULL")"
wait_until 30 logged victim "no longer leading $REPORT"
lost=$(($(now_ms) - t0))
echo "the victim said it no longer leads the report after at most $lost ms"
assert_eq "the victim's own bound" yes "$([ "$lost" -le 15000 ] && echo yes || echo "no: $lost ms")"
grep -F "no longer leading" "$STACK_DIR/victim.log" || true
took=$(stop_and_time victim)
echo "victim: SIGTERM during the stall, exited after $took ms (--stop-timeout 3000)"
assert_eq "the victim exited within --stop-timeout + 5 s" yes "$([ "$took" -le 8000 ] && echo yes || echo "no: $took ms")"
assert_eq "orch2 still leads the report" 1 "$(grep -cF "now leading $REPORT" "$STACK_DIR/orch2.log")"
unstall

# ---- 2. no keepalives (the conninfo's own keywords), threads in libpq ----
stack_start_orchestrator_as victim2 --db "$TCP_DB keepalives=0 tcp_user_timeout=0" \
  --db-link-timeout 60000 --stop-timeout 2000 --sweep-interval 100
_victim2_sessions() {
  [ "$(psql_db sagas_orchestrator "SELECT count(*) FROM pg_stat_activity WHERE client_addr IS NOT NULL")" -ge 2 ]
}
wait_until 30 _victim2_sessions
n_tcp=$(client_ends | wc -l)
assert_eq "victim2's conninfo kept: no keepalive on its $n_tcp connections" 0 \
  "$(client_ends | grep -c 'timer:(keepalive' || true)"
stall
_blocked() {
  [ "$(psql_db sagas_orchestrator "SELECT count(*) FILTER (WHERE state_change > now() - interval '1.5 s') || ' ' || count(*)
       FROM pg_stat_activity WHERE client_addr IS NOT NULL")" = "0 $n_tcp" ]
}
wait_until 30 _blocked
echo "victim2: its $n_tcp sessions idle for 1.5 s (it sweeps every 100 ms): its threads wait in libpq"
took=$(stop_and_time victim2)
echo "victim2: SIGTERM during the stall, exited after $took ms (--stop-timeout 2000)"
assert_eq "victim2 exited within --stop-timeout + 5 s" yes "$([ "$took" -le 7000 ] && echo yes || echo "no: $took ms")"
assert_eq "victim2 ended by the stop bound" 1 \
  "$(grep -cF "could not stop within 2000 ms (stop-timeout)" "$STACK_DIR/victim2.log")"
unstall
finish
