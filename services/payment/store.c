/* store: the payment participant's own statements (Deposit,
 * ListAccounts), and the saga commands through the participant kit's store
 * (services/kit/pkit.h) in the payment participant's terms. House style: SQL
 * lives only here and in the kit's store. */
#include "store.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "pg.h"
#include "pkit.h"
#include "rpc.h"
#include "service.h"
#include "valid.h"

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

payment_deposit_result payment_store_deposit(payment_store *s, const char *customer, int64_t amount,
    const char *deposit_id, int64_t *balance, int *err)
{
	PGresult *res = NULL;
	bool keyed = deposit_id != NULL && deposit_id[0] != '\0';
	char val[24], max[24];
	snprintf(val, sizeof val, "%" PRId64, amount);
	snprintf(max, sizeof max, "%lld", (long long)VALID_AMOUNT_MAX);
	char token[VALID_UUID_LEN + 1];
	saga_id_new(token);
	const char *p[] = {customer, val, max, deposit_id, token};
	*err = 0;
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
		if ((rc = pkit_store_ready(s)) != 0)
			break;
		if (keyed)
			rc = pg_exec(pkit_store_conn(s), PAYMENT_DEPOSIT_KEYED, 5, p, &res);
		else
			rc = pg_exec(pkit_store_conn(s),
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
	if (rc == 0 && res == NULL)
		rc = PG_ERR_RETRY; /* the tries ran out on the re-run: unknown, retry */
	if (rc != 0) {
		*err = rc;
		return PAYMENT_DEPOSIT_ERROR;
	}
	payment_deposit_result out = PAYMENT_DEPOSIT_ADDED;
	if (PQntuples(res) != 1) {
		PQclear(res);
		return PAYMENT_DEPOSIT_OVER_CAP;
	}
	*balance = pg_get_i64(res, 0, 3);
	if (PQgetvalue(res, 0, 0)[0] == 't') {
		/* rule 6 of saga-semantics.md, for deposits: the same key with
		 * other arguments is refused and changes nothing */
		if (strcmp(PQgetvalue(res, 0, 1), customer) != 0 || pg_get_i64(res, 0, 2) != amount)
			out = PAYMENT_DEPOSIT_KEY_MISMATCH;
		else
			out = PAYMENT_DEPOSIT_DUPLICATE;
	} else {
		pkit_store_learn(s, customer, *balance);
	}
	PQclear(res);
	return out;
}

void payment_listing_free(payment_listing *l)
{
	free(l->accounts);
	free(l->charges);
	memset(l, 0, sizeof *l);
}

int payment_store_list(payment_store *s, bool include_charges, int32_t limit, payment_listing *out)
{
	memset(out, 0, sizeof *out);
	if (limit < 0 || limit > PAYMENT_LIST_LIMIT_MAX)
		return -EINVAL;
	/* The aggregates are computed by the database over every row, so they
	 * stay exact and small however many sagas were recorded. A sum past
	 * bigint (thousands of maximal charges) is clamped rather than failing
	 * the listing. Byte order (COLLATE "C") so the listing does not depend
	 * on the database's locale. One snapshot, so accounts, totals and
	 * charges agree. */
	const char *sql[] = {
	    "SELECT a.customer, a.balance, coalesce(c.n, 0), "
	    "least(coalesce(c.total, 0), 9223372036854775807)::bigint "
	    "FROM accounts a LEFT JOIN (SELECT customer, count(*) AS n, sum(amount) AS total "
	    "FROM charges WHERE status = 'CHARGED' GROUP BY customer) c "
	    "ON c.customer = a.customer ORDER BY a.customer COLLATE \"C\"",
	    "SELECT count(*), count(*) FILTER (WHERE status = 'REFUNDED') FROM charges",
	    include_charges ? "SELECT saga_id, customer, amount, status FROM charges "
	                      "ORDER BY created_at DESC, saga_id LIMIT $1::int"
	                    : NULL,
	};
	PGresult *res[3];
	int rc = pkit_store_snapshot(s, sql, 3, limit, res);
	if (rc != 0)
		return rc;
	PGresult *accts = res[0], *totals = res[1], *charges = res[2];
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
out_clear:
	PQclear(accts);
	PQclear(totals);
	PQclear(charges);
	return rc;
}
