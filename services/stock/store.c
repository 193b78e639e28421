/* store: the stock participant's own statements (SetStock, ListStock),
 * and the saga commands through the participant kit's store (common/pkit.h)
 * in the stock participant's terms. House style: SQL lives only here and in
 * the kit's store. */
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

int stock_store_migrate(const char *conninfo, int64_t wait_ms)
{
	return pkit_migrate(&stock_service, conninfo, wait_ms);
}

int stock_store_open(stock_store **out, const char *conninfo, int64_t wait_ms, valcache *cache)
{
	return pkit_store_open(out, &stock_service, conninfo, wait_ms, cache);
}

void stock_store_close(stock_store *s)
{
	pkit_store_close(s);
}

void stock_store_fast_counts(const stock_store *s, uint64_t *fast, uint64_t *fast_failed)
{
	pkit_store_fast_counts(s, fast, fast_failed);
}

int stock_store_apply_batch(stock_store *s, stock_batch_cmd *cmds, size_t n)
{
	if (n == 0 || n > RPC_BATCH_MAX)
		return -EINVAL;
	pkit_cmd k[RPC_BATCH_MAX];
	for (size_t i = 0; i < n; i++) {
		k[i] = (pkit_cmd) {.saga_id = cmds[i].saga_id};
		stock_args_of(&cmds[i].cmd, &k[i].args);
	}
	int rc = pkit_store_apply(s, k, n);
	for (size_t i = 0; rc == 0 && i < n; i++) {
		stock_outcome_of(&k[i].out, &cmds[i].out);
		cmds[i].on_hand = k[i].value;
	}
	return rc;
}

int stock_store_apply(
    stock_store *s, const char *saga_id, const stock_cmd *cmd, stock_outcome *out, int64_t *on_hand)
{
	stock_batch_cmd one = {.saga_id = saga_id, .cmd = *cmd};
	int rc = stock_store_apply_batch(s, &one, 1);
	if (rc == 0) {
		*out = one.out;
		*on_hand = one.on_hand;
	}
	return rc;
}

int stock_store_set(stock_store *s, const char *sku, int64_t on_hand)
{
	int rc = pkit_store_ready(s);
	if (rc != 0)
		return rc;
	char val[24];
	snprintf(val, sizeof val, "%" PRId64, on_hand);
	const char *p[] = {sku, val};
	bool rerun_done = false;
	do {
		/* one statement, so it is its own transaction; it sets an
		 * absolute value, so running it twice is harmless */
		rc = pg_run(pkit_store_conn(s),
		    "INSERT INTO stock (sku, on_hand) VALUES ($1, $2) "
		    "ON CONFLICT (sku) DO UPDATE SET on_hand = EXCLUDED.on_hand",
		    2, p);
	} while (pkit_store_may_rerun(s, rc, &rerun_done));
	if (rc == 0)
		pkit_store_learn(s, sku, on_hand);
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
	int rc = pg_run(
	    pkit_store_conn(s), "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", 0, NULL);
	if (rc != 0)
		return rc;
	/* The summary is aggregated by the database over every row, so it
	 * stays exact and small however many sagas were recorded. Byte order
	 * (COLLATE "C") so the listing does not depend on the database's
	 * locale. */
	rc = pg_exec(pkit_store_conn(s),
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
		rc = pg_exec(pkit_store_conn(s),
		    "SELECT saga_id, sku, qty, status FROM reservations "
		    "ORDER BY created_at DESC, saga_id LIMIT $1::int",
		    1, p, &recs);
		if (rc != 0)
			goto out_rollback;
	}
	rc = pg_commit(pkit_store_conn(s));
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
	pg_rollback(pkit_store_conn(s));
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
	int rc = pkit_store_ready(s);
	if (rc != 0)
		return rc;
	bool rerun_done = false;
	do
		rc = stock_store_try_list(s, include_reservations, limit, out);
	while (pkit_store_may_rerun(s, rc, &rerun_done));
	return rc;
}
