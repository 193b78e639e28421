#include "daemon.h"

#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "log.h"

static volatile sig_atomic_t daemon_stop_flag;
/* posted by the first signal: wakes the watchdog (sem_post is
 * async-signal-safe) */
static sem_t daemon_stop_sem;
static bool daemon_sem_ready;
static int64_t daemon_watchdog_ms;

static void daemon_on_signal(int sig)
{
	(void)sig;
	if (!daemon_stop_flag && daemon_sem_ready)
		sem_post(&daemon_stop_sem);
	daemon_stop_flag = 1;
}

/* daemon_watchdog waits for the first stop signal, then for the bound. */
static void *daemon_watchdog(void *arg)
{
	(void)arg;
	while (sem_wait(&daemon_stop_sem) != 0 && errno == EINTR)
		;
	clock_sleep_us(daemon_watchdog_ms * 1000);
	log_error(NULL,
	    "could not stop within %lld ms (stop-timeout): ending the process; every reply "
	    "sent was committed and unfinished sagas resume at the next start",
	    (long long)daemon_watchdog_ms);
	_exit(0);
	return NULL;
}

int daemon_install_signals(int64_t stop_timeout_ms)
{
	int rc = 0;
	if (stop_timeout_ms > 0 && !daemon_sem_ready) {
		daemon_watchdog_ms = stop_timeout_ms;
		if (sem_init(&daemon_stop_sem, 0, 0) != 0) {
			rc = -errno;
		} else {
			pthread_attr_t attr;
			pthread_t t;
			if (pthread_attr_init(&attr) != 0) {
				rc = -ENOMEM;
			} else {
				pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
				int e = pthread_create(&t, &attr, daemon_watchdog, NULL);
				pthread_attr_destroy(&attr);
				rc = -e;
			}
			daemon_sem_ready = rc == 0;
		}
	}
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = daemon_on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	return rc;
}

bool daemon_should_stop(void)
{
	return daemon_stop_flag != 0;
}

void daemon_wait_for_stop(int64_t poll_ms)
{
	struct timespec ts = {.tv_sec = poll_ms / 1000, .tv_nsec = (poll_ms % 1000) * 1000000L};
	while (!daemon_stop_flag)
		nanosleep(&ts, NULL);
}
