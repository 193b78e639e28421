/* daemon: process plumbing shared by the daemons. Signal handlers only
 * set a flag (house style); the main loop polls daemon_should_stop(). */
#ifndef SAGA_DAEMON_H
#define SAGA_DAEMON_H

#include <stdbool.h>
#include <stdint.h>

#include "log.h"

/* daemon_install_signals makes SIGINT and SIGTERM set the stop flag and
 * ignores SIGPIPE, and arms the stop bound: with `stop_timeout_ms` > 0 a
 * watchdog thread, started now, waits for the first of those signals and,
 * `stop_timeout_ms` ms after it arrived, logs an error naming the bound and
 * ends the process with _exit(0) if it is still running. The bound is thus
 * counted from the signal, whatever the process is doing then: starting,
 * stopping, or with threads blocked in libpq on a stalled database link
 * (docs/operations.md, "The stop bound"); it ends within the bound plus
 * the time to write one log line. Why it is safe: nng 1.5.2's nng_close
 * can wait forever in a pipe's nni_aio_stop (nng issue #1543), and a stop
 * can wait on a database that is down or hung; ending the process there
 * loses nothing, as a SIGKILL would not: every reply is sent only after
 * the commit that makes it true, and every unfinished saga resumes from
 * its stored state at the next start (docs/saga-semantics.md, rules 1 and
 * 9). `stop_timeout_ms` <= 0: no bound. Call once from main, before the
 * work that a stop must bound. Returns 0, or a negative errno when the
 * watchdog could not start (the signals are set all the same; the stop is
 * then unbounded). */
int daemon_install_signals(int64_t stop_timeout_ms) __attribute__((warn_unused_result));

/* daemon_should_stop is true once SIGINT or SIGTERM arrived. */
bool daemon_should_stop(void);

/* daemon_wait_for_stop blocks until the stop flag is set, checking every
 * `poll_ms` ms. */
void daemon_wait_for_stop(int64_t poll_ms);

#endif
