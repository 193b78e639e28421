/* retention: the background deletion of one daemon's expired rows
 * (docs/saga-semantics.md, "Retention"; docs/operations.md, "Retention"),
 * the same loop for the orchestrator (finished sagas and their history) and
 * for every participant (idempotency records and tombstones).
 *
 * One process at a time among those sharing a database does it, elected
 * with an advisory lock (elect.h), on the lock's own connection. Every
 * --retention-interval it runs a pass: batches, each one transaction that
 * deletes whole units (a saga with all its history, a record with its
 * summary), until a batch finds fewer than it may take. The batch size
 * adapts to how long each batch took (halved when one took longer than
 * RETENTION_TARGET_MS, doubled when it took less than half of it, within
 * RETENTION_BATCH_MIN..RETENTION_BATCH_MAX), and after each batch the loop
 * sleeps RETENTION_REST times as long as the batch took, so deletion never
 * holds the database more than a quarter of the time (bench/retention.sh:
 * half was too much with four daemons' databases on one 2-core host). Counts go to the log (one
 * line a pass that deleted anything) and to the metrics: sagas_retention_deleted_total{table}  rows
 * deleted, per table sagas_retention_passes_total          passes run sagas_retention_batch_seconds
 * each batch's duration sagas_retention_batch_limit           the batch size in use The processes
 * that do not lead read their database's clock at each interval instead (dbclock.h), so every
 * participant's rule R1 compares with a fresh reading. A kill -9 in the middle of a pass loses
 * nothing: each batch commits whole or not at all, and the next pass goes on.
 */
#ifndef SAGA_RETENTION_H
#define SAGA_RETENTION_H

#include <libpq-fe.h>
#include <stdbool.h>
#include <stdint.h>

#define RETENTION_BATCH_START 1000
#define RETENTION_BATCH_MIN   100
#define RETENTION_BATCH_MAX   10000
#define RETENTION_TARGET_MS   200
#define RETENTION_REST        3 /* sleep after a batch: 3 x its time */

/* What one batch (or a dry run) counted: n[0] units (sagas, records), n[1]
 * other rows deleted with them (history rows; 0 for participants), n[2]
 * units of a second kind, at most the limit of them a batch too (the
 * orchestrator's saga id tombstones, rule R5; 0 for participants). */
typedef struct retention_counts {
	int64_t n[3];
} retention_counts;

/* A batch: on `conn`, at `now_ms` (the database's clock, dbclock.h), deletes
 * at most `limit` expired units in one transaction, whole, and says how
 * many in *out; with `dry` it deletes nothing and counts every unit that a
 * pass would delete now (limit ignored). Returns 0 or a negative enum
 * pg_err. `arg` is the config's. */
typedef int (*retention_batch_fn)(
    void *arg, PGconn *conn, int64_t now_ms, int limit, bool dry, retention_counts *out);

typedef struct retention_config {
	const char *conninfo;  /* borrowed for the lifetime */
	const char *what;      /* "finished sagas": logs; borrowed */
	int64_t elect_key;     /* the advisory lock (elect.h ELECT_KEY_*) */
	int64_t interval_ms;   /* between passes; > 0 */
	const char *tables[3]; /* the label of n[0], n[1] and n[2] ("sagas",
	                          "saga_history", "saga_ids_retired"); NULL: none */
	retention_batch_fn batch;
	void *arg;
} retention_config;

typedef struct retention retention;

/* retention_start starts the loop's thread (`cfg` copied, its strings
 * borrowed). Returns 0 and *out, or -ENOMEM / an nng error as -errno. */
int retention_start(retention **out, const retention_config *cfg)
    __attribute__((warn_unused_result));

/* retention_run_pass runs one pass now on `conn` (not elected: for the
 * admin call and tests), and adds what it deleted (or, with dry, what it
 * would delete) to *total. Returns 0 or a negative enum pg_err. */
int retention_run_pass(
    const retention_config *cfg, PGconn *conn, bool dry, retention_counts *total);

/* retention_stop ends the loop (within one batch) and frees `r`. NULL is
 * ignored. */
void retention_stop(retention *r);

#endif
