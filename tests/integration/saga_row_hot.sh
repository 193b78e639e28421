#!/usr/bin/env bash
# The saga row's non-terminal transitions are HOT updates: no index of
# `sagas` holds a column that such a transition changes, so PostgreSQL
# writes the new row version on the same page and no index entry
# (orchestrator/core/sql/schema.sql, docs/benchmarks.md). A database made before
# that (the sweep's index on next_attempt_at, `state` in its predicate) is
# migrated at start, and the sweep still finds a retrying saga after a
# restart (saga-semantics.md rule 9); the listing of an unfinished state
# reads the two indexes of unfinished sagas. `finished` and `retry_at`,
# which the orchestrator writes (generated columns in the layout before,
# migrated too), agree with their definition on every row.
set -euo pipefail
source "$(dirname "$0")/../lib/stack.sh"
# a step deadline far enough away that the saga left in CHARGING below is
# not compensated while the orchestrator is down
export ORCH_FLAGS="--step-timeout 120000"
stack_start
ctl stock set H1 100 >/dev/null
ctl deposit h 1000.00 >/dev/null

# every index of sagas, and the columns it reads (key, expression, predicate)
indexed_cols() {
  psql_db sagas_orchestrator "
    SELECT string_agg(DISTINCT a.attname, ',' ORDER BY a.attname)
    FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid
    WHERE i.indrelid = 'sagas'::regclass AND a.attnum > 0
      AND (a.attnum = ANY (i.indkey)
           OR pg_get_expr(i.indpred, i.indrelid) ~ ('\\m' || a.attname || '\\M'))"
}
# (attention is read by the predicate of sagas_attention, sagactl list
# --attention's index: only the rare transitions that raise or clear the
# flag change it; every other transition writes the value it read;
# customer is never written after StartSaga, and cancelled only with
# finished, by the saga's last update, which is not HOT anyway: the
# listings' indexes of schema 8)
assert_eq "columns any index of sagas reads" "attention,cancelled,created_at,customer,finished,retry_at,saga_id" "$(indexed_cols)"
assert_eq "sagas fillfactor" "{fillfactor=50}" \
  "$(psql_db sagas_orchestrator "SELECT reloptions FROM pg_class WHERE oid = 'sagas'::regclass")"

# 20 sagas one after the other: 60 updates, of which the 40 non-terminal
# ones (RESERVING -> CHARGING -> SHIPPING) are HOT; the terminal one sets
# `finished`, which sagas_open's predicate reads, so it is not.
for i in $(seq 1 20); do
  ctl start h H1 1 1.00 --wait >/dev/null
done
stats() {
  psql_db sagas_orchestrator "SELECT n_tup_upd || ' ' || n_tup_hot_upd FROM pg_stat_user_tables WHERE relname = 'sagas'"
}
# the orchestrator's session reports its counts when idle, within a second
wait_until 15 bash -c "[ \"\$(psql -h 127.0.0.1 -p $PG_PORT -U postgres -d sagas_orchestrator -qAtc \"SELECT n_tup_upd FROM pg_stat_user_tables WHERE relname = 'sagas'\")\" -ge 60 ]"
assert_eq "updates, HOT updates of sagas" "60 40" "$(stats)"
# finished and retry_at as schema.sql defines them, on every row: the
# number of rows where they disagree
disagree() {
  psql_db sagas_orchestrator "
    SELECT count(*) FROM sagas
    WHERE finished IS DISTINCT FROM (state IN ('COMPLETED', 'CANCELLED'))
       OR retry_at IS DISTINCT FROM (CASE WHEN attempts > 0
                                          AND state NOT IN ('COMPLETED', 'CANCELLED')
                                     THEN next_attempt_at END)"
}
assert_eq "rows whose finished or retry_at disagree" "0" "$(disagree)"

# a saga ended by an orchestrator older than the plain columns (finished
# left false, its last lease in next_attempt_at): the sweep claims it once
# and heals it, with no lease and no command
old=$(psql_db sagas_orchestrator "SELECT saga_id FROM sagas WHERE state = 'COMPLETED' LIMIT 1")
assert_eq "a terminal saga left unfinished by an old writer" "COMPLETED f" \
  "$(psql_db sagas_orchestrator "
    UPDATE sagas SET finished = false, next_attempt_at = now() - interval '1 minute',
                     created_at = created_at - interval '1 hour'
    WHERE saga_id = '$old' RETURNING state, finished" | tr '|' ' ')"
wait_until 15 bash -c "[ \"\$(psql -h 127.0.0.1 -p $PG_PORT -U postgres -d sagas_orchestrator -qAtc \"SELECT finished FROM sagas WHERE saga_id = '$old'\")\" = t ]"
assert_eq "healed by the sweep: finished, no lease, version unchanged" "COMPLETED true true 4" \
  "$(psql_db sagas_orchestrator "SELECT state || ' ' || finished || ' ' || (next_attempt_at IS NULL) || ' ' || version FROM sagas WHERE saga_id = '$old'")"
assert_eq "rows that disagree, after the heal" "0" "$(disagree)"
assert_eq "completed" "20" \
  "$(psql_db sagas_orchestrator "SELECT count(*) FROM sagas WHERE state = 'COMPLETED' AND finished")"

# payment is down: a saga waits in CHARGING, retrying (attempts > 0), so
# it is in sagas_retry and not in sagas_open, and the listing of its state
# finds it there
stack_kill paymentd
id=66666666-6666-4666-8666-666666666661
ctl start h H1 2 2.00 --id "$id" >/dev/null
wait_until 15 bash -c "[ \"\$(psql -h 127.0.0.1 -p $PG_PORT -U postgres -d sagas_orchestrator -qAtc \"SELECT state || attempts FROM sagas WHERE saga_id = '$id'\")\" \> CHARGING0 ]"
assert_eq "a retrying saga: finished, in retry" "false true" \
  "$(psql_db sagas_orchestrator "SELECT finished || ' ' || (retry_at IS NOT NULL) FROM sagas WHERE saga_id = '$id'")"
assert_eq "rows whose finished or retry_at disagree, one retrying" "0" "$(disagree)"
assert_eq "list --state charging" "$id" \
  "$(ctl list --state charging --json | python3 -c 'import json, sys; print(" ".join(s["saga_id"] for s in json.load(sys.stdin)))')"
assert_eq "list --state completed: 20, not the retrying one" "20 0" \
  "$(ctl list --state completed --json | python3 -c 'import json, sys; l = json.load(sys.stdin); print(len(l), sum(s["saga_id"] == "'"$id"'" for s in l))')"

# the layout of before, with the two columns generated, with that saga
stack_kill orchestratord
psql_db sagas_orchestrator "
  DROP INDEX sagas_open;
  DROP INDEX sagas_retry;
  ALTER TABLE sagas DROP COLUMN retry_at;
  ALTER TABLE sagas DROP COLUMN finished;
  ALTER TABLE sagas ADD COLUMN finished boolean
      GENERATED ALWAYS AS (state IN ('COMPLETED', 'CANCELLED')) STORED;
  ALTER TABLE sagas ADD COLUMN retry_at timestamptz
      GENERATED ALWAYS AS (CASE WHEN attempts > 0
                                AND state NOT IN ('COMPLETED', 'CANCELLED')
                           THEN next_attempt_at END) STORED;
  CREATE INDEX sagas_open ON sagas (created_at) WHERE NOT finished AND retry_at IS NULL;
  CREATE INDEX sagas_retry ON sagas (retry_at) WHERE retry_at IS NOT NULL;" >/dev/null
stack_start_orchestrator
generated() {
  psql_db sagas_orchestrator "
    SELECT count(*) FROM pg_attribute WHERE attrelid = 'sagas'::regclass
    AND attname IN ('finished', 'retry_at') AND attgenerated <> ''"
}
assert_eq "migrated: generated columns left" "0" "$(generated)"
assert_eq "migrated from generated: rows that disagree" "0" "$(disagree)"
assert_eq "migrated from generated: the saga still retrying" "CHARGING true" \
  "$(psql_db sagas_orchestrator "SELECT state || ' ' || (retry_at IS NOT NULL) FROM sagas WHERE saga_id = '$id'")"

# the old layout, as an older orchestratord left it, with that saga
stack_kill orchestratord
psql_db sagas_orchestrator "
  DROP INDEX sagas_open;
  DROP INDEX sagas_retry;
  ALTER TABLE sagas DROP COLUMN retry_at;
  ALTER TABLE sagas DROP COLUMN finished;
  ALTER TABLE sagas RESET (fillfactor);
  CREATE INDEX sagas_due ON sagas (next_attempt_at)
      WHERE state NOT IN ('COMPLETED', 'CANCELLED');" >/dev/null
assert_eq "old layout: sagas_due" "1" \
  "$(psql_db sagas_orchestrator "SELECT count(*) FROM pg_indexes WHERE indexname = 'sagas_due'")"

stack_start_orchestrator
stack_start_payment
assert_eq "migrated: sagas_due gone" "0" \
  "$(psql_db sagas_orchestrator "SELECT count(*) FROM pg_indexes WHERE indexname = 'sagas_due'")"
assert_eq "migrated: columns any index of sagas reads" "attention,cancelled,created_at,customer,finished,retry_at,saga_id" "$(indexed_cols)"
assert_eq "migrated: rows that disagree" "0" "$(disagree)"
# the sweep finds the unfinished saga through sagas_retry and finishes it
ctl wait "$id" --wait-timeout 30000 >/dev/null || true
assert_eq "the unfinished saga, after the restart" "COMPLETED" \
  "$(psql_db sagas_orchestrator "SELECT state FROM sagas WHERE saga_id = '$id'")"
assert_eq "at the end: rows that disagree" "0" "$(disagree)"
assert_eq "H1 on hand" "78" "$(psql_db sagas_stock "SELECT on_hand FROM stock WHERE sku = 'H1'")"
assert_eq "h balance" "97800" "$(psql_db sagas_payment "SELECT balance FROM accounts WHERE customer = 'h'")"
finish
