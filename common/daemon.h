/* daemon: process plumbing shared by the three daemons. Signal handlers only
 * set a flag (house style); the main loop polls daemon_should_stop(). */
#ifndef SAGA_DAEMON_H
#define SAGA_DAEMON_H

#include <stdbool.h>
#include <stdint.h>

/* daemon_install_signals makes SIGINT and SIGTERM set the stop flag and
 * ignores SIGPIPE. Call once from main. */
void daemon_install_signals(void);

/* daemon_should_stop is true once SIGINT or SIGTERM arrived. */
bool daemon_should_stop(void);

/* daemon_wait_for_stop blocks until the stop flag is set, checking every
 * `poll_ms` ms. */
void daemon_wait_for_stop(int64_t poll_ms);

#endif
