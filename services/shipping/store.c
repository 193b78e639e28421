/* store: the shipping participant's own statement (ListShipments). Its saga
 * command goes through the participant kit's store (common/pkit_store.c).
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

/* shipping_store_try_list is one attempt of shipping_store_list. */
static int shipping_store_try_list(
    shipping_store *s, bool include_rows, int32_t limit, shipping_listing *out)
{
	PGconn *conn = pkit_store_conn(s);
	PGresult *count = NULL, *rows = NULL;
	memset(out, 0, sizeof *out);
	/* one snapshot, so the count agrees with the rows listed */
	int rc = pg_run(conn, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", 0, NULL);
	if (rc != 0)
		return rc;
	rc = pg_exec(conn, "SELECT count(*) FROM shipments", 0, NULL, &count);
	if (rc == 0 && include_rows) {
		/* one row more than asked tells whether there are more */
		char lim[16];
		snprintf(lim, sizeof lim, "%" PRId32, limit + 1);
		const char *p[] = {lim};
		rc = pg_exec(conn,
		    "SELECT saga_id, customer, sku, qty, status,"
		    " (extract(epoch FROM created_at) * 1000)::bigint FROM shipments"
		    " ORDER BY created_at DESC, saga_id LIMIT $1::int",
		    1, p, &rows);
	}
	if (rc == 0)
		rc = pg_commit(conn);
	if (rc != 0) {
		pg_rollback(conn);
		goto out_clear;
	}
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

int shipping_store_list(shipping_store *s, bool include_rows, int32_t limit, shipping_listing *out)
{
	memset(out, 0, sizeof *out);
	if (limit < 0 || limit > SHIPPING_LIST_LIMIT_MAX)
		return -EINVAL;
	int rc = pkit_store_ready(s);
	if (rc != 0)
		return rc;
	bool rerun_done = false;
	do
		rc = shipping_store_try_list(s, include_rows, limit, out);
	while (pkit_store_may_rerun(s, rc, &rerun_done));
	return rc;
}
