/* store_retention: the orchestrator's retention batch (store_retention.h);
 * the rule and the locking are in saga_retention_batch (sql/schema.sql). */
#include <inttypes.h>
#include <stdio.h>

#include "horizon.h"
#include "pg.h"
#include "store_retention.h"

/* $1 the saga cutoff, $2 the finished cutoff, $3 the id cutoff (ms since
 * the epoch), $4 the limit, $5 dry. */
static const pg_stmt STORE_RETENTION_BATCH = {"saga_retention_batch",
    "SELECT sagas, history, ids FROM saga_retention_batch("
    "to_timestamp($1::bigint / 1000.0), to_timestamp($2::bigint / 1000.0),"
    " to_timestamp($3::bigint / 1000.0), $4::integer, $5::boolean)",
    false}; /* not timed as a commit: sagas_retention_batch_seconds times it */

int store_retention_batch(
    void *arg, PGconn *conn, int64_t now_ms, int limit, bool dry, retention_counts *out)
{
	const horizon_policy *p = arg;
	out->n[0] = 0;
	out->n[1] = 0;
	out->n[2] = 0;
	char saga_cutoff[24], finished_cutoff[24], id_cutoff[24], lim[16];
	snprintf(saga_cutoff, sizeof saga_cutoff, "%" PRId64, horizon_saga_cutoff_ms(p, now_ms));
	snprintf(finished_cutoff, sizeof finished_cutoff, "%" PRId64, now_ms - p->retention_ms);
	snprintf(id_cutoff, sizeof id_cutoff, "%" PRId64, horizon_id_cutoff_ms(p, now_ms));
	snprintf(lim, sizeof lim, "%d", limit > 0 ? limit : 0);
	const char *params[5]
	    = {saga_cutoff, finished_cutoff, id_cutoff, lim, dry ? "true" : "false"};
	PGresult *r = NULL;
	int rc = pg_exec_stmt(conn, &STORE_RETENTION_BATCH, 5, params, &r);
	if (rc != 0)
		return rc;
	if (PQntuples(r) == 1) {
		out->n[0] = pg_get_i64(r, 0, 0);
		out->n[1] = pg_get_i64(r, 0, 1);
		out->n[2] = pg_get_i64(r, 0, 2);
	}
	PQclear(r);
	return 0;
}
