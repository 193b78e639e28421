/* daemon: process plumbing shared by the daemons. Signal handlers only
 * set a flag (house style); the main loop polls daemon_should_stop(). */
#ifndef SAGA_DAEMON_H
#define SAGA_DAEMON_H

#include <stdbool.h>
#include <stdint.h>

#include "log.h"

/* daemon_install_signals makes SIGINT and SIGTERM set the stop flag and
 * ignores SIGPIPE. Call once from main. */
void daemon_install_signals(void);

/* daemon_should_stop is true once SIGINT or SIGTERM arrived. */
bool daemon_should_stop(void);

/* daemon_wait_for_stop blocks until the stop flag is set, checking every
 * `poll_ms` ms. */
void daemon_wait_for_stop(int64_t poll_ms);

/* daemon_check_options checks the options every daemon has, as given
 * (borrowed): `log_level` (debug, info, warn or error; *level is set from
 * it) and `db` (a libpq conninfo that parses, pg_conninfo_ok); the
 * listeners are daemon_net_check's. Returns 0, or 2 (the exit status of a
 * usage error) after printing one "PROGRAM: error: invalid value for ..."
 * line for the first bad one (config_error). */
int daemon_check_options(const char *log_level, enum log_level *level, const char *db);

/* daemon_stop_watchdog bounds the rest of a stop: it starts a detached
 * thread that, if the process is still running `timeout_ms` ms from now,
 * logs an error naming the bound and ends the process with _exit(0). The
 * daemons call it right after they log that they are stopping. Why: nng
 * 1.5.2's nng_close can wait forever in a pipe's nni_aio_stop (nng issue
 * #1543; about 1 SIGTERM in 10 with hundreds of sagas in flight), and a
 * stop can also wait on a database that is down or hung (docs/operations.md,
 * "The stop bound"). Ending the process there loses
 * nothing, as a SIGKILL would not: every reply is sent only after the commit
 * that makes it true, and every unfinished saga resumes from its stored
 * state at the next start (docs/saga-semantics.md, rules 1 and 9).
 * `timeout_ms` <= 0: no bound. Returns 0, or a negative errno when the
 * thread could not start (the stop then goes on unbounded). */
int daemon_stop_watchdog(int64_t timeout_ms) __attribute__((warn_unused_result));

#endif
