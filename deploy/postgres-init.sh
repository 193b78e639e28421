#!/bin/bash
# PostgreSQL init script (mounted into /docker-entrypoint-initdb.d/, run once
# when the data directory is new): one database and one login role per
# daemon. Each role owns its database and can connect to it and to nothing
# else: CONNECT is revoked from PUBLIC on every database, the four sagas_*
# ones and the defaults (postgres, template1) alike.
#
# Passwords come from the environment (compose.yaml takes them from .env):
#   SAGA_ORCHESTRATOR_DB_PASSWORD, SAGA_STOCK_DB_PASSWORD, SAGA_PAYMENT_DB_PASSWORD,
#   SAGA_SHIPPING_DB_PASSWORD
set -euo pipefail

# (compose's check-env service refuses them before this runs; here too for
# a server set up without it)
for v in POSTGRES_PASSWORD SAGA_ORCHESTRATOR_DB_PASSWORD SAGA_STOCK_DB_PASSWORD \
  SAGA_PAYMENT_DB_PASSWORD SAGA_SHIPPING_DB_PASSWORD; do
  if [ -z "${!v:-}" ]; then
    echo "postgres-init: $v is not set" >&2
    exit 1
  fi
  case ${!v} in change-me*)
    echo "postgres-init: $v is still .env.example's placeholder: set a password of your own" >&2
    exit 1
    ;;
  esac
done

psql -v ON_ERROR_STOP=1 --no-psqlrc --username "${POSTGRES_USER:-postgres}" \
  --dbname "${POSTGRES_DB:-${POSTGRES_USER:-postgres}}" \
  -v orchestrator_pw="$SAGA_ORCHESTRATOR_DB_PASSWORD" \
  -v stock_pw="$SAGA_STOCK_DB_PASSWORD" \
  -v payment_pw="$SAGA_PAYMENT_DB_PASSWORD" \
  -v shipping_pw="$SAGA_SHIPPING_DB_PASSWORD" <<'EOSQL'
CREATE ROLE saga_orchestrator LOGIN PASSWORD :'orchestrator_pw';
CREATE ROLE saga_stock        LOGIN PASSWORD :'stock_pw';
CREATE ROLE saga_payment      LOGIN PASSWORD :'payment_pw';
CREATE ROLE saga_shipping     LOGIN PASSWORD :'shipping_pw';

CREATE DATABASE sagas_orchestrator OWNER saga_orchestrator;
CREATE DATABASE sagas_stock        OWNER saga_stock;
CREATE DATABASE sagas_payment      OWNER saga_payment;
CREATE DATABASE sagas_shipping     OWNER saga_shipping;

REVOKE ALL ON DATABASE sagas_orchestrator FROM PUBLIC;
REVOKE ALL ON DATABASE sagas_stock        FROM PUBLIC;
REVOKE ALL ON DATABASE sagas_payment      FROM PUBLIC;
REVOKE ALL ON DATABASE sagas_shipping     FROM PUBLIC;
REVOKE CONNECT ON DATABASE postgres  FROM PUBLIC;
REVOKE CONNECT ON DATABASE template1 FROM PUBLIC;

GRANT CONNECT, TEMPORARY ON DATABASE sagas_orchestrator TO saga_orchestrator;
GRANT CONNECT, TEMPORARY ON DATABASE sagas_stock        TO saga_stock;
GRANT CONNECT, TEMPORARY ON DATABASE sagas_payment      TO saga_payment;
GRANT CONNECT, TEMPORARY ON DATABASE sagas_shipping     TO saga_shipping;
EOSQL

# Each database's public schema belongs to its role (PostgreSQL 15+ already
# gives it to the database owner; explicit for older servers).
for d in orchestrator stock payment shipping; do
  psql -v ON_ERROR_STOP=1 --no-psqlrc --username "${POSTGRES_USER:-postgres}" --dbname "sagas_$d" \
    -c "ALTER SCHEMA public OWNER TO saga_$d; REVOKE ALL ON SCHEMA public FROM PUBLIC;" >/dev/null
done
echo "postgres-init: databases sagas_orchestrator, sagas_stock, sagas_payment, sagas_shipping and their roles created"
