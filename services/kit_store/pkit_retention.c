/* pkit_retention: the participant kit's retention batch (pkit.h,
 * "Retention"; docs/participants.md), the batch function of the shared
 * loop of retention.h. Its SQL is generated from the descriptor's table and
 * column names, as pkit_store.c's: the expired records are deleted and
 * folded into <records>_retired by one statement, so a record is never gone
 * without being counted, nor counted twice. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "horizon.h"
#include "log.h"
#include "pg.h"
#include "pkit.h"
#include "retention.h"

/* The longest statement: the names of a table and three columns, each at
 * most a PostgreSQL identifier (63 bytes), and the text around them. */
#define PKIT_RETENTION_SQL_MAX 2048

/* pkit_retention_sql writes into `b` (len bytes) the statement of a batch
 * of `v`, or with `dry` its count; $1 is the cutoff (ms since the epoch),
 * $2 the limit. Returns false when it did not fit (a bug in the
 * descriptor).
 *
 * The records are taken oldest first by the records' created_at index, and
 * locked with SKIP LOCKED: a record that a command holds is left for the
 * next pass, and two batches (the elected job and an admin call) never
 * take the same record. They are deleted by their primary key (= ANY of
 * their array): joined to the table instead (DELETE ... USING), the
 * planner read the whole table into a hash join (test_pkit,
 * test_retention_plan). Measured on stockd's schema with 600,000
 * reservations, 480,000 of them expired: index scans only, a batch of
 * 1,000 in 13 ms and one of 10,000 in 72 ms. The summaries are written in (key, status) order,
 * so two batches that fold into the same summaries wait on each other in
 * one order, never in a cycle. */
static bool pkit_retention_sql(const pkit_service *v, bool dry, char *b, size_t len)
{
	bool ok = true;
	b[0] = '\0';
	if (dry) {
		pkit_sql_add(b, len, &ok,
		    "SELECT count(*) FROM %s WHERE created_at < to_timestamp($1::bigint / 1000.0)",
		    v->records);
		return ok;
	}
	/* the summary's key is the first text column and its total the sum of
	 * the first number column; a service without one sums 0 */
	char key[80], num[80];
	snprintf(key, sizeof key, "%s%s", v->n_text > 0 ? "r." : "",
	    v->n_text > 0 ? v->text_cols[0] : "''::text");
	snprintf(num, sizeof num, "%s%s", v->n_num > 0 ? "r." : "",
	    v->n_num > 0 ? v->num_cols[0] : "0::bigint");
	pkit_sql_add(b, len, &ok,
	    "WITH doomed AS (SELECT saga_id FROM %s"
	    " WHERE created_at < to_timestamp($1::bigint / 1000.0)"
	    " ORDER BY created_at LIMIT $2::int FOR UPDATE SKIP LOCKED),"
	    " gone AS (DELETE FROM %s r WHERE r.saga_id = ANY (ARRAY(SELECT saga_id FROM doomed))"
	    " RETURNING %s AS key, r.status, %s AS num),"
	    " folded AS (INSERT INTO %s_retired AS t (key, status, records, total)"
	    " SELECT key, status, count(*), coalesce(sum(num), 0) FROM gone"
	    " GROUP BY key, status ORDER BY key, status"
	    " ON CONFLICT (key, status) DO UPDATE SET records = t.records + EXCLUDED.records,"
	    " total = t.total + EXCLUDED.total)"
	    " SELECT count(*) FROM gone",
	    v->records, v->records, key, num, v->records);
	return ok;
}

int pkit_retention_batch(
    void *arg, PGconn *conn, int64_t now_ms, int limit, bool dry, retention_counts *out)
{
	const pkit_retention *pr = arg;
	const pkit_service *v = pr->svc;
	out->n[0] = 0;
	out->n[1] = 0;
	out->n[2] = 0;
	if (pr->horizon == NULL || pr->horizon->retention_ms <= 0)
		return 0; /* no horizon: nothing ever expires */
	if (!dry && limit < 1)
		return -EINVAL;
	char sql[PKIT_RETENTION_SQL_MAX];
	if (!pkit_retention_sql(v, dry, sql, sizeof sql)) {
		log_error(NULL,
		    "could not run the retention of the %s records: its statement "
		    "does not fit",
		    v->name);
		return PG_ERR_OTHER;
	}
	char cutoff[32], lim[16];
	snprintf(cutoff, sizeof cutoff, "%" PRId64, horizon_record_cutoff_ms(pr->horizon, now_ms));
	snprintf(lim, sizeof lim, "%d", limit);
	const char *p[] = {cutoff, lim};
	PGresult *res = NULL;
	int rc = pg_exec(conn, sql, dry ? 1 : 2, p, &res);
	if (rc == 0) {
		out->n[0] = PQntuples(res) == 1 ? pg_get_i64(res, 0, 0) : 0;
		PQclear(res);
	}
	return rc;
}
