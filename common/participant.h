/* participant: the main program shared by the participant daemons (stockd,
 * paymentd): configuration table, schema, the rpc server with the Health
 * probe of the database, signals. Each daemon describes itself in a
 * participant_desc and calls participant_main from its main.
 */
#ifndef SAGA_PARTICIPANT_H
#define SAGA_PARTICIPANT_H

#include <stdint.h>

#include "pg.h"
#include "rpc.h"
#include "valcache.h"

/* What every worker of a participant shares; borrowed by the server until
 * it stops (the `app` of its rpc_server_ops). */
typedef struct participant_app {
	const char *conninfo;    /* libpq connection string of its database */
	int64_t connect_wait_ms; /* how long a starting worker waits for it */
	valcache *cache;         /* each row's last committed value, shared by the workers */
} participant_app;

typedef struct participant_desc {
	const char *prog;           /* "stockd": log prefix and usage */
	const char *env_prefix;     /* "SAGA_STOCK": SAGA_STOCK_LISTEN, ... */
	const char *default_listen; /* "tcp://127.0.0.1:7102" */
	const char *default_db;     /* "dbname=sagas_stock" */
	const char *service;        /* "sagas.v1.Stock", for Health */
	const char *summary;        /* the --help paragraph */
	const char *fault_example;  /* a --fault example for --help */
	/* applies the schema, waiting up to wait_ms for the database; 0 or a
	 * negative code */
	int (*migrate)(const char *conninfo, int64_t wait_ms);
	const rpc_server_ops *ops; /* the daemon's handlers; app is a
	                              participant_app */
} participant_desc;

/* participant_fast_write ends a transaction of the one-round-trip path
 * (docs/architecture.md, "Participants: the one-round-trip path") after the
 * store has claimed `n` keys (valcache_claim), decided, and filled the
 * `ncols` array parameters `cols` (pg_arrays_open): it closes and frees
 * them, runs `stmt` with them on `conn` as its own transaction, and ends
 * the claim with `now` (the n values the statement committed, in key
 * order) when it succeeded, forgetting the keys when it did not. It counts
 * the outcome in *fast or *failed. Returns 0, -ENOMEM (an array ran out of
 * memory; nothing sent) or the enum pg_err of the failed statement
 * (nothing written). */
int participant_fast_write(PGconn *conn, const pg_stmt *stmt, pg_buf *cols, int ncols,
    valcache *cache, const char *const *keys, size_t n, const int64_t *now, uint64_t *fast,
    uint64_t *failed);

/* participant_log_fast_counts logs, as a worker stops, what its
 * one-round-trip path did (docs/operations.md, "Logs"): `fast` transactions
 * committed by it, `fell_back` that fell back to the locking path. */
void participant_log_fast_counts(uint64_t fast, uint64_t fell_back);

/* participant_main runs the daemon described by `d` until SIGINT/SIGTERM.
 * Returns the process exit status: 0 after a clean stop (or --help), 1 when
 * it could not start (database, schema, listen), 2 on usage errors. */
int participant_main(const participant_desc *d, int argc, char **argv);

#endif
