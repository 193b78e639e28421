/* participant: the main program of the participant kit (pkit.h), shared by
 * the participant daemons (stockd, paymentd, shippingd): configuration
 * table, schema, the rpc server with the Health probe of the database, the
 * retention job of its records (pkit.h, "Retention"), signals. Each daemon
 * describes itself in a participant_desc and calls participant_main from
 * its main.
 */
#ifndef SAGA_PARTICIPANT_H
#define SAGA_PARTICIPANT_H

#include <stdint.h>

#include "horizon.h"
#include "pg.h"
#include "pkit.h"
#include "rpc.h"
#include "valcache.h"

/* What every worker of a participant shares; borrowed by the server until
 * it stops (the `app` of its rpc_server_ops). */
typedef struct participant_app {
	const char *conninfo;    /* libpq connection string of its database */
	int64_t connect_wait_ms; /* how long a starting worker waits for it */
	valcache *cache;         /* each row's last committed value, shared by the workers */
	const pkit_service *kit; /* the service the workers serve */
	/* the retention rules its commands are checked by (rule R1); NULL:
	 * not checked (tests of the kit alone) */
	const horizon_policy *horizon;
} participant_app;

typedef struct participant_desc {
	const char *prog;            /* "stockd": log prefix and usage */
	const char *env_prefix;      /* "SAGA_STOCK": SAGA_STOCK_LISTEN, ... */
	const char *default_listen;  /* "tcp://127.0.0.1:7102" */
	const char *default_metrics; /* "http://127.0.0.1:9471": --metrics-listen */
	const char *default_db;      /* "dbname=sagas_stock" */
	const char *service;         /* "sagas.v1.Stock", for Health */
	const char *summary;         /* the --help paragraph */
	const char *fault_example;   /* a --fault example for --help */
	const pkit_service *kit;     /* its schema, records, rows and methods */
	const rpc_server_ops *ops;   /* PKIT_RPC_OPS(its batch methods) */
} participant_desc;

/* participant_main runs the daemon described by `d` until SIGINT/SIGTERM,
 * with its retention job every --retention-interval ms (elected among the
 * processes sharing its database; 0: none) and sagas.v1.Admin/RunRetention
 * running the same batches. Returns the process exit status: 0 after a
 * clean stop (or --help), 1 when it could not start (database, schema,
 * listen, the retention job's thread), 2 on usage errors. */
int participant_main(const participant_desc *d, int argc, char **argv);

#endif
