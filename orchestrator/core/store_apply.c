/* store_apply: the writes of the engine's transitions (store.h store_apply):
 * one version-checked UPDATE per saga or one batched statement for many,
 * their history rows, the fencing of refused writes, and the NOTIFY that
 * wakes a waiter on another orchestrator. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "pg.h"
#include "store.h"
#include "store_internal.h"

/* The waits of several orchestrators (issue 20, schema.sql "waiter"): the
 * write that ends a saga somebody waits for on another instance NOTIFYs
 * channel saga_finished with the saga id, in the same statement, so at its
 * commit. STORE_NOTIFY_IF(t, w) is true, in the RETURNING of the UPDATE (the
 * row as written), when the row finished and its waiter is set and is not
 * the writer `w` (a text parameter: the writer's instance name; NULL: any
 * waiter); `t` qualifies the columns ("s." or ""). Sagas
 * nobody waits for (waiter NULL, the hot path), and those the instance
 * that waits for them ends itself (engine on_finished answers), send
 * nothing: a NOTIFY serialises committing transactions on a global lock.
 * STORE_NOTIFY(cond, id) is the output column that sends it: the final
 * SELECT of a statement is always run for every row (a CTE that nothing
 * reads would not be), and CASE calls pg_notify only when cond is true. */
#define STORE_NOTIFY_IF(t, w)                                                                      \
	"((" t "finished OR (" t "next_attempt_at IS NULL AND " t "attention)) AND " t             \
	"waiter IS NOT NULL AND " t "waiter IS DISTINCT FROM " w ")"
#define STORE_NOTIFY(cond, id)                                                                     \
	"CASE WHEN " cond " THEN pg_notify('" STORE_NOTIFY_CHANNEL "', " id "::text) END"

/* store_finished is the `finished` column of the row `u` writes: true in a
 * terminal position (schema.sql), as the engine decided. */
static bool store_finished(const store_update *u)
{
	return u->finished;
}

/* store_retry_ms formats the `retry_at` column of the row `u` writes, in
 * ms since the epoch ("0": NULL), into `buf` (24 bytes) and returns it:
 * next_attempt_at while the saga retries (attempts > 0) unfinished
 * (schema.sql). */
static const char *store_retry_ms(const store_update *u, char buf[24])
{
	int64_t ms = u->next.attempts > 0 && !store_finished(u) ? u->next.next_attempt_ms : 0;
	snprintf(buf, 24, "%" PRId64, ms);
	return buf;
}

int store_write_update(PGconn *conn, store_update *u, const char *writer)
{
	const saga_row *b = u->before;
	char attempts[16], next[24], deadline[24], version[24], retry[24], epoch[24];
	snprintf(attempts, sizeof attempts, "%" PRId32, u->next.attempts);
	snprintf(next, sizeof next, "%" PRId64, u->next.next_attempt_ms);
	snprintf(deadline, sizeof deadline, "%" PRId64, u->next.step_deadline_ms);
	snprintf(version, sizeof version, "%" PRId64, b->version);
	snprintf(epoch, sizeof epoch, "%" PRId64, b->epoch);
	char members[24];
	snprintf(members, sizeof members, "%" PRId64, (int64_t)u->members);
	const char *p[14] = {b->saga_id, u->state, u->next.reason, attempts,
	    u->next.attention ? "true" : "false", next, deadline, version,
	    store_finished(u) ? "true" : "false", store_retry_ms(u, retry), epoch, writer, members,
	    u->compensating ? "true" : "false"};
	PGresult *r = NULL;
	int rc = pg_exec(conn,
	    "UPDATE sagas SET state = $2, reason = $3, attempts = $4, attention = $5, "
	    "next_attempt_at = " TS("$6") ", step_deadline = " TS(
	        "$7") ", finished = $9, "
	              "members = $13::bigint, compensating = $14::boolean, "
	              "cancelled = ($9::boolean AND $14::boolean), retry_at = " TS(
	                  "$10") ", "
	                         "version = version + 1, updated_at = now() "
	                         "WHERE saga_id = $1 AND version = $8 AND epoch = $11"
	                         /* waits elsewhere (STORE_NOTIFY_IF) */
	                         " RETURNING " STORE_NOTIFY_IF("", "$12::text"),
	    14, p, &r);
	if (rc != 0)
		return rc;
	u->applied = strcmp(PQcmdTuples(r), "1") == 0;
	bool notify = u->applied && PQntuples(r) == 1 && PQgetvalue(r, 0, 0)[0] == 't';
	PQclear(r);
	if (!u->applied)
		return 0; /* rule 7: a lost race writes nothing */
	/* in this transaction: delivered at its commit (a rare path: duplicated
	 * replies, and a waiter elsewhere) */
	if (notify)
		rc = pg_run(conn, "SELECT pg_notify('" STORE_NOTIFY_CHANNEL "', $1)", 1, p);
	if (rc != 0)
		return rc;
	if (u->state_changed)
		rc = store_insert_history(
		    conn, b->saga_id, b->version + 1, b->state, u->state, u->event, u->next.reason);
	else if (u->attention_raised)
		rc = store_insert_history(conn, b->saga_id, b->version + 1, b->state, u->state,
		    "attention", u->next.reason);
	return rc;
}

/* The columns of the batched statement, one array parameter each. */
enum {
	SB_ID,
	SB_STATE,
	SB_REASON,
	SB_ATTEMPTS,
	SB_ATTENTION,
	SB_NEXT,
	SB_DEADLINE,
	SB_VERSION,
	SB_FROM,
	SB_EVENT,
	SB_FINISHED,
	SB_RETRY,
	SB_EPOCH,
	SB_MEMBERS,
	SB_COMPENSATING,
	SB_COLS
};
/* After the columns, one scalar parameter: the writer's instance name
 * (STORE_NOTIFY_IF). */
#define SB_WRITER SB_COLS
#define SB_PARAMS (SB_COLS + 1)

#define TSC(c) "(CASE WHEN " c " = 0 THEN NULL ELSE to_timestamp(" c " / 1000.0) END)"

/* store_apply_batch writes all of `ups` with one statement: a version-checked
 * UPDATE ... FROM unnest(arrays) and, in the same statement, the history rows
 * of the updates that applied. Each input row carries its position (`idx`),
 * so the rows returned say exactly which updates applied. The caller makes
 * sure no saga appears twice (an UPDATE ... FROM touches a row once). */
/* clang-format off */
/* The transitions of a batch as one statement (one implicit transaction):
 * version-checked UPDATEs (rule 7) and the history rows of the ones that
 * applied (rule 8). Returns the 1-based index of every update that applied. */
static const pg_stmt STORE_APPLY_BATCH = {"saga_apply_batch",
    "WITH u AS ("
    "  SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[], $4::integer[],"
    "    $5::boolean[], $6::bigint[], $7::bigint[], $8::bigint[], $9::text[],"
    "    $10::text[], $11::boolean[], $12::bigint[], $13::bigint[], $14::bigint[],"
    "    $15::boolean[]) WITH ORDINALITY"
    "    AS t(id, state, reason, attempts, attention, next_ms, deadline_ms, ver,"
    "      from_state, event, finished, retry_ms, epoch, members, compensating, idx)),"
    " upd AS ("
    "  UPDATE sagas s SET state = u.state, reason = u.reason, attempts = u.attempts,"
    "    attention = u.attention, next_attempt_at = " TSC("u.next_ms") ","
    "    step_deadline = " TSC("u.deadline_ms") ","
    "    finished = u.finished, retry_at = " TSC("u.retry_ms") ","
    "    members = u.members, compensating = u.compensating,"
    "    cancelled = (u.finished AND u.compensating),"
    "    version = s.version + 1, updated_at = now()"
    "  FROM u WHERE s.saga_id = u.id AND s.version = u.ver AND s.epoch = u.epoch"
    /* the same key as an array: an index scan under any cached plan */
    "    AND s.saga_id = ANY($1::uuid[])"
    "  RETURNING u.idx, " MS("s.updated_at") " AS updated_ms,"
    "    s.saga_id, " STORE_NOTIFY_IF("s.", "$16::text") " AS notify),"
    " hist AS ("
    "  INSERT INTO saga_history (saga_id, version, from_state, to_state, event, reason)"
    "  SELECT u.id, u.ver + 1, u.from_state, u.state, u.event, u.reason"
    "  FROM upd JOIN u USING (idx) WHERE u.event IS NOT NULL ORDER BY u.idx)"
    " SELECT idx, updated_ms, " STORE_NOTIFY("notify", "saga_id") " FROM upd", true};

/* One transition (the batch of one saga, as at low load): the same writes
 * with scalar parameters, so the plan is two index scans by key, without
 * the unnest, the array parsing and the joins of the batched form. */
static const pg_stmt STORE_APPLY_ONE = {"saga_apply_one",
    "WITH upd AS ("
    "  UPDATE sagas SET state = $2, reason = $3, attempts = $4::integer,"
    "    attention = $5::boolean, next_attempt_at = " TSC("$6::bigint") ","
    "    step_deadline = " TSC("$7::bigint") ","
    "    finished = $11::boolean, retry_at = " TSC("$12::bigint") ","
    "    members = $14::bigint, compensating = $15::boolean,"
    "    cancelled = ($11::boolean AND $15::boolean),"
    "    version = version + 1, updated_at = now()"
    "  WHERE saga_id = $1::uuid AND version = $8::bigint AND epoch = $13::bigint"
    "  RETURNING " MS("updated_at") " AS updated_ms,"
    "    " STORE_NOTIFY_IF("", "$16::text") " AS notify),"
    " hist AS ("
    "  INSERT INTO saga_history (saga_id, version, from_state, to_state, event, reason)"
    "  SELECT $1::uuid, $8::bigint + 1, $9, $2, $10, $3 FROM upd"
    "  WHERE $10::text IS NOT NULL)"
    " SELECT updated_ms, " STORE_NOTIFY("notify", "$1") " FROM upd", true};

/* clang-format on */

/* The history event of an update, or NULL when it needs no history row. */
static const char *store_update_event(const store_update *u)
{
	return u->state_changed ? u->event : u->attention_raised ? "attention" : NULL;
}

/* store_apply_single writes one update with STORE_APPLY_ONE: one statement,
 * one implicit transaction. Returns as pg_exec; sets u->applied and
 * u->updated_ms. */
static int store_apply_single(PGconn *conn, store_update *u, const char *writer)
{
	const saga_row *b = u->before;
	char attempts[16], next[24], deadline[24], version[24], retry[24], epoch[24];
	snprintf(attempts, sizeof attempts, "%" PRId32, u->next.attempts);
	snprintf(next, sizeof next, "%" PRId64, u->next.next_attempt_ms);
	snprintf(deadline, sizeof deadline, "%" PRId64, u->next.step_deadline_ms);
	snprintf(version, sizeof version, "%" PRId64, b->version);
	snprintf(epoch, sizeof epoch, "%" PRId64, b->epoch);
	char members[24];
	snprintf(members, sizeof members, "%" PRId64, (int64_t)u->members);
	const char *p[SB_PARAMS]
	    = {b->saga_id, u->state, u->next.reason, attempts, u->next.attention ? "t" : "f", next,
	        deadline, version, b->state, store_update_event(u), store_finished(u) ? "t" : "f",
	        store_retry_ms(u, retry), epoch, members, u->compensating ? "t" : "f", writer};
	PGresult *r = NULL;
	int rc = pg_exec_stmt(conn, &STORE_APPLY_ONE, SB_PARAMS, p, &r);
	if (rc != 0)
		return rc;
	if (PQntuples(r) == 1) {
		u->applied = true;
		u->updated_ms = pg_get_i64(r, 0, 0);
	}
	PQclear(r);
	return 0;
}

static int store_apply_batch(PGconn *conn, store_update *ups, size_t n, const char *writer)
{
	pg_buf cols[SB_COLS];
	pg_arrays_open(cols, SB_COLS);
	for (size_t i = 0; i < n; i++) {
		const store_update *u = &ups[i];
		const saga_row *b = u->before;
		pg_array_add(&cols[SB_ID], b->saga_id);
		pg_array_add(&cols[SB_STATE], u->state);
		pg_array_add(&cols[SB_REASON], u->next.reason);
		pg_array_add_i64(&cols[SB_ATTEMPTS], u->next.attempts);
		pg_array_add(&cols[SB_ATTENTION], u->next.attention ? "t" : "f");
		pg_array_add_i64(&cols[SB_NEXT], u->next.next_attempt_ms);
		pg_array_add_i64(&cols[SB_DEADLINE], u->next.step_deadline_ms);
		pg_array_add_i64(&cols[SB_VERSION], b->version);
		pg_array_add(&cols[SB_FROM], b->state);
		/* the history row of this update, if it needs one */
		pg_array_add(&cols[SB_EVENT], store_update_event(u));
		char retry[24];
		pg_array_add(&cols[SB_FINISHED], store_finished(u) ? "t" : "f");
		pg_array_add(&cols[SB_RETRY], store_retry_ms(u, retry));
		pg_array_add_i64(&cols[SB_EPOCH], b->epoch);
		pg_array_add_i64(&cols[SB_MEMBERS], (int64_t)u->members);
		pg_array_add(&cols[SB_COMPENSATING], u->compensating ? "t" : "f");
	}
	const char *p[SB_PARAMS];
	int rc = pg_arrays_close(cols, SB_COLS, p);
	p[SB_WRITER] = writer;
	PGresult *r = NULL;
	if (rc == 0)
		rc = pg_exec_stmt(conn, &STORE_APPLY_BATCH, SB_PARAMS, p, &r);
	pg_arrays_free(cols, SB_COLS);
	if (rc != 0)
		return rc;
	for (int i = 0; i < PQntuples(r); i++) {
		int64_t idx = pg_get_i64(r, i, 0);
		if (idx >= 1 && (size_t)idx <= n) {
			ups[idx - 1].applied = true;
			ups[idx - 1].updated_ms = pg_get_i64(r, i, 1);
		}
	}
	PQclear(r);
	return 0;
}

/* store_has_duplicates is true when a saga appears twice in `ups` (a
 * duplicated reply): those batches take the statement-per-update path, where
 * the first update wins the version check and the second loses it. */
static bool store_has_duplicates(const store_update *ups, size_t n)
{
	for (size_t i = 1; i < n; i++)
		for (size_t j = 0; j < i; j++)
			if (strcmp(ups[i].before->saga_id, ups[j].before->saga_id) == 0)
				return true;
	return false;
}

/* store_mark_fenced sets `fenced` on the updates of `ups` that did not
 * apply because their saga's claim epoch is no longer the one they were
 * decided under (another claim took the saga: rule 10), from one read of
 * those sagas' epochs. Runs only when some update did not apply (a takeover
 * or a duplicated reply: rare), after the commit. Returns 0 or a pg_err
 * code; on error the flags stay false (the updates were refused either way). */
static int store_mark_fenced(PGconn *conn, store_update *ups, size_t n)
{
	pg_buf ids;
	pg_arrays_open(&ids, 1);
	size_t refused = 0;
	for (size_t i = 0; i < n; i++)
		if (!ups[i].applied) {
			pg_array_add(&ids, ups[i].before->saga_id);
			refused++;
		}
	if (refused == 0) {
		pg_arrays_free(&ids, 1);
		return 0;
	}
	const char *p[1];
	int rc = pg_arrays_close(&ids, 1, p);
	PGresult *r = NULL;
	if (rc == 0)
		rc = pg_exec(conn,
		    "SELECT saga_id::text, epoch FROM sagas WHERE saga_id = ANY($1::uuid[])", 1, p,
		    &r);
	pg_arrays_free(&ids, 1);
	if (rc != 0)
		return rc;
	for (int k = 0; k < PQntuples(r); k++) {
		const char *id = PQgetvalue(r, k, 0);
		int64_t epoch = pg_get_i64(r, k, 1);
		for (size_t i = 0; i < n; i++)
			if (!ups[i].applied && strcmp(ups[i].before->saga_id, id) == 0)
				ups[i].fenced = epoch != ups[i].before->epoch;
	}
	PQclear(r);
	return 0;
}

/* store_apply_unfenced is store_apply without the fenced flags. */
static int store_apply_unfenced(PGconn *conn, store_update *ups, size_t n, const char *writer)
{
	if (!store_has_duplicates(ups, n)) {
		/* one statement is one transaction: no BEGIN/COMMIT round trips */
		int rc = n == 1 ? store_apply_single(conn, &ups[0], writer)
		                : store_apply_batch(conn, ups, n, writer);
		if (rc != 0)
			for (size_t i = 0; i < n; i++)
				ups[i].applied = false;
		return rc;
	}
	int rc = pg_begin(conn);
	if (rc != 0)
		return rc;
	for (size_t i = 0; i < n; i++) {
		rc = store_write_update(conn, &ups[i], writer);
		if (rc != 0)
			goto out_rollback;
	}
	rc = pg_commit(conn);
	if (rc != 0)
		goto out_clear;
	return 0;
out_rollback:
	pg_rollback(conn);
out_clear:
	for (size_t i = 0; i < n; i++)
		ups[i].applied = false;
	return rc;
}

int store_apply(PGconn *conn, store_update *ups, size_t n, const char *writer)
{
	for (size_t i = 0; i < n; i++) {
		ups[i].applied = false;
		ups[i].fenced = false;
	}
	if (n == 0)
		return 0;
	int rc = store_apply_unfenced(conn, ups, n, writer);
	if (rc != 0)
		return rc;
	for (size_t i = 0; i < n; i++)
		if (!ups[i].applied) {
			if (store_mark_fenced(conn, ups, n) != 0)
				log_warn(NULL, "could not read the epochs of refused transitions");
			break;
		}
	return 0;
}
