/* engine: drives sagas. It sends the command each saga row makes due, turns
 * replies into events for the pure state machine (saga.h), writes the
 * resulting transitions in batches (group commit through store.h), and
 * sweeps the table for due work: retries after backoff, step deadlines, and
 * everything left unfinished by a crash (rule 9).
 *
 * Threads: one engine thread owns the engine's PGconn and all decisions;
 * replies arrive on nng threads and are queued to it. The first command of
 * a new saga is sent by the thread that stored it when there is room
 * (engine_submit_many). Many sagas are in flight at once (up to
 * max_inflight commands).
 */
#ifndef SAGA_ENGINE_H
#define SAGA_ENGINE_H

#include <stdbool.h>
#include <stdint.h>

#include "rpc.h"
#include "horizon.h"
#include "orch_defs.h"
#include "saga.h"
#include "tls.h"
#include "store.h"

typedef struct engine_config {
	const char *db;       /* libpq conninfo; borrowed for the lifetime */
	const char *instance; /* this orchestratord's name (orch_instance_name):
	                         the lease owner it writes; borrowed */
	orch_defs *defs;      /* the definitions it runs, by version: a plan
	                         per command (orch_defs.h), synced
	                         (orch_defs_sync); borrowed for the lifetime */
	/* each participant's replicas, by link (orch_def_version.link): their
	 * URLs and, for tls+tcp:// ones, the client TLS configuration (the
	 * orchestrator role's certificate); borrowed for the lifetime */
	const rpc_urls *links[ORCH_LINKS_MAX];
	int nlinks;
	saga_policy policy;        /* deadlines, tries' timeouts, backoff (ms) */
	horizon_policy horizon;    /* retention: a saga older than it is parked,
	                              not sent (rule R3, common/base/horizon.h) */
	int64_t resend_ms;         /* NNG_OPT_REQ_RESENDTIME, 0 = off */
	int64_t sweep_interval_ms; /* how often due rows are looked for */
	int64_t db_wait_ms;        /* reconnect patience */
	int batch;                 /* most transitions in one transaction */
	int send_batch;            /* most commands in one frame to a participant
	                              (rpc_batch); 1 or less: a frame each */
	int max_inflight;          /* most commands awaiting replies */
	bool duplicate_delivery;   /* send every command twice (tests) */
	int index;                 /* 0..: which of the process's engines (its slot
	                              in sagas_in_flight, orch_metrics.h) */
	/* Called on the engine thread, after the commit, for every saga that
	 * reached COMPLETED or CANCELLED, with the row as written (as GetSaga
	 * would read it). May be NULL. */
	void (*on_finished)(void *arg, const saga_row *row);
	void *on_finished_arg;
} engine_config;

typedef struct engine engine;

/* engine_start connects to the database and the participants of cfg->links and starts
 * the engine thread. `cfg` is copied (its strings are borrowed). Returns 0
 * and *out, or a negative code (enum pg_err, -ENOMEM, errno from nng). */
int engine_start(engine **out, const engine_config *cfg) __attribute__((warn_unused_result));

/* engine_submit hands a newly stored saga (its row already leased, see
 * store_insert_saga) to the engine, which sends its first command as soon
 * as fewer than max_inflight commands await replies (back-pressure: the
 * saga waits in memory, not in a call that could time out). Thread-safe;
 * never blocks on I/O. Past 100,000 queued sagas, or when a saga's lease
 * ends before it is sent, the row is left to the sweep, which finds it when
 * the lease ends. */
void engine_submit(engine *e, const saga_row *row);

/* engine_submit_many hands `n` newly stored sagas (`rows`, copied) to the
 * engine. When fewer than max_inflight commands await replies and no saga
 * waits before them, their first commands are sent at once from the
 * calling thread, in one frame per participant; otherwise each goes as
 * engine_submit. Thread-safe; never blocks on I/O. Must not be called after
 * engine_stop has begun. */
void engine_submit_many(engine *e, const saga_row *rows, size_t n);

/* engine_inflight returns how many commands await replies now (0..
 * max_inflight). Thread-safe; takes the engine's lock briefly. */
int engine_inflight(engine *e);

/* engine_stop stops the thread, waits for commands in flight to finish or
 * time out, and frees the engine. NULL is ignored. Unfinished sagas stay in
 * the database and resume at the next start. */
void engine_stop(engine *e);

#endif
