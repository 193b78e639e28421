#include "report.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>

#include "elect.h"
#include "log.h"
#include "pg.h"
#include "store.h"

struct report {
	elect *el;
	int64_t interval_ms;
	int64_t overdue_ms;
	int64_t stuck_ms;
	pthread_t thread;
	pthread_mutex_t mtx;
	pthread_cond_t cv; /* CLOCK_MONOTONIC */
	bool stopping;
};

/* report_round runs one round: lead or not, then count and log. */
static void report_round(report *r)
{
	if (!elect_lead(r->el))
		return;
	store_gauges g;
	int rc = store_read_gauges(elect_conn(r->el), r->overdue_ms, r->stuck_ms, &g);
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
		    overdue == 1 ? "its" : "their", (long long)r->overdue_ms,
		    overdue == 1 ? "it" : "them");
}

static void *report_main(void *arg)
{
	report *r = arg;
	pthread_mutex_lock(&r->mtx);
	while (!r->stopping) {
		pthread_mutex_unlock(&r->mtx);
		report_round(r);
		pthread_mutex_lock(&r->mtx);
		struct timespec until;
		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_sec += r->interval_ms / 1000;
		until.tv_nsec += (r->interval_ms % 1000) * 1000000L;
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		while (!r->stopping && pthread_cond_timedwait(&r->cv, &r->mtx, &until) != ETIMEDOUT)
			;
	}
	pthread_mutex_unlock(&r->mtx);
	return NULL;
}

int report_start(
    report **out, const char *conninfo, int64_t interval_ms, int64_t overdue_ms, int64_t stuck_ms)
{
	report *r = calloc(1, sizeof *r);
	if (r == NULL)
		return -ENOMEM;
	r->interval_ms = interval_ms > 0 ? interval_ms : 1;
	r->overdue_ms = overdue_ms;
	r->stuck_ms = stuck_ms;
	int rc = elect_open(&r->el, conninfo, ELECT_KEY_REPORT, "the report of stuck sagas");
	if (rc != 0) {
		free(r);
		return rc;
	}
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&r->cv, &ca);
	pthread_condattr_destroy(&ca);
	pthread_mutex_init(&r->mtx, NULL);
	rc = pthread_create(&r->thread, NULL, report_main, r);
	if (rc != 0) {
		elect_close(r->el);
		pthread_cond_destroy(&r->cv);
		pthread_mutex_destroy(&r->mtx);
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
	pthread_mutex_lock(&r->mtx);
	r->stopping = true;
	pthread_cond_signal(&r->cv);
	pthread_mutex_unlock(&r->mtx);
	pthread_join(r->thread, NULL);
	elect_close(r->el);
	pthread_cond_destroy(&r->cv);
	pthread_mutex_destroy(&r->mtx);
	free(r);
}
