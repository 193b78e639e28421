/* pkit_store: the database side of the participant kit (pkit.h). Its SQL is
 * generated once per service from the table and column names of the
 * pkit_service (house style: SQL lives in the stores; this is the store of
 * every participant's saga commands). */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fault.h"
#include "log.h"
#include "pg.h"
#include "pkit.h"
#include "pkit_sql.h"

/* A command that keeps losing races this many times is answered
 * UNAVAILABLE: the orchestrator retries it later. */
#define PKIT_TX_TRIES 10
/* How long a request waits for a lost database to come back: short, so the
 * caller gets UNAVAILABLE well within its deadline and retries. */
#define PKIT_RECONNECT_WAIT_MS 500
/* What pkit_try_fast returns when the one-round-trip path does not apply
 * (no error: the caller takes the locking path). */
#define PKIT_NOT_FAST 1
/* The most array parameters of a statement: a record's columns twice, and
 * three for rows. */
#define PKIT_COLS_MAX (2 * (3 + PKIT_TEXT_MAX + PKIT_NUM_MAX) + 3)
/* The columns of a record as the statements pass it: saga_id, status, the
 * texts, the numbers, and its saga's start (PKIT_STARTED_COL). */
#define PKIT_REC_COLS(v) (3 + (v)->n_text + (v)->n_num)

struct pkit_store {
	const pkit_service *svc;
	PGconn *conn; /* NULL until the first successful connect */
	const char *conninfo;
	valcache *cache;          /* the daemon's, shared by its workers; NULL: no fast path */
	uint64_t fast, fell_back; /* pkit_try_fast: committed, failed */
};

/* ---- the generated statements ---- */

void pkit_sql_add(char *b, size_t len, bool *ok, const char *fmt, ...)
{
	size_t at = strlen(b);
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(b + at, len - at, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= len - at)
		*ok = false;
}

/* sql_cols appends the record's column names after saga_id and status,
 * each prefixed with `pre` (", " or ", v."). */
static void sql_cols(char *b, size_t len, bool *ok, const pkit_service *v, const char *pre)
{
	for (int i = 0; i < v->n_text; i++)
		pkit_sql_add(b, len, ok, "%s%s", pre, v->text_cols[i]);
	for (int i = 0; i < v->n_num; i++)
		pkit_sql_add(b, len, ok, "%s%s", pre, v->num_cols[i]);
}

/* sql_unnest appends "unnest($k::uuid[], $k+1::text[], ...)" for a record's
 * columns from parameter `first`. */
static void sql_unnest(char *b, size_t len, bool *ok, const pkit_service *v, int first)
{
	int k = first;
	pkit_sql_add(b, len, ok, "unnest($%d::uuid[], $%d::text[]", k, k + 1);
	k += 2;
	for (int i = 0; i < v->n_text; i++)
		pkit_sql_add(b, len, ok, ", $%d::text[]", k++);
	for (int i = 0; i < v->n_num; i++)
		pkit_sql_add(b, len, ok, ", $%d::bigint[]", k++);
	pkit_sql_add(b, len, ok, ", $%d::bigint[])", k); /* the saga's start */
}

/* sql_insert appends the CTE part that inserts new records from parameter 1. */
static void sql_insert(char *b, size_t len, bool *ok, const pkit_service *v)
{
	pkit_sql_add(b, len, ok, "ins AS (INSERT INTO %s (saga_id, status", v->records);
	sql_cols(b, len, ok, v, ", ");
	pkit_sql_add(b, len, ok, ", " PKIT_STARTED_COL ") SELECT * FROM ");
	sql_unnest(b, len, ok, v, 1);
	/* in key order: two transactions inserting the same new saga ids
	 * wait on each other's index entries in one order, never in a cycle
	 * (a service without rows has no row lock taken before) */
	pkit_sql_add(b, len, ok, " ORDER BY 1 RETURNING 1)");
}

/* pkit_sql_build writes the four statements of `v` into v->sql. The rows
 * are locked in key order, as the records, so two transactions wait on each
 * other in the same order; every write also filters by its key array (=
 * ANY), so that a generic plan cached while a table was small cannot scan
 * it whole. Returns false when a statement did not fit (a bug in the
 * descriptor). */
static bool pkit_sql_build(const pkit_service *v, pkit_sql *q)
{
	bool ok = true;
	const int k = PKIT_REC_COLS(v); /* columns of a record */
	memset(q, 0, sizeof *q);
	static const char *const what[4]
	    = {"lock_records", "lock_rows", "write_batch", "write_fast"};
	for (int i = 0; i < 4; i++)
		snprintf(q->names[i], sizeof q->names[i], "pkit_%s_%s", v->name, what[i]);
	size_t len = sizeof q->text[0];

	/* the locking reads */
	char *b = q->text[0];
	pkit_sql_add(b, len, &ok, "SELECT saga_id, status");
	sql_cols(b, len, &ok, v, ", ");
	pkit_sql_add(b, len, &ok,
	    ", coalesce(" PKIT_STARTED_COL ", 0), (extract(epoch FROM created_at) * 1000)::bigint");
	pkit_sql_add(b, len, &ok,
	    " FROM %s WHERE saga_id = ANY($1::uuid[]) ORDER BY saga_id FOR UPDATE", v->records);
	b = q->text[1];
	if (v->rows != NULL)
		pkit_sql_add(b, len, &ok,
		    "SELECT %s, %s FROM %s WHERE %s = ANY($1::text[]) ORDER BY %s FOR UPDATE",
		    v->row_key, v->row_value, v->rows, v->row_key, v->row_key);

	/* the writes of the locking path: new records, changed records,
	 * changed rows; each must change exactly the rows decided on */
	b = q->text[2];
	pkit_sql_add(b, len, &ok, "WITH ");
	sql_insert(b, len, &ok, v);
	pkit_sql_add(b, len, &ok, ", upd AS (UPDATE %s r SET status = v.status", v->records);
	for (int i = 0; i < v->n_text; i++)
		pkit_sql_add(b, len, &ok, ", %s = v.%s", v->text_cols[i], v->text_cols[i]);
	for (int i = 0; i < v->n_num; i++)
		pkit_sql_add(b, len, &ok, ", %s = v.%s", v->num_cols[i], v->num_cols[i]);
	pkit_sql_add(b, len, &ok, ", updated_at = now() FROM ");
	sql_unnest(b, len, &ok, v, k + 1);
	pkit_sql_add(b, len, &ok, " AS v(saga_id, status");
	sql_cols(b, len, &ok, v, ", ");
	/* a record's start is never changed (rule R5) */
	pkit_sql_add(b, len, &ok,
	    ", started) WHERE r.saga_id = v.saga_id AND r.saga_id = ANY($%d::uuid[]) RETURNING 1)",
	    k + 1);
	if (v->rows != NULL)
		pkit_sql_add(b, len, &ok,
		    ", w AS (UPDATE %s s SET %s = v.val FROM unnest($%d::text[], $%d::bigint[]) AS "
		    "v(key, val)"
		    " WHERE s.%s = v.key AND s.%s = ANY($%d::text[]) RETURNING 1)",
		    v->rows, v->row_value, 2 * k + 1, 2 * k + 2, v->row_key, v->row_key, 2 * k + 1);
	pkit_sql_add(b, len, &ok,
	    " SELECT saga_check((SELECT count(*) FROM ins) = cardinality($1::uuid[])"
	    " AND (SELECT count(*) FROM upd) = cardinality($%d::uuid[])",
	    k + 1);
	if (v->rows != NULL)
		pkit_sql_add(b, len, &ok,
		    " AND (SELECT count(*) FROM w) = cardinality($%d::text[])", 2 * k + 1);
	pkit_sql_add(b, len, &ok, ", 'a batch wrote other rows than it decided on')");

	/* The one-round-trip path: the new records and the rows, each row
	 * written only if it still holds the value the decision was made on
	 * (from the value cache), saga_unchanged failing the statement with
	 * serialization_failure otherwise (a lost race); one statement, so one
	 * implicit transaction without BEGIN or COMMIT. The rows are locked
	 * first and in key order (`locked`, evaluated by `w`, which the check
	 * reads first), as the locking path locks them, and only then are the
	 * records inserted, so the two paths never wait on each other in a
	 * cycle: without that order a batch of each deadlocked under a burst
	 * (PostgreSQL ends a deadlock after deadlock_timeout, 1 s). A record
	 * that exists already fails it with unique_violation. */
	b = q->text[3];
	pkit_sql_add(b, len, &ok, "WITH ");
	if (v->rows != NULL) {
		int r = k + 1;
		pkit_sql_add(b, len, &ok,
		    "locked AS (SELECT %s AS key, %s AS val FROM %s WHERE %s = ANY($%d::text[])"
		    " ORDER BY %s FOR UPDATE),"
		    " w AS (UPDATE %s s SET %s = v.now FROM unnest($%d::text[], $%d::bigint[], "
		    "$%d::bigint[])"
		    " AS v(key, was, now) JOIN locked l ON l.key = v.key AND l.val = v.was"
		    " WHERE s.%s = v.key AND s.%s = ANY($%d::text[]) RETURNING 1), ",
		    v->row_key, v->row_value, v->rows, v->row_key, r, v->row_key, v->rows,
		    v->row_value, r, r + 1, r + 2, v->row_key, v->row_key, r);
	}
	sql_insert(b, len, &ok, v);
	pkit_sql_add(b, len, &ok, " SELECT saga_unchanged(");
	if (v->rows != NULL)
		pkit_sql_add(
		    b, len, &ok, "(SELECT count(*) FROM w) = cardinality($%d::text[]) AND ", k + 1);
	pkit_sql_add(b, len, &ok,
	    "(SELECT count(*) FROM ins) = cardinality($1::uuid[]),"
	    " 'a row changed since its value was cached')");

	pg_stmt *st[4] = {&q->lock_records, &q->lock_rows, &q->write_batch, &q->write_fast};
	for (int i = 0; i < 4; i++)
		*st[i] = (pg_stmt) {.name = q->names[i], .sql = q->text[i], .commits = i == 3};
	q->built = ok;
	return ok;
}

/* pkit_sql_of returns the service's statements, built at first use (under a
 * lock: workers open their stores together); NULL when they cannot be. */
static const pkit_sql *pkit_sql_of(const pkit_service *v)
{
	static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
	pthread_mutex_lock(&mu);
	bool ok = v->sql->built || pkit_sql_build(v, v->sql);
	pthread_mutex_unlock(&mu);
	return ok ? v->sql : NULL;
}

/* ---- the store ---- */

int pkit_migrate(const pkit_service *svc, const char *conninfo, int64_t wait_ms)
{
	/* the kit's functions first, then the service's schema, then the
	 * kit's column of every records table (rule R5: a service's schema
	 * that does not add it still gets it): one script, one transaction,
	 * under the service's lock and version */
	char col[160];
	int c = snprintf(col, sizeof col,
	    "\nALTER TABLE %s ADD COLUMN IF NOT EXISTS " PKIT_STARTED_COL " bigint;\n",
	    svc->records);
	if (c < 0 || (size_t)c >= sizeof col)
		return -EINVAL;
	size_t a = strlen(pkit_schema_sql), b = strlen(svc->schema.sql);
	char *sql = malloc(a + b + (size_t)c + 2);
	if (sql == NULL)
		return -ENOMEM;
	memcpy(sql, pkit_schema_sql, a);
	sql[a] = '\n';
	memcpy(sql + a + 1, svc->schema.sql, b);
	memcpy(sql + a + 1 + b, col, (size_t)c + 1);
	pg_schema schema = svc->schema;
	schema.sql = sql;
	int rc = pg_connect_and_apply_schema(conninfo, wait_ms, &schema);
	free(sql);
	return rc;
}

int pkit_store_open(pkit_store **out, const pkit_service *svc, const char *conninfo,
    int64_t wait_ms, valcache *cache)
{
	if (pkit_sql_of(svc) == NULL) {
		log_error(
		    NULL, "could not open the %s store: its statements do not fit", svc->name);
		return -EINVAL;
	}
	pkit_store *s = calloc(1, sizeof *s);
	if (s == NULL)
		return -ENOMEM;
	s->svc = svc;
	s->conninfo = conninfo;
	s->cache = svc->rows != NULL ? cache : NULL;
	/* a failure here is not fatal: pkit_store_ready() retries per call */
	s->conn = pg_connect(conninfo, wait_ms);
	*out = s;
	return 0;
}

void pkit_store_close(pkit_store *s)
{
	if (s == NULL)
		return;
	PQfinish(s->conn);
	free(s);
}

int pkit_store_ready(pkit_store *s)
{
	return pg_ready(&s->conn, s->conninfo, PKIT_RECONNECT_WAIT_MS);
}

bool pkit_store_may_rerun(pkit_store *s, int rc, bool *rerun_done)
{
	return pg_may_rerun(&s->conn, s->conninfo, PKIT_RECONNECT_WAIT_MS, rc, rerun_done);
}

PGconn *pkit_store_conn(pkit_store *s)
{
	return s->conn;
}

void pkit_store_learn(pkit_store *s, const char *key, int64_t value)
{
	if (s->cache != NULL)
		valcache_learn(s->cache, &key, 1, &value);
}

/* pkit_try_snapshot is one attempt of pkit_store_snapshot. */
static int pkit_try_snapshot(
    pkit_store *s, const char *const *sql, int n, const char *limit, PGresult **res)
{
	for (int i = 0; i < n; i++)
		res[i] = NULL;
	int rc = pg_run(s->conn, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", 0, NULL);
	for (int i = 0; rc == 0 && i < n; i++) {
		const char *p[] = {limit};
		if (sql[i] != NULL)
			rc = pg_exec(s->conn, sql[i], strstr(sql[i], "$1") ? 1 : 0, p, &res[i]);
	}
	if (rc == 0)
		rc = pg_commit(s->conn);
	if (rc != 0) {
		pg_rollback(s->conn);
		for (int i = 0; i < n; i++) {
			PQclear(res[i]);
			res[i] = NULL;
		}
	}
	return rc;
}

int pkit_store_snapshot(pkit_store *s, const char *const *sql, int n, int32_t limit, PGresult **res)
{
	char lim[16];
	snprintf(lim, sizeof lim, "%d", (int)limit + 1);
	int rc = pkit_store_ready(s);
	bool rerun_done = false;
	if (rc == 0) {
		do
			rc = pkit_try_snapshot(s, sql, n, lim, res);
		while (pkit_store_may_rerun(s, rc, &rerun_done));
	} else {
		for (int i = 0; i < n; i++)
			res[i] = NULL;
	}
	return rc;
}

void pkit_store_fast_counts(const pkit_store *s, uint64_t *fast, uint64_t *fell_back)
{
	*fast = s->fast;
	*fell_back = s->fell_back;
}

/* pkit_op_name names an op for the fault points and logs: the method's last
 * part ("ReserveStock"). */
static const char *pkit_op_name(const pkit_service *v, int op)
{
	for (size_t i = 0; i < v->n_methods; i++)
		if (v->methods[i].op == op)
			return method_table[v->methods[i].id].name;
	return "?";
}

/* pkit_add_record appends a record's columns (saga id, status, texts,
 * numbers) to the arrays from cols[0]. */
static void pkit_add_record(
    const pkit_service *v, pg_buf *cols, const char *saga_id, const pkit_record *r)
{
	pg_array_add(&cols[0], saga_id);
	pg_array_add(&cols[1], v->status_name(r->status));
	for (int i = 0; i < v->n_text; i++)
		pg_array_add(&cols[2 + i], r->text[i]);
	for (int i = 0; i < v->n_num; i++)
		pg_array_add_i64(&cols[2 + v->n_text + i], r->num[i]);
	pg_array_add_i64(&cols[2 + v->n_text + v->n_num], r->started);
}

/* pkit_try_fast is the one-round-trip path (docs/architecture.md,
 * "Participants: the one-round-trip path") for `n` commands that are all
 * the service's fast_op of saga ids that appear once: it takes each row's
 * value from the value cache (claiming the keys, so no other worker of this
 * daemon guesses on them meanwhile), runs decide for each command in order
 * as the locking path would on a new saga id and those values, and writes
 * the new records and the rows with write_fast. Returns 0 when committed;
 * PKIT_NOT_FAST when the path does not apply (nothing done; always while a
 * fault is armed, so that the fault points are met); else the enum pg_err
 * of the failed statement, nothing written and the keys forgotten by the
 * cache: the caller takes the locking path. */
static int pkit_try_fast(pkit_store *s, pkit_cmd *cmds, size_t n)
{
	const pkit_service *v = s->svc;
	bool rows = v->rows != NULL;
	if (v->fast_op == 0 || (rows && s->cache == NULL) || n < 1 || n > RPC_BATCH_MAX
	    || fault_any())
		return PKIT_NOT_FAST;
	const char *keys[RPC_BATCH_MAX];
	int64_t was[RPC_BATCH_MAX], now[RPC_BATCH_MAX];
	size_t row_of[RPC_BATCH_MAX], n_rows = 0;
	for (size_t i = 0; i < n; i++) {
		if (cmds[i].args.op != v->fast_op)
			return PKIT_NOT_FAST;
		for (size_t k = 0; k < i; k++)
			if (strcmp(cmds[k].saga_id, cmds[i].saga_id) == 0)
				return PKIT_NOT_FAST; /* a duplicate answers from its record */
		if (!rows)
			continue;
		size_t j = 0;
		while (j < n_rows && strcmp(keys[j], cmds[i].args.text[0]) != 0)
			j++;
		if (j == n_rows)
			keys[n_rows++] = cmds[i].args.text[0];
		row_of[i] = j;
	}
	if (rows && !valcache_claim(s->cache, keys, n_rows, was))
		return PKIT_NOT_FAST;
	memcpy(now, was, n_rows * sizeof *now);
	for (size_t i = 0; i < n; i++) {
		const pkit_record none = {.status = 0};
		const pkit_row row = {.exists = true, .value = rows ? now[row_of[i]] : 0};
		pkit_outcome *o = &cmds[i].out;
		pkit_decide(v, &none, rows ? &row : NULL, &cmds[i].args, o);
		if (!o->write_record) { /* not a first step: not this path's case */
			if (rows)
				valcache_release(s->cache, keys, n_rows, was);
			return PKIT_NOT_FAST;
		}
		if (rows && o->write_row)
			now[row_of[i]] = o->value;
		cmds[i].value = rows ? now[row_of[i]] : 0;
	}
	const int k = PKIT_REC_COLS(v);
	const int ncols = k + (rows ? 3 : 0);
	pg_buf col[PKIT_COLS_MAX];
	pg_arrays_open(col, ncols);
	for (size_t i = 0; i < n; i++)
		pkit_add_record(v, col, cmds[i].saga_id, &cmds[i].out.record);
	for (size_t j = 0; j < n_rows; j++) {
		pg_array_add(&col[k], keys[j]);
		pg_array_add_i64(&col[k + 1], was[j]);
		pg_array_add_i64(&col[k + 2], now[j]);
	}
	const char *p[PKIT_COLS_MAX];
	int rc = pg_arrays_close(col, ncols, p);
	PGresult *res = NULL;
	if (rc == 0)
		rc = pg_exec_stmt(s->conn, &v->sql->write_fast, ncols, p, &res);
	PQclear(res);
	pg_arrays_free(col, ncols);
	if (rows)
		valcache_release(s->cache, keys, n_rows, rc == 0 ? now : NULL);
	if (rc == 0)
		s->fast++;
	else
		s->fell_back++;
	return rc;
}

/* One record or row a transaction holds in memory between its locking read
 * and its writes. */
typedef struct pkit_rec_slot {
	char saga_id[VALID_UUID_LEN + 1];
	pkit_record rec;
	bool in_db; /* read from the table (UPDATE) or new (INSERT) */
	bool dirty;
} pkit_rec_slot;

typedef struct pkit_row_slot {
	const char *key; /* borrowed from a command */
	pkit_row row;
	bool dirty;
} pkit_row_slot;

/* What one attempt of a transaction reads and decides. */
typedef struct pkit_tx {
	pkit_rec_slot recs[RPC_BATCH_MAX];
	size_t n_recs;
	pkit_row_slot rows[RPC_BATCH_MAX];
	size_t n_rows;
} pkit_tx;

static pkit_rec_slot *pkit_find_rec(pkit_tx *b, const char *saga_id)
{
	for (size_t i = 0; i < b->n_recs; i++)
		if (strcmp(b->recs[i].saga_id, saga_id) == 0)
			return &b->recs[i];
	return NULL;
}

static pkit_row_slot *pkit_find_row(pkit_tx *b, const char *key)
{
	for (size_t i = 0; i < b->n_rows; i++)
		if (strcmp(b->rows[i].key, key) == 0)
			return &b->rows[i];
	return NULL;
}

/* pkit_read_records fills the slots of `b` from the locking read `res`
 * (saga_id, status, texts, numbers). Returns 0 or PG_ERR_OTHER (a row that
 * cannot be: a bug, logged). */
static int pkit_read_records(const pkit_service *v, pkit_tx *b, const PGresult *res)
{
	for (int i = 0; i < PQntuples(res); i++) {
		pkit_rec_slot *r = pkit_find_rec(b, PQgetvalue(res, i, 0));
		if (r == NULL) {
			log_error(NULL, "could not read the %s records: unexpected saga id %s",
			    v->name, PQgetvalue(res, i, 0));
			return PG_ERR_OTHER;
		}
		r->in_db = true;
		r->rec.status = v->status_parse(PQgetvalue(res, i, 1));
		for (int t = 0; t < v->n_text; t++)
			snprintf(
			    r->rec.text[t], sizeof r->rec.text[t], "%s", PQgetvalue(res, i, 2 + t));
		for (int t = 0; t < v->n_num; t++)
			r->rec.num[t] = pg_get_i64(res, i, 2 + v->n_text + t);
		r->rec.started = pg_get_i64(res, i, 2 + v->n_text + v->n_num);
		r->rec.made_ms = pg_get_i64(res, i, 3 + v->n_text + v->n_num);
		if (r->rec.status == 0) {
			/* the CHECK constraint makes this a bug, not input */
			log_error(r->saga_id, "could not read the %s record: unknown status \"%s\"",
			    v->name, PQgetvalue(res, i, 1));
			return PG_ERR_OTHER;
		}
	}
	return 0;
}

/* pkit_write writes what the transaction decided (new records, changed
 * records, changed rows) and commits, in one pipeline: one statement and
 * COMMIT. */
static int pkit_write(pkit_store *s, pkit_tx *b)
{
	const pkit_service *v = s->svc;
	const int k = PKIT_REC_COLS(v);
	const int ncols = 2 * k + (v->rows != NULL ? 2 : 0);
	pg_buf col[PKIT_COLS_MAX];
	pg_arrays_open(col, ncols);
	for (size_t i = 0; i < b->n_recs; i++) {
		pkit_rec_slot *r = &b->recs[i];
		if (r->dirty) /* UPDATE or INSERT */
			pkit_add_record(v, col + (r->in_db ? k : 0), r->saga_id, &r->rec);
	}
	for (size_t i = 0; i < b->n_rows; i++)
		if (b->rows[i].dirty) {
			pg_array_add(&col[2 * k], b->rows[i].key);
			pg_array_add_i64(&col[2 * k + 1], b->rows[i].row.value);
		}
	const char *p[PKIT_COLS_MAX];
	int rc = pg_arrays_close(col, ncols, p);
	if (rc == 0) {
		/* a new record that a concurrent command inserted first fails
		 * with unique_violation: the whole transaction is retried */
		pg_call w[] = {
		    {.st = &v->sql->write_batch, .nparams = ncols, .params = p},
		    {.sql = "COMMIT"},
		};
		rc = pg_pipeline(s->conn, w, 2);
		PQclear(w[0].res);
		PQclear(w[1].res);
	}
	pg_arrays_free(col, ncols);
	return rc;
}

/* pkit_try_locking is one attempt of the locking path: two round trips
 * (BEGIN and the locking reads; the writes and COMMIT). */
static int pkit_try_locking(pkit_store *s, pkit_tx *b, pkit_cmd *cmds, size_t n)
{
	const pkit_service *v = s->svc;
	bool rows = v->rows != NULL;
	pg_buf ids = {0}, keys = {0};
	memset(b, 0, sizeof *b);
	/* the keys the transaction touches, each once */
	pg_array_open(&ids);
	pg_array_open(&keys);
	for (size_t i = 0; i < n; i++) {
		if (pkit_find_rec(b, cmds[i].saga_id) == NULL) {
			pkit_rec_slot *r = &b->recs[b->n_recs++];
			snprintf(r->saga_id, sizeof r->saga_id, "%s", cmds[i].saga_id);
			pg_array_add(&ids, cmds[i].saga_id);
		}
		if (rows && pkit_find_row(b, cmds[i].args.text[0]) == NULL) {
			b->rows[b->n_rows++].key = cmds[i].args.text[0];
			pg_array_add(&keys, cmds[i].args.text[0]);
		}
	}
	pg_array_close(&ids);
	pg_array_close(&keys);
	int rc = ids.oom || keys.oom ? -ENOMEM : 0;
	if (rc != 0)
		goto out_free;
	const char *p_ids[] = {ids.p}, *p_keys[] = {keys.p};
	pg_call reads[] = {
	    {.sql = "BEGIN"},
	    {.st = &v->sql->lock_records, .nparams = 1, .params = p_ids},
	    {.st = &v->sql->lock_rows, .nparams = 1, .params = p_keys},
	};
	int nreads = rows ? 3 : 2;
	rc = pg_pipeline(s->conn, reads, nreads);
	if (rc != 0)
		goto out_rollback;
	rc = pkit_read_records(v, b, reads[1].res);
	for (int i = 0; rows && rc == 0 && i < PQntuples(reads[2].res); i++) {
		pkit_row_slot *w = pkit_find_row(b, PQgetvalue(reads[2].res, i, 0));
		if (w != NULL) {
			w->row.exists = true;
			w->row.value = pg_get_i64(reads[2].res, i, 1);
		}
	}
	for (int i = 0; i < nreads; i++)
		PQclear(reads[i].res);
	if (rc != 0)
		goto out_rollback;

	/* each command as if alone, in order: the pure decision of rules 2,
	 * 5 and 6, on what the commands before it left */
	for (size_t i = 0; i < n; i++) {
		pkit_rec_slot *r = pkit_find_rec(b, cmds[i].saga_id);
		pkit_row_slot *w = rows ? pkit_find_row(b, cmds[i].args.text[0]) : NULL;
		pkit_outcome *o = &cmds[i].out;
		pkit_decide(v, &r->rec, w ? &w->row : NULL, &cmds[i].args, o);
		if (o->write_record) {
			r->rec = o->record;
			r->dirty = true;
		}
		if (w != NULL && o->write_row) {
			w->row.value = o->value;
			w->dirty = true;
		}
		cmds[i].value = w != NULL && w->row.exists ? w->row.value : 0;
	}
	/* failure injection: the transaction fails at its last moment (never
	 * armed with more than one, rpc.h) */
	for (size_t i = 0; i < n; i++)
		if (fault_check(FAULT_FAIL_BEFORE_COMMIT, pkit_op_name(v, cmds[i].args.op), NULL)) {
			rc = PG_ERR_INJECTED;
			goto out_rollback;
		}
	rc = pkit_write(s, b);
	if (rc == 0) {
		for (size_t j = 0; j < b->n_rows; j++)
			if (b->rows[j].row.exists)
				pkit_store_learn(s, b->rows[j].key, b->rows[j].row.value);
		goto out_free;
	}
out_rollback:
	pg_rollback(s->conn);
out_free:
	pg_buf_free(&ids);
	pg_buf_free(&keys);
	return rc;
}

/* pkit_try is one attempt of pkit_store_apply: the one-round-trip path when
 * it serves the commands, else the locking path. */
static int pkit_try(pkit_store *s, pkit_tx *b, pkit_cmd *cmds, size_t n)
{
	int rc = pkit_try_fast(s, cmds, n);
	if (rc == 0 || rc == PG_ERR_CONNECTION)
		return rc;
	return pkit_try_locking(s, b, cmds, n);
}

int pkit_store_apply(pkit_store *s, pkit_cmd *cmds, size_t n)
{
	if (n == 0 || n > RPC_BATCH_MAX)
		return -EINVAL;
	pkit_tx *b = malloc(sizeof *b);
	if (b == NULL)
		return -ENOMEM;
	const char *who = n == 1 ? cmds[0].saga_id : NULL;
	int rc = pkit_store_ready(s);
	bool rerun_done = false;
	for (int attempt = 1; rc == 0; attempt++) {
		rc = pkit_try(s, b, cmds, n);
		if (rc == 0)
			break;
		if (pkit_store_may_rerun(s, rc, &rerun_done)) {
			attempt--; /* not a lost race */
			rc = 0;
			continue;
		}
		if (rc != PG_ERR_RETRY && rc != PG_ERR_UNIQUE)
			break;
		if (attempt == PKIT_TX_TRIES) {
			log_warn(who, "could not apply %zu %s command%s: lost %d races in a row", n,
			    s->svc->name, n == 1 ? "" : "s", attempt);
			rc = PG_ERR_RETRY;
			break;
		}
		/* the retried run reads the record the winner committed */
		log_debug(who, "%zu %s command%s lost a race, retrying (attempt %d)", n,
		    s->svc->name, n == 1 ? "" : "s", attempt);
		rc = 0;
	}
	free(b);
	return rc;
}
