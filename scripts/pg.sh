#!/usr/bin/env bash
# A throwaway PostgreSQL cluster in a folder of its own, on a free loopback
# port, with the four databases of the project.
#   scripts/pg.sh start DIR [PORT]   initdb (if needed) and start; prints PORT
#   scripts/pg.sh stop DIR           stop (fast) if running
# initdb refuses to run as root: as root the cluster belongs to Debian's
# `postgres` user. Debian keeps the server binaries off the PATH, in
# /usr/lib/postgresql/<version>/bin. Set PG_FAST=1 to turn fsync off (tests).
set -euo pipefail

cmd=${1:?usage: pg.sh start|stop DIR [PORT]}
dir=${2:?usage: pg.sh start|stop DIR [PORT]}

bindir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
[ -n "$bindir" ] || { echo "pg.sh: no PostgreSQL server found under /usr/lib/postgresql" >&2; exit 1; }

as_owner() {
  if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

# shellcheck source=scripts/ports.sh
. "$(dirname "$0")/ports.sh"

case "$cmd" in
start)
  mkdir -p "$dir"
  [ "$(id -u)" -eq 0 ] && chown postgres "$dir"
  if [ ! -f "$dir/data/PG_VERSION" ]; then
    as_owner "$bindir/initdb" -D "$dir/data" -U postgres --auth=trust --nosync \
      -E UTF8 --locale=C.UTF-8 >"$dir/initdb.log" 2>&1 ||
      { cat "$dir/initdb.log" >&2; exit 1; }
  fi
  port=${3:-}
  if [ -z "$port" ]; then
    port=$(free_port) # claimed for $SAGAS_PORT_OWNER (scripts/ports.sh)
  fi
  opts="-p $port -c listen_addresses=127.0.0.1 -c unix_socket_directories=$dir -c max_connections=200"
  [ "${PG_FAST:-0}" = 1 ] && opts="$opts -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
  opts="$opts ${PG_EXTRA_OPTS:-}" # e.g. -c shared_preload_libraries=pg_stat_statements (bench/profile)
  as_owner "$bindir/pg_ctl" -D "$dir/data" -o "$opts" -l "$dir/server.log" -w -t 60 start >/dev/null ||
    { tail -20 "$dir/server.log" >&2; exit 1; }
  for db in sagas_orchestrator sagas_stock sagas_payment sagas_shipping; do
    psql -h 127.0.0.1 -p "$port" -U postgres -d postgres -qAtc \
      "SELECT 1 FROM pg_database WHERE datname = '$db'" | grep -q 1 ||
      psql -h 127.0.0.1 -p "$port" -U postgres -d postgres -qc "CREATE DATABASE $db" >/dev/null
  done
  echo "$port" >"$dir/port"
  echo "$port"
  ;;
stop)
  if [ -f "$dir/data/postmaster.pid" ]; then
    as_owner "$bindir/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null 2>&1 || true
  fi
  ;;
*)
  echo "usage: pg.sh start|stop DIR [PORT]" >&2
  exit 2
  ;;
esac
