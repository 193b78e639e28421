#include "store.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "pg.h"
#include "schema_sql.h"

/* ms since the epoch of a timestamptz column, 0 when NULL */
#define MS(col) "coalesce((extract(epoch from " col ") * 1000)::bigint, 0)"
/* a timestamptz from a ms parameter, NULL when 0 */
#define TS(p)                                                                                      \
	"(CASE WHEN " p "::bigint = 0 THEN NULL ELSE to_timestamp(" p "::bigint / 1000.0) END)"

#define SAGA_COLS                                                                                  \
	"saga_id::text, state, reason, customer, sku, qty, amount, version, attempts, "            \
	"attention, " MS("next_attempt_at") ", " MS("step_deadline") ", " MS(                      \
	    "created_at") ", " MS("updated_at")

static void store_read_row(const PGresult *r, int i, saga_row *out)
{
	memset(out, 0, sizeof *out);
	snprintf(out->saga_id, sizeof out->saga_id, "%s", PQgetvalue(r, i, 0));
	out->s.state = saga_state_parse(PQgetvalue(r, i, 1));
	snprintf(out->s.reason, sizeof out->s.reason, "%s", PQgetvalue(r, i, 2));
	snprintf(out->customer, sizeof out->customer, "%s", PQgetvalue(r, i, 3));
	snprintf(out->sku, sizeof out->sku, "%s", PQgetvalue(r, i, 4));
	out->qty = (int32_t)pg_get_i64(r, i, 5);
	out->amount = pg_get_i64(r, i, 6);
	out->version = pg_get_i64(r, i, 7);
	out->s.attempts = (int32_t)pg_get_i64(r, i, 8);
	out->s.attention = PQgetvalue(r, i, 9)[0] == 't';
	out->s.next_attempt_ms = pg_get_i64(r, i, 10);
	out->s.step_deadline_ms = pg_get_i64(r, i, 11);
	out->created_ms = pg_get_i64(r, i, 12);
	out->updated_ms = pg_get_i64(r, i, 13);
}

int store_apply_schema(PGconn *conn)
{
	int rc = pg_begin(conn);
	if (rc != 0)
		return rc;
	/* one schema change at a time when several daemons start together */
	rc = pg_run(conn, "SELECT pg_advisory_xact_lock(7101)", 0, NULL);
	if (rc == 0) {
		PGresult *r = PQexec(conn, orchestrator_schema_sql);
		if (PQresultStatus(r) != PGRES_COMMAND_OK) {
			log_error(NULL, "could not apply schema: %s", PQresultErrorMessage(r));
			rc = pg_classify(PQresultErrorField(r, PG_DIAG_SQLSTATE));
		}
		PQclear(r);
	}
	if (rc != 0) {
		pg_rollback(conn);
		return rc;
	}
	return pg_commit(conn);
}

static int store_insert_history(PGconn *conn, const char *saga_id, int64_t version, saga_state from,
    saga_state to, const char *event, const char *reason)
{
	char ver[24];
	snprintf(ver, sizeof ver, "%" PRId64, version);
	const char *p[6]
	    = {saga_id, ver, from == SAGA_STATE_UNSPECIFIED ? NULL : saga_state_name(from),
	        saga_state_name(to), event, reason};
	return pg_run(conn,
	    "INSERT INTO saga_history (saga_id, version, from_state, to_state, event, reason) "
	    "VALUES ($1, $2, $3, $4, $5, $6)",
	    6, p);
}

int store_insert_saga(PGconn *conn, const saga_row *row, bool *created, saga_row *existing)
{
	char qty[16], amount[24], next[24], deadline[24];
	snprintf(qty, sizeof qty, "%" PRId32, row->qty);
	snprintf(amount, sizeof amount, "%" PRId64, row->amount);
	snprintf(next, sizeof next, "%" PRId64, row->s.next_attempt_ms);
	snprintf(deadline, sizeof deadline, "%" PRId64, row->s.step_deadline_ms);
	const char *p[8] = {row->saga_id, saga_state_name(row->s.state), row->customer, row->sku,
	    qty, amount, next, deadline};
	PGresult *r = NULL;
	*created = false;
	int rc = pg_begin(conn);
	if (rc != 0)
		return rc;
	rc = pg_exec(conn,
	    "INSERT INTO sagas (saga_id, state, customer, sku, qty, amount, next_attempt_at, "
	    "step_deadline) VALUES ($1, $2, $3, $4, $5, $6, " TS("$7") ", " TS(
	        "$8") ") "
	              "ON CONFLICT (saga_id) DO NOTHING RETURNING " SAGA_COLS,
	    8, p, &r);
	if (rc != 0)
		goto out_rollback;
	if (PQntuples(r) == 1) {
		store_read_row(r, 0, existing);
		*created = true;
		rc = store_insert_history(
		    conn, row->saga_id, 1, SAGA_STATE_UNSPECIFIED, row->s.state, "started", "");
		if (rc != 0)
			goto out_rollback;
	} else {
		PQclear(r);
		r = NULL;
		rc = pg_exec(conn, "SELECT " SAGA_COLS " FROM sagas WHERE saga_id = $1", 1, p, &r);
		if (rc != 0)
			goto out_rollback;
		if (PQntuples(r) != 1) {
			rc = -ENOENT; /* cannot happen: the conflict saw it */
			goto out_rollback;
		}
		store_read_row(r, 0, existing);
	}
	PQclear(r);
	return pg_commit(conn);
out_rollback:
	PQclear(r);
	pg_rollback(conn);
	return rc;
}

int store_get_saga(PGconn *conn, const char *saga_id, saga_row *out)
{
	PGresult *r = NULL;
	const char *p[1] = {saga_id};
	int rc = pg_exec(conn, "SELECT " SAGA_COLS " FROM sagas WHERE saga_id = $1", 1, p, &r);
	if (rc != 0)
		return rc;
	if (PQntuples(r) == 0) {
		rc = -ENOENT;
	} else {
		store_read_row(r, 0, out);
	}
	PQclear(r);
	return rc;
}

static int store_rows(PGresult *r, saga_row **rows, size_t *n)
{
	int count = PQntuples(r);
	*rows = calloc(count > 0 ? (size_t)count : 1, sizeof **rows);
	if (*rows == NULL)
		return -ENOMEM;
	for (int i = 0; i < count; i++)
		store_read_row(r, i, &(*rows)[i]);
	*n = (size_t)count;
	return 0;
}

int store_list_sagas(
    PGconn *conn, saga_state state, bool attention_only, int limit, saga_row **rows, size_t *n)
{
	char lim[16];
	snprintf(lim, sizeof lim, "%d", limit);
	const char *p[3] = {state == SAGA_STATE_UNSPECIFIED ? NULL : saga_state_name(state),
	    attention_only ? "true" : "false", lim};
	PGresult *r = NULL;
	int rc = pg_exec(conn,
	    "SELECT " SAGA_COLS " FROM sagas WHERE ($1::text IS NULL OR state = $1) "
	    "AND (NOT $2::boolean OR attention) ORDER BY created_at DESC, saga_id LIMIT $3",
	    3, p, &r);
	if (rc != 0)
		return rc;
	rc = store_rows(r, rows, n);
	PQclear(r);
	return rc;
}

int store_history(PGconn *conn, const char *saga_id, store_history_entry **out, size_t *n)
{
	const char *p[1] = {saga_id};
	PGresult *r = NULL;
	int rc = pg_exec(conn,
	    "SELECT h.version, coalesce(h.from_state, ''), h.to_state, h.event, h.reason, " MS(
	        "h.at") " FROM sagas s LEFT JOIN saga_history h ON h.saga_id = s.saga_id "
	                "WHERE s.saga_id = $1 ORDER BY h.id",
	    1, p, &r);
	if (rc != 0)
		return rc;
	int count = PQntuples(r);
	if (count == 0) {
		PQclear(r);
		return -ENOENT;
	}
	*out = calloc((size_t)count, sizeof **out);
	if (*out == NULL) {
		PQclear(r);
		return -ENOMEM;
	}
	size_t k = 0;
	for (int i = 0; i < count; i++) {
		if (PQgetisnull(r, i, 0))
			continue; /* a saga without history rows (cannot happen) */
		store_history_entry *e = &(*out)[k++];
		e->version = pg_get_i64(r, i, 0);
		e->from_state = saga_state_parse(PQgetvalue(r, i, 1));
		e->to_state = saga_state_parse(PQgetvalue(r, i, 2));
		snprintf(e->event, sizeof e->event, "%s", PQgetvalue(r, i, 3));
		snprintf(e->reason, sizeof e->reason, "%s", PQgetvalue(r, i, 4));
		e->at_ms = pg_get_i64(r, i, 5);
	}
	*n = k;
	PQclear(r);
	return 0;
}

int store_claim_due(
    PGconn *conn, int64_t now_ms, int64_t lease_ms, int limit, saga_row *rows, size_t *n)
{
	char now[24], until[24], lim[16];
	snprintf(now, sizeof now, "%" PRId64, now_ms);
	snprintf(until, sizeof until, "%" PRId64, now_ms + lease_ms);
	snprintf(lim, sizeof lim, "%d", limit);
	const char *p[3] = {now, until, lim};
	PGresult *r = NULL;
	*n = 0;
	int rc = pg_exec(conn,
	    "UPDATE sagas s SET next_attempt_at = " TS(
	        "$2") " FROM ("
	              "  SELECT saga_id AS due_id FROM sagas"
	              "  WHERE state NOT IN ('COMPLETED', 'CANCELLED') AND next_attempt_at <= " TS(
	                  "$1") "  ORDER BY next_attempt_at LIMIT $3 FOR UPDATE SKIP LOCKED) due "
	                        "WHERE s.saga_id = due.due_id RETURNING " SAGA_COLS,
	    3, p, &r);
	if (rc != 0)
		return rc;
	int count = PQntuples(r);
	for (int i = 0; i < count && i < limit; i++)
		store_read_row(r, i, &rows[i]);
	*n = (size_t)(count < limit ? count : limit);
	PQclear(r);
	return 0;
}

static int store_apply_one(PGconn *conn, store_update *u)
{
	const saga_row *b = u->before;
	char attempts[16], next[24], deadline[24], version[24];
	snprintf(attempts, sizeof attempts, "%" PRId32, u->next.attempts);
	snprintf(next, sizeof next, "%" PRId64, u->next.next_attempt_ms);
	snprintf(deadline, sizeof deadline, "%" PRId64, u->next.step_deadline_ms);
	snprintf(version, sizeof version, "%" PRId64, b->version);
	const char *p[8] = {b->saga_id, saga_state_name(u->next.state), u->next.reason, attempts,
	    u->next.attention ? "true" : "false", next, deadline, version};
	PGresult *r = NULL;
	int rc = pg_exec(conn,
	    "UPDATE sagas SET state = $2, reason = $3, attempts = $4, attention = $5, "
	    "next_attempt_at = " TS("$6") ", step_deadline = " TS(
	        "$7") ", "
	              "version = version + 1, updated_at = now() "
	              "WHERE saga_id = $1 AND version = $8",
	    8, p, &r);
	if (rc != 0)
		return rc;
	u->applied = strcmp(PQcmdTuples(r), "1") == 0;
	PQclear(r);
	if (!u->applied)
		return 0; /* rule 7: a lost race writes nothing */
	if (u->state_changed)
		rc = store_insert_history(conn, b->saga_id, b->version + 1, b->s.state,
		    u->next.state, u->event, u->next.reason);
	else if (u->attention_raised)
		rc = store_insert_history(conn, b->saga_id, b->version + 1, b->s.state,
		    u->next.state, "attention", u->next.reason);
	return rc;
}

int store_apply(PGconn *conn, store_update *ups, size_t n)
{
	for (size_t i = 0; i < n; i++)
		ups[i].applied = false;
	if (n == 0)
		return 0;
	int rc = pg_begin(conn);
	if (rc != 0)
		return rc;
	for (size_t i = 0; i < n; i++) {
		rc = store_apply_one(conn, &ups[i]);
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

int store_rearm(PGconn *conn, const char *saga_id, int64_t now_ms, saga_row *out)
{
	char now[24];
	snprintf(now, sizeof now, "%" PRId64, now_ms);
	const char *p[2] = {saga_id, now};
	PGresult *r = NULL;
	int rc = pg_begin(conn);
	if (rc != 0)
		return rc;
	rc = pg_exec(conn,
	    "UPDATE sagas SET attention = false, attempts = 0, next_attempt_at = " TS(
	        "$2") ", "
	              "version = version + 1, updated_at = now() "
	              "WHERE saga_id = $1 AND state NOT IN ('COMPLETED', 'CANCELLED') "
	              "RETURNING " SAGA_COLS,
	    2, p, &r);
	if (rc != 0)
		goto out_rollback;
	if (PQntuples(r) == 0) {
		PQclear(r);
		r = NULL;
		rc = pg_exec(conn, "SELECT 1 FROM sagas WHERE saga_id = $1", 1, p, &r);
		if (rc == 0)
			rc = PQntuples(r) == 0 ? -ENOENT : -EPERM;
		goto out_rollback;
	}
	store_read_row(r, 0, out);
	PQclear(r);
	r = NULL;
	rc = store_insert_history(
	    conn, saga_id, out->version, out->s.state, out->s.state, "retry", out->s.reason);
	if (rc != 0)
		goto out_rollback;
	return pg_commit(conn);
out_rollback:
	PQclear(r);
	pg_rollback(conn);
	return rc;
}
