#include "store.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fault.h"
#include "log.h"
#include "pg.h"
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
	rc = pg_exec(s->conn,
	    "SELECT status, customer, amount FROM charges WHERE saga_id = $1 FOR UPDATE", 1,
	    by_saga, &res);
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

	rc = pg_exec(s->conn, "SELECT balance FROM accounts WHERE customer = $1 FOR UPDATE", 1,
	    by_customer, &res);
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
			rc = pg_run(s->conn,
			    "INSERT INTO charges (saga_id, status, customer, amount) "
			    "VALUES ($1, $2, $3, $4)",
			    4, p);
		else
			rc = pg_run(s->conn,
			    "UPDATE charges SET status = $2, customer = $3, amount = $4, "
			    "updated_at = now() WHERE saga_id = $1",
			    4, p);
		if (rc != 0)
			goto out_rollback;
	}
	if (out->write_account) {
		char val[24];
		snprintf(val, sizeof val, "%" PRId64, out->balance);
		const char *p[] = {cmd->customer, val};
		rc = pg_exec(
		    s->conn, "UPDATE accounts SET balance = $2 WHERE customer = $1", 2, p, &res);
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
