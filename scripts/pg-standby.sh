#!/usr/bin/env bash
# A streaming standby of a throwaway cluster of scripts/pg.sh, for the
# failover test and for trying docs/operations.md ("PostgreSQL failover")
# by hand:
#   scripts/pg-standby.sh start PRIMARY_DIR DIR [PORT]
#       pg_basebackup -R of the running cluster in PRIMARY_DIR (started by
#       pg.sh, PG_FAST unset) into DIR, started on a free loopback port; then
#       made the primary's SYNCHRONOUS standby (synchronous_standby_names on
#       the primary, reloaded) and waited for until the primary reports it
#       `sync`. Prints PORT.
#   scripts/pg-standby.sh crash DIR     pg_ctl stop -m immediate (a crash:
#                                       no checkpoint, nothing flushed)
#   scripts/pg-standby.sh promote DIR   pg_ctl promote, waiting until the
#                                       standby takes writes
#   scripts/pg.sh stop DIR              stops a standby as any cluster
# From the moment `start` returns, a COMMIT the primary acknowledges is on
# the standby's disk too (synchronous_commit = on, the default, which
# PG_FAST=1 would turn off: this script refuses such a primary). The
# standby's own synchronous_standby_names stays empty, so once promoted,
# with no standby of its own, it takes writes at once.
# As root, the clusters belong to Debian's `postgres` user (as pg.sh).
set -euo pipefail

usage="usage: pg-standby.sh start PRIMARY_DIR DIR [PORT] | crash DIR | promote DIR"
cmd=${1:?$usage}

bindir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
[ -n "$bindir" ] || { echo "pg-standby.sh: no PostgreSQL server found under /usr/lib/postgresql" >&2; exit 1; }

as_owner() {
  if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

# shellcheck source=scripts/ports.sh
. "$(dirname "$0")/ports.sh"

q() { # q PORT SQL: one value from the cluster on PORT
  psql -h 127.0.0.1 -p "$1" -U postgres -d postgres -qAtc "$2"
}

case "$cmd" in
start)
  primary=${2:?$usage}
  dir=${3:?$usage}
  pport=$(cat "$primary/port")
  for s in fsync synchronous_commit; do
    [ "$(q "$pport" "SHOW $s")" = on ] ||
      { echo "pg-standby.sh: the primary runs with $s off (PG_FAST=1?): refused" >&2; exit 1; }
  done
  mkdir -p "$dir"
  [ "$(id -u)" -eq 0 ] && chown postgres "$dir"
  # -R: standby.signal and primary_conninfo (host and port of the primary);
  # -X stream: the WAL written during the copy comes along
  as_owner "$bindir/pg_basebackup" -h 127.0.0.1 -p "$pport" -U postgres -D "$dir/data" \
    -R -X stream -c fast >"$dir/basebackup.log" 2>&1 ||
    { cat "$dir/basebackup.log" >&2; exit 1; }
  port=${4:-}
  [ -n "$port" ] || port=$(free_port) # claimed for $SAGAS_PORT_OWNER (scripts/ports.sh)
  # the primary's options of pg.sh, with the socket in this folder; the
  # name is what the primary's pg_stat_replication shows
  opts="-p $port -c listen_addresses=127.0.0.1 -c unix_socket_directories=$dir"
  opts="$opts -c max_connections=200 -c cluster_name=sagas_standby"
  as_owner "$bindir/pg_ctl" -D "$dir/data" -o "$opts" -l "$dir/server.log" -w -t 60 start >/dev/null ||
    { tail -20 "$dir/server.log" >&2; exit 1; }
  echo "$port" >"$dir/port"
  # only now, with the standby streaming: set on the primary before, every
  # commit (the databases' creation) would wait for a standby not there yet
  q "$pport" "ALTER SYSTEM SET synchronous_standby_names = 'sagas_standby'" >/dev/null
  q "$pport" "SELECT pg_reload_conf()" >/dev/null
  for _ in $(seq 1 600); do # up to 30 s
    [ "$(q "$pport" "SELECT count(*) FROM pg_stat_replication WHERE application_name = 'sagas_standby' AND sync_state = 'sync' AND state = 'streaming'")" = 1 ] &&
      { echo "$port"; exit 0; }
    sleep 0.05
  done
  echo "pg-standby.sh: the standby on port $port did not become the primary's synchronous standby" >&2
  tail -20 "$dir/server.log" >&2
  exit 1
  ;;
crash)
  dir=${2:?$usage}
  as_owner "$bindir/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null
  ;;
promote)
  dir=${2:?$usage}
  as_owner "$bindir/pg_ctl" -D "$dir/data" -w -t 60 promote >/dev/null
  port=$(cat "$dir/port")
  for _ in $(seq 1 600); do # pg_ctl -w waited already; this is a check
    [ "$(q "$port" "SELECT pg_is_in_recovery()")" = f ] && exit 0
    sleep 0.05
  done
  echo "pg-standby.sh: the standby on port $port is still in recovery after promote" >&2
  exit 1
  ;;
*)
  echo "$usage" >&2
  exit 2
  ;;
esac
