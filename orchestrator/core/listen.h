/* listen: the ends of sagas that other orchestrators wrote, for the calls
 * waiting here (waits.h). Several orchestratord may share one database; a
 * saga one of them ends may be waited for on another (WaitSaga, StartSaga
 * with wait_ms). The write that ends a saga whose sagas.waiter names
 * somebody else NOTIFYs channel STORE_NOTIFY_CHANNEL with its id
 * (store_apply); the listener of every orchestrator LISTENs on a
 * connection of its own (application_name "orchestratord-listen"), reads
 * the sagas its calls wait for (store_get_sagas) and answers them
 * (waits_finished). No poll per waiting call: one thread sleeps in poll()
 * on the connection's socket.
 *
 * A NOTIFY sent while the listener is not connected is lost: after every
 * (re)connection, once LISTENing, it reads every saga some call waits for
 * in one statement and answers those that have finished.
 */
#ifndef SAGA_LISTEN_H
#define SAGA_LISTEN_H

#include <stdint.h>

#include "waits.h"

/* The application_name of the listener's session (pg_stat_activity). */
#define LISTEN_APP_NAME "orchestratord-listen"

typedef struct listener listener;

/* listener_start starts the listener thread of `w` (borrowed: it must
 * outlive the listener) on database `db` (libpq conninfo, borrowed for the
 * listener's lifetime). The thread connects on its own, at once and after
 * every loss of the connection, retrying every 50 ms doubling to 1 s
 * (the first failure of an outage is logged at WARNING, the recovery at
 * INFO). Returns 0 and *out, or -ENOMEM / -errno (no thread or pipe). */
int listener_start(listener **out, const char *db, waits *w) __attribute__((warn_unused_result));

/* listener_stop wakes and joins the thread, closes its connection and
 * frees the listener; prompt unless a connection attempt is under way
 * (libpq's connect_timeout bounds it). Call before waits_free. NULL is
 * ignored. */
void listener_stop(listener *l);

#endif
