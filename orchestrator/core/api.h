/* api: the Orchestrator service (StartSaga, GetSaga, ListSagas,
 * GetSagaHistory, WatchHistory, RetrySaga,
 * WaitSaga) served on a pool of rpc workers, each with its own
 * PGconn. Validation at the edge: bad input is INVALID_ARGUMENT naming the
 * field and changes nothing. Every statement runs under a statement_timeout
 * tied to its call's deadline; ListSagas is capped and cancelled in the
 * database when its client goes (api_list.c).
 */
#ifndef SAGA_API_H
#define SAGA_API_H

#include "engine.h"
#include "rpc.h"
#include "waits.h"

typedef struct api {
	const char *db;         /* conninfo for the workers' connections; borrowed */
	const char *instance;   /* this orchestratord's name (orch_instance_name);
	                           borrowed */
	int64_t db_wait_ms;     /* how long a worker waits for the database */
	engine **engs;          /* new sagas are handed to one of them; borrowed */
	int n_engines;          /* 1.. */
	saga_policy policy;     /* for the start row of a saga */
	horizon_policy horizon; /* RetrySaga refuses a saga past it (rule R3) */
	waits *waits;           /* held WaitSaga calls; borrowed */
	/* Batching under load (rpc_server_ops.linger_us, api.c api_linger_us):
	 * an API worker holding fewer calls than a frame, one of them a
	 * StartSaga with wait_ms, sleeps batch_delay_us (microseconds; 0 =
	 * never) when at least batch_siblings commands are in flight in the
	 * engines, so that StartSagas arriving one by one are stored in one
	 * statement and their first commands go out in one frame. */
	int64_t batch_delay_us;
	int batch_siblings;
	/* ListSagas overdue (store.h store_overdue_reason), when the request
	 * gives none: --overdue-margin and --stuck-after, ms */
	int64_t overdue_margin_ms;
	int64_t stuck_after_ms;
	/* ListSagas served at once (--max-listings; 1.., kept below the
	 * workers so that a listing never holds every worker StartSaga needs)
	 * and at once for one caller, by its address without the port
	 * (--max-listings-per-caller; 0 = max_listings): past either, a
	 * listing is refused RESOURCE_EXHAUSTED before it reads anything
	 * (api_list.c) */
	int max_listings;
	int max_listings_per_caller;
	/* the definitions: new sagas of a type start under its version in the
	 * file (orch_defs_start); borrowed */
	const orch_defs *defs;
} api;

/* api_server_ops returns the rpc callbacks; the `app` argument of
 * rpc_server_start must be an api *. */
const rpc_server_ops *api_server_ops(void);

#endif
