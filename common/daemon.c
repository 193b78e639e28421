#include "daemon.h"

#include <signal.h>
#include <string.h>
#include <time.h>

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
