#include "store.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fault.h"
#include "log.h"
#include "pg.h"
#include "rpc.h"
#include "schema_sql.h"

/* The advisory lock key that serialises schema application ("paymntschm"),
 * distinct from stockd's so sharing one database is harmless. */
#define PAYMENT_SCHEMA_LOCK_KEY "7310587035298048110"
/* A command that keeps losing races this many times is answered
 * UNAVAILABLE: the orchestrator retries it later. */
#define PAYMENT_TX_TRIES 10
/* How long a request waits for a lost database to come back: short, so the
 * caller gets UNAVAILABLE well within its deadline and retries. */
#define PAYMENT_RECONNECT_WAIT_MS 500

/* The statements of a command, prepared once per session (pg_exec_stmt). */
static const pg_stmt PAYMENT_LOCK_RECORD = {"payment_lock_record",
    "SELECT status, customer, amount FROM charges WHERE saga_id = $1 FOR UPDATE"};
static const pg_stmt PAYMENT_LOCK_ROW
    = {"payment_lock_row", "SELECT balance FROM accounts WHERE customer = $1 FOR UPDATE"};
static const pg_stmt PAYMENT_INSERT_RECORD = {"payment_insert_record",
    "INSERT INTO charges (saga_id, status, customer, amount) VALUES ($1, $2, $3, $4)"};
static const pg_stmt PAYMENT_UPDATE_RECORD = {"payment_update_record",
    "UPDATE charges SET status = $2, customer = $3, amount = $4, updated_at = now() "
    "WHERE saga_id = $1"};
static const pg_stmt PAYMENT_UPDATE_ROW
    = {"payment_update_row", "UPDATE accounts SET balance = $2 WHERE customer = $1"};
/* ... and of a batch: arrays in, one statement per table. Rows are locked
 * in key order so that two batches wait on each other in the same order.
 * Each write also filters by its key array (= ANY): the statements are
 * prepared, and a plan cached while the table was small would otherwise
 * keep scanning the whole table as it grows. */
static const pg_stmt PAYMENT_LOCK_RECORDS = {"payment_lock_records",
    "SELECT saga_id, status, customer, amount FROM charges WHERE saga_id = ANY($1::uuid[]) "
    "ORDER BY saga_id FOR UPDATE"};
static const pg_stmt PAYMENT_LOCK_ROWS = {"payment_lock_rows",
    "SELECT customer, balance FROM accounts WHERE customer = ANY($1::text[]) ORDER BY customer FOR "
    "UPDATE"};
static const pg_stmt PAYMENT_INSERT_RECORDS = {"payment_insert_records",
    "INSERT INTO charges (saga_id, status, customer, amount) "
    "SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[], $4::bigint[])"};
static const pg_stmt PAYMENT_UPDATE_RECORDS = {"payment_update_records",
    "UPDATE charges r SET status = v.status, customer = v.customer, amount = v.amount, updated_at "
    "= now() "
    "FROM unnest($1::uuid[], $2::text[], $3::text[], $4::bigint[]) AS v(saga_id, status, customer, "
    "amount) "
    "WHERE r.saga_id = v.saga_id AND r.saga_id = ANY($1::uuid[])"};
static const pg_stmt PAYMENT_UPDATE_ROWS = {"payment_update_rows",
    "UPDATE accounts s SET balance = v.balance FROM unnest($1::text[], $2::bigint[]) "
    "AS v(customer, balance) WHERE s.customer = v.customer AND s.customer = ANY($1::text[])"};

struct payment_store {
	PGconn *conn; /* NULL until the first successful connect */
	const char *conninfo;
};

int payment_store_migrate(const char *conninfo, int64_t wait_ms)
{
	return pg_connect_and_apply_schema(
	    conninfo, wait_ms, PAYMENT_SCHEMA_LOCK_KEY, payment_schema_sql, "payment");
}

int payment_store_open(payment_store **out, const char *conninfo, int64_t wait_ms)
{
	payment_store *s = calloc(1, sizeof *s);
	if (s == NULL)
		return -ENOMEM;
	s->conninfo = conninfo;
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

/* payment_store_try_apply is one attempt of payment_store_apply. */
static int payment_store_try_apply(payment_store *s, const char *saga_id, const payment_cmd *cmd,
    payment_outcome *out, int64_t *balance)
{
	PGresult *res = NULL;
	payment_record rec = {.status = PAYMENT_NONE};
	payment_account acct = {.exists = false};
	const char *by_saga[] = {saga_id};
	const char *by_customer[] = {cmd->customer};
	int rc = pg_begin(s->conn);
	if (rc != 0)
		return rc;
	/* Lock order is always record, then account: a transaction holds one
	 * of each, so two commands cannot wait on each other in a cycle. */
	rc = pg_exec_stmt(s->conn, &PAYMENT_LOCK_RECORD, 1, by_saga, &res);
	if (rc != 0)
		goto out_rollback;
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
	PQclear(res);
	if (rc != 0)
		goto out_rollback;

	rc = pg_exec_stmt(s->conn, &PAYMENT_LOCK_ROW, 1, by_customer, &res);
	if (rc != 0)
		goto out_rollback;
	if (PQntuples(res) == 1) {
		acct.exists = true;
		acct.balance = pg_get_i64(res, 0, 0);
	}
	PQclear(res);

	payment_decide(&rec, &acct, cmd, out);

	if (out->write_record) {
		char amount[24];
		snprintf(amount, sizeof amount, "%" PRId64, out->record.amount);
		const char *p[] = {
		    saga_id, payment_status_name(out->record.status), out->record.customer, amount};
		if (rec.status == PAYMENT_NONE)
			/* a concurrent duplicate that inserted first makes this
			 * fail with unique_violation: the caller retries */
			rc = pg_exec_stmt(s->conn, &PAYMENT_INSERT_RECORD, 4, p, NULL);
		else
			rc = pg_exec_stmt(s->conn, &PAYMENT_UPDATE_RECORD, 4, p, NULL);
		if (rc != 0)
			goto out_rollback;
	}
	if (out->write_account) {
		char val[24];
		snprintf(val, sizeof val, "%" PRId64, out->balance);
		const char *p[] = {cmd->customer, val};
		rc = pg_exec_stmt(s->conn, &PAYMENT_UPDATE_ROW, 2, p, &res);
		if (rc != 0)
			goto out_rollback;
		bool updated = strcmp(PQcmdTuples(res), "1") == 0;
		PQclear(res);
		if (!updated) {
			/* a CHARGED record whose account is gone: bad data */
			log_error(saga_id, "could not update account: customer \"%s\" has no row",
			    cmd->customer);
			rc = PG_ERR_OTHER;
			goto out_rollback;
		}
	}
	/* failure injection: the transaction fails at its last moment */
	if (fault_check(FAULT_FAIL_BEFORE_COMMIT,
	        cmd->op == PAYMENT_OP_CHARGE ? "ChargePayment" : "RefundPayment", NULL)) {
		rc = PG_ERR_INJECTED;
		goto out_rollback;
	}
	rc = pg_commit(s->conn);
	if (rc != 0)
		goto out_rollback;
	*balance = out->write_account ? out->balance : (acct.exists ? acct.balance : 0);
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

/* payment_batch_write runs one set-based write of the records with
 * in_db == `existing` that the batch changed; *count is how many. */
static int payment_batch_write_recs(payment_store *s, payment_batch_state *b, bool existing)
{
	pg_buf ids = {0}, st = {0}, customer = {0}, amount = {0};
	pg_array_open(&ids);
	pg_array_open(&st);
	pg_array_open(&customer);
	pg_array_open(&amount);
	size_t count = 0;
	for (size_t i = 0; i < b->n_recs; i++) {
		payment_batch_rec *r = &b->recs[i];
		if (!r->dirty || r->in_db != existing)
			continue;
		pg_array_add(&ids, r->saga_id);
		pg_array_add(&st, payment_status_name(r->rec.status));
		pg_array_add(&customer, r->rec.customer);
		pg_array_add_i64(&amount, r->rec.amount);
		count++;
	}
	pg_array_close(&ids);
	pg_array_close(&st);
	pg_array_close(&customer);
	pg_array_close(&amount);
	int rc = 0;
	if (ids.oom || st.oom || customer.oom || amount.oom) {
		rc = -ENOMEM;
	} else if (count > 0) {
		const char *p[] = {ids.p, st.p, customer.p, amount.p};
		PGresult *res = NULL;
		/* a new record that a concurrent command inserted first fails
		 * with unique_violation: the whole batch is retried */
		rc = pg_exec_stmt(s->conn,
		    existing ? &PAYMENT_UPDATE_RECORDS : &PAYMENT_INSERT_RECORDS, 4, p, &res);
		if (rc == 0 && strtoull(PQcmdTuples(res), NULL, 10) != count) {
			log_error(NULL, "could not write charges: %s rows of %zu written",
			    PQcmdTuples(res), count);
			rc = PG_ERR_OTHER;
		}
		PQclear(res);
	}
	pg_buf_free(&ids);
	pg_buf_free(&st);
	pg_buf_free(&customer);
	pg_buf_free(&amount);
	return rc;
}

static int payment_batch_write_accounts(payment_store *s, payment_batch_state *b)
{
	pg_buf customer = {0}, val = {0};
	pg_array_open(&customer);
	pg_array_open(&val);
	size_t count = 0;
	for (size_t i = 0; i < b->n_rows; i++) {
		if (!b->rows[i].dirty)
			continue;
		pg_array_add(&customer, b->rows[i].customer);
		pg_array_add_i64(&val, b->rows[i].row.balance);
		count++;
	}
	pg_array_close(&customer);
	pg_array_close(&val);
	int rc = 0;
	if (customer.oom || val.oom) {
		rc = -ENOMEM;
	} else if (count > 0) {
		const char *p[] = {customer.p, val.p};
		PGresult *res = NULL;
		rc = pg_exec_stmt(s->conn, &PAYMENT_UPDATE_ROWS, 2, p, &res);
		if (rc == 0 && strtoull(PQcmdTuples(res), NULL, 10) != count) {
			/* a CHARGED record whose account is gone: bad data */
			log_error(NULL, "could not update accounts: %s rows of %zu updated",
			    PQcmdTuples(res), count);
			rc = PG_ERR_OTHER;
		}
		PQclear(res);
	}
	pg_buf_free(&customer);
	pg_buf_free(&val);
	return rc;
}

/* payment_store_try_batch is one attempt of payment_store_apply_batch. */
static int payment_store_try_batch(
    payment_store *s, payment_batch_state *b, payment_batch_cmd *cmds, size_t n)
{
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
	int rc = ids.oom || customers.oom ? -ENOMEM : pg_begin(s->conn);
	if (rc != 0)
		goto out_free;
	const char *p_ids[] = {ids.p}, *p_customers[] = {customers.p};
	rc = pg_exec_stmt(s->conn, &PAYMENT_LOCK_RECORDS, 1, p_ids, &res);
	if (rc != 0)
		goto out_rollback;
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
	PQclear(res);
	if (rc != 0)
		goto out_rollback;
	rc = pg_exec_stmt(s->conn, &PAYMENT_LOCK_ROWS, 1, p_customers, &res);
	if (rc != 0)
		goto out_rollback;
	for (int i = 0; i < PQntuples(res); i++) {
		payment_batch_acct *w = payment_batch_find_row(b, PQgetvalue(res, i, 0));
		if (w != NULL) {
			w->row.exists = true;
			w->row.balance = pg_get_i64(res, i, 1);
		}
	}
	PQclear(res);

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
	rc = payment_batch_write_recs(s, b, false);
	if (rc == 0)
		rc = payment_batch_write_recs(s, b, true);
	if (rc == 0)
		rc = payment_batch_write_accounts(s, b);
	if (rc == 0)
		rc = pg_commit(s->conn);
	if (rc == 0)
		goto out_free;
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

int payment_store_deposit(payment_store *s, const char *customer, int64_t amount, int64_t *balance)
{
	PGresult *res = NULL;
	int rc = payment_store_ready(s);
	if (rc != 0)
		return rc;
	char val[24], max[24];
	snprintf(val, sizeof val, "%" PRId64, amount);
	snprintf(max, sizeof max, "%lld", (long long)VALID_AMOUNT_MAX);
	const char *p[] = {customer, val, max};
	/* Not re-run after a lost connection (unlike the other calls): a
	 * deposit has no idempotency key, and its COMMIT may have gone
	 * through. One statement, so it is its own transaction and the row
	 * lock of the upsert makes concurrent deposits add up. Both terms are at most a few
	 * times 10^15, far from bigint's limit, so the sum cannot overflow
	 * before it is compared; no row back means the guard refused it. */
	rc = pg_exec(s->conn,
	    "INSERT INTO accounts AS a (customer, balance) VALUES ($1, $2::bigint) "
	    "ON CONFLICT (customer) DO UPDATE SET balance = a.balance + EXCLUDED.balance "
	    "WHERE a.balance + EXCLUDED.balance <= $3::bigint "
	    "RETURNING balance",
	    3, p, &res);
	if (rc != 0)
		return rc;
	if (PQntuples(res) == 1)
		*balance = pg_get_i64(res, 0, 0);
	else
		rc = -ERANGE;
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
