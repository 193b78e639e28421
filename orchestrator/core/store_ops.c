/* store_ops: the SQL of operators' actions (issue 36): an operator's cancel
 * (rule 11) and the audit trail (table audit, schema version 12). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pg.h"
#include "store.h"
#include "store_internal.h"
#include "valid.h"

int store_insert_audit(PGconn *conn, const char *action, const store_actor *who,
    const char *saga_id, int64_t version, const char *outcome)
{
	char v[24];
	snprintf(v, sizeof v, "%" PRId64, version);
	const char *p[8] = {action, who->role, who->peer, who->reason ? who->reason : "", saga_id,
	    version > 0 ? v : NULL, who->request_id ? who->request_id : "", outcome};
	return pg_run(conn,
	    "INSERT INTO audit (action, role, peer, reason, saga_id, saga_started_at, version, "
	    "request_id, outcome) VALUES ($1, $2, $3, $4, $5::uuid, "
	    "(SELECT created_at FROM sagas WHERE saga_id = $5::uuid), $6::bigint, $7, $8)",
	    8, p);
}

/* store_cancel_replayed looks for a cancel of saga `saga_id` (this saga:
 * its id and its start, rule R5) with request id `request_id` ("": never)
 * in the audit table: 0 none, 1 one with this reason, 2 one with another
 * reason, or a negative enum pg_err. */
static int store_cancel_replayed(
    PGconn *conn, const char *saga_id, const char *request_id, const char *reason)
{
	if (request_id == NULL || request_id[0] == '\0')
		return 0;
	const char *p[2] = {saga_id, request_id};
	PGresult *r = NULL;
	int rc = pg_exec(conn,
	    "SELECT a.reason FROM audit a JOIN sagas s ON s.saga_id = a.saga_id "
	    "AND s.created_at = a.saga_started_at WHERE a.saga_id = $1::uuid "
	    "AND a.action = 'cancel' AND a.request_id = $2",
	    2, p, &r);
	if (rc != 0)
		return rc;
	int found = PQntuples(r) == 0                                ? 0
	    : strcmp(PQgetvalue(r, 0, 0), reason ? reason : "") == 0 ? 1
	                                                             : 2;
	PQclear(r);
	return found;
}

store_cancel_result store_cancel(PGconn *conn, const char *saga_id, const store_actor *who,
    int64_t created_after_ms, const char *writer, store_decide_fn *decide, void *ctx, saga_row *out,
    const char **refused, int *err)
{
	*err = 0;
	*refused = NULL;
	const char *p[1] = {saga_id};
	PGresult *r = NULL;
	store_cancel_result res = STORE_CANCEL_ERROR;
	int rc = pg_begin(conn);
	if (rc != 0) {
		*err = rc;
		return STORE_CANCEL_ERROR;
	}
	/* the row, locked until the commit: a reply written meanwhile waits,
	 * and is then decided on the row this writes (rule 7); a repeat of
	 * this cancel waits too, and then finds its audit row */
	rc = pg_exec(
	    conn, "SELECT " SAGA_COLS " FROM sagas WHERE saga_id = $1 FOR UPDATE", 1, p, &r);
	if (rc != 0)
		goto out_rollback;
	if (PQntuples(r) == 0) {
		res = STORE_CANCEL_NOT_FOUND;
		goto out_rollback;
	}
	store_read_row(r, 0, out);
	PQclear(r);
	r = NULL;
	int replayed = store_cancel_replayed(conn, saga_id, who->request_id, who->reason);
	if (replayed < 0) {
		rc = replayed;
		goto out_rollback;
	}
	if (replayed > 0) {
		res = replayed == 1 ? STORE_CANCEL_REPLAYED : STORE_CANCEL_KEY_MISMATCH;
		goto out_rollback;
	}
	if (!out->finished && out->created_ms < created_after_ms) {
		res = STORE_CANCEL_PAST_HORIZON;
		goto out_rollback;
	}
	saga_row after;
	store_update up;
	memset(&up, 0, sizeof up);
	if (decide(ctx, out, &after, &up, refused) != 0) {
		res = STORE_CANCEL_UNDECIDED;
		goto out_rollback;
	}
	if (*refused != NULL) {
		res = STORE_CANCEL_REFUSED;
		goto out_rollback;
	}
	up.before = out;
	up.next = after.s;
	up.state = after.state;
	up.members = after.members;
	up.compensating = after.compensating;
	up.finished = after.finished;
	rc = store_write_update(conn, &up, writer);
	if (rc == 0 && !up.applied)
		rc = PG_ERR_RETRY; /* cannot happen under the row lock */
	if (rc == 0)
		rc = store_insert_audit(conn, "cancel", who, saga_id, after.version, after.state);
	if (rc != 0)
		goto out_rollback;
	rc = pg_commit(conn);
	if (rc != 0) {
		*err = rc;
		return STORE_CANCEL_ERROR;
	}
	*out = after;
	return STORE_CANCEL_OK;
out_rollback:
	PQclear(r);
	pg_rollback(conn);
	*err = rc;
	return rc != 0 ? STORE_CANCEL_ERROR : res;
}

int store_list_audit(PGconn *conn, const char *saga_id, const char *action, int64_t before_id,
    int limit, store_audit_entry **out, size_t *n)
{
	*out = NULL;
	*n = 0;
	char before[24], lim[16];
	snprintf(before, sizeof before, "%" PRId64, before_id > 0 ? before_id : INT64_MAX);
	snprintf(lim, sizeof lim, "%d", limit);
	const char *p[4] = {saga_id[0] ? saga_id : NULL, action, before, lim};
	PGresult *r = NULL;
	int rc = pg_exec(conn,
	    "SELECT id, " MS("at") ", action, role, peer, reason, coalesce(saga_id::text, ''), "
	                           "coalesce(version, 0), request_id, outcome FROM audit "
	                           "WHERE ($1::uuid IS NULL OR saga_id = $1::uuid) "
	                           "AND ($2 = '' OR action = $2) AND id < $3::bigint "
	                           "ORDER BY id DESC LIMIT $4::integer",
	    4, p, &r);
	if (rc != 0)
		return rc;
	int count = PQntuples(r);
	if (count > 0) {
		*out = calloc((size_t)count, sizeof **out);
		if (*out == NULL) {
			PQclear(r);
			return -ENOMEM;
		}
	}
	for (int i = 0; i < count; i++) {
		store_audit_entry *e = &(*out)[i];
		e->id = pg_get_i64(r, i, 0);
		e->at_ms = pg_get_i64(r, i, 1);
		(void)valid_utf8_copy(e->action, sizeof e->action, PQgetvalue(r, i, 2));
		(void)valid_utf8_copy(e->role, sizeof e->role, PQgetvalue(r, i, 3));
		(void)valid_utf8_copy(e->peer, sizeof e->peer, PQgetvalue(r, i, 4));
		(void)valid_utf8_copy(e->reason, sizeof e->reason, PQgetvalue(r, i, 5));
		(void)valid_utf8_copy(e->saga_id, sizeof e->saga_id, PQgetvalue(r, i, 6));
		e->version = pg_get_i64(r, i, 7);
		(void)valid_utf8_copy(e->request_id, sizeof e->request_id, PQgetvalue(r, i, 8));
		(void)valid_utf8_copy(e->outcome, sizeof e->outcome, PQgetvalue(r, i, 9));
	}
	*n = (size_t)count;
	PQclear(r);
	return 0;
}
