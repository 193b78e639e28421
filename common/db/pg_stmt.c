/* pg_stmt: prepared statements (pg_exec_stmt and the note of what each
 * thread's session has prepared), array literals (pg_buf) and pipelines
 * (pg_pipeline) of pg.h. Connections, sessions and errors are in pg.c. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "log.h"
#include "pg.h"
#include "pg_internal.h"

/* ---- prepared statements ---- */

/* Which statements the session of this thread's connection has prepared.
 * A connection is owned by one thread (house style), and a thread uses one
 * connection at a time, so one note per thread is enough; another
 * connection or backend pid starts it over. */
static _Thread_local struct {
	const PGconn *conn;
	int backend_pid;
	const pg_stmt *prepared[PG_STMT_MAX];
	int n;
} pg_prep;

/* pg_prep_find returns the index of `st` in this thread's note for `conn`
 * (starting the note over for another connection or session), or pg_prep.n
 * when the session has not prepared it. */
static int pg_prep_find(PGconn *conn, const pg_stmt *st)
{
	int pid = PQbackendPID(conn);
	if (pg_prep.conn != conn || pg_prep.backend_pid != pid || pid == 0) {
		memset(&pg_prep, 0, sizeof pg_prep);
		pg_prep.conn = conn;
		pg_prep.backend_pid = pid;
	}
	int k = 0;
	while (k < pg_prep.n && pg_prep.prepared[k] != st)
		k++;
	return k;
}

/* pg_prep_forget drops `st` from the note (the session lost it). */
static void pg_prep_forget(const pg_stmt *st)
{
	for (int k = 0; k < pg_prep.n; k++)
		if (pg_prep.prepared[k] == st) {
			pg_prep.prepared[k] = pg_prep.prepared[--pg_prep.n];
			return;
		}
}

int pg_exec_stmt(
    PGconn *conn, const pg_stmt *st, int nparams, const char *const *params, PGresult **out)
{
	if (out)
		*out = NULL;
	int k = pg_prep_find(conn, st);
	if (k == pg_prep.n) {
		if (k == PG_STMT_MAX) /* a bug: more statements than the note holds */
			return pg_exec(conn, st->sql, nparams, params, out);
		PGresult *p = PQprepare(conn, st->name, st->sql, nparams, NULL);
		const char *ps = p ? PQresultErrorField(p, PG_DIAG_SQLSTATE) : NULL;
		if (ps != NULL && strcmp(ps, "42P05") == 0) {
			/* already prepared in this session: another connection of
			 * this thread was used in between (names are unique, so it is
			 * the same statement) */
		} else if (p == NULL || PQresultStatus(p) != PGRES_COMMAND_OK) {
			int rc = pg_fail(conn, p, "prepare");
			PQclear(p);
			return rc;
		}
		PQclear(p);
		pg_prep.prepared[pg_prep.n++] = st;
	}
	bool timed = st->commits && PQtransactionStatus(conn) == PQTRANS_IDLE;
	int64_t t0 = timed ? clock_mono_us() : 0;
	PGresult *res = PQexecPrepared(conn, st->name, nparams, params, NULL, NULL, 0);
	ExecStatusType status = res ? PQresultStatus(res) : PGRES_FATAL_ERROR;
	if (status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK) {
		if (timed)
			pg_observe_commit(t0);
		if (out)
			*out = res;
		else
			PQclear(res);
		return PG_OK;
	}
	int rc = pg_fail(conn, res, st->name);
	const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
	if (state && strcmp(state, "26000") == 0) /* the session lost it */
		pg_prep.prepared[k] = pg_prep.prepared[--pg_prep.n];
	PQclear(res);
	return rc;
}

/* ---- array literals ---- */

static void pg_buf_put(pg_buf *b, const char *s, size_t n)
{
	if (b->oom)
		return;
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		while (cap < b->len + n + 1)
			cap *= 2;
		char *p = realloc(b->p, cap);
		if (p == NULL) {
			b->oom = true;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

void pg_array_open(pg_buf *b)
{
	b->len = 0;
	b->any = false;
	pg_buf_put(b, "{", 1);
}

void pg_array_add(pg_buf *b, const char *elem)
{
	if (b->any)
		pg_buf_put(b, ",", 1);
	b->any = true;
	if (elem == NULL) {
		pg_buf_put(b, "NULL", 4);
		return;
	}
	pg_buf_put(b, "\"", 1);
	for (const char *c = elem; *c; c++) {
		size_t run = strcspn(c, "\"\\");
		pg_buf_put(b, c, run);
		c += run;
		if (*c == '\0')
			break;
		pg_buf_put(b, "\\", 1);
		pg_buf_put(b, c, 1);
	}
	pg_buf_put(b, "\"", 1);
}

void pg_array_add_i64(pg_buf *b, int64_t v)
{
	char num[24];
	int n = snprintf(num, sizeof num, "%" PRId64, v);
	if (b->any)
		pg_buf_put(b, ",", 1);
	b->any = true;
	pg_buf_put(b, num, (size_t)n);
}

void pg_array_close(pg_buf *b)
{
	pg_buf_put(b, "}", 1);
}

void pg_buf_free(pg_buf *b)
{
	free(b->p);
	memset(b, 0, sizeof *b);
}

/* ---- pipelines ---- */

int pg_pipeline(PGconn *conn, pg_call *calls, int n)
{
	enum { ITEM_PREPARE, ITEM_QUERY };
	int kind[2 * PG_PIPELINE_MAX], owner[2 * PG_PIPELINE_MAX], m = 0;
	for (int i = 0; i < n; i++)
		calls[i].res = NULL;
	if (n < 1 || n > PG_PIPELINE_MAX)
		return PG_ERR_OTHER;
	if (PQenterPipelineMode(conn) != 1)
		return pg_fail(conn, NULL, "pipeline");
	int64_t t0 = clock_mono_us();
	int rc = 0;
	for (int i = 0; i < n && rc == 0; i++) {
		const pg_stmt *st = calls[i].st;
		int sent;
		if (st != NULL && pg_prep_find(conn, st) == pg_prep.n) {
			if (pg_prep.n == PG_STMT_MAX) { /* a bug: more statements than the note */
				rc = PG_ERR_OTHER;
				break;
			}
			if (!PQsendPrepare(conn, st->name, st->sql, calls[i].nparams, NULL)) {
				rc = PG_ERR_CONNECTION;
				break;
			}
			kind[m] = ITEM_PREPARE;
			owner[m++] = i;
		}
		if (st != NULL)
			sent = PQsendQueryPrepared(
			    conn, st->name, calls[i].nparams, calls[i].params, NULL, NULL, 0);
		else
			sent = PQsendQueryParams(conn, calls[i].sql, 0, NULL, NULL, NULL, NULL, 0);
		if (!sent)
			rc = PG_ERR_CONNECTION;
		kind[m] = ITEM_QUERY;
		owner[m++] = i;
	}
	if (rc == 0 && PQpipelineSync(conn) != 1)
		rc = PG_ERR_CONNECTION;
	/* each statement's results end with a NULL; the sync's result ends the
	 * pipeline (every statement after a failed one reads as ABORTED) */
	int k = 0, first = 0;
	while (rc == 0) {
		PGresult *r = PQgetResult(conn);
		if (r == NULL) {
			if (PQstatus(conn) != CONNECTION_OK) {
				rc = PG_ERR_CONNECTION;
				break;
			}
			k++;
			continue;
		}
		ExecStatusType status = PQresultStatus(r);
		if (status == PGRES_PIPELINE_SYNC) {
			PQclear(r);
			break;
		}
		if (k >= m || status == PGRES_PIPELINE_ABORTED) {
			PQclear(r);
			continue;
		}
		pg_call *c = &calls[owner[k]];
		if (status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK) {
			if (kind[k] == ITEM_PREPARE) {
				pg_prep.prepared[pg_prep.n++] = c->st;
				PQclear(r);
			} else {
				PQclear(c->res);
				c->res = r;
			}
			continue;
		}
		const char *state = PQresultErrorField(r, PG_DIAG_SQLSTATE);
		if (first == 0) {
			if (kind[k] == ITEM_PREPARE && state && strcmp(state, "42P05") == 0) {
				/* prepared already by this session (another connection
				 * of the thread was used in between): run again */
				pg_prep.prepared[pg_prep.n++] = c->st;
				first = PG_ERR_RETRY;
			} else {
				first = pg_fail(conn, r, c->st ? c->st->name : c->sql);
				if (c->st && state && strcmp(state, "26000") == 0)
					pg_prep_forget(c->st); /* the session lost it */
			}
		}
		PQclear(r);
	}
	if (rc == 0)
		rc = first;
	if (PQexitPipelineMode(conn) != 1) {
		/* results left unread (the connection broke mid-pipeline): a
		 * connection stuck in pipeline mode would fail every later call,
		 * so start a new session (PQreset; the next call checks it) */
		log_warn(NULL, "could not end a pipeline: %s", PQerrorMessage(conn));
		PQreset(conn);
		if (PQstatus(conn) == CONNECTION_OK)
			pg_session_setup(conn);
		rc = PG_ERR_CONNECTION;
	}
	if (rc != 0)
		for (int i = 0; i < n; i++) {
			PQclear(calls[i].res);
			calls[i].res = NULL;
		}
	else if (calls[n - 1].st == NULL && strcmp(calls[n - 1].sql, "COMMIT") == 0)
		pg_observe_commit(t0);
	return rc;
}

void pg_arrays_open(pg_buf *cols, int n)
{
	memset(cols, 0, (size_t)n * sizeof *cols);
	for (int k = 0; k < n; k++)
		pg_array_open(&cols[k]);
}

int pg_arrays_close(pg_buf *cols, int n, const char **params)
{
	int rc = 0;
	for (int k = 0; k < n; k++) {
		pg_array_close(&cols[k]);
		if (cols[k].oom)
			rc = -ENOMEM;
		params[k] = cols[k].p;
	}
	return rc;
}

void pg_arrays_free(pg_buf *cols, int n)
{
	for (int k = 0; k < n; k++)
		pg_buf_free(&cols[k]);
}
