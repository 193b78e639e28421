/* report: the elected reading of the sagas table (report.h). */
#include "report.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "bgthread.h"
#include "clock.h"
#include "elect.h"
#include "log.h"
#include "orch_metrics.h"
#include "pg.h"
#include "store.h"

struct report {
	elect *el;
	report_config cfg;
	char *conninfo;
	int64_t next_report_ms, next_gauges_ms; /* clock_mono_ms; 0 = now */
	bool shown;                             /* the gauges are exported */
	bgthread bg;
};

/* report_log reads with the report's margin and logs what needs a look. */
static void report_log(report *r)
{
	store_gauges g;
	int rc
	    = store_read_gauges(elect_conn(r->el), r->cfg.report_overdue_ms, r->cfg.stuck_ms, &g);
	if (rc != 0) {
		log_warn(NULL, "report: could not count stuck sagas: %s", pg_err_name(rc));
		return;
	}
	int64_t attention = g.attention, overdue = g.overdue[STORE_OVERDUE_PAST_DEADLINE];
	if (attention > 0)
		log_warn(NULL, "report: %lld saga%s need%s attention (sagactl list --attention)",
		    (long long)attention, attention == 1 ? "" : "s", attention == 1 ? "s" : "");
	if (overdue > 0)
		log_warn(NULL,
		    "report: %lld saga%s past %s step deadline by more than %lld ms: no "
		    "orchestrator is moving %s (are they all down, or far behind?)",
		    (long long)overdue, overdue == 1 ? " is" : "s are",
		    overdue == 1 ? "its" : "their", (long long)r->cfg.report_overdue_ms,
		    overdue == 1 ? "it" : "them");
}

/* report_gauges reads the gauges with the configured margins and publishes
 * them; a failed read keeps the last ones (their timestamp goes stale:
 * the SagaGaugesStale alert). */
static void report_gauges(report *r)
{
	store_gauges g;
	int rc = store_read_gauges(elect_conn(r->el), r->cfg.margin_ms, r->cfg.stuck_ms, &g);
	if (rc != 0) {
		log_warn(NULL, "metrics: could not read the database gauges: %s", pg_err_name(rc));
		return;
	}
	orch_metrics_gauges(&g, (double)clock_wall_ms() / 1000.0);
	r->shown = true;
}

/* report_round runs what is due; returns the ms until the next. */
static int64_t report_round(report *r)
{
	int64_t now = clock_mono_ms();
	bool log_due = r->cfg.report_interval_ms > 0 && now >= r->next_report_ms;
	bool gauges_due = r->cfg.gauge_interval_ms > 0 && now >= r->next_gauges_ms;
	if (log_due || gauges_due) {
		if (!elect_lead(r->el)) {
			if (r->shown) /* another orchestrator exports them */
				orch_metrics_gauges(NULL, 0);
			r->shown = false;
		} else {
			if (gauges_due)
				report_gauges(r);
			if (log_due)
				report_log(r);
		}
		now = clock_mono_ms();
		if (log_due)
			r->next_report_ms = now + r->cfg.report_interval_ms;
		if (gauges_due)
			r->next_gauges_ms = now + r->cfg.gauge_interval_ms;
	}
	int64_t wait = INT64_MAX;
	if (r->cfg.report_interval_ms > 0)
		wait = r->next_report_ms - now;
	if (r->cfg.gauge_interval_ms > 0 && r->next_gauges_ms - now < wait)
		wait = r->next_gauges_ms - now;
	return wait < 1 ? 1 : wait;
}

static void *report_main(void *arg)
{
	report *r = arg;
	while (!bgthread_sleep(&r->bg, report_round(r)))
		;
	return NULL;
}

int report_start(report **out, const report_config *cfg)
{
	*out = NULL;
	if (cfg->report_interval_ms <= 0 && cfg->gauge_interval_ms <= 0)
		return 0;
	report *r = calloc(1, sizeof *r);
	if (r == NULL || (r->conninfo = strdup(cfg->conninfo)) == NULL) {
		free(r);
		return -ENOMEM;
	}
	r->cfg = *cfg;
	r->cfg.conninfo = r->conninfo;
	int rc = elect_open(&r->el, cfg->conninfo, ELECT_KEY_REPORT,
	    "the report of stuck sagas and the database gauges");
	if (rc != 0) {
		free(r->conninfo);
		free(r);
		return rc;
	}
	rc = bgthread_start(&r->bg, report_main, r);
	if (rc != 0) {
		elect_close(r->el);
		free(r->conninfo);
		free(r);
		return rc;
	}
	*out = r;
	return 0;
}

void report_stop(report *r)
{
	if (r == NULL)
		return;
	bgthread_stop(&r->bg);
	elect_close(r->el);
	free(r->conninfo);
	free(r);
}
