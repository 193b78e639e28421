/* store_internal: what the orchestrator's store files share (store.c,
 * store_apply.c, store_list.c): the SQL fragments of a saga row, the reader
 * of one and the writer of a history row. Not for any other file: SQL lives
 * only in store files.
 */
#ifndef SAGA_STORE_INTERNAL_H
#define SAGA_STORE_INTERNAL_H

#include <libpq-fe.h>
#include <stddef.h>

#include "store.h"

/* ms since the epoch of a timestamptz column, 0 when NULL */
#define MS(col) "coalesce((extract(epoch from " col ") * 1000)::bigint, 0)"
/* a timestamptz from a ms parameter, NULL when 0 */
#define TS(p)                                                                                      \
	"(CASE WHEN " p "::bigint = 0 THEN NULL ELSE to_timestamp(" p "::bigint / 1000.0) END)"

/* The columns store_read_row reads, in its order (SAGA_NCOLS). */
#define SAGA_COLS                                                                                  \
	"saga_id::text, state, reason, customer, sku, qty, amount, version, attempts, "            \
	"attention, " MS("next_attempt_at") ", " MS("step_deadline") ", " MS(                      \
	    "created_at") ", " MS("updated_at") ", epoch, coalesce(lease_owner, ''), "             \
	                                        "coalesce(def_id, 0), coalesce(type, 'order'), "   \
	                                        "members, compensating, finished, "                \
	                                        "coalesce(encode(input, 'hex'), '')"
#define SAGA_NCOLS 22

/* clang-format off */
#define STORE_STR_(x) #x
#define STORE_STR(x)  STORE_STR_(x)
/* An unfinished saga, in words the sweep's two partial indexes (sagas_open,
 * sagas_retry: schema.sql) answer; the state test keeps a row that an
 * orchestrator older than `finished` ended out. */
#define STORE_UNFINISHED                                                                           \
	"((NOT finished AND retry_at IS NULL) OR retry_at IS NOT NULL)"                            \
	" AND NOT " STORE_TERMINAL_NAME
/* A row an orchestrator older than `finished` ended without setting it: an
 * order saga (type NULL: started before schema 10) in a terminal state. */
#define STORE_TERMINAL_NAME                                                                        \
	"(coalesce(type, 'order') = 'order' AND state IN ('COMPLETED', 'CANCELLED'))"
/* The four overdue conditions of an unfinished row of sagas (store.h,
 * store_overdue_reason) as four boolean columns, in the enum's order, by the database's clock:
 * `m` is past_deadline's margin and `st` stuck's threshold (ms, bigint
 * parameters; the listing passes "%s" and prints its own "$N" into it).
 * The ONE definition: the overdue listing (store_list_sagas) and the
 * gauges (store_read_gauges) both select these. */
#define STORE_OVERDUE_COLS(m, st)                                                                  \
	"coalesce(step_deadline < now() - " m "::bigint * interval '1 millisecond', false)"        \
	" AS past_deadline,"                                                                       \
	" ((compensating OR state IN ('REFUNDING', 'RELEASING')) AND NOT finished"                 \
	"  AND attempts >= " STORE_STR(STORE_COMPENSATION_FAILING_TRIES) ") AS compensation_failing," \
	" (updated_at < now() - " st "::bigint * interval '1 millisecond') AS stuck,"                \
	" (NOT (compensating OR state IN ('REFUNDING', 'RELEASING')) AND NOT finished"             \
	"  AND step_deadline IS NULL AND next_attempt_at IS NOT NULL"                              \
	"  AND attempts >= " STORE_STR(STORE_COMPENSATION_FAILING_TRIES) ") AS retrying"
#define STORE_OVERDUE_ANY "(past_deadline OR compensation_failing OR stuck OR retrying)"
/* created_at in us since the epoch (a page token's key: numeric, exact) */
#define STORE_CREATED_US "(extract(epoch from created_at) * 1000000)::bigint"
/* clang-format on */

/* store_read_row fills *out from row i of `r`, whose first columns are
 * SAGA_COLS. */
void store_read_row(const PGresult *r, int i, saga_row *out);

/* store_insert_history inserts the history row of the saga `saga_id`'s
 * version `version`: a move from state `from` (a name; NULL or "": none)
 * to state `to` on `event` with `reason`, in the caller's transaction.
 * Returns 0 or a negative enum pg_err. (store.c; store_apply.c writes them
 * too.) */
int store_insert_history(PGconn *conn, const char *saga_id, int64_t version, const char *from,
    const char *to, const char *event, const char *reason);

/* store_write_update writes one transition `u` (u->before the row it was
 * decided on) in the caller's transaction: the version- and epoch-checked
 * UPDATE (rules 7, 10), its NOTIFY for waits elsewhere, its history row.
 * Sets u->applied. Returns 0 or a negative enum pg_err. (store_apply.c.) */
int store_write_update(PGconn *conn, store_update *u, const char *writer);

/* store_insert_audit inserts the audit row of operator action `action` by
 * `who` on saga `saga_id` (NULL: none; its start read from its row: rule
 * R5), version `version` (0: none), with `outcome`, in the caller's
 * transaction. Returns 0 or a negative enum
 * pg_err. (store_ops.c.) */
int store_insert_audit(PGconn *conn, const char *action, const store_actor *who,
    const char *saga_id, int64_t version, const char *outcome);

#endif
