/* elect: work that must run on one process at a time among those sharing a
 * database (several orchestrators: docs/architecture.md, "Several
 * orchestrators"), elected with a PostgreSQL session-level advisory lock.
 *
 * The leader is the process whose own connection holds the lock. A leader
 * that dies, or whose connection breaks or is cut off (a network partition,
 * the database restarting), loses the lock with its session, and the next
 * process to ask takes it: the work moves within one of its intervals. A
 * link that stalls without a reset (packets dropped) ends the session too,
 * by the keepalives and tcp_user_timeout every connection has (pg.h, the
 * link timeout): the work then moves within the link timeout, one keepalive
 * interval and one of the work's intervals.
 * Work elected this way must be safe to run twice in a row on two
 * processes for a moment (a leader cut off may still be finishing a round
 * when another takes over): it reads, or writes idempotently.
 */
#ifndef SAGA_ELECT_H
#define SAGA_ELECT_H

#include <stdbool.h>
#include <stdint.h>

typedef struct elect elect;

/* The advisory lock keys in use (pg_advisory_lock's bigint space, shared
 * with pg_apply_schema's). */
#define ELECT_KEY_REPORT                                                                           \
	7111 /* orchestratord's report of stuck sagas (7101: its                                   \
	        schema; the participants' schemas theirs) */
/* the retention job of a database (retention.h): orchestratord's, and each
 * participant's in its own database */
#define ELECT_KEY_RETENTION 7112

/* elect_open prepares an election for the work named `what` (for logs;
 * copied) under lock `key`, on connections to `conninfo` (copied). It does
 * not connect yet. Returns 0 and *out, or -ENOMEM. */
int elect_open(elect **out, const char *conninfo, int64_t key, const char *what)
    __attribute__((warn_unused_result));

/* elect_lead is true when this process leads: it holds the lock already and
 * its connection answered now, or it took the lock now. Otherwise false
 * (another process holds it, or the database cannot be reached; a broken
 * connection is reopened at the next call, waiting at most 1 s). A session
 * that does not answer within the link timeout (pg_link_timeout_ms, the
 * daemons' --db-link-timeout) is given up: the process stops leading and
 * drops it (the leader's own bound; docs/operations.md, "A database link
 * that stalls"). Logs each change of leadership once. One thread at a time
 * per elect; blocks at most about a second, a connect (connect_timeout:
 * the link timeout) and the link timeout. */
bool elect_lead(elect *e);

/* elect_conn is the connection that holds the lock, for the elected work
 * itself (so that work and lock share one session: if it breaks, both
 * end), valid until the next elect_lead or elect_close; NULL when not
 * leading. Borrowed. */
struct pg_conn *elect_conn(elect *e);

/* elect_close releases the lock (by closing the connection) and frees `e`.
 * NULL is ignored. */
void elect_close(elect *e);

#endif
