/* store: the shipping participant's own statement (ListShipments). Its saga
 * command goes through the participant kit's store (services/kit_store/pkit_store.c).
 * House style: SQL lives only here and in the kit's store. */
#include "store.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pg.h"

void shipping_listing_free(shipping_listing *l)
{
	free(l->rows);
	memset(l, 0, sizeof *l);
}

int shipping_store_list(shipping_store *s, bool include_rows, int32_t limit, shipping_listing *out)
{
	memset(out, 0, sizeof *out);
	if (limit < 0 || limit > SHIPPING_LIST_LIMIT_MAX)
		return -EINVAL;
	/* one snapshot, so the count agrees with the rows listed */
	const char *sql[] = {
	    "SELECT count(*) FROM shipments",
	    include_rows ? "SELECT saga_id, customer, sku, qty, status,"
	                   " (extract(epoch FROM created_at) * 1000)::bigint FROM shipments"
	                   " ORDER BY created_at DESC, saga_id LIMIT $1::int"
	                 : NULL,
	};
	PGresult *res[2];
	int rc = pkit_store_snapshot(s, sql, 2, limit, res);
	if (rc != 0)
		return rc;
	PGresult *count = res[0], *rows = res[1];
	out->total = pg_get_i64(count, 0, 0);
	int n = rows ? PQntuples(rows) : 0;
	if (n > limit) {
		n = limit;
		out->truncated = true;
	}
	out->rows = calloc(n ? (size_t)n : 1, sizeof *out->rows);
	if (out->rows == NULL) {
		rc = -ENOMEM;
		goto out_clear;
	}
	for (int i = 0; i < n; i++) {
		shipping_row *w = &out->rows[i];
		snprintf(w->saga_id, sizeof w->saga_id, "%s", PQgetvalue(rows, i, 0));
		snprintf(w->customer, sizeof w->customer, "%s", PQgetvalue(rows, i, 1));
		snprintf(w->sku, sizeof w->sku, "%s", PQgetvalue(rows, i, 2));
		w->qty = (int32_t)pg_get_i64(rows, i, 3);
		w->status = shipping_status_parse(PQgetvalue(rows, i, 4));
		w->created_ms = pg_get_i64(rows, i, 5);
	}
	out->n_rows = (size_t)n;
out_clear:
	PQclear(count);
	PQclear(rows);
	return rc;
}
