/* pg_watch: a statement that can be given up on. It runs like pg_exec, but
 * while PostgreSQL works on it the calling thread watches a condition (the
 * client that asked went away) and, when it holds, asks the server to cancel
 * the statement (libpq's cancel request, PQcancel), so that the server stops
 * working for nobody. The statement's own bound is the session's
 * statement_timeout (the caller sets it, e.g. SET LOCAL in its transaction).
 */
#ifndef SAGA_PG_WATCH_H
#define SAGA_PG_WATCH_H

#include <libpq-fe.h>
#include <stdbool.h>

/* The condition pg_exec_watched polls: true when the statement's result is
 * no longer wanted. Called on the caller's thread about every
 * PG_WATCH_POLL_MS; must be cheap. */
typedef bool (*pg_watch_gone_fn)(void *arg);

/* How often the condition is polled while the statement runs, in ms. */
#define PG_WATCH_POLL_MS 50

/* pg_exec_watched runs `sql` with `nparams` text parameters (borrowed) on
 * `conn` (a session of this thread, idle or inside a transaction) and waits
 * for its result. While waiting it calls gone(arg) every PG_WATCH_POLL_MS
 * (gone may be NULL: never); once it returns true, a cancel request is sent
 * (once) and the result (then usually SQLSTATE 57014) is awaited. On success
 * returns 0 and *out (the caller PQclears it; out may be NULL). Otherwise a
 * negative enum pg_err (pg.h): PG_ERR_CANCELED when the statement was
 * cancelled (its statement_timeout, or the cancel request), and sets
 * *cancelled when the cancel request was sent (may be NULL). */
int pg_exec_watched(PGconn *conn, const char *sql, int nparams, const char *const *params,
    PGresult **out, pg_watch_gone_fn gone, void *arg, bool *cancelled)
    __attribute__((warn_unused_result));

#endif
