#include "retention.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "bgthread.h"
#include "clock.h"
#include "dbclock.h"
#include "elect.h"
#include "log.h"
#include "metrics.h"
#include "pg.h"

struct retention {
	retention_config cfg;
	elect *el;
	bgthread bg;
	int limit;     /* the batch size in use, kept from pass to pass */
	PGconn *clock; /* not leading: the connection the database's clock
	                  is read on (dbclock.h), every interval */
};

static const metric_def RETENTION_DELETED = {"sagas_retention_deleted_total",
    "Rows deleted by retention (docs/saga-semantics.md, \"Retention\"), by table", METRIC_COUNTER,
    "table", NULL, 0};
static const metric_def RETENTION_PASSES = {"sagas_retention_passes_total",
    "Retention passes run by this process", METRIC_COUNTER, "", NULL, 0};
static const double RETENTION_BUCKETS[] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5};
static const metric_def RETENTION_BATCH_SECONDS = {"sagas_retention_batch_seconds",
    "How long each retention batch (one transaction) took", METRIC_HISTOGRAM, "", RETENTION_BUCKETS,
    sizeof RETENTION_BUCKETS / sizeof RETENTION_BUCKETS[0]};
static const metric_def RETENTION_LIMIT = {"sagas_retention_batch_limit",
    "The most units a retention batch deletes now (it adapts to each batch's duration)",
    METRIC_GAUGE, "", NULL, 0};

/* retention_adapt is the next batch size after one of `limit` took `ms`. */
static int retention_adapt(int limit, int64_t ms)
{
	if (ms > RETENTION_TARGET_MS)
		limit /= 2;
	else if (ms < RETENTION_TARGET_MS / 2)
		limit *= 2;
	if (limit < RETENTION_BATCH_MIN)
		limit = RETENTION_BATCH_MIN;
	if (limit > RETENTION_BATCH_MAX)
		limit = RETENTION_BATCH_MAX;
	return limit;
}

static void retention_count(const retention_config *cfg, const retention_counts *c)
{
	for (int i = 0; i < 3; i++)
		if (cfg->tables[i] != NULL && c->n[i] > 0)
			metric_add(metric_get1(&RETENTION_DELETED, cfg->tables[i]), c->n[i]);
}

/* retention_pass runs batches on `conn` until one finds fewer than its
 * limit or `r` (NULL: never) is stopped; `limit` in/out. Adds to *total. */
static int retention_pass(
    const retention_config *cfg, retention *r, PGconn *conn, int *limit, retention_counts *total)
{
	for (;;) {
		if (dbclock_sync(conn) != 0 && !dbclock_synced())
			return PG_ERR_CONNECTION;
		retention_counts c = {{0, 0, 0}};
		int64_t t0 = clock_mono_ms();
		int rc = cfg->batch(cfg->arg, conn, dbclock_now_ms(), *limit, false, &c);
		int64_t took = clock_mono_ms() - t0;
		if (rc != 0)
			return rc;
		metric_observe(metric_get(&RETENTION_BATCH_SECONDS, NULL), (double)took / 1000.0);
		retention_count(cfg, &c);
		total->n[0] += c.n[0];
		total->n[1] += c.n[1];
		total->n[2] += c.n[2];
		bool more = c.n[0] >= *limit || c.n[2] >= *limit;
		/* a batch that found less than it could take says nothing of
		 * what a full one costs: only full or slow ones adapt */
		if (more || took > RETENTION_TARGET_MS)
			*limit = retention_adapt(*limit, took);
		metric_set(metric_get(&RETENTION_LIMIT, NULL), *limit);
		if (!more)
			return 0;
		/* throttled: the database is ours at most a quarter of the time */
		int64_t rest = RETENTION_REST * (took > 10 ? took : 10);
		if (r != NULL ? bgthread_sleep(&r->bg, rest) : false)
			return 0;
	}
}

int retention_run_pass(const retention_config *cfg, PGconn *conn, bool dry, retention_counts *total)
{
	if (dry) {
		if (dbclock_sync(conn) != 0 && !dbclock_synced())
			return PG_ERR_CONNECTION;
		retention_counts c = {{0, 0, 0}};
		int rc = cfg->batch(cfg->arg, conn, dbclock_now_ms(), 0, true, &c);
		if (rc == 0) {
			total->n[0] += c.n[0];
			total->n[1] += c.n[1];
			total->n[2] += c.n[2];
		}
		return rc;
	}
	int limit = RETENTION_BATCH_START;
	retention_counts c = {{0, 0, 0}};
	int64_t t0 = clock_mono_ms();
	int rc = retention_pass(cfg, NULL, conn, &limit, &c);
	total->n[0] += c.n[0];
	total->n[1] += c.n[1];
	total->n[2] += c.n[2];
	if (c.n[0] > 0 && cfg->tables[1] != NULL)
		log_info(NULL,
		    "retention (an admin's pass): deleted %" PRId64 " %s and %" PRId64
		    " %s rows in %" PRId64 " ms",
		    c.n[0], cfg->tables[0], c.n[1], cfg->tables[1], clock_mono_ms() - t0);
	else if (c.n[0] > 0)
		log_info(NULL,
		    "retention (an admin's pass): deleted %" PRId64 " %s in %" PRId64 " ms", c.n[0],
		    cfg->tables[0], clock_mono_ms() - t0);
	if (c.n[2] > 0 && cfg->tables[2] != NULL)
		log_info(NULL, "retention (an admin's pass): deleted %" PRId64 " %s", c.n[2],
		    cfg->tables[2]);
	return rc;
}

static void *retention_main(void *arg)
{
	retention *r = arg;
	const retention_config *cfg = &r->cfg;
	for (;;) {
		if (elect_lead(r->el)) {
			retention_counts c = {{0, 0, 0}};
			int64_t t0 = clock_mono_ms();
			int rc = retention_pass(cfg, r, elect_conn(r->el), &r->limit, &c);
			metric_inc(metric_get(&RETENTION_PASSES, NULL));
			if (rc != 0)
				log_warn(NULL,
				    "retention of %s: a batch failed (%s); the next pass goes on",
				    cfg->what, pg_err_name(rc));
			if (c.n[0] > 0) {
				if (cfg->tables[1] != NULL)
					log_info(NULL,
					    "retention: deleted %" PRId64 " %s and %" PRId64
					    " %s rows in %" PRId64 " ms (batch size now %d)",
					    c.n[0], cfg->tables[0], c.n[1], cfg->tables[1],
					    clock_mono_ms() - t0, r->limit);
				else
					log_info(NULL,
					    "retention: deleted %" PRId64 " %s in %" PRId64
					    " ms (batch size now %d)",
					    c.n[0], cfg->tables[0], clock_mono_ms() - t0, r->limit);
			}
			if (c.n[2] > 0 && cfg->tables[2] != NULL)
				log_info(NULL, "retention: deleted %" PRId64 " %s", c.n[2],
				    cfg->tables[2]);
		} else if (pg_ensure(&r->clock, cfg->conninfo, 1000)) {
			/* every process keeps its reading of the database's clock
			 * fresh (a participant's rule R1 compares with it), not
			 * only the one whose pass reads it */
			if (dbclock_sync(r->clock) != 0)
				log_debug(NULL,
				    "could not read the database's clock: the "
				    "reading in use stays");
		}
		if (bgthread_sleep(&r->bg, r->cfg.interval_ms))
			break;
	}
	return NULL;
}

int retention_start(retention **out, const retention_config *cfg)
{
	*out = NULL;
	retention *r = calloc(1, sizeof *r);
	if (r == NULL)
		return -ENOMEM;
	r->cfg = *cfg;
	r->limit = RETENTION_BATCH_START;
	for (int i = 0; i < 2; i++)
		if (cfg->tables[i] != NULL)
			metric_add(metric_get1(&RETENTION_DELETED, cfg->tables[i]), 0);
	metric_add(metric_get(&RETENTION_PASSES, NULL), 0);
	(void)metric_get(&RETENTION_BATCH_SECONDS, NULL);
	metric_set(metric_get(&RETENTION_LIMIT, NULL), r->limit);
	int rc = elect_open(&r->el, cfg->conninfo, cfg->elect_key, cfg->what);
	if (rc != 0) {
		free(r);
		return rc;
	}
	rc = bgthread_start(&r->bg, retention_main, r);
	if (rc != 0) {
		elect_close(r->el);
		free(r);
		return rc;
	}
	*out = r;
	return 0;
}

void retention_stop(retention *r)
{
	if (r == NULL)
		return;
	bgthread_stop(&r->bg);
	elect_close(r->el);
	if (r->clock != NULL)
		PQfinish(r->clock);
	free(r);
}
