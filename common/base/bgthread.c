#include "bgthread.h"

#include <errno.h>
#include <time.h>

int bgthread_start(bgthread *t, void *(*fn)(void *), void *arg)
{
	t->stopping = false;
	t->started = false;
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&t->cv, &ca);
	pthread_condattr_destroy(&ca);
	pthread_mutex_init(&t->mtx, NULL);
	int rc = pthread_create(&t->thread, NULL, fn, arg);
	if (rc != 0) {
		pthread_cond_destroy(&t->cv);
		pthread_mutex_destroy(&t->mtx);
		return -rc;
	}
	t->started = true;
	return 0;
}

bool bgthread_sleep(bgthread *t, int64_t ms)
{
	if (ms < 1)
		ms = 1;
	struct timespec until;
	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += ms / 1000;
	until.tv_nsec += (ms % 1000) * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&t->mtx);
	while (!t->stopping && pthread_cond_timedwait(&t->cv, &t->mtx, &until) != ETIMEDOUT)
		;
	bool stopping = t->stopping;
	pthread_mutex_unlock(&t->mtx);
	return stopping;
}

void bgthread_stop(bgthread *t)
{
	if (!t->started)
		return;
	pthread_mutex_lock(&t->mtx);
	t->stopping = true;
	pthread_cond_signal(&t->cv);
	pthread_mutex_unlock(&t->mtx);
	pthread_join(t->thread, NULL);
	pthread_cond_destroy(&t->cv);
	pthread_mutex_destroy(&t->mtx);
	t->started = false;
}
