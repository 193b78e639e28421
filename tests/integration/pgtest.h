/* pgtest: the database side of the C tests that run against a stack's
 * PostgreSQL (saga_stack_test: with_stack.sh exports PG_PORT). Each helper
 * fails the running cmocka test on any error, so a test reads as its
 * statements. */
#ifndef SAGA_PGTEST_H
#define SAGA_PGTEST_H

#include <libpq-fe.h>

/* pgtest_connect opens a connection to database `db` of the stack's
 * server, as postgres. The caller PQfinish()es it. */
PGconn *pgtest_connect(const char *db);

/* pgtest_fresh_db drops database `db` if it exists, creates it empty and
 * returns a connection to it (caller PQfinish()es). `db` is an identifier
 * the caller chose (not quoted). */
PGconn *pgtest_fresh_db(const char *db);

/* pgtest_exec runs `sql` (no parameters) and fails the test unless it
 * succeeds. */
void pgtest_exec(PGconn *c, const char *sql);

/* pgtest_text returns the one value one row of `sql` holds, in a static
 * buffer (255 bytes; overwritten by the next call), failing the test when
 * it is not exactly one row. */
const char *pgtest_text(PGconn *c, const char *sql);

#endif
