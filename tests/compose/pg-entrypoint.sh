#!/bin/bash
# Entrypoint of the test PostgreSQL image (tests/compose/postgres.Dockerfile):
# the official image's behaviour, cut down. On a new data directory: initdb
# (local connections trusted, TCP ones by scram-sha-256 password), run the
# init scripts against a server listening on the unix socket only, stop it.
# Then the server in the foreground; PGPORT chooses the port.
set -euo pipefail
: "${PGDATA:=/var/lib/postgresql/data}" "${POSTGRES_USER:=postgres}"
export PGDATA POSTGRES_USER
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  if [ -z "${POSTGRES_PASSWORD:-}" ]; then
    echo "pg-entrypoint: POSTGRES_PASSWORD is not set" >&2
    exit 1
  fi
  pw=$(mktemp)
  printf '%s\n' "$POSTGRES_PASSWORD" >"$pw"
  initdb -D "$PGDATA" -U "$POSTGRES_USER" --pwfile="$pw" -E UTF8 --locale=C.UTF-8 \
    --auth-local=trust --auth-host=scram-sha-256 >/dev/null
  rm -f "$pw"
  echo "host all all all scram-sha-256" >>"$PGDATA/pg_hba.conf"
  pg_ctl -D "$PGDATA" -w -o "-c listen_addresses=''" -l "$PGDATA/init.log" start >/dev/null
  for f in /docker-entrypoint-initdb.d/*; do
    case "$f" in
      *.sh) echo "pg-entrypoint: running $f"; bash "$f" ;;
      *.sql) echo "pg-entrypoint: running $f"; psql -v ON_ERROR_STOP=1 -U "$POSTGRES_USER" -d postgres -f "$f" ;;
      *) ;;
    esac
  done
  pg_ctl -D "$PGDATA" -w -m fast stop >/dev/null
fi
exec postgres -D "$PGDATA" -c listen_addresses="${POSTGRES_LISTEN:-*}" -c fsync=off \
  -c synchronous_commit=off -c full_page_writes=off
