#include "store.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fault.h"
#include "log.h"
#include "participant.h"
#include "pg.h"
#include "rpc.h"
#include "schema_sql.h"
#include "valcache.h"

/* The advisory lock key that serialises schema application ("stockschm"). */
#define STOCK_SCHEMA_LOCK_KEY "7310587035298048109"
/* The version of sql/schema.sql (docs/operations.md, "Upgrading"): raise it
 * with every change of the schema; a database that records a newer one is
 * refused at start. */
#define STOCK_SCHEMA_VERSION 1
/* A command that keeps losing races this many times is answered
 * UNAVAILABLE: the orchestrator retries it later. */
#define STOCK_TX_TRIES 10
/* How long a request waits for a lost database to come back: short, so the
 * caller gets UNAVAILABLE well within its deadline and retries. */
#define STOCK_RECONNECT_WAIT_MS 500

/* The statements of a command, prepared once per session (pg_pipeline).
 * A write that must change exactly the rows decided on says so with
 * saga_check() (sql/schema.sql), which fails the statement, and with it the
 * COMMIT sent behind it in the same pipeline, when it did not. */
/* clang-format off */
static const pg_stmt STOCK_LOCK_RECORD = {"stock_lock_record",
    "SELECT status, sku, qty FROM reservations WHERE saga_id = $1 FOR UPDATE"};
static const pg_stmt STOCK_LOCK_ROW = {"stock_lock_row",
    "SELECT on_hand FROM stock WHERE sku = $1 FOR UPDATE"};
static const pg_stmt STOCK_INSERT_RECORD = {"stock_insert_record",
    "INSERT INTO reservations (saga_id, status, sku, qty) VALUES ($1, $2, $3, $4)"};
static const pg_stmt STOCK_UPDATE_RECORD = {"stock_update_record",
    "WITH u AS (UPDATE reservations SET status = $2, sku = $3, qty = $4, updated_at = now()"
    "  WHERE saga_id = $1 RETURNING 1)"
    " SELECT saga_check(count(*) = 1, 'reservation to update is missing') FROM u"};
static const pg_stmt STOCK_UPDATE_ROW = {"stock_update_row",
    "WITH u AS (UPDATE stock SET on_hand = $2 WHERE sku = $1 RETURNING 1)"
    " SELECT saga_check(count(*) = 1, 'stock row to update is missing') FROM u"};
/* ... and of a batch: arrays in. Rows are locked in key order so that two
 * batches wait on each other in the same order. Every write of a batch is
 * one statement; each part also filters by its key array (= ANY), so that
 * a generic plan cached while the table was small cannot scan it whole. */
static const pg_stmt STOCK_LOCK_RECORDS = {"stock_lock_records",
    "SELECT saga_id, status, sku, qty FROM reservations WHERE saga_id = ANY($1::uuid[])"
    " ORDER BY saga_id FOR UPDATE"};
static const pg_stmt STOCK_LOCK_ROWS = {"stock_lock_rows",
    "SELECT sku, on_hand FROM stock WHERE sku = ANY($1::text[]) ORDER BY sku FOR UPDATE"};
static const pg_stmt STOCK_WRITE_BATCH = {"stock_write_batch",
    "WITH ins AS ("
    "  INSERT INTO reservations (saga_id, status, sku, qty)"
    "  SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[], $4::int[]) RETURNING 1),"
    " upd AS ("
    "  UPDATE reservations r SET status = v.status, sku = v.sku, qty = v.qty,"
    "    updated_at = now()"
    "  FROM unnest($5::uuid[], $6::text[], $7::text[], $8::int[]) AS v(saga_id, status, sku, qty)"
    "  WHERE r.saga_id = v.saga_id AND r.saga_id = ANY($5::uuid[]) RETURNING 1),"
    " rows AS ("
    "  UPDATE stock s SET on_hand = v.on_hand"
    "  FROM unnest($9::text[], $10::bigint[]) AS v(sku, on_hand)"
    "  WHERE s.sku = v.sku AND s.sku = ANY($9::text[]) RETURNING 1)"
    " SELECT saga_check((SELECT count(*) FROM ins) = cardinality($1::uuid[])"
    "   AND (SELECT count(*) FROM upd) = cardinality($5::uuid[])"
    "   AND (SELECT count(*) FROM rows) = cardinality($9::text[]),"
    "   'a batch wrote other rows than it decided on')"};
/* The one-round-trip path (stock_store_try_fast): the new records and the
 * stock rows, each row written only if it still holds the on-hand units
 * the decision was made on ($6, from the value cache), saga_unchanged
 * failing it otherwise (serialization_failure: a lost race); one
 * statement, so one implicit transaction without BEGIN or COMMIT. The rows
 * are locked first and in key order (`locked`, evaluated by `rows`, which
 * the check reads first), as the locking path locks them, and only then
 * are the records inserted, so that the two paths never wait on each other
 * in a cycle: without that order a batch of each deadlocked under a burst
 * (PostgreSQL ends a deadlock after deadlock_timeout, 1 s). */
static const pg_stmt STOCK_WRITE_FAST = {"stock_write_fast",
    "WITH locked AS ("
    "  SELECT sku, on_hand FROM stock WHERE sku = ANY($5::text[]) ORDER BY sku FOR UPDATE),"
    " rows AS ("
    "  UPDATE stock s SET on_hand = v.on_hand"
    "  FROM unnest($5::text[], $6::bigint[], $7::bigint[]) AS v(sku, was, on_hand)"
    "  JOIN locked l ON l.sku = v.sku AND l.on_hand = v.was"
    "  WHERE s.sku = v.sku AND s.sku = ANY($5::text[]) RETURNING 1),"
    " ins AS ("
    "  INSERT INTO reservations (saga_id, status, sku, qty)"
    "  SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[], $4::int[]) RETURNING 1)"
    " SELECT saga_unchanged((SELECT count(*) FROM rows) = cardinality($5::text[])"
    "   AND (SELECT count(*) FROM ins) = cardinality($1::uuid[]),"
    "   'a stock row changed since its units were cached')"};
/* clang-format on */

struct stock_store {
	PGconn *conn; /* NULL until the first successful connect */
	const char *conninfo;
	valcache *cache;            /* the daemon's, shared by its workers; NULL: no fast path */
	uint64_t fast, fast_failed; /* stock_store_try_fast: committed, failed */
};

int stock_store_migrate(const char *conninfo, int64_t wait_ms)
{
	static const pg_schema schema = {.what = "stock",
	    .sql = stock_schema_sql,
	    .lock_key = STOCK_SCHEMA_LOCK_KEY,
	    .version = STOCK_SCHEMA_VERSION,
	    .prog = "stockd"};
	return pg_connect_and_apply_schema(conninfo, wait_ms, &schema);
}

int stock_store_open(stock_store **out, const char *conninfo, int64_t wait_ms, valcache *cache)
{
	stock_store *s = calloc(1, sizeof *s);
	if (s == NULL)
		return -ENOMEM;
	s->conninfo = conninfo;
	s->cache = cache;
	/* a failure here is not fatal: stock_store_ready() retries per call */
	s->conn = pg_connect(conninfo, wait_ms);
	*out = s;
	return 0;
}

void stock_store_close(stock_store *s)
{
	if (s == NULL)
		return;
	PQfinish(s->conn);
	free(s);
}

/* stock_store_ready and stock_store_may_rerun: the connection handling of
 * pg_ready and pg_may_rerun (pg.h), with this store's reconnect patience. */
#define stock_store_ready(s) pg_ready(&(s)->conn, (s)->conninfo, STOCK_RECONNECT_WAIT_MS)
#define stock_store_may_rerun(s, rc, done)                                                         \
	pg_may_rerun(&(s)->conn, (s)->conninfo, STOCK_RECONNECT_WAIT_MS, (rc), (done))

/* What stock_store_try_fast returns when the one-round-trip path does not
 * apply to the commands (no error: the caller takes the locking path). */
#define STOCK_NOT_FAST 1

/* stock_store_try_fast is the one-round-trip path (docs/architecture.md,
 * "Participants: the one-round-trip path") for `n` commands (1..
 * RPC_BATCH_MAX) that are all ReserveStock of saga ids that appear once:
 * it takes each sku's on-hand units from the value cache (claiming the
 * skus, so no other worker of this daemon guesses on them meanwhile), runs
 * the pure stock_decide() for each command in order as
 * stock_store_try_batch would on a new saga id and those units, and writes
 * the new records and the rows with STOCK_WRITE_FAST, whose check fails it
 * when a record already exists (a duplicate: unique_violation) or a row no
 * longer holds the cached units. Fills cmds[i].out and .on_hand and returns
 * 0 when committed; STOCK_NOT_FAST when the path does not apply (nothing
 * done; always while a fault is armed); else the enum pg_err of the failed
 * statement, with nothing written and the skus forgotten by the cache: the
 * caller then takes the locking path (or, on PG_ERR_CONNECTION, reconnects
 * first). */
static int stock_store_try_fast(stock_store *s, stock_batch_cmd *cmds, size_t n)
{
	/* while a fault is armed every command takes the locking path, where
	 * the fault points are (docs/testing.md) */
	if (s->cache == NULL || n < 1 || n > RPC_BATCH_MAX || fault_any())
		return STOCK_NOT_FAST;
	const char *skus[RPC_BATCH_MAX];
	int64_t was[RPC_BATCH_MAX], now[RPC_BATCH_MAX];
	size_t row_of[RPC_BATCH_MAX], n_rows = 0;
	for (size_t i = 0; i < n; i++) {
		if (cmds[i].cmd.op != STOCK_OP_RESERVE)
			return STOCK_NOT_FAST;
		for (size_t k = 0; k < i; k++)
			if (strcmp(cmds[k].saga_id, cmds[i].saga_id) == 0)
				return STOCK_NOT_FAST; /* a duplicate answers from its record */
		size_t j = 0;
		while (j < n_rows && strcmp(skus[j], cmds[i].cmd.sku) != 0)
			j++;
		if (j == n_rows)
			skus[n_rows++] = cmds[i].cmd.sku;
		row_of[i] = j;
	}
	if (!valcache_claim(s->cache, skus, n_rows, was))
		return STOCK_NOT_FAST;
	memcpy(now, was, n_rows * sizeof *now);
	/* the decisions of stock_store_try_batch, on no record and the cached
	 * units: every one writes a new record (RESERVED or OUT_OF_STOCK) */
	for (size_t i = 0; i < n; i++) {
		const stock_record none = {.status = STOCK_NONE};
		const stock_row row = {.exists = true, .on_hand = now[row_of[i]]};
		stock_outcome *o = &cmds[i].out;
		stock_decide(&none, &row, &cmds[i].cmd, o);
		if (!o->write_record) { /* not a first step: not this path's case */
			valcache_release(s->cache, skus, n_rows, was);
			return STOCK_NOT_FAST;
		}
		if (o->write_row)
			now[row_of[i]] = o->on_hand;
		cmds[i].on_hand = now[row_of[i]];
	}
	enum { F_ID, F_ST, F_SKU, F_QTY, R_SKU, R_WAS, R_NOW, F_N };
	pg_buf col[F_N];
	pg_arrays_open(col, F_N);
	for (size_t i = 0; i < n; i++) {
		const stock_outcome *o = &cmds[i].out;
		pg_array_add(&col[F_ID], cmds[i].saga_id);
		pg_array_add(&col[F_ST], stock_status_name(o->record.status));
		pg_array_add(&col[F_SKU], o->record.sku);
		pg_array_add_i64(&col[F_QTY], o->record.qty);
	}
	for (size_t j = 0; j < n_rows; j++) {
		pg_array_add(&col[R_SKU], skus[j]);
		pg_array_add_i64(&col[R_WAS], was[j]);
		pg_array_add_i64(&col[R_NOW], now[j]);
	}
	return participant_fast_write(s->conn, &STOCK_WRITE_FAST, col, F_N, s->cache, skus, n_rows,
	    now, &s->fast, &s->fast_failed);
}

/* stock_store_learn tells the value cache what the locking path committed:
 * `sku` holds `on_hand` units. */
static void stock_store_learn(stock_store *s, const char *sku, int64_t on_hand)
{
	if (s->cache != NULL)
		valcache_learn(s->cache, &sku, 1, &on_hand);
}

/* stock_store_try_apply is one attempt of stock_store_apply: one round trip
 * when the cache serves it (stock_store_try_fast), else two (BEGIN and the
 * locking reads; the writes and COMMIT). */
static int stock_store_try_apply(
    stock_store *s, const char *saga_id, const stock_cmd *cmd, stock_outcome *out, int64_t *on_hand)
{
	stock_batch_cmd one = {.saga_id = saga_id, .cmd = *cmd};
	int rc = stock_store_try_fast(s, &one, 1);
	if (rc == 0) {
		*out = one.out;
		*on_hand = one.on_hand;
		return 0;
	}
	if (rc == PG_ERR_CONNECTION)
		return rc;
	stock_record rec = {.status = STOCK_NONE};
	stock_row row = {.exists = false};
	const char *by_saga[] = {saga_id};
	const char *by_sku[] = {cmd->sku};
	/* Lock order is always record, then stock row: a transaction holds one
	 * of each, so two commands cannot wait on each other in a cycle. */
	pg_call reads[] = {
	    {.sql = "BEGIN"},
	    {.st = &STOCK_LOCK_RECORD, .nparams = 1, .params = by_saga},
	    {.st = &STOCK_LOCK_ROW, .nparams = 1, .params = by_sku},
	};
	rc = pg_pipeline(s->conn, reads, 3);
	if (rc != 0)
		goto out_rollback;
	PGresult *res = reads[1].res;
	if (PQntuples(res) == 1) {
		rec.status = stock_status_parse(PQgetvalue(res, 0, 0));
		snprintf(rec.sku, sizeof rec.sku, "%s", PQgetvalue(res, 0, 1));
		rec.qty = (int32_t)pg_get_i64(res, 0, 2);
		if (rec.status == STOCK_NONE) {
			/* the CHECK constraint makes this a bug, not input */
			log_error(saga_id, "could not read reservation: unknown status \"%s\"",
			    PQgetvalue(res, 0, 0));
			rc = PG_ERR_OTHER;
		}
	}
	res = reads[2].res;
	if (PQntuples(res) == 1) {
		row.exists = true;
		row.on_hand = pg_get_i64(res, 0, 0);
	}
	for (int i = 0; i < 3; i++)
		PQclear(reads[i].res);
	if (rc != 0)
		goto out_rollback;

	stock_decide(&rec, &row, cmd, out);

	/* failure injection: the transaction fails at its last moment */
	if (fault_check(FAULT_FAIL_BEFORE_COMMIT,
	        cmd->op == STOCK_OP_RESERVE ? "ReserveStock" : "ReleaseStock", NULL)) {
		rc = PG_ERR_INJECTED;
		goto out_rollback;
	}
	char qty[16], val[24];
	snprintf(qty, sizeof qty, "%" PRId32, out->record.qty);
	snprintf(val, sizeof val, "%" PRId64, out->on_hand);
	const char *p_rec[]
	    = {saga_id, stock_status_name(out->record.status), out->record.sku, qty};
	const char *p_row[] = {cmd->sku, val};
	pg_call writes[3];
	int n = 0;
	if (out->write_record)
		/* a concurrent duplicate that inserted first makes the insert
		 * fail with unique_violation: the caller retries */
		writes[n++] = (pg_call) {
		    .st = rec.status == STOCK_NONE ? &STOCK_INSERT_RECORD : &STOCK_UPDATE_RECORD,
		    .nparams = 4,
		    .params = p_rec};
	if (out->write_row)
		writes[n++] = (pg_call) {.st = &STOCK_UPDATE_ROW, .nparams = 2, .params = p_row};
	writes[n++] = (pg_call) {.sql = "COMMIT"};
	rc = pg_pipeline(s->conn, writes, n);
	if (rc != 0)
		goto out_rollback;
	for (int i = 0; i < n; i++)
		PQclear(writes[i].res);
	*on_hand = out->write_row ? out->on_hand : (row.exists ? row.on_hand : 0);
	if (row.exists)
		stock_store_learn(s, cmd->sku, *on_hand);
	return 0;
out_rollback:
	pg_rollback(s->conn);
	return rc;
}

int stock_store_apply(
    stock_store *s, const char *saga_id, const stock_cmd *cmd, stock_outcome *out, int64_t *on_hand)
{
	int rc = stock_store_ready(s);
	if (rc != 0)
		return rc;
	bool rerun_done = false;
	for (int attempt = 1;; attempt++) {
		rc = stock_store_try_apply(s, saga_id, cmd, out, on_hand);
		if (stock_store_may_rerun(s, rc, &rerun_done)) {
			attempt--; /* not a lost race */
			continue;
		}
		if (rc != PG_ERR_RETRY && rc != PG_ERR_UNIQUE)
			return rc;
		if (attempt == STOCK_TX_TRIES) {
			log_warn(saga_id, "could not apply stock command: lost %d races in a row",
			    attempt);
			return PG_ERR_RETRY;
		}
		/* the retried run reads the record the winner committed */
		log_debug(saga_id, "stock command lost a race, retrying (attempt %d)", attempt);
	}
}

/* ---- batches ---- */

/* One record or stock row a batch holds in memory between its locking read
 * and its writes. */
typedef struct stock_batch_rec {
	char saga_id[VALID_UUID_LEN + 1];
	stock_record rec;
	bool in_db; /* read from the table (UPDATE) or new (INSERT) */
	bool dirty;
} stock_batch_rec;

typedef struct stock_batch_row {
	const char *sku; /* borrowed from a command */
	stock_row row;
	bool dirty;
} stock_batch_row;

/* stock_batch_state is what one attempt of a batch reads and decides. */
typedef struct stock_batch_state {
	stock_batch_rec recs[RPC_BATCH_MAX];
	size_t n_recs;
	stock_batch_row rows[RPC_BATCH_MAX];
	size_t n_rows;
} stock_batch_state;

static stock_batch_rec *stock_batch_find_rec(stock_batch_state *b, const char *saga_id)
{
	for (size_t i = 0; i < b->n_recs; i++)
		if (strcmp(b->recs[i].saga_id, saga_id) == 0)
			return &b->recs[i];
	return NULL;
}

static stock_batch_row *stock_batch_find_row(stock_batch_state *b, const char *sku)
{
	for (size_t i = 0; i < b->n_rows; i++)
		if (strcmp(b->rows[i].sku, sku) == 0)
			return &b->rows[i];
	return NULL;
}

/* stock_batch_write writes what the batch decided (new records, changed
 * records, changed rows) and commits, in one pipeline: one statement and
 * COMMIT. */
static int stock_batch_write(stock_store *s, stock_batch_state *b)
{
	enum { W_ID, W_ST, W_SKU, W_QTY, U_ID, U_ST, U_SKU, U_QTY, R_SKU, R_VAL, W_N };
	pg_buf col[W_N];
	pg_arrays_open(col, W_N);
	for (size_t i = 0; i < b->n_recs; i++) {
		stock_batch_rec *r = &b->recs[i];
		if (!r->dirty)
			continue;
		int o = r->in_db ? U_ID : W_ID; /* UPDATE or INSERT */
		pg_array_add(&col[o], r->saga_id);
		pg_array_add(&col[o + 1], stock_status_name(r->rec.status));
		pg_array_add(&col[o + 2], r->rec.sku);
		pg_array_add_i64(&col[o + 3], r->rec.qty);
	}
	for (size_t i = 0; i < b->n_rows; i++)
		if (b->rows[i].dirty) {
			pg_array_add(&col[R_SKU], b->rows[i].sku);
			pg_array_add_i64(&col[R_VAL], b->rows[i].row.on_hand);
		}
	const char *p[W_N];
	int rc = pg_arrays_close(col, W_N, p);
	if (rc == 0) {
		/* a new record that a concurrent command inserted first fails
		 * with unique_violation: the whole batch is retried */
		pg_call w[] = {
		    {.st = &STOCK_WRITE_BATCH, .nparams = W_N, .params = p},
		    {.sql = "COMMIT"},
		};
		rc = pg_pipeline(s->conn, w, 2);
		PQclear(w[0].res);
		PQclear(w[1].res);
	}
	pg_arrays_free(col, W_N);
	return rc;
}

/* stock_store_try_batch is one attempt of stock_store_apply_batch: the
 * one-round-trip path when the cache serves it (stock_store_try_fast), else
 * the locking path. */
static int stock_store_try_batch(
    stock_store *s, stock_batch_state *b, stock_batch_cmd *cmds, size_t n)
{
	int rc = stock_store_try_fast(s, cmds, n);
	if (rc == 0 || rc == PG_ERR_CONNECTION)
		return rc;
	PGresult *res = NULL;
	pg_buf ids = {0}, skus = {0};
	memset(b, 0, sizeof *b);
	/* the keys the batch touches, each once */
	pg_array_open(&ids);
	pg_array_open(&skus);
	for (size_t i = 0; i < n; i++) {
		if (stock_batch_find_rec(b, cmds[i].saga_id) == NULL) {
			stock_batch_rec *r = &b->recs[b->n_recs++];
			snprintf(r->saga_id, sizeof r->saga_id, "%s", cmds[i].saga_id);
			r->rec.status = STOCK_NONE;
			pg_array_add(&ids, cmds[i].saga_id);
		}
		if (stock_batch_find_row(b, cmds[i].cmd.sku) == NULL) {
			b->rows[b->n_rows++].sku = cmds[i].cmd.sku;
			pg_array_add(&skus, cmds[i].cmd.sku);
		}
	}
	pg_array_close(&ids);
	pg_array_close(&skus);
	rc = ids.oom || skus.oom ? -ENOMEM : 0;
	if (rc != 0)
		goto out_free;
	const char *p_ids[] = {ids.p}, *p_skus[] = {skus.p};
	pg_call reads[] = {
	    {.sql = "BEGIN"},
	    {.st = &STOCK_LOCK_RECORDS, .nparams = 1, .params = p_ids},
	    {.st = &STOCK_LOCK_ROWS, .nparams = 1, .params = p_skus},
	};
	rc = pg_pipeline(s->conn, reads, 3);
	if (rc != 0)
		goto out_rollback;
	res = reads[1].res;
	for (int i = 0; i < PQntuples(res); i++) {
		stock_batch_rec *r = stock_batch_find_rec(b, PQgetvalue(res, i, 0));
		if (r == NULL) {
			log_error(NULL, "could not read reservations: unexpected saga id %s",
			    PQgetvalue(res, i, 0));
			rc = PG_ERR_OTHER;
			break;
		}
		r->in_db = true;
		r->rec.status = stock_status_parse(PQgetvalue(res, i, 1));
		snprintf(r->rec.sku, sizeof r->rec.sku, "%s", PQgetvalue(res, i, 2));
		r->rec.qty = (int32_t)pg_get_i64(res, i, 3);
		if (r->rec.status == STOCK_NONE) {
			log_error(r->saga_id, "could not read reservation: unknown status \"%s\"",
			    PQgetvalue(res, i, 1));
			rc = PG_ERR_OTHER;
			break;
		}
	}
	res = reads[2].res;
	for (int i = 0; rc == 0 && i < PQntuples(res); i++) {
		stock_batch_row *w = stock_batch_find_row(b, PQgetvalue(res, i, 0));
		if (w != NULL) {
			w->row.exists = true;
			w->row.on_hand = pg_get_i64(res, i, 1);
		}
	}
	for (int i = 0; i < 3; i++)
		PQclear(reads[i].res);
	if (rc != 0)
		goto out_rollback;

	/* each command as if alone, in order: the pure decision of rules 2,
	 * 5 and 6, on what the commands before it in the batch left */
	for (size_t i = 0; i < n; i++) {
		stock_batch_rec *r = stock_batch_find_rec(b, cmds[i].saga_id);
		stock_batch_row *w = stock_batch_find_row(b, cmds[i].cmd.sku);
		stock_outcome *o = &cmds[i].out;
		stock_decide(&r->rec, &w->row, &cmds[i].cmd, o);
		if (o->write_record) {
			r->rec = o->record;
			r->dirty = true;
		}
		if (o->write_row) {
			w->row.on_hand = o->on_hand;
			w->dirty = true;
		}
		cmds[i].on_hand = w->row.exists ? w->row.on_hand : 0;
	}
	for (size_t i = 0; i < n; i++) /* never armed with more than one (rpc.h) */
		if (fault_check(FAULT_FAIL_BEFORE_COMMIT,
		        cmds[i].cmd.op == STOCK_OP_RESERVE ? "ReserveStock" : "ReleaseStock",
		        NULL)) {
			rc = PG_ERR_INJECTED;
			goto out_rollback;
		}
	rc = stock_batch_write(s, b);
	if (rc == 0) {
		for (size_t j = 0; j < b->n_rows; j++)
			if (b->rows[j].row.exists)
				stock_store_learn(s, b->rows[j].sku, b->rows[j].row.on_hand);
		goto out_free;
	}
out_rollback:
	pg_rollback(s->conn);
out_free:
	pg_buf_free(&ids);
	pg_buf_free(&skus);
	return rc;
}

int stock_store_apply_batch(stock_store *s, stock_batch_cmd *cmds, size_t n)
{
	if (n == 0 || n > RPC_BATCH_MAX)
		return -EINVAL;
	stock_batch_state *b = malloc(sizeof *b);
	if (b == NULL)
		return -ENOMEM;
	int rc = stock_store_ready(s);
	bool rerun_done = false;
	for (int attempt = 1; rc == 0; attempt++) {
		rc = stock_store_try_batch(s, b, cmds, n);
		if (rc == 0)
			break;
		if (stock_store_may_rerun(s, rc, &rerun_done)) {
			attempt--;
			rc = 0;
			continue;
		}
		if (rc != PG_ERR_RETRY && rc != PG_ERR_UNIQUE)
			break;
		if (attempt == STOCK_TX_TRIES) {
			log_warn(NULL,
			    "could not apply a batch of %zu stock commands: lost %d races", n,
			    attempt);
			rc = PG_ERR_RETRY;
			break;
		}
		log_debug(
		    NULL, "a batch of stock commands lost a race, retrying (attempt %d)", attempt);
		rc = 0;
	}
	free(b);
	return rc;
}

int stock_store_set(stock_store *s, const char *sku, int64_t on_hand)
{
	int rc = stock_store_ready(s);
	if (rc != 0)
		return rc;
	char val[24];
	snprintf(val, sizeof val, "%" PRId64, on_hand);
	const char *p[] = {sku, val};
	bool rerun_done = false;
	do {
		/* one statement, so it is its own transaction; it sets an
		 * absolute value, so running it twice is harmless */
		rc = pg_run(s->conn,
		    "INSERT INTO stock (sku, on_hand) VALUES ($1, $2) "
		    "ON CONFLICT (sku) DO UPDATE SET on_hand = EXCLUDED.on_hand",
		    2, p);
	} while (stock_store_may_rerun(s, rc, &rerun_done));
	if (rc == 0)
		stock_store_learn(s, sku, on_hand);
	return rc;
}

void stock_listing_free(stock_listing *l)
{
	free(l->items);
	free(l->reservations);
	memset(l, 0, sizeof *l);
}

/* stock_store_try_list is one attempt of stock_store_list. */
static int stock_store_try_list(
    stock_store *s, bool include_reservations, int32_t limit, stock_listing *out)
{
	PGresult *items = NULL, *recs = NULL;
	memset(out, 0, sizeof *out);
	/* one snapshot, so the sums agree with the rows listed */
	int rc = pg_run(s->conn, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", 0, NULL);
	if (rc != 0)
		return rc;
	/* The summary is aggregated by the database over every row, so it
	 * stays exact and small however many sagas were recorded. Byte order
	 * (COLLATE "C") so the listing does not depend on the database's
	 * locale. */
	rc = pg_exec(s->conn,
	    "SELECT s.sku, s.on_hand, coalesce(r.n, 0), coalesce(r.q, 0) "
	    "FROM stock s LEFT JOIN (SELECT sku, count(*) AS n, sum(qty) AS q "
	    "FROM reservations WHERE status = 'RESERVED' GROUP BY sku) r ON r.sku = s.sku "
	    "ORDER BY s.sku COLLATE \"C\"",
	    0, NULL, &items);
	if (rc != 0)
		goto out_rollback;
	if (include_reservations) {
		/* one row more than asked tells whether there are more */
		char lim[16];
		snprintf(lim, sizeof lim, "%" PRId32, limit + 1);
		const char *p[] = {lim};
		rc = pg_exec(s->conn,
		    "SELECT saga_id, sku, qty, status FROM reservations "
		    "ORDER BY created_at DESC, saga_id LIMIT $1::int",
		    1, p, &recs);
		if (rc != 0)
			goto out_rollback;
	}
	rc = pg_commit(s->conn);
	if (rc != 0)
		goto out_rollback;

	int ni = PQntuples(items), nr = recs ? PQntuples(recs) : 0;
	if (nr > limit) {
		nr = limit;
		out->reservations_truncated = true;
	}
	out->items = calloc(ni ? (size_t)ni : 1, sizeof *out->items);
	out->reservations = calloc(nr ? (size_t)nr : 1, sizeof *out->reservations);
	if (out->items == NULL || out->reservations == NULL) {
		stock_listing_free(out);
		rc = -ENOMEM;
		goto out_clear;
	}
	for (int i = 0; i < ni; i++) {
		stock_item_row *it = &out->items[i];
		snprintf(it->sku, sizeof it->sku, "%s", PQgetvalue(items, i, 0));
		it->on_hand = pg_get_i64(items, i, 1);
		it->live_reservations = (int32_t)pg_get_i64(items, i, 2);
		it->reserved_qty = pg_get_i64(items, i, 3);
	}
	out->n_items = (size_t)ni;
	for (int i = 0; i < nr; i++) {
		stock_reservation_row *r = &out->reservations[i];
		snprintf(r->saga_id, sizeof r->saga_id, "%s", PQgetvalue(recs, i, 0));
		snprintf(r->sku, sizeof r->sku, "%s", PQgetvalue(recs, i, 1));
		r->qty = (int32_t)pg_get_i64(recs, i, 2);
		r->status = stock_status_parse(PQgetvalue(recs, i, 3));
	}
	out->n_reservations = (size_t)nr;
	goto out_clear;
out_rollback:
	pg_rollback(s->conn);
out_clear:
	PQclear(items);
	PQclear(recs);
	return rc;
}

int stock_store_list(stock_store *s, bool include_reservations, int32_t limit, stock_listing *out)
{
	memset(out, 0, sizeof *out);
	if (limit < 0 || limit > STOCK_LIST_LIMIT_MAX)
		return -EINVAL;
	int rc = stock_store_ready(s);
	if (rc != 0)
		return rc;
	bool rerun_done = false;
	do
		rc = stock_store_try_list(s, include_reservations, limit, out);
	while (stock_store_may_rerun(s, rc, &rerun_done));
	return rc;
}

void stock_store_fast_counts(const stock_store *s, uint64_t *fast, uint64_t *fast_failed)
{
	*fast = s->fast;
	*fast_failed = s->fast_failed;
}
