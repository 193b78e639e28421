/* store_list: the listings of sagas (ListSagas) and their counts by state
 * (store.h store_list_sagas, store_count_sagas); the plan of each filter is
 * in docs/operations.md, "Listing plans". */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fault.h"
#include "pg.h"
#include "pg_watch.h"
#include "store.h"
#include "store_internal.h"

/* The fault point that stands for a slow listing (docs/testing.md,
 * "Failure injection"): `delay:ListSagasQuery:ms=N` makes the listing's
 * transaction sleep N ms in PostgreSQL (pg_sleep) before its query, under
 * the same statement_timeout and cancel as the query. */
#define STORE_LIST_FAULT "ListSagasQuery"

#define SL_PARAMS_MAX 12
#define SL_SQL_MAX    4096

/* A listing statement being written: its text and its text parameters. */
typedef struct sl_sql {
	char text[SL_SQL_MAX];
	size_t len;
	bool overflow;
	int np;
	char v[SL_PARAMS_MAX][48];
	const char *p[SL_PARAMS_MAX];
} sl_sql;

/* sl_cat appends printf-style text to b. */
__attribute__((format(printf, 2, 3))) static void sl_cat(sl_sql *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int k = vsnprintf(b->text + b->len, sizeof b->text - b->len, fmt, ap);
	va_end(ap);
	if (k < 0 || (size_t)k >= sizeof b->text - b->len)
		b->overflow = true;
	else
		b->len += (size_t)k;
}

/* sl_param adds a text parameter (copied when it fits the slot, else
 * borrowed: `val` must then outlive the statement) and returns its number. */
static int sl_param(sl_sql *b, const char *val)
{
	if (b->np >= SL_PARAMS_MAX) {
		b->overflow = true;
		return 1;
	}
	int i = b->np++;
	if (strlen(val) < sizeof b->v[i]) {
		snprintf(b->v[i], sizeof b->v[i], "%s", val);
		b->p[i] = b->v[i];
	} else {
		b->p[i] = val;
	}
	return i + 1;
}

static int sl_param_i64(sl_sql *b, int64_t v)
{
	char t[24];
	snprintf(t, sizeof t, "%" PRId64, v);
	return sl_param(b, t);
}

/* store_list_build writes the statement of q: the conditions of the filters
 * that are set, each in the words of the index that answers it (schema.sql,
 * version 7), so the plan is an index range from the page's key. */
static void store_list_build(const store_list_query *q, sl_sql *b)
{
	memset(b, 0, sizeof *b);
	int margin = sl_param_i64(b, q->margin_ms), stuck = sl_param_i64(b, q->stuck_ms);
	sl_cat(b,
	    "SELECT " SAGA_COLS ", created_us, past_deadline, compensation_failing, stuck, retrying"
	    " FROM (SELECT *, " STORE_CREATED_US " AS created_us, ");
	char m[16], st[16];
	snprintf(m, sizeof m, "$%d", margin);
	snprintf(st, sizeof st, "$%d", stuck);
	/* STORE_OVERDUE_COLS with the parameters' numbers */
	sl_cat(b, STORE_OVERDUE_COLS("%s", "%s") " FROM sagas WHERE true", m, st);
	if (q->attention_only)
		sl_cat(b, " AND attention"); /* sagas_attention */
	bool terminal = q->state != SAGA_STATE_UNSPECIFIED && saga_is_terminal(q->state);
	if (q->overdue || (q->state != SAGA_STATE_UNSPECIFIED && !terminal))
		sl_cat(b, " AND " STORE_UNFINISHED); /* sagas_open, sagas_retry */
	if (terminal)                                /* sagas_ended */
		sl_cat(b, " AND finished AND %s",
		    q->state == SAGA_STATE_CANCELLED ? "cancelled" : "NOT cancelled");
	/* the order saga's state, by its name: the names of the types of one
	 * file differ (saga_def validation); no type test, which would cost the
	 * plans their index (list_index) */
	if (q->state != SAGA_STATE_UNSPECIFIED)
		sl_cat(b, " AND state = $%d", sl_param(b, saga_state_name(q->state)));
	if (q->state_name != NULL && q->state_name[0] != '\0')
		sl_cat(b, " AND state = $%d", sl_param(b, q->state_name));
	if (q->type != NULL && q->type[0] != '\0')
		sl_cat(b, " AND coalesce(type, 'order') = $%d", sl_param(b, q->type));
	if (q->customer != NULL && q->customer[0] != '\0') /* sagas_customer */
		sl_cat(b, " AND customer = $%d", sl_param(b, q->customer));
	if (q->older_than_ms > 0)
		sl_cat(b, " AND created_at < now() - $%d::bigint * interval '1 millisecond'",
		    sl_param_i64(b, q->older_than_ms));
	if (q->created_after_ms > 0)
		sl_cat(b, " AND created_at >= to_timestamp($%d::bigint / 1000.0)",
		    sl_param_i64(b, q->created_after_ms));
	if (q->created_before_ms > 0)
		sl_cat(b, " AND created_at < to_timestamp($%d::bigint / 1000.0)",
		    sl_param_i64(b, q->created_before_ms));
	if (q->after) {
		/* the page's key: a range of every index above (their keys end
		 * in created_at, saga_id); the plain bound serves the sweep's
		 * indexes, which hold created_at alone */
		int us = sl_param_i64(b, q->after_us), id = sl_param(b, q->after_id);
		/* the timestamptz of the key's us, exactly: whole seconds, then
		 * the us */
		char ts[160];
		snprintf(ts, sizeof ts,
		    "(to_timestamp(($%d::bigint / 1000000)::double precision)"
		    " + ($%d::bigint %% 1000000) * interval '1 microsecond')",
		    us, us);
		sl_cat(b, " AND created_at <= %s AND (created_at, saga_id) < (%s, $%d::uuid)", ts,
		    ts, id);
	}
	sl_cat(b, ") s");
	if (q->overdue)
		sl_cat(b, " WHERE " STORE_OVERDUE_ANY);
	/* s.saga_id: the uuid, the index's order (a bare saga_id would be the
	 * output column, its text, and need a sort) */
	sl_cat(
	    b, " ORDER BY s.created_at DESC, s.saga_id DESC LIMIT $%d", sl_param_i64(b, q->limit));
}

/* store_watched runs `sql` in a read-only transaction bounded and watched as
 * `w` says (store_watch) and returns its result in *out (the caller
 * PQclears it). Returns 0 or a negative enum pg_err. */
static int store_watched(
    PGconn *conn, const char *sql, int np, const char *const *p, store_watch *w, PGresult **out)
{
	*out = NULL;
	w->cancelled = false;
	char begin[96];
	/* an integer formatted here: the simple protocol, both in one trip */
	snprintf(begin, sizeof begin, "BEGIN READ ONLY; SET LOCAL statement_timeout = %" PRId64,
	    w->timeout_ms > 0 ? w->timeout_ms : 1);
	PGresult *r = PQexec(conn, begin);
	int rc = 0;
	if (r == NULL || PQresultStatus(r) != PGRES_COMMAND_OK)
		rc = PQstatus(conn) == CONNECTION_OK && r != NULL
		    ? pg_classify(PQresultErrorField(r, PG_DIAG_SQLSTATE))
		    : PG_ERR_CONNECTION;
	PQclear(r);
	if (rc != 0)
		goto out_rollback;
	int64_t delay_ms = 0;
	if (fault_check(FAULT_DELAY, STORE_LIST_FAULT, &delay_ms)) {
		char secs[32];
		snprintf(secs, sizeof secs, "%.3f", (double)delay_ms / 1000.0);
		const char *sp[1] = {secs};
		bool c = false;
		rc = pg_exec_watched(conn, "SELECT pg_sleep($1::double precision)", 1, sp, NULL,
		    w->gone, w->arg, &c);
		w->cancelled = c;
		if (rc != 0)
			goto out_rollback;
	}
	bool c = false;
	rc = pg_exec_watched(conn, sql, np, p, out, w->gone, w->arg, &c);
	w->cancelled = w->cancelled || c;
	if (rc != 0)
		goto out_rollback;
	/* read-only: nothing to make durable, so not timed as a commit */
	rc = pg_run(conn, "COMMIT", 0, NULL);
	if (rc == 0)
		return 0;
	PQclear(*out);
	*out = NULL;
out_rollback:
	pg_rollback(conn);
	return rc;
}

int store_list_sagas(
    PGconn *conn, const store_list_query *q, store_watch *w, saga_row **rows, size_t *n)
{
	sl_sql *b = malloc(sizeof *b);
	if (b == NULL)
		return -ENOMEM;
	store_list_build(q, b);
	if (b->overflow) {
		free(b);
		return -EOVERFLOW; /* a bug: the statement outgrew SL_SQL_MAX */
	}
	PGresult *r = NULL;
	int rc = store_watched(conn, b->text, b->np, b->p, w, &r);
	free(b);
	if (rc != 0)
		return rc;
	int count = PQntuples(r);
	*rows = calloc(count > 0 ? (size_t)count : 1, sizeof **rows);
	if (*rows == NULL) {
		PQclear(r);
		return -ENOMEM;
	}
	for (int i = 0; i < count; i++) {
		saga_row *row = &(*rows)[i];
		store_read_row(r, i, row);
		row->created_us = pg_get_i64(r, i, SAGA_NCOLS);
		for (int k = 0; q->overdue && k < STORE_OVERDUE_N; k++)
			if (PQgetvalue(r, i, SAGA_NCOLS + 1 + k)[0] == 't')
				row->overdue |= 1u << k;
	}
	*n = (size_t)count;
	PQclear(r);
	return 0;
}

/* clang-format off */
/* The counts: the unfinished states through the sweep's indexes, and each
 * terminal state as an index range of sagas_ended that stops after $1 + 1
 * entries ($1: the bound). */
#define STORE_COUNT_ENDED(st, cond)                                                                \
	" UNION ALL SELECT '" st "', count(*), count(*) > $1::bigint FROM ("                       \
	"  SELECT 1 FROM sagas WHERE finished AND " cond " AND state = '" st "'"                  \
	"  ORDER BY cancelled DESC, created_at DESC, saga_id DESC LIMIT $1::bigint + 1) c"
static const char STORE_COUNT_SQL[] =
    "SELECT state, count(*), false FROM sagas WHERE " STORE_UNFINISHED " GROUP BY state"
    STORE_COUNT_ENDED("COMPLETED", "NOT cancelled")
    STORE_COUNT_ENDED("CANCELLED", "cancelled");
/* clang-format on */

int store_count_sagas(PGconn *conn, int64_t bound, store_watch *w, store_count *out)
{
	for (int s = 0; s <= SAGA_STATE_LAST; s++)
		out[s] = (store_count) {0};
	char b[24];
	snprintf(b, sizeof b, "%" PRId64, bound);
	const char *p[1] = {b};
	PGresult *r = NULL;
	int rc = store_watched(conn, STORE_COUNT_SQL, 1, p, w, &r);
	if (rc != 0)
		return rc;
	for (int i = 0; i < PQntuples(r); i++) {
		saga_state st = saga_state_parse(PQgetvalue(r, i, 0));
		if (st == SAGA_STATE_UNSPECIFIED)
			continue;
		bool more = PQgetvalue(r, i, 2)[0] == 't';
		out[st].n = more ? bound : pg_get_i64(r, i, 1);
		out[st].more = more;
	}
	PQclear(r);
	return 0;
}
