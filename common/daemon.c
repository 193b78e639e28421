#include "daemon.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "config.h"
#include "log.h"
#include "pg.h"

static volatile sig_atomic_t daemon_stop_flag;

static void daemon_on_signal(int sig)
{
	(void)sig;
	daemon_stop_flag = 1;
}

void daemon_install_signals(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = daemon_on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
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

int daemon_check_options(const char *log_level, enum log_level *level, const char *db)
{
	if (log_level_parse(log_level, level) != 0) {
		config_error("invalid value for log-level: \"%s\" (debug, info, warn or error)\n",
		    log_level);
		return 2;
	}
	char why[256];
	if (!pg_conninfo_ok(db, why, sizeof why)) {
		config_error("invalid value for db: %s\n", why);
		return 2;
	}
	return 0;
}

static int64_t daemon_watchdog_ms;

static void *daemon_watchdog(void *arg)
{
	(void)arg;
	clock_sleep_us(daemon_watchdog_ms * 1000);
	log_error(NULL,
	    "could not stop within %lld ms (stop-timeout): ending the process; every reply "
	    "sent was committed and unfinished sagas resume at the next start",
	    (long long)daemon_watchdog_ms);
	_exit(0);
	return NULL;
}

int daemon_stop_watchdog(int64_t timeout_ms)
{
	if (timeout_ms <= 0)
		return 0;
	daemon_watchdog_ms = timeout_ms;
	pthread_attr_t attr;
	if (pthread_attr_init(&attr) != 0)
		return -ENOMEM;
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_t t;
	int rv = pthread_create(&t, &attr, daemon_watchdog, NULL);
	pthread_attr_destroy(&attr);
	return rv == 0 ? 0 : -rv;
}
