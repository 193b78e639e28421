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

/* The advisory lock key that serialises schema application ("paymntschm"),
 * distinct from stockd's so sharing one database is harmless. */
#define PAYMENT_SCHEMA_LOCK_KEY "7310587035298048110"
/* The version of sql/schema.sql (docs/operations.md, "Upgrading"): raise it
 * with every change of the schema; a database that records a newer one is
 * refused at start. */
#define PAYMENT_SCHEMA_VERSION 1
/* A command that keeps losing races this many times is answered
 * UNAVAILABLE: the orchestrator retries it later. */
#define PAYMENT_TX_TRIES 10
/* How long a request waits for a lost database to come back: short, so the
 * caller gets UNAVAILABLE well within its deadline and retries. */
#define PAYMENT_RECONNECT_WAIT_MS 500

/* The statements of a command, prepared once per session (pg_pipeline).
 * A write that must change exactly the rows decided on says so with
 * saga_check() (sql/schema.sql), which fails the statement, and with it the
 * COMMIT sent behind it in the same pipeline, when it did not. */
/* clang-format off */
static const pg_stmt PAYMENT_LOCK_RECORD = {"payment_lock_record",
    "SELECT status, customer, amount FROM charges WHERE saga_id = $1 FOR UPDATE"};
static const pg_stmt PAYMENT_LOCK_ROW = {"payment_lock_row",
    "SELECT balance FROM accounts WHERE customer = $1 FOR UPDATE"};
static const pg_stmt PAYMENT_INSERT_RECORD = {"payment_insert_record",
    "INSERT INTO charges (saga_id, status, customer, amount) VALUES ($1, $2, $3, $4)"};
static const pg_stmt PAYMENT_UPDATE_RECORD = {"payment_update_record",
    "WITH u AS (UPDATE charges SET status = $2, customer = $3, amount = $4, updated_at = now()"
    "  WHERE saga_id = $1 RETURNING 1)"
    " SELECT saga_check(count(*) = 1, 'charge to update is missing') FROM u"};
static const pg_stmt PAYMENT_UPDATE_ROW = {"payment_update_row",
    "WITH u AS (UPDATE accounts SET balance = $2 WHERE customer = $1 RETURNING 1)"
    " SELECT saga_check(count(*) = 1, 'account to update is missing') FROM u"};
/* ... and of a batch: arrays in. Rows are locked in key order so that two
 * batches wait on each other in the same order. Every write of a batch is
 * one statement; each part also filters by its key array (= ANY), so that
 * a generic plan cached while the table was small cannot scan it whole. */
static const pg_stmt PAYMENT_LOCK_RECORDS = {"payment_lock_records",
    "SELECT saga_id, status, customer, amount FROM charges WHERE saga_id = ANY($1::uuid[])"
    " ORDER BY saga_id FOR UPDATE"};
static const pg_stmt PAYMENT_LOCK_ROWS = {"payment_lock_rows",
    "SELECT customer, balance FROM accounts WHERE customer = ANY($1::text[]) ORDER BY customer FOR UPDATE"};
static const pg_stmt PAYMENT_WRITE_BATCH = {"payment_write_batch",
    "WITH ins AS ("
    "  INSERT INTO charges (saga_id, status, customer, amount)"
    "  SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[], $4::bigint[]) RETURNING 1),"
    " upd AS ("
    "  UPDATE charges r SET status = v.status, customer = v.customer, amount = v.amount,"
    "    updated_at = now()"
    "  FROM unnest($5::uuid[], $6::text[], $7::text[], $8::bigint[]) AS v(saga_id, status, customer, amount)"
    "  WHERE r.saga_id = v.saga_id AND r.saga_id = ANY($5::uuid[]) RETURNING 1),"
    " rows AS ("
    "  UPDATE accounts s SET balance = v.balance"
    "  FROM unnest($9::text[], $10::bigint[]) AS v(customer, balance)"
    "  WHERE s.customer = v.customer AND s.customer = ANY($9::text[]) RETURNING 1)"
    " SELECT saga_check((SELECT count(*) FROM ins) = cardinality($1::uuid[])"
    "   AND (SELECT count(*) FROM upd) = cardinality($5::uuid[])"
    "   AND (SELECT count(*) FROM rows) = cardinality($9::text[]),"
    "   'a batch wrote other rows than it decided on')"};
/* The one-round-trip path (payment_store_try_fast): the new charges and the
 * accounts, each account written only if it still holds the balance the
 * decision was made on ($6, from the value cache), saga_unchanged failing
 * it otherwise (serialization_failure: a lost race); one statement, so one
 * implicit transaction without BEGIN or COMMIT. The accounts are locked
 * first and in key order, as the locking path locks them, and only then
 * are the charges inserted, so the two paths never deadlock (see
 * STOCK_WRITE_FAST in services/stock/store.c). */
static const pg_stmt PAYMENT_WRITE_FAST = {"payment_write_fast",
    "WITH locked AS ("
    "  SELECT customer, balance FROM accounts WHERE customer = ANY($5::text[])"
    "  ORDER BY customer FOR UPDATE),"
    " rows AS ("
    "  UPDATE accounts s SET balance = v.balance"
    "  FROM unnest($5::text[], $6::bigint[], $7::bigint[]) AS v(customer, was, balance)"
    "  JOIN locked l ON l.customer = v.customer AND l.balance = v.was"
    "  WHERE s.customer = v.customer AND s.customer = ANY($5::text[]) RETURNING 1),"
    " ins AS ("
    "  INSERT INTO charges (saga_id, status, customer, amount)"
    "  SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[], $4::bigint[]) RETURNING 1)"
    " SELECT saga_unchanged((SELECT count(*) FROM rows) = cardinality($5::text[])"
    "   AND (SELECT count(*) FROM ins) = cardinality($1::uuid[]),"
    "   'an account changed since its balance was cached')"};
/* clang-format on */

struct payment_store {
	PGconn *conn; /* NULL until the first successful connect */
	const char *conninfo;
	valcache *cache;            /* the daemon's, shared by its workers; NULL: no fast path */
	uint64_t fast, fast_failed; /* payment_store_try_fast: committed, failed */
};

int payment_store_migrate(const char *conninfo, int64_t wait_ms)
{
	static const pg_schema schema = {.what = "payment",
	    .sql = payment_schema_sql,
	    .lock_key = PAYMENT_SCHEMA_LOCK_KEY,
	    .version = PAYMENT_SCHEMA_VERSION,
	    .prog = "paymentd"};
	return pg_connect_and_apply_schema(conninfo, wait_ms, &schema);
}

int payment_store_open(payment_store **out, const char *conninfo, int64_t wait_ms, valcache *cache)
{
	payment_store *s = calloc(1, sizeof *s);
	if (s == NULL)
		return -ENOMEM;
	s->conninfo = conninfo;
	s->cache = cache;
	/* a failure here is not fatal: payment_store_ready() retries per call */
	s->conn = pg_connect(conninfo, wait_ms);
	*out = s;
	return 0;
}

void payment_store_close(payment_store *s)
{
	if (s == NULL)
		return;
	PQfinish(s->conn);
	free(s);
}

/* payment_store_ready and payment_store_may_rerun: the connection handling of
 * pg_ready and pg_may_rerun (pg.h), with this store's reconnect patience. */
#define payment_store_ready(s) pg_ready(&(s)->conn, (s)->conninfo, PAYMENT_RECONNECT_WAIT_MS)
#define payment_store_may_rerun(s, rc, done)                                                       \
	pg_may_rerun(&(s)->conn, (s)->conninfo, PAYMENT_RECONNECT_WAIT_MS, (rc), (done))

/* What payment_store_try_fast returns when the one-round-trip path does not
 * apply to the commands (no error: the caller takes the locking path). */
#define PAYMENT_NOT_FAST 1

/* payment_store_try_fast is the one-round-trip path (docs/architecture.md,
 * "Participants: the one-round-trip path") for `n` commands (1..
 * RPC_BATCH_MAX) that are all ChargePayment of saga ids that appear once:
 * it takes each account's balance from the value cache (claiming the
 * accounts, so no other worker of this daemon guesses on them meanwhile),
 * runs the pure payment_decide() for each command in order as
 * payment_store_try_batch would on a new saga id and those balances, and
 * writes the new charges and the accounts with PAYMENT_WRITE_FAST, whose
 * check fails it when a charge already exists (a duplicate:
 * unique_violation) or an account no longer holds the cached balance.
 * Fills cmds[i].out and .balance and returns 0 when committed;
 * PAYMENT_NOT_FAST when the path does not apply (nothing done; always
 * while a fault is armed); else the enum pg_err of the failed statement,
 * with nothing written and the accounts forgotten by the cache: the caller
 * then takes the locking path (or, on PG_ERR_CONNECTION, reconnects
 * first). */
static int payment_store_try_fast(payment_store *s, payment_batch_cmd *cmds, size_t n)
{
	/* while a fault is armed every command takes the locking path, where
	 * the fault points are (docs/testing.md) */
	if (s->cache == NULL || n < 1 || n > RPC_BATCH_MAX || fault_any())
		return PAYMENT_NOT_FAST;
	const char *customers[RPC_BATCH_MAX];
	int64_t was[RPC_BATCH_MAX], now[RPC_BATCH_MAX];
	size_t row_of[RPC_BATCH_MAX], n_rows = 0;
	for (size_t i = 0; i < n; i++) {
		if (cmds[i].cmd.op != PAYMENT_OP_CHARGE)
			return PAYMENT_NOT_FAST;
		for (size_t k = 0; k < i; k++)
			if (strcmp(cmds[k].saga_id, cmds[i].saga_id) == 0)
				return PAYMENT_NOT_FAST; /* a duplicate answers from its record */
		size_t j = 0;
		while (j < n_rows && strcmp(customers[j], cmds[i].cmd.customer) != 0)
			j++;
		if (j == n_rows)
			customers[n_rows++] = cmds[i].cmd.customer;
		row_of[i] = j;
	}
	if (!valcache_claim(s->cache, customers, n_rows, was))
		return PAYMENT_NOT_FAST;
	memcpy(now, was, n_rows * sizeof *now);
	/* the decisions of payment_store_try_batch, on no record and the cached
	 * balances: every one writes a new charge (CHARGED or DECLINED) */
	for (size_t i = 0; i < n; i++) {
		const payment_record none = {.status = PAYMENT_NONE};
		const payment_account acct = {.exists = true, .balance = now[row_of[i]]};
		payment_outcome *o = &cmds[i].out;
		payment_decide(&none, &acct, &cmds[i].cmd, o);
		if (!o->write_record) { /* not a first step: not this path's case */
			valcache_release(s->cache, customers, n_rows, was);
			return PAYMENT_NOT_FAST;
		}
		if (o->write_account)
			now[row_of[i]] = o->balance;
		cmds[i].balance = now[row_of[i]];
	}
	enum { F_ID, F_ST, F_CUST, F_AMOUNT, R_CUST, R_WAS, R_NOW, F_N };
	pg_buf col[F_N];
	pg_arrays_open(col, F_N);
	for (size_t i = 0; i < n; i++) {
		const payment_outcome *o = &cmds[i].out;
		pg_array_add(&col[F_ID], cmds[i].saga_id);
		pg_array_add(&col[F_ST], payment_status_name(o->record.status));
		pg_array_add(&col[F_CUST], o->record.customer);
		pg_array_add_i64(&col[F_AMOUNT], o->record.amount);
	}
	for (size_t j = 0; j < n_rows; j++) {
		pg_array_add(&col[R_CUST], customers[j]);
		pg_array_add_i64(&col[R_WAS], was[j]);
		pg_array_add_i64(&col[R_NOW], now[j]);
	}
	return participant_fast_write(s->conn, &PAYMENT_WRITE_FAST, col, F_N, s->cache, customers,
	    n_rows, now, &s->fast, &s->fast_failed);
}

/* payment_store_learn tells the value cache what the locking path
 * committed: `customer`'s account holds `balance` minor units. */
static void payment_store_learn(payment_store *s, const char *customer, int64_t balance)
{
	if (s->cache != NULL)
		valcache_learn(s->cache, &customer, 1, &balance);
}

/* payment_store_try_apply is one attempt of payment_store_apply: one round
 * trip when the cache serves it (payment_store_try_fast), else two (BEGIN
 * and the locking reads; the writes and COMMIT). */
static int payment_store_try_apply(payment_store *s, const char *saga_id, const payment_cmd *cmd,
    payment_outcome *out, int64_t *balance)
{
	payment_batch_cmd one = {.saga_id = saga_id, .cmd = *cmd};
	int rc = payment_store_try_fast(s, &one, 1);
	if (rc == 0) {
		*out = one.out;
		*balance = one.balance;
		return 0;
	}
	if (rc == PG_ERR_CONNECTION)
		return rc;
	payment_record rec = {.status = PAYMENT_NONE};
	payment_account row = {.exists = false};
	const char *by_saga[] = {saga_id};
	const char *by_customer[] = {cmd->customer};
	/* Lock order is always record, then account: a transaction holds one
	 * of each, so two commands cannot wait on each other in a cycle. */
	pg_call reads[] = {
	    {.sql = "BEGIN"},
	    {.st = &PAYMENT_LOCK_RECORD, .nparams = 1, .params = by_saga},
	    {.st = &PAYMENT_LOCK_ROW, .nparams = 1, .params = by_customer},
	};
	rc = pg_pipeline(s->conn, reads, 3);
	if (rc != 0)
		goto out_rollback;
	PGresult *res = reads[1].res;
	if (PQntuples(res) == 1) {
		rec.status = payment_status_parse(PQgetvalue(res, 0, 0));
		snprintf(rec.customer, sizeof rec.customer, "%s", PQgetvalue(res, 0, 1));
		rec.amount = pg_get_i64(res, 0, 2);
		if (rec.status == PAYMENT_NONE) {
			/* the CHECK constraint makes this a bug, not input */
			log_error(saga_id, "could not read charge: unknown status \"%s\"",
			    PQgetvalue(res, 0, 0));
			rc = PG_ERR_OTHER;
		}
	}
	res = reads[2].res;
	if (PQntuples(res) == 1) {
		row.exists = true;
		row.balance = pg_get_i64(res, 0, 0);
	}
	for (int i = 0; i < 3; i++)
		PQclear(reads[i].res);
	if (rc != 0)
		goto out_rollback;

	payment_decide(&rec, &row, cmd, out);

	/* failure injection: the transaction fails at its last moment */
	if (fault_check(FAULT_FAIL_BEFORE_COMMIT,
	        cmd->op == PAYMENT_OP_CHARGE ? "ChargePayment" : "RefundPayment", NULL)) {
		rc = PG_ERR_INJECTED;
		goto out_rollback;
	}
	char amount[24], val[24];
	snprintf(amount, sizeof amount, "%" PRId64, out->record.amount);
	snprintf(val, sizeof val, "%" PRId64, out->balance);
	const char *p_rec[]
	    = {saga_id, payment_status_name(out->record.status), out->record.customer, amount};
	const char *p_row[] = {cmd->customer, val};
	pg_call writes[3];
	int n = 0;
	if (out->write_record)
		/* a concurrent duplicate that inserted first makes the insert
		 * fail with unique_violation: the caller retries */
		writes[n++] = (pg_call) {.st
		    = rec.status == PAYMENT_NONE ? &PAYMENT_INSERT_RECORD : &PAYMENT_UPDATE_RECORD,
		    .nparams = 4,
		    .params = p_rec};
	if (out->write_account)
		writes[n++] = (pg_call) {.st = &PAYMENT_UPDATE_ROW, .nparams = 2, .params = p_row};
	writes[n++] = (pg_call) {.sql = "COMMIT"};
	rc = pg_pipeline(s->conn, writes, n);
	if (rc != 0)
		goto out_rollback;
	for (int i = 0; i < n; i++)
		PQclear(writes[i].res);
	*balance = out->write_account ? out->balance : (row.exists ? row.balance : 0);
	if (row.exists)
		payment_store_learn(s, cmd->customer, *balance);
	return 0;
out_rollback:
	pg_rollback(s->conn);
	return rc;
}

int payment_store_apply(payment_store *s, const char *saga_id, const payment_cmd *cmd,
    payment_outcome *out, int64_t *balance)
{
	int rc = payment_store_ready(s);
	if (rc != 0)
		return rc;
	bool rerun_done = false;
	for (int attempt = 1;; attempt++) {
		rc = payment_store_try_apply(s, saga_id, cmd, out, balance);
		if (payment_store_may_rerun(s, rc, &rerun_done)) {
			attempt--; /* not a lost race */
			continue;
		}
		if (rc != PG_ERR_RETRY && rc != PG_ERR_UNIQUE)
			return rc;
		if (attempt == PAYMENT_TX_TRIES) {
			log_warn(saga_id, "could not apply payment command: lost %d races in a row",
			    attempt);
			return PG_ERR_RETRY;
		}
		/* the retried run reads the record the winner committed */
		log_debug(saga_id, "payment command lost a race, retrying (attempt %d)", attempt);
	}
}

/* ---- batches ---- */

/* One record or account a batch holds in memory between its locking read
 * and its writes. */
typedef struct payment_batch_rec {
	char saga_id[VALID_UUID_LEN + 1];
	payment_record rec;
	bool in_db; /* read from the table (UPDATE) or new (INSERT) */
	bool dirty;
} payment_batch_rec;

typedef struct payment_batch_acct {
	const char *customer; /* borrowed from a command */
	payment_account row;
	bool dirty;
} payment_batch_acct;

/* payment_batch_state is what one attempt of a batch reads and decides. */
typedef struct payment_batch_state {
	payment_batch_rec recs[RPC_BATCH_MAX];
	size_t n_recs;
	payment_batch_acct rows[RPC_BATCH_MAX];
	size_t n_rows;
} payment_batch_state;

static payment_batch_rec *payment_batch_find_rec(payment_batch_state *b, const char *saga_id)
{
	for (size_t i = 0; i < b->n_recs; i++)
		if (strcmp(b->recs[i].saga_id, saga_id) == 0)
			return &b->recs[i];
	return NULL;
}

static payment_batch_acct *payment_batch_find_row(payment_batch_state *b, const char *customer)
{
	for (size_t i = 0; i < b->n_rows; i++)
		if (strcmp(b->rows[i].customer, customer) == 0)
			return &b->rows[i];
	return NULL;
}

/* payment_batch_write writes what the batch decided (new records, changed
 * records, changed rows) and commits, in one pipeline: one statement and
 * COMMIT. */
static int payment_batch_write(payment_store *s, payment_batch_state *b)
{
	enum { W_ID, W_ST, W_SKU, W_QTY, U_ID, U_ST, U_SKU, U_QTY, R_SKU, R_VAL, W_N };
	pg_buf col[W_N];
	pg_arrays_open(col, W_N);
	for (size_t i = 0; i < b->n_recs; i++) {
		payment_batch_rec *r = &b->recs[i];
		if (!r->dirty)
			continue;
		int o = r->in_db ? U_ID : W_ID; /* UPDATE or INSERT */
		pg_array_add(&col[o], r->saga_id);
		pg_array_add(&col[o + 1], payment_status_name(r->rec.status));
		pg_array_add(&col[o + 2], r->rec.customer);
		pg_array_add_i64(&col[o + 3], r->rec.amount);
	}
	for (size_t i = 0; i < b->n_rows; i++)
		if (b->rows[i].dirty) {
			pg_array_add(&col[R_SKU], b->rows[i].customer);
			pg_array_add_i64(&col[R_VAL], b->rows[i].row.balance);
		}
	const char *p[W_N];
	int rc = pg_arrays_close(col, W_N, p);
	if (rc == 0) {
		/* a new record that a concurrent command inserted first fails
		 * with unique_violation: the whole batch is retried */
		pg_call w[] = {
		    {.st = &PAYMENT_WRITE_BATCH, .nparams = W_N, .params = p},
		    {.sql = "COMMIT"},
		};
		rc = pg_pipeline(s->conn, w, 2);
		PQclear(w[0].res);
		PQclear(w[1].res);
	}
	pg_arrays_free(col, W_N);
	return rc;
}

/* payment_store_try_batch is one attempt of payment_store_apply_batch: the
 * one-round-trip path when the cache serves it (payment_store_try_fast),
 * else the locking path. */
static int payment_store_try_batch(
    payment_store *s, payment_batch_state *b, payment_batch_cmd *cmds, size_t n)
{
	int rc = payment_store_try_fast(s, cmds, n);
	if (rc == 0 || rc == PG_ERR_CONNECTION)
		return rc;
	PGresult *res = NULL;
	pg_buf ids = {0}, customers = {0};
	memset(b, 0, sizeof *b);
	/* the keys the batch touches, each once */
	pg_array_open(&ids);
	pg_array_open(&customers);
	for (size_t i = 0; i < n; i++) {
		if (payment_batch_find_rec(b, cmds[i].saga_id) == NULL) {
			payment_batch_rec *r = &b->recs[b->n_recs++];
			snprintf(r->saga_id, sizeof r->saga_id, "%s", cmds[i].saga_id);
			r->rec.status = PAYMENT_NONE;
			pg_array_add(&ids, cmds[i].saga_id);
		}
		if (payment_batch_find_row(b, cmds[i].cmd.customer) == NULL) {
			b->rows[b->n_rows++].customer = cmds[i].cmd.customer;
			pg_array_add(&customers, cmds[i].cmd.customer);
		}
	}
	pg_array_close(&ids);
	pg_array_close(&customers);
	rc = ids.oom || customers.oom ? -ENOMEM : 0;
	if (rc != 0)
		goto out_free;
	const char *p_ids[] = {ids.p}, *p_customers[] = {customers.p};
	pg_call reads[] = {
	    {.sql = "BEGIN"},
	    {.st = &PAYMENT_LOCK_RECORDS, .nparams = 1, .params = p_ids},
	    {.st = &PAYMENT_LOCK_ROWS, .nparams = 1, .params = p_customers},
	};
	rc = pg_pipeline(s->conn, reads, 3);
	if (rc != 0)
		goto out_rollback;
	res = reads[1].res;
	for (int i = 0; i < PQntuples(res); i++) {
		payment_batch_rec *r = payment_batch_find_rec(b, PQgetvalue(res, i, 0));
		if (r == NULL) {
			log_error(NULL, "could not read charges: unexpected saga id %s",
			    PQgetvalue(res, i, 0));
			rc = PG_ERR_OTHER;
			break;
		}
		r->in_db = true;
		r->rec.status = payment_status_parse(PQgetvalue(res, i, 1));
		snprintf(r->rec.customer, sizeof r->rec.customer, "%s", PQgetvalue(res, i, 2));
		r->rec.amount = pg_get_i64(res, i, 3);
		if (r->rec.status == PAYMENT_NONE) {
			log_error(r->saga_id, "could not read charge: unknown status \"%s\"",
			    PQgetvalue(res, i, 1));
			rc = PG_ERR_OTHER;
			break;
		}
	}
	res = reads[2].res;
	for (int i = 0; rc == 0 && i < PQntuples(res); i++) {
		payment_batch_acct *w = payment_batch_find_row(b, PQgetvalue(res, i, 0));
		if (w != NULL) {
			w->row.exists = true;
			w->row.balance = pg_get_i64(res, i, 1);
		}
	}
	for (int i = 0; i < 3; i++)
		PQclear(reads[i].res);
	if (rc != 0)
		goto out_rollback;

	/* each command as if alone, in order: the pure decision of rules 2,
	 * 5 and 6, on what the commands before it in the batch left */
	for (size_t i = 0; i < n; i++) {
		payment_batch_rec *r = payment_batch_find_rec(b, cmds[i].saga_id);
		payment_batch_acct *w = payment_batch_find_row(b, cmds[i].cmd.customer);
		payment_outcome *o = &cmds[i].out;
		payment_decide(&r->rec, &w->row, &cmds[i].cmd, o);
		if (o->write_record) {
			r->rec = o->record;
			r->dirty = true;
		}
		if (o->write_account) {
			w->row.balance = o->balance;
			w->dirty = true;
		}
		cmds[i].balance = w->row.exists ? w->row.balance : 0;
	}
	for (size_t i = 0; i < n; i++) /* never armed with more than one (rpc.h) */
		if (fault_check(FAULT_FAIL_BEFORE_COMMIT,
		        cmds[i].cmd.op == PAYMENT_OP_CHARGE ? "ChargePayment" : "RefundPayment",
		        NULL)) {
			rc = PG_ERR_INJECTED;
			goto out_rollback;
		}
	rc = payment_batch_write(s, b);
	if (rc == 0) {
		for (size_t j = 0; j < b->n_rows; j++)
			if (b->rows[j].row.exists)
				payment_store_learn(s, b->rows[j].customer, b->rows[j].row.balance);
		goto out_free;
	}
out_rollback:
	pg_rollback(s->conn);
out_free:
	pg_buf_free(&ids);
	pg_buf_free(&customers);
	return rc;
}

int payment_store_apply_batch(payment_store *s, payment_batch_cmd *cmds, size_t n)
{
	if (n == 0 || n > RPC_BATCH_MAX)
		return -EINVAL;
	payment_batch_state *b = malloc(sizeof *b);
	if (b == NULL)
		return -ENOMEM;
	int rc = payment_store_ready(s);
	bool rerun_done = false;
	for (int attempt = 1; rc == 0; attempt++) {
		rc = payment_store_try_batch(s, b, cmds, n);
		if (rc == 0)
			break;
		if (payment_store_may_rerun(s, rc, &rerun_done)) {
			attempt--;
			rc = 0;
			continue;
		}
		if (rc != PG_ERR_RETRY && rc != PG_ERR_UNIQUE)
			break;
		if (attempt == PAYMENT_TX_TRIES) {
			log_warn(NULL,
			    "could not apply a batch of %zu payment commands: lost %d races", n,
			    attempt);
			rc = PG_ERR_RETRY;
			break;
		}
		log_debug(NULL, "a batch of payment commands lost a race, retrying (attempt %d)",
		    attempt);
		rc = 0;
	}
	free(b);
	return rc;
}

/* The keyed Deposit as one statement (its own transaction): the record of an
 * earlier call with the same deposit_id, or the add (guarded by the cap)
 * with its record. Columns: duplicate, customer, amount, balance. No row:
 * the cap refused it. $5 is this call's own token, kept in the record: a
 * re-run after a connection lost past the COMMIT finds its own record and
 * is not a duplicate. A concurrent duplicate fails the record's primary key
 * (23505) after the first commits, which undoes its add with it. */
#define PAYMENT_DEPOSIT_KEYED                                                                      \
	"WITH prior AS (SELECT customer, amount, balance_after, applied_by FROM deposits "         \
	"               WHERE deposit_id = $4::uuid), "                                            \
	"add AS (INSERT INTO accounts AS a (customer, balance) "                                   \
	"        SELECT $1, $2::bigint WHERE NOT EXISTS (SELECT 1 FROM prior) "                    \
	"        ON CONFLICT (customer) DO UPDATE SET balance = a.balance + EXCLUDED.balance "     \
	"        WHERE a.balance + EXCLUDED.balance <= $3::bigint "                                \
	"        RETURNING balance), "                                                             \
	"rec AS (INSERT INTO deposits (deposit_id, customer, amount, balance_after, applied_by) "  \
	"        SELECT $4::uuid, $1, $2::bigint, balance, $5::uuid FROM add "                     \
	"        RETURNING balance_after) "                                                        \
	"SELECT false, $1, $2::bigint, balance_after FROM rec "                                    \
	"UNION ALL SELECT applied_by IS DISTINCT FROM $5::uuid, customer, amount, balance_after "  \
	"FROM prior"

int payment_store_deposit(payment_store *s, const char *customer, int64_t amount,
    const char *deposit_id, int64_t *balance, bool *duplicate)
{
	PGresult *res = NULL;
	bool keyed = deposit_id != NULL && deposit_id[0] != '\0';
	char val[24], max[24];
	snprintf(val, sizeof val, "%" PRId64, amount);
	snprintf(max, sizeof max, "%lld", (long long)VALID_AMOUNT_MAX);
	char token[VALID_UUID_LEN + 1];
	saga_id_new(token);
	const char *p[] = {customer, val, max, deposit_id, token};
	*duplicate = false;
	int rc = 0;
	/* Without a key, never re-run after a lost connection: its COMMIT may
	 * have gone through. One statement, so it is its own transaction and
	 * the row lock of the upsert makes concurrent deposits add up. Both
	 * terms are at most a few times 10^15, far from bigint's limit, so the
	 * sum cannot overflow before it is compared; no row back means the
	 * guard refused it. With a key, a re-run is safe (it finds the record
	 * if an earlier run committed), and it is how three things end: a lost
	 * connection; losing the record's insert to a concurrent duplicate; and
	 * no row back, which is the cap, or a concurrent duplicate that
	 * committed first: its record was not in our snapshot, but its add was
	 * in the row we waited for, so our cap check saw the balance with it.
	 * The re-run's fresh snapshot sees that record. */
	bool reran_empty = false;
	for (int attempt = 0; attempt < 3; attempt++) {
		if ((rc = payment_store_ready(s)) != 0)
			return rc;
		if (keyed)
			rc = pg_exec(s->conn, PAYMENT_DEPOSIT_KEYED, 5, p, &res);
		else
			rc = pg_exec(s->conn,
			    "INSERT INTO accounts AS a (customer, balance) VALUES ($1, $2::bigint) "
			    "ON CONFLICT (customer) DO UPDATE SET balance = a.balance + "
			    "EXCLUDED.balance "
			    "WHERE a.balance + EXCLUDED.balance <= $3::bigint "
			    "RETURNING false, $1, $2::bigint, balance",
			    3, p, &res);
		if (keyed && (rc == PG_ERR_UNIQUE || rc == PG_ERR_RETRY || rc == PG_ERR_CONNECTION))
			continue;
		if (keyed && rc == 0 && PQntuples(res) == 0 && !reran_empty) {
			reran_empty = true;
			PQclear(res);
			res = NULL;
			continue;
		}
		break;
	}
	if (rc != 0)
		return rc;
	if (res == NULL)
		return PG_ERR_RETRY; /* the tries ran out on the re-run: unknown, retry */
	if (PQntuples(res) != 1) {
		PQclear(res);
		return -ERANGE;
	}
	*duplicate = PQgetvalue(res, 0, 0)[0] == 't';
	*balance = pg_get_i64(res, 0, 3);
	if (*duplicate) {
		/* rule 6 of saga-semantics.md, for deposits: the same key with
		 * other arguments is refused and changes nothing */
		if (strcmp(PQgetvalue(res, 0, 1), customer) != 0 || pg_get_i64(res, 0, 2) != amount)
			rc = -EEXIST;
	} else {
		payment_store_learn(s, customer, *balance);
	}
	PQclear(res);
	return rc;
}

void payment_listing_free(payment_listing *l)
{
	free(l->accounts);
	free(l->charges);
	memset(l, 0, sizeof *l);
}

/* payment_store_try_list is one attempt of payment_store_list. */
static int payment_store_try_list(
    payment_store *s, bool include_charges, int32_t limit, payment_listing *out)
{
	PGresult *accts = NULL, *totals = NULL, *charges = NULL;
	memset(out, 0, sizeof *out);
	/* one snapshot, so accounts, totals and charges agree */
	int rc = pg_run(s->conn, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", 0, NULL);
	if (rc != 0)
		return rc;
	/* The aggregates are computed by the database over every row, so they
	 * stay exact and small however many sagas were recorded. A sum past
	 * bigint (thousands of maximal charges) is clamped rather than failing
	 * the listing. Byte order (COLLATE "C") so the listing does not depend
	 * on the database's locale. */
	rc = pg_exec(s->conn,
	    "SELECT a.customer, a.balance, coalesce(c.n, 0), "
	    "least(coalesce(c.total, 0), 9223372036854775807)::bigint "
	    "FROM accounts a LEFT JOIN (SELECT customer, count(*) AS n, sum(amount) AS total "
	    "FROM charges WHERE status = 'CHARGED' GROUP BY customer) c "
	    "ON c.customer = a.customer ORDER BY a.customer COLLATE \"C\"",
	    0, NULL, &accts);
	if (rc != 0)
		goto out_rollback;
	rc = pg_exec(s->conn,
	    "SELECT count(*), count(*) FILTER (WHERE status = 'REFUNDED') FROM charges", 0, NULL,
	    &totals);
	if (rc != 0)
		goto out_rollback;
	if (include_charges) {
		/* one row more than asked tells whether there are more */
		char lim[16];
		snprintf(lim, sizeof lim, "%" PRId32, limit + 1);
		const char *p[] = {lim};
		rc = pg_exec(s->conn,
		    "SELECT saga_id, customer, amount, status FROM charges "
		    "ORDER BY created_at DESC, saga_id LIMIT $1::int",
		    1, p, &charges);
		if (rc != 0)
			goto out_rollback;
	}
	rc = pg_commit(s->conn);
	if (rc != 0)
		goto out_rollback;

	int na = PQntuples(accts), nc = charges ? PQntuples(charges) : 0;
	if (nc > limit) {
		nc = limit;
		out->charges_truncated = true;
	}
	if (PQntuples(totals) == 1) {
		out->total_charges = pg_get_i64(totals, 0, 0);
		out->refunded_charges = pg_get_i64(totals, 0, 1);
	}
	out->accounts = calloc(na ? (size_t)na : 1, sizeof *out->accounts);
	out->charges = calloc(nc ? (size_t)nc : 1, sizeof *out->charges);
	if (out->accounts == NULL || out->charges == NULL) {
		payment_listing_free(out);
		rc = -ENOMEM;
		goto out_clear;
	}
	for (int i = 0; i < na; i++) {
		payment_account_row *a = &out->accounts[i];
		snprintf(a->customer, sizeof a->customer, "%s", PQgetvalue(accts, i, 0));
		a->balance = pg_get_i64(accts, i, 1);
		a->charged_count = (int32_t)pg_get_i64(accts, i, 2);
		a->charged_amount = pg_get_i64(accts, i, 3);
	}
	out->n_accounts = (size_t)na;
	for (int i = 0; i < nc; i++) {
		payment_charge_row *c = &out->charges[i];
		snprintf(c->saga_id, sizeof c->saga_id, "%s", PQgetvalue(charges, i, 0));
		snprintf(c->customer, sizeof c->customer, "%s", PQgetvalue(charges, i, 1));
		c->amount = pg_get_i64(charges, i, 2);
		c->status = payment_status_parse(PQgetvalue(charges, i, 3));
	}
	out->n_charges = (size_t)nc;
	goto out_clear;
out_rollback:
	pg_rollback(s->conn);
out_clear:
	PQclear(accts);
	PQclear(totals);
	PQclear(charges);
	return rc;
}

int payment_store_list(payment_store *s, bool include_charges, int32_t limit, payment_listing *out)
{
	memset(out, 0, sizeof *out);
	if (limit < 0 || limit > PAYMENT_LIST_LIMIT_MAX)
		return -EINVAL;
	int rc = payment_store_ready(s);
	if (rc != 0)
		return rc;
	bool rerun_done = false;
	do
		rc = payment_store_try_list(s, include_charges, limit, out);
	while (payment_store_may_rerun(s, rc, &rerun_done));
	return rc;
}

void payment_store_fast_counts(const payment_store *s, uint64_t *fast, uint64_t *fast_failed)
{
	*fast = s->fast;
	*fast_failed = s->fast_failed;
}
