/* health: the sagas.v1.Health service (shaped like gRPC's health-checking
 * protocol) that every rpc server answers next to its own service, and a
 * cheap database probe for the daemons' `healthy` callback.
 */
#ifndef SAGA_HEALTH_H
#define SAGA_HEALTH_H

#include <stdbool.h>
#include <stdint.h>

#include "rpc.h"

#define HEALTH_DB_TIMEOUT_MS 1000 /* one probe: connect + SELECT 1 */
#define HEALTH_DB_CACHE_MS   250  /* a result is reused this long */

/* What sagas.v1.Health/Check answers for (the ctx of health_serve). */
typedef struct health_service {
	const char *service;        /* the daemon's own ("sagas.v1.Stock"), may be NULL */
	bool (*healthy)(void *app); /* can it serve now (its database reachable)?
	                               Must answer within about a second; NULL:
	                               always SERVING */
	void *app;
} health_service;

/* health_serve serves a call of sagas.v1.Health (an rpc_service handler;
 * `ctx` is a health_service). Check answers SERVING when `healthy` is NULL
 * or returns true, NOT_SERVING otherwise, for the service "" (the daemon),
 * its own, "sagas.v1.Health" and "sagas.v1.Admin"; NOT_FOUND reason
 * "unknown_service" for any other. Anyone may call it (authz.h). */
void health_serve(void *ctx, const rpc_request *call, rpc_reply *reply);

/* A database probe: one dedicated PGconn behind a mutex, used only to answer
 * "is the database reachable". Thread-safe; never blocks a caller longer
 * than HEALTH_DB_TIMEOUT_MS (a caller that finds another probe running gets
 * the last result at once). */
typedef struct health_db health_db;

/* health_db_open makes a probe of `conninfo` (libpq keyword/value or URI,
 * several hosts allowed; copied). It does not connect yet. Returns 0, or
 * -ENOMEM. */
int health_db_open(health_db **out, const char *conninfo) __attribute__((warn_unused_result));

/* health_db_check is true when the database answered SELECT 1 within
 * HEALTH_DB_TIMEOUT_MS (at most HEALTH_DB_CACHE_MS ago) on a server that is
 * not a standby (pg_session_is_standby: the daemons could not write there).
 * Logs each change. */
bool health_db_check(health_db *h);

/* health_db_close closes the connection and frees the probe. NULL is
 * ignored. */
void health_db_close(health_db *h);

#endif
