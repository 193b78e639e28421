/* api_internal: what the Orchestrator service's files share (api.c,
 * api_list.c, api_history.c): the worker's state and the way a handler reaches the
 * database. Not for any other file.
 */
#ifndef SAGA_API_INTERNAL_H
#define SAGA_API_INTERNAL_H

#include <libpq-fe.h>
#include <stdbool.h>
#include <stdint.h>

#include "api.h"
#include "feed_cursor.h"
#include "pg.h"
#include "rpc.h"
#include "codec.h"
#include "orch_defs.h"
#include "saga_def.h"
#include "saga_proto_registry.h"
#include "sagas/v1/orchestrator.pb-c.h"

/* The longest statement_timeout an API statement gets, for a call without
 * a deadline (ms). */
#define API_STATEMENT_MAX_MS 30000
/* What a statement leaves of the call's deadline for the reply to reach
 * the caller (ms). */
#define API_STATEMENT_MARGIN_MS 50

typedef struct api_worker {
	PGconn *conn;
	/* the database's feed key (WatchHistory's cursors), read on first use */
	bool has_feed_key;
	uint8_t feed_key[FEED_KEY_LEN];
	/* the deadline of the call (or batch) being served, clock_mono_ms; 0:
	 * none (api_handle, api_handle_batch) */
	int64_t deadline_mono_ms;
	/* the session's statement_timeout as last set (api_db_timeout), and
	 * the backend it was set on (a new session starts without it) */
	int64_t session_timeout_ms;
	int session_pid;
} api_worker;

/* api_db_timeout gives the worker's session a statement_timeout tied to
 * the deadline of the call being served (w->deadline_mono_ms): what is left
 * of it less API_STATEMENT_MARGIN_MS, at most API_STATEMENT_MAX_MS, rounded
 * down to whole seconds (to 100 ms under 2 s), so that calls with the same
 * timeout find it set and pay no round trip. Returns 0 or a negative enum
 * pg_err. */
int api_db_timeout(api *a, api_worker *w);

/* API_DB runs the store call `expr` on the worker's connection, with a
 * statement_timeout tied to the call's deadline (api_db_timeout), and, when
 * it failed because the connection was lost, once more on a fresh one
 * (pg_may_rerun). Every store call here is safe to run twice: reads, and
 * writes keyed by saga id (a StartSaga whose first COMMIT went through finds
 * its own row). */
#define API_DB(a, w, rc, expr)                                                                     \
	do {                                                                                       \
		bool api_rerun_ = false;                                                           \
		(rc) = pg_ready(&(w)->conn, (a)->db, 0);                                           \
		if ((rc) == 0)                                                                     \
			(rc) = api_db_timeout((a), (w));                                           \
		if ((rc) == 0)                                                                     \
			(rc) = (expr);                                                             \
		if (pg_may_rerun(&(w)->conn, (a)->db, 0, (rc), &api_rerun_)) {                     \
			(rc) = api_db_timeout((a), (w));                                           \
			if ((rc) == 0)                                                             \
				(rc) = (expr);                                                     \
		}                                                                                  \
	} while (0)

/* api_db_error answers a store failure: connection trouble is UNAVAILABLE,
 * a statement cancelled by its timeout DEADLINE_EXCEEDED (reason
 * "statement_timeout"), never a business refusal. */
void api_db_error(rpc_reply *reply, int rc, const char *what);

/* api_list_sagas serves ListSagas (api_list.c): refused RESOURCE_EXHAUSTED
 * past the listing caps, else the page (and the counts) under a statement
 * timeout of the call's deadline, cancelled when the client goes. */
void api_list_sagas(api *a, api_worker *w, const rpc_request *call, rpc_reply *reply);

/* The operators' actions (api_ops.c), admin role only (methods.h), each
 * recorded in the audit trail with its caller (store_actor):
 * api_retry_saga serves RetrySaga (a re-arm, store_rearm), api_cancel_saga
 * CancelSaga (rule 11, store_cancel), api_list_audit ListAudit. */
void api_retry_saga(api *a, api_worker *w, const rpc_request *call, rpc_reply *reply);
void api_cancel_saga(api *a, api_worker *w, const rpc_request *call, rpc_reply *reply);
void api_list_audit(api *a, api_worker *w, const rpc_request *call, rpc_reply *reply);

/* api_history serves GetSagaHistory (api_history.c): one saga's history,
 * NOT_FOUND for an unknown saga. */
void api_history(api *a, api_worker *w, const rpc_request *call, rpc_reply *reply);

/* api_watch_history serves WatchHistory (api_history.c): a page of the
 * feed after the request's cursor, and the cursor to go on from. */
void api_watch_history(api *a, api_worker *w, const rpc_request *call, rpc_reply *reply);

/* api_list_metrics_init exports the listings' series at 0 (their rare
 * events: refusals and cancels). Idempotent; thread-safe. */
void api_list_metrics_init(void);

/* api_list_pipe_closed notes that client connection `pipe` closed: a
 * listing of it that runs is cancelled in the database. Cheap; no I/O (it
 * runs on an nng thread, rpc_server_ops.pipe_closed). */
void api_list_pipe_closed(uint32_t pipe);

/* api_def_name: `s` (NUL-terminated) is "" or has the shape of a
 * definition's name (saga_def.h): a letter of lo..hi, then letters of
 * lo..hi, digits or '_', at most 64 bytes (a type's names are lowercase,
 * a state's uppercase). Used to check a request's names, and to echo one
 * in an error only when it has that shape. Pure. */
bool api_def_name(const char *s, char lo, char hi);

/* ---- api_input.c: a StartSaga's input (docs/saga-definitions.md, "A
 * saga's input") ---- */

/* api_check_order checks the order saga's input `o` (NULL: missing), given
 * as `as` ("order", "input" or "input_json": the errors name it): customer
 * and sku names (valid_name), qty 1..VALID_QTY_MAX, amount
 * 1..VALID_AMOUNT_MAX minor units. Returns true, or false with
 * INVALID_ARGUMENT (bad_field) naming the field in reply. */
bool api_check_order(const Sagas__V1__Order *o, const char *as, rpc_reply *reply);

/* api_start_input reads the input of `req` for a saga of type `t` (of the
 * definitions the orchestrator runs) into `row`: exactly one of order,
 * input (encoded) and input_json (proto3 JSON) may be given; a type of
 * input sagas.v1.Order takes any of the three into the typed columns
 * (api_check_order's rules); any other type takes input or input_json,
 * checked by saga_def_input_msg and kept canonically encoded in
 * row->input (row->customer: the input's `customer` string, if any).
 * Returns true, or false with INVALID_ARGUMENT (bad_field) in reply. */
bool api_start_input(const Sagas__V1__StartSagaRequest *req, const saga_def_type *t, saga_row *row,
    rpc_reply *reply);

/* api_input_type is the full name of row's input message, by the version
 * of its definition it started with (orch_defs_version, read on `conn` if
 * not loaded yet); "" when that version cannot be read (then
 * "sagas.v1.Order" for a row without an encoded input). Static or owned
 * by a's definitions. */
const char *api_input_type(const api *a, PGconn *conn, const saga_row *row);

/* api_input_json is row's input as compact proto3 JSON, its message named
 * `input_type` (the typed columns for "sagas.v1.Order", else the encoded
 * input): malloc'd (the caller frees it), or NULL when the message is not
 * of this build, the input does not decode, or out of memory. */
char *api_input_json(const saga_row *row, const char *input_type);

/* api_saga_input sets m's input_type and input_json (GetSaga, ListSagas)
 * for `row` (api_input_type on `conn`); *json is what input_json points to,
 * malloc'd (the caller frees it after packing m), or NULL (input_json ""). */
void api_saga_input(
    const api *a, PGconn *conn, const saga_row *row, Sagas__V1__Saga *m, char **json);

#endif
