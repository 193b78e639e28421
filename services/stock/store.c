/* store: the stock participant's own statements (SetStock, ListStock),
 * and the saga commands through the participant kit's store (services/kit/pkit.h)
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

int stock_store_list(stock_store *s, bool include_reservations, int32_t limit, stock_listing *out)
{
	memset(out, 0, sizeof *out);
	if (limit < 0 || limit > STOCK_LIST_LIMIT_MAX)
		return -EINVAL;
	/* The summary is aggregated by the database over every row, so it
	 * stays exact and small however many sagas were recorded. Byte order
	 * (COLLATE "C") so the listing does not depend on the database's
	 * locale. */
	const char *sql[] = {
	    "SELECT s.sku, s.on_hand, coalesce(r.n, 0), coalesce(r.q, 0) "
	    "FROM stock s LEFT JOIN (SELECT sku, count(*) AS n, sum(qty) AS q "
	    "FROM reservations WHERE status = 'RESERVED' GROUP BY sku) r ON r.sku = s.sku "
	    "ORDER BY s.sku COLLATE \"C\"",
	    include_reservations ? "SELECT saga_id, sku, qty, status FROM reservations "
	                           "ORDER BY created_at DESC, saga_id LIMIT $1::int"
	                         : NULL,
	};
	PGresult *res[2];
	int rc = pkit_store_snapshot(s, sql, 2, limit, res);
	if (rc != 0)
		return rc;
	PGresult *items = res[0], *recs = res[1];
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
out_clear:
	PQclear(items);
	PQclear(recs);
	return rc;
}
