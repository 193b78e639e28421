/* report: the orchestrators' elected reading of the sagas table (elect.h),
 * so that one of several orchestrators sharing a database does it:
 *
 *   - every `gauge_interval_ms` the leader reads the database gauges
 *     (store_read_gauges: open sagas by state, attention, overdue by why,
 *     with the configured margins) and publishes them as metrics
 *     (orch_metrics_gauges; docs/operations.md, "Metrics"); an orchestrator
 *     that does not lead hides them, so that exactly one exports them;
 *   - every `report_interval_ms` the leader counts the unfinished sagas
 *     flagged for attention and those past their step deadline by more than
 *     ORCH_REPORT_OVERDUE_MS (the sweep should have moved them within an
 *     interval: none of the orchestrators is running, or they are behind),
 *     and logs a WARNING when either is not zero.
 *
 * It reads only; two leaders for a moment log twice and both export.
 */
#ifndef SAGA_REPORT_H
#define SAGA_REPORT_H

#include <stdint.h>

typedef struct report report;

/* What report_start reads, and how often (all ms). */
typedef struct report_config {
	const char *conninfo;       /* copied */
	int64_t report_interval_ms; /* the WARNING lines; 0 = never */
	int64_t report_overdue_ms;  /* their past-deadline margin */
	int64_t gauge_interval_ms;  /* the metrics gauges; 0 = never */
	int64_t margin_ms;          /* the gauges' past-deadline margin (--overdue-margin) */
	int64_t stuck_ms;           /* the gauges' stuck threshold (--stuck-after) */
} report_config;

/* report_start starts the thread when either interval is > 0 (else *out is
 * NULL and nothing runs). Returns 0 and *out, or -ENOMEM / an errno from
 * pthread_create. */
int report_start(report **out, const report_config *cfg) __attribute__((warn_unused_result));

/* report_stop stops the thread (within a round trip), releases the lock and
 * frees `r`. NULL is ignored. */
void report_stop(report *r);

#endif
