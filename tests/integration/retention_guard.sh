#!/usr/bin/env bash
# Retention on the orchestrator (issue 23, rule R4; docs/operations.md,
# "Retention"), end to end: saga_history stays append-only to everybody but
# the retention batch (DELETE, UPDATE and TRUNCATE refused); `sagactl
# retention --dry-run` counts exactly the finished sagas past the horizon
# and their history rows and deletes nothing; `sagactl retention` deletes
# exactly those, each with all its history; a saga that is not terminal
# stays however old, and so do the recent ones; a second pass deletes 0.
# Every number is read from the database. The background job is off
# (--retention-interval 0), so that only the calls delete, until a second
# orchestrator with a short --retention-interval shows the elected job
# deleting the rest of what is due.
set -euo pipefail
here=$(dirname "$0")
source "$here/../lib/stack.sh"
source "$here/../lib/seed_lab.sh"

O=sagas_orchestrator
OLD=44444444-4444-4444-8444-444444444444 # not terminal, 30 days old
ORCH_FLAGS="--retention-interval 0"
stack_start
seed_lab_seed
seed_lab_orders >/dev/null
ctl start ali A1 1 10.00 --wait >/dev/null # a fourth, recent one

count() { psql_db $O "SELECT count(*) FROM $1"; }
# refused: SQL that must fail with the append-only error
refused() {
  local out
  if out=$(psql_db $O "$1" 2>&1); then
    echo "succeeded"
  else
    grep -o 'saga_history is append-only: [A-Z]* refused' <<<"$out" || echo "failed otherwise: $out"
  fi
}

# 1. the guard: nobody but the retention batch changes saga_history
hist_before=$(count saga_history)
assert_eq "plain DELETE refused" "saga_history is append-only: DELETE refused" \
  "$(refused "DELETE FROM saga_history WHERE saga_id = '$SEED_SAGA_1'")"
assert_eq "UPDATE refused" "saga_history is append-only: UPDATE refused" \
  "$(refused "UPDATE saga_history SET reason = 'x' WHERE saga_id = '$SEED_SAGA_1'")"
assert_eq "TRUNCATE refused" "saga_history is append-only: TRUNCATE refused" \
  "$(refused "TRUNCATE saga_history")"
assert_eq "UPDATE refused even with sagas.retention on" "saga_history is append-only: UPDATE refused" \
  "$(refused "BEGIN; SELECT set_config('sagas.retention', 'on', true);
              UPDATE saga_history SET reason = 'x' WHERE saga_id = '$SEED_SAGA_1'; COMMIT")"
assert_eq "DELETE refused with sagas.retention turned on by hand" \
  "saga_history is append-only: DELETE refused" \
  "$(refused "BEGIN; SELECT set_config('sagas.retention', 'on', true);
              DELETE FROM saga_history WHERE saga_id = '$SEED_SAGA_1'; COMMIT")"
assert_eq "history untouched" "$hist_before" "$(count saga_history)"

# 2. two finished sagas and one that is not terminal, 30 days old
psql_db $O "UPDATE sagas SET created_at = created_at - interval '30 days',
                             updated_at = updated_at - interval '30 days'
             WHERE saga_id IN ('$SEED_SAGA_1', '$SEED_SAGA_2')" >/dev/null
psql_db $O "INSERT INTO sagas (saga_id, state, customer, sku, qty, amount, next_attempt_at,
                               created_at, updated_at)
            VALUES ('$OLD', 'CHARGING', 'ali', 'A1', 1, 100, now() + interval '1 day',
                    now() - interval '30 days', now() - interval '30 days');
            INSERT INTO saga_history (saga_id, version, from_state, to_state, event, at)
            VALUES ('$OLD', 1, NULL, 'RESERVING', 'start', now() - interval '30 days'),
                   ('$OLD', 2, 'RESERVING', 'CHARGING', 'reserved', now() - interval '30 days')" >/dev/null
assert_eq "the old ones' states" "CANCELLED COMPLETED CHARGING" "$(psql_db $O "SELECT
  string_agg(state, ' ' ORDER BY state = 'CHARGING', state) FROM sagas
  WHERE created_at < now() - interval '29 days'")"
sagas_before=$(count sagas)
hist_before=$(count saga_history)
old_hist=$(psql_db $O "SELECT count(*) FROM saga_history
                        WHERE saga_id IN ('$SEED_SAGA_1', '$SEED_SAGA_2')")
echo "sagas $sagas_before, history rows $hist_before, of which the two old finished sagas' $old_hist"
assert_eq "the old finished sagas have history" "yes" "$([ "$old_hist" -gt 0 ] && echo yes)"

# 3. the dry run counts exactly them and deletes nothing
assert_eq "dry run" "dry run: would delete 2 sagas and $old_hist saga_history rows" \
  "$(ctl retention --dry-run)"
assert_eq "dry run --json" "{\"service\":\"orchestrator\",\"dry_run\":true,\"table\":\"sagas\",\"deleted\":2,\"other_table\":\"saga_history\",\"other_deleted\":$old_hist,\"ids_table\":\"saga_ids_retired\",\"ids_deleted\":0}" \
  "$(ctl retention --dry-run --json | jq -c .)"
assert_eq "dry run deleted no saga" "$sagas_before" "$(count sagas)"
assert_eq "dry run deleted no history" "$hist_before" "$(count saga_history)"

# 4. the pass deletes exactly them, whole
assert_eq "pass" "deleted 2 sagas and $old_hist saga_history rows" "$(ctl retention)"
assert_eq "sagas left" "$((sagas_before - 2))" "$(count sagas)"
assert_eq "history rows left" "$((hist_before - old_hist))" "$(count saga_history)"
assert_eq "the two are gone, with their history" "0 0" "$(psql_db $O "SELECT
  (SELECT count(*) FROM sagas WHERE saga_id IN ('$SEED_SAGA_1', '$SEED_SAGA_2')) || ' ' ||
  (SELECT count(*) FROM saga_history WHERE saga_id IN ('$SEED_SAGA_1', '$SEED_SAGA_2'))")"
assert_eq "the old unfinished one stays, with its history" "1 2" "$(psql_db $O "SELECT
  (SELECT count(*) FROM sagas WHERE saga_id = '$OLD') || ' ' ||
  (SELECT count(*) FROM saga_history WHERE saga_id = '$OLD')")"
assert_eq "the recent finished ones stay" "2" "$(psql_db $O "SELECT count(*) FROM sagas
  WHERE finished AND created_at > now() - interval '1 day'")"
assert_eq "saga 3 stays" "1" "$(psql_db $O "SELECT count(*) FROM sagas WHERE saga_id = '$SEED_SAGA_3'")"
assert_eq "the guard is back on after the pass" "saga_history is append-only: DELETE refused" \
  "$(refused "DELETE FROM saga_history WHERE saga_id = '$SEED_SAGA_3'")"
metrics=$(stack_metrics orchestratord)
assert_eq "metric: sagas deleted" "2" \
  "$(awk '/^sagas_retention_deleted_total\{table="sagas"\}/ {print $2}' <<<"$metrics")"
assert_eq "metric: history rows deleted" "$old_hist" \
  "$(awk '/^sagas_retention_deleted_total\{table="saga_history"\}/ {print $2}' <<<"$metrics")"

# 5. again: nothing left to delete
assert_eq "second pass" "deleted 0 sagas and 0 saga_history rows" "$(ctl retention)"
assert_eq "second dry run" "dry run: would delete 0 sagas and 0 saga_history rows" \
  "$(ctl retention --dry-run)"
assert_eq "sagas after the second pass" "$((sagas_before - 2))" "$(count sagas)"

# 6. the background job: a second orchestrator with --retention-interval
# 200 (the first runs none) deletes the two recent finished sagas once
# they are 30 days old too, and only them
psql_db $O "UPDATE sagas SET created_at = created_at - interval '30 days',
                             updated_at = updated_at - interval '30 days'
             WHERE finished" >/dev/null
due_hist=$(psql_db $O "SELECT count(*) FROM saga_history h JOIN sagas s USING (saga_id)
                        WHERE s.finished")
hist_before=$(count saga_history)
echo "background: 2 finished sagas due, with $due_hist history rows"
stack_start_orchestrator_as orch2 --retention-interval 200
_only_old_left() { [ "$(psql_db $O "SELECT string_agg(saga_id::text, ',') FROM sagas")" = "$OLD" ]; }
wait_until 60 _only_old_left
assert_eq "background: only the unfinished one is left" "$OLD" \
  "$(psql_db $O "SELECT string_agg(saga_id::text, ',') FROM sagas")"
assert_eq "background: history rows left" "$((hist_before - due_hist))" "$(count saga_history)"
assert_eq "background: its history stays" "2" \
  "$(psql_db $O "SELECT count(*) FROM saga_history WHERE saga_id = '$OLD'")"
_logged() { grep -q "retention: deleted 2 sagas and $due_hist saga_history rows" "$STACK_DIR/orch2.log"; }
wait_until 10 _logged
assert_eq "background: the pass's log line" "1" \
  "$(grep -c "retention: deleted 2 sagas and $due_hist saga_history rows" "$STACK_DIR/orch2.log")"
metrics=$(stack_metrics orch2)
assert_eq "background metric: sagas deleted" "2" \
  "$(awk '/^sagas_retention_deleted_total\{table="sagas"\}/ {print $2}' <<<"$metrics")"
assert_eq "background metric: passes run" "yes" "$(awk '/^sagas_retention_passes_total/ \
  {print ($2 >= 1 ? "yes" : "no: " $2)}' <<<"$metrics")"
assert_eq "the first orchestrator ran no background pass" "0" \
  "$(stack_metrics orchestratord | awk '/^sagas_retention_passes_total/ {n = $2} END {print n + 0}')"
finish
