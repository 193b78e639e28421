#!/usr/bin/env bash
# An orchestrator database made before saga_history was keyed by
# (saga_id, version) (a bigserial id, a foreign key to sagas) is migrated at
# start: the rows stay, the key is (saga_id, version), the foreign key and
# the id are gone, history is still append-only (saga-semantics.md rule 8)
# and still answers `sagactl history`.
set -euo pipefail
source "$(dirname "$0")/../lib/stack.sh"
stack_start
ctl stock set M1 5 >/dev/null
ctl deposit m 100.00 >/dev/null
id1=55555555-5555-4555-8555-555555555551
id2=55555555-5555-4555-8555-555555555552
ctl start m M1 1 10.00 --id "$id1" --wait >/dev/null

# back to the old layout, as an older orchestratord left it
stack_kill orchestratord
psql_db sagas_orchestrator "
  ALTER TABLE saga_history DROP CONSTRAINT saga_history_pkey;
  ALTER TABLE saga_history ADD COLUMN id bigserial PRIMARY KEY;
  ALTER TABLE saga_history ADD CONSTRAINT saga_history_saga_id_version_key UNIQUE (saga_id, version);
  ALTER TABLE saga_history ADD CONSTRAINT saga_history_saga_id_fkey
      FOREIGN KEY (saga_id) REFERENCES sagas (saga_id);" >/dev/null
assert_eq "old layout: id column" "1" \
  "$(psql_db sagas_orchestrator "SELECT count(*) FROM information_schema.columns WHERE table_name = 'saga_history' AND column_name = 'id'")"

stack_start_orchestrator
assert_eq "rows kept" "RESERVING>CHARGING>SHIPPING>COMPLETED" \
  "$(psql_db sagas_orchestrator "SELECT string_agg(to_state, '>' ORDER BY version) FROM saga_history WHERE saga_id = '$id1'")"
assert_eq "no id column" "0" \
  "$(psql_db sagas_orchestrator "SELECT count(*) FROM information_schema.columns WHERE table_name = 'saga_history' AND column_name = 'id'")"
assert_eq "primary key (saga_id, version)" "PRIMARY KEY (saga_id, version)" \
  "$(psql_db sagas_orchestrator "SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = 'saga_history'::regclass AND contype = 'p'")"
assert_eq "no foreign key" "0" \
  "$(psql_db sagas_orchestrator "SELECT count(*) FROM pg_constraint WHERE conrelid = 'saga_history'::regclass AND contype = 'f'")"
assert_eq "sagactl history of the old saga" "RESERVING>CHARGING>SHIPPING>COMPLETED" \
  "$(ctl history "$id1" --json | python3 -c 'import json, sys; print(">".join(e["to_state"] for e in json.load(sys.stdin)))')"

# a new saga after the migration, and the guards
ctl start m M1 1 10.00 --id "$id2" --wait >/dev/null
assert_eq "new saga's history" "RESERVING>CHARGING>SHIPPING>COMPLETED" \
  "$(psql_db sagas_orchestrator "SELECT string_agg(to_state, '>' ORDER BY version) FROM saga_history WHERE saga_id = '$id2'")"
set +e
dup=$(psql_db sagas_orchestrator "INSERT INTO saga_history (saga_id, version, to_state, event) VALUES ('$id2', 1, 'RESERVING', 'started')" 2>&1)
upd=$(psql_db sagas_orchestrator "UPDATE saga_history SET reason = 'x' WHERE saga_id = '$id2'" 2>&1)
set -e
assert_eq "a second row for a version is refused" "1" "$(grep -c 'duplicate key' <<<"$dup")"
assert_eq "history stays append-only" "1" "$(grep -c 'append-only' <<<"$upd")"
assert_eq "M1 on hand" "3" "$(psql_db sagas_stock "SELECT on_hand FROM stock WHERE sku = 'M1'")"
assert_eq "m balance" "8000" "$(psql_db sagas_payment "SELECT balance FROM accounts WHERE customer = 'm'")"
finish
