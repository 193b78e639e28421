/* pg_internal: what pg.c and pg_stmt.c share and no other module may use. */
#ifndef SAGA_PG_INTERNAL_H
#define SAGA_PG_INTERNAL_H

#include <libpq-fe.h>
#include <stdint.h>

/* pg_session_setup sets what every session of the daemons relies on (pg.c
 * says what). Takes a connected `conn`; errors are ignored. */
void pg_session_setup(PGconn *conn);

/* pg_observe_commit records a commit that took from `t0_us` (clock_mono_us)
 * to now. */
void pg_observe_commit(int64_t t0_us);

/* pg_fail classifies the failed result `res` (may be NULL) of `what` into
 * an enum pg_err and logs the server's message. Does not free `res`. */
int pg_fail(PGconn *conn, PGresult *res, const char *what);

#endif
