/* report: the orchestrators' report of stuck sagas, elected (elect.h) so
 * that one of several orchestrators sharing a database runs it. Every
 * `interval_ms` the leader counts the unfinished sagas flagged for attention
 * and those past their step deadline by more than `overdue_ms` (the sweep
 * should have moved them within an interval: none of the orchestrators is
 * running, or they are behind), and logs a WARNING when either is not zero.
 * It reads only; two leaders for a moment log twice.
 */
#ifndef SAGA_REPORT_H
#define SAGA_REPORT_H

#include <stdint.h>

typedef struct report report;

/* report_start starts the report's thread on connections to `conninfo`
 * (copied): every interval_ms ms (> 0), reading store_read_gauges with
 * overdue_ms as the past-deadline margin and stuck_ms as the stuck
 * threshold (ms); it logs the sagas needing attention and those past their
 * deadline by more than overdue_ms. Returns 0 and *out, or -ENOMEM / an
 * errno from pthread_create. */
int report_start(report **out, const char *conninfo, int64_t interval_ms, int64_t overdue_ms,
    int64_t stuck_ms) __attribute__((warn_unused_result));

/* report_stop stops the thread (within a round trip), releases the lock and
 * frees `r`. NULL is ignored. */
void report_stop(report *r);

#endif
