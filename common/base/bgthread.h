/* bgthread: a background thread that works in rounds and sleeps between
 * them on the monotonic clock, and that a stop wakes at once: the elected
 * jobs (orchestrator/core/report.c, common/db/retention.c). */
#ifndef SAGA_BGTHREAD_H
#define SAGA_BGTHREAD_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct bgthread {
	pthread_t thread;
	pthread_mutex_t mtx;
	pthread_cond_t cv; /* CLOCK_MONOTONIC */
	bool stopping;
	bool started;
} bgthread;

/* bgthread_start runs fn(arg) on a new thread; `t` (zeroed or fresh) must
 * stay where it is until bgthread_stop. fn calls bgthread_sleep between
 * its rounds and returns once that says stop. Returns 0 or a negative
 * errno (nothing to stop then). */
int bgthread_start(bgthread *t, void *(*fn)(void *), void *arg);

/* bgthread_sleep waits `ms` ms (at least 1) or until bgthread_stop; true
 * when stopping (the caller returns). Called on t's own thread. */
bool bgthread_sleep(bgthread *t, int64_t ms);

/* bgthread_stop asks the thread to stop, wakes it, joins it and frees
 * what bgthread_start made; nothing when it was not started. */
void bgthread_stop(bgthread *t);

#endif
