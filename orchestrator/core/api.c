/* api: the Orchestrator service's workers (api.h): their connections and
 * statement timeouts, StartSaga, GetSaga, WaitSaga and RetrySaga, the
 * table of handlers (methods.h), the batches and the linger. ListSagas is
 * in api_list.c, GetSagaHistory and WatchHistory in api_history.c
 * (api_internal.h).
 */
#include "api.h"
#include "api_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "codec.h"
#include "dbclock.h"
#include "fault.h"
#include "log.h"
#include "methods.h"
#include "orch_metrics.h"
#include "pg.h"
#include "sagas/v1/orchestrator.pb-c.h"
#include "status.h"
#include "feed_cursor.h"
#include "store.h"
#include "valid.h"

static int api_worker_init(void *app, void **worker)
{
	api *a = app;
	api_worker *w = calloc(1, sizeof *w);
	if (w == NULL)
		return -ENOMEM;
	api_list_metrics_init();
	/* a worker without a connection still starts: it answers UNAVAILABLE
	 * and reconnects on the next call */
	w->conn = pg_connect(a->db, a->db_wait_ms);
	*worker = w;
	return 0;
}

static void api_worker_fini(void *app, void *worker)
{
	api_worker *w = worker;
	if (w == NULL)
		return;
	PQfinish(w->conn);
	free(w);
}

int api_db_timeout(api *a, api_worker *w)
{
	(void)a;
	int64_t ms = API_STATEMENT_MAX_MS;
	if (w->deadline_mono_ms > 0) {
		int64_t left = w->deadline_mono_ms - clock_mono_ms() - API_STATEMENT_MARGIN_MS;
		if (left < ms)
			ms = left >= 2000 ? left / 1000 * 1000
			    : left >= 200 ? left / 100 * 100
			                  : left;
	}
	if (ms < 1)
		ms = 1; /* the deadline passed: the statement fails at once */
	int pid = PQbackendPID(w->conn);
	if (pid == w->session_pid && ms == w->session_timeout_ms)
		return 0;
	char sql[64];
	/* an integer formatted here; SET takes no parameter */
	snprintf(sql, sizeof sql, "SET statement_timeout = %lld", (long long)ms);
	PGresult *r = PQexec(w->conn, sql);
	int rc = 0;
	if (r == NULL || PQresultStatus(r) != PGRES_COMMAND_OK)
		rc = PQstatus(w->conn) == CONNECTION_OK && r != NULL
		    ? pg_classify(PQresultErrorField(r, PG_DIAG_SQLSTATE))
		    : PG_ERR_CONNECTION;
	PQclear(r);
	if (rc == 0) {
		w->session_pid = pid;
		w->session_timeout_ms = ms;
	}
	return rc;
}

/* api_engine_of picks the engine a new saga is handed to: by its id, so
 * the sagas spread evenly over the engines (each engine is independent:
 * its own thread, connection and commits; docs/architecture.md). */
static engine *api_engine_of(api *a, const char *saga_id)
{
	uint32_t h = 2166136261u; /* FNV-1a */
	for (const char *c = saga_id; *c; c++)
		h = (h ^ (uint8_t)*c) * 16777619u;
	return a->engs[h % (uint32_t)a->n_engines];
}

void api_db_error(rpc_reply *reply, int rc, const char *what)
{
	if (rc == PG_ERR_CANCELED)
		rpc_reply_error(reply, RPC_DEADLINE_EXCEEDED, "statement_timeout",
		    "could not %s: the database did not answer within the call's deadline", what);
	else if (rc == PG_ERR_CONNECTION || rc == PG_ERR_RETRY)
		rpc_reply_error(reply, RPC_UNAVAILABLE, "database_unavailable",
		    "could not %s: database unavailable", what);
	else
		rpc_reply_error(reply, RPC_INTERNAL, "database_error", "could not %s: %s", what,
		    pg_err_name(rc));
}

bool api_def_name(const char *s, char lo, char hi)
{
	size_t n = strlen(s);
	if (n == 0)
		return true;
	if (n > 64 || s[0] < lo || s[0] > hi)
		return false;
	for (size_t i = 1; i < n; i++)
		if (!((s[i] >= lo && s[i] <= hi) || (s[i] >= '0' && s[i] <= '9') || s[i] == '_'))
			return false;
	return true;
}

/* api_parse_start decodes and checks a StartSaga payload into `row`, the
 * saga to insert (a new saga id when none is given), and *wait_ms. Returns false with the
 * error in `reply` when the payload or a field is invalid. */
static bool api_parse_start(
    api *a, const rpc_request *call, saga_row *row, int32_t *wait_ms, rpc_reply *reply)
{
	Sagas__V1__StartSagaRequest *req = (Sagas__V1__StartSagaRequest *)rpc_unpack(
	    &sagas__v1__start_saga_request__descriptor, call, reply);
	bool ok = false;
	if (req == NULL)
		return false;
	if (req->wait_ms < 0 || req->wait_ms > WAITS_MAX_MS) {
		rpc_reply_error(reply, RPC_INVALID_ARGUMENT, "bad_field",
		    "invalid wait_ms: %d is outside 0..%d", (int)req->wait_ms, WAITS_MAX_MS);
		goto out_free;
	}
	if (req->wait_ms > 0 && call->in_batch) {
		rpc_reply_error(reply, RPC_INVALID_ARGUMENT, "bad_field",
		    "invalid wait_ms: a StartSaga in a batch cannot wait; send it alone");
		goto out_free;
	}
	*wait_ms = req->wait_ms;
	memset(row, 0, sizeof *row);
	if (req->saga_id[0] == '\0') {
		saga_id_new(row->saga_id);
	} else if (!valid_uuid(req->saga_id)) {
		rpc_reply_error(reply, RPC_INVALID_ARGUMENT, "bad_field",
		    "invalid saga_id: not a canonical lowercase UUID");
		goto out_free;
	} else {
		memcpy(row->saga_id, req->saga_id, sizeof row->saga_id);
	}
	int64_t now = dbclock_now_ms(); /* the database's clock (rule T1) */
	/* the type's version in the file, its first position named as it says */
	const char *type = req->type[0] != '\0' ? req->type : "order";
	const orch_def_version *v = a->defs != NULL ? orch_defs_start(a->defs, type) : NULL;
	if (v == NULL) {
		char types[256] = "";
		for (size_t k = 0; a->defs != NULL && k < a->defs->nfile; k++)
			snprintf(types + strlen(types), sizeof types - strlen(types), "%s%s",
			    k > 0 ? ", " : "", a->defs->v[k]->type->name);
		/* the name echoed only when it could be one (a definition's
		 * names: [a-z][a-z0-9_]*, 64 bytes at most) */
		bool named = api_def_name(type, 'a', 'z');
		rpc_reply_error(reply, RPC_INVALID_ARGUMENT, "bad_field",
		    "invalid type: %s%s%s is not a saga type of this orchestrator (it runs: %s)",
		    named ? "\"" : "", named ? type : "the value", named ? "\"" : "", types);
		goto out_free; /* logged there, its name echoed only when named */
	}
	/* its input, read as its type's definition says */
	if (!api_start_input(req, v->type, row, reply))
		goto out_free;
	saga_flow_row first = saga_flow_start(&v->flow, now, &a->policy);
	snprintf(row->type, sizeof row->type, "%s", v->type->name);
	snprintf(row->state, sizeof row->state, "%s", orch_def_state(v, &first.pos));
	row->finished = saga_flow_is_terminal(&v->flow, &first.pos);
	row->s.state = store_category(row->type, row->state, false, row->finished);
	row->s.step_deadline_ms = first.step_deadline_ms;
	row->s.next_attempt_ms = first.next_attempt_ms;
	row->def_id = v->id;
	/* written leased: it is handed to the engine right after commit; if we
	 * crash first, the sweep sends it when the lease ends (rule 1), never
	 * later than its step deadline (rule T5) */
	row->s.next_attempt_ms = saga_lease_until_ms(&row->s, now, &a->policy);
	ok = true;
out_free:
	if (!ok && strcmp(reply->reason, "bad_field") == 0) {
		/* every refusal is counted and logged (its text escaped: it
		 * may quote the client's field names) */
		char msg[RPC_MESSAGE_MAX * 4];
		valid_escape(msg, sizeof msg, reply->message);
		rpc_refusal_note(call->pipe, "bad_field", call->method);
		log_info(
		    valid_uuid(req->saga_id) ? req->saga_id : NULL, "StartSaga refused: %s", msg);
	}
	sagas__v1__start_saga_request__free_unpacked(req, NULL);
	return ok;
}

/* The margin between the end of a wait and the call's deadline, so the
 * answer reaches the caller before it gives up (ms). */
#define API_WAIT_MARGIN_MS 100

/* api_hold_wait holds `call` until saga `row` (not terminal) finishes, for
 * at most wait_ms ms and never past the call's deadline less the margin
 * (waits.h answers it as `as` says). With `recheck`, after the call is
 * registered, the row is marked as waited for by this instance and read in
 * the same statement (store_mark_waiter): an end committed before the mark
 * is answered here, one another orchestrator commits after it is NOTIFYed
 * (listen.h), and one this instance's engine commits is reported by it. Without
 * it (a StartSaga that just inserted its row with waiter = this instance)
 * nothing is read or written.
 * Returns true when the call was taken (held, or answered through its
 * token): the handler's own reply is then dropped. False when it could not
 * be held (no time left): the caller answers at once. */
static bool api_hold_wait(api *a, api_worker *w, const rpc_request *call, const saga_row *row,
    int32_t wait_ms, const waits_as *as, bool recheck)
{
	/* durations on this host's monotonic clock: no other clock is read */
	int64_t now = clock_mono_ms();
	int64_t until = now + wait_ms;
	if (call->deadline_mono_ms > 0 && call->deadline_mono_ms - API_WAIT_MARGIN_MS < until)
		until = call->deadline_mono_ms - API_WAIT_MARGIN_MS;
	rpc_held *h = until > now ? rpc_hold(call) : NULL;
	if (h == NULL)
		return false;
	uint64_t ticket = 0;
	if (waits_add(a->waits, h, row, until, as, &ticket) != 0) {
		/* too many waits, or stopping: the state as read, unfinished */
		waits_reply(h, row, false, as);
		return true;
	}
	if (recheck) {
		saga_row again;
		int rc;
		API_DB(a, w, rc, store_mark_waiter(w->conn, row->saga_id, a->instance, &again));
		if (rc != 0) {
			/* not marked: an end another orchestrator writes would not be
			 * NOTIFYed, so holding the call could only end "unfinished"
			 * at its deadline; answer now with the state as read (the
			 * client waits again) */
			if (waits_take(a->waits, ticket, row->saga_id))
				waits_reply(h, row, false, as);
		} else if (saga_wait_over(&again.s) && waits_take(a->waits, ticket, row->saga_id))
			waits_reply(h, &again, saga_is_terminal(again.s.state), as);
	}
	return true;
}

/* api_answer_start answers a StartSaga whose insert returned `rc`, with
 * `created` and the `stored` row, and appends a new saga to `submit` (room
 * for one more), for api_submit to hand to the engine. With
 * wait_ms the call is held until the saga finishes (api_hold_wait). */
static void api_answer_start(api *a, api_worker *w, const rpc_request *call, const saga_row *row,
    int32_t wait_ms, int rc, bool created, saga_row *stored, rpc_reply *reply, saga_row *submit,
    size_t *nsubmit)
{
	if (rc != 0) {
		api_db_error(reply, rc, "start saga");
		return;
	}
	if (!created && stored->s.state == SAGA_STATE_UNSPECIFIED) {
		/* rule R5: a participant may still keep a record of the deleted
		 * saga this id named; a new saga with it would be taken for that
		 * one (or refused saga_id_reused), so it is not started */
		char when[32] = "?";
		time_t t = (time_t)(stored->created_ms / 1000);
		struct tm tm;
		if (gmtime_r(&t, &tm) != NULL)
			strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
		rpc_reply_error(reply, RPC_FAILED_PRECONDITION, REASON_SAGA_ID_RETIRED,
		    "saga id %s was used by a saga that started at %s and was deleted by "
		    "retention; it is not reused while a participant may remember that saga "
		    "(--saga-id-retention): start the order with a new saga id",
		    row->saga_id, when);
		log_info(row->saga_id, "StartSaga refused: saga_id_retired");
		return;
	}
	if (!created && !store_same_start(stored, row)) {
		/* rule 6: the same saga id with another input, or of another
		 * type, never applies */
		rpc_reply_error(reply, RPC_ALREADY_EXISTS, REASON_KEY_MISMATCH,
		    "saga %s exists with another %s", row->saga_id,
		    strcmp(stored->type, row->type) != 0 ? "type"
		        : row->ninput == 0               ? "order"
		                                         : "input");
		return;
	}
	/* a saga parked at once (rule R5) is not held for either */
	bool finished = saga_wait_over(&stored->s);
	waits_as as = {.start = true, .created = created};
	/* held before the engine has it, so its end cannot pass unseen; a
	 * duplicate's saga is read again for an end since it was read */
	bool held
	    = wait_ms > 0 && !finished && api_hold_wait(a, w, call, stored, wait_ms, &as, !created);
	if (created) {
		orch_metrics_started(stored->type, 1);
		if (stored->ninput == 0)
			log_info(stored->saga_id, "started: %s orders %d x %s for %lld minor units",
			    stored->customer, stored->qty, stored->sku, (long long)stored->amount);
		else
			log_info(stored->saga_id, "started: %s with an input of %u bytes",
			    stored->type, (unsigned)stored->ninput);
		fault_exit_if(FAULT_EXIT_AFTER_COMMIT, "StartSaga"); /* committed and logged */
		submit[(*nsubmit)++] = *stored; /* api_submit hands it to its engine */
	}
	if (!held)
		codec_reply_start(reply, stored, created, saga_is_terminal(stored->s.state));
}

/* api_submit hands the `n` new sagas in `rows` to their engines, those of
 * one engine together (engine_submit_many: their first commands go out in
 * one frame per participant). */
static void api_submit(api *a, saga_row *rows, size_t n)
{
	for (int e = 0; e < a->n_engines && n > 0; e++) {
		engine *eng = a->engs[e];
		size_t k = 0;
		for (size_t i = 0; i < n; i++) {
			if (api_engine_of(a, rows[i].saga_id) != eng) {
				if (k != i) { /* keep the others, in order, at the front */
					saga_row t = rows[k];
					rows[k] = rows[i];
					rows[i] = t;
				}
				k++;
			}
		}
		/* rows[k..n) are eng's */
		engine_submit_many(eng, rows + k, n - k);
		n = k;
	}
}

static void api_start_saga(api *a, api_worker *w, const rpc_request *call, rpc_reply *reply)
{
	saga_row row, stored;
	int32_t wait_ms = 0;
	if (!api_parse_start(a, call, &row, &wait_ms, reply))
		return;
	bool created = false;
	int rc;
	/* a StartSaga that waits names this instance as the waiter: the end is
	 * NOTIFYed only when another instance writes it (store_apply) */
	API_DB(a, w, rc,
	    store_insert_saga(
	        w->conn, &row, a->instance, wait_ms > 0 ? a->instance : NULL, &created, &stored));
	saga_row submit;
	size_t nsubmit = 0;
	api_answer_start(a, w, call, &row, wait_ms, rc, created, &stored, reply, &submit, &nsubmit);
	api_submit(a, &submit, nsubmit);
}

/* api_parse_get decodes and checks a GetSaga payload into `saga_id` (room
 * for VALID_UUID_LEN + 1 bytes). Returns false with the error in `reply`. */
static bool api_parse_get(const rpc_request *call, char *saga_id, rpc_reply *reply)
{
	Sagas__V1__GetSagaRequest *req = (Sagas__V1__GetSagaRequest *)rpc_unpack(
	    &sagas__v1__get_saga_request__descriptor, call, reply);
	bool ok = false;
	if (req == NULL)
		return false;
	if (!valid_uuid(req->saga_id)) {
		rpc_reply_error(reply, RPC_INVALID_ARGUMENT, "bad_field",
		    "invalid saga_id: not a canonical lowercase UUID");
	} else {
		memcpy(saga_id, req->saga_id, VALID_UUID_LEN + 1);
		ok = true;
	}
	sagas__v1__get_saga_request__free_unpacked(req, NULL);
	return ok;
}

/* api_answer_get answers a GetSaga for `saga_id` whose read returned `rc`
 * (-ENOENT: no such saga) and `row`. */
static void api_answer_get(
    const api *a, PGconn *conn, const char *saga_id, int rc, saga_row *row, rpc_reply *reply)
{
	if (rc == -ENOENT) {
		rpc_reply_error(
		    reply, RPC_NOT_FOUND, "unknown_saga", "saga %s does not exist", saga_id);
		return;
	}
	if (rc != 0) {
		api_db_error(reply, rc, "read saga");
		return;
	}
	Sagas__V1__Saga m;
	Sagas__V1__Order o;
	codec_saga_to_pb(&m, &o, row);
	char *json = NULL;
	api_saga_input(a, conn, row, &m, &json);
	Sagas__V1__GetSagaReply out = SAGAS__V1__GET_SAGA_REPLY__INIT;
	out.saga = &m;
	rpc_reply_ok(reply, &out.base);
	free(json);
}

static void api_get_saga(api *a, api_worker *w, const rpc_request *call, rpc_reply *reply)
{
	char saga_id[VALID_UUID_LEN + 1];
	if (!api_parse_get(call, saga_id, reply))
		return;
	saga_row row;
	int rc;
	API_DB(a, w, rc, store_get_saga(w->conn, saga_id, &row));
	api_answer_get(a, w->conn, saga_id, rc, &row, reply);
}

/* api_answer_wait answers a WaitSaga at once: read error `rc` (-ENOENT: no
 * such saga) or `row` with `finished`. */
static void api_answer_wait(
    const char *saga_id, int rc, saga_row *row, bool finished, rpc_reply *reply)
{
	if (rc != 0) {
		api_answer_get(NULL, NULL, saga_id, rc, row, reply); /* an error: no input read */
		return;
	}
	codec_reply_wait(reply, row, finished);
}

/* api_wait_saga serves WaitSaga: at once for a finished saga, otherwise
 * the call is held in the registry (waits.h) until the saga finishes (the
 * local engine reports it, or another orchestrator's end is NOTIFYed to
 * listen.h; api_hold_wait marks the row first) or the wait runs out. */
static void api_wait_saga(api *a, api_worker *w, const rpc_request *call, rpc_reply *reply)
{
	Sagas__V1__WaitSagaRequest *req = (Sagas__V1__WaitSagaRequest *)rpc_unpack(
	    &sagas__v1__wait_saga_request__descriptor, call, reply);
	if (req == NULL)
		return;
	char saga_id[VALID_UUID_LEN + 1];
	int32_t wait_ms = req->wait_ms;
	bool ok = false;
	if (!valid_uuid(req->saga_id)) {
		rpc_reply_error(reply, RPC_INVALID_ARGUMENT, "bad_field",
		    "invalid saga_id: not a canonical lowercase UUID");
	} else if (wait_ms < 0 || wait_ms > WAITS_MAX_MS) {
		rpc_reply_error(reply, RPC_INVALID_ARGUMENT, "bad_field",
		    "invalid wait_ms: %d is outside 0..%d", (int)wait_ms, WAITS_MAX_MS);
	} else {
		memcpy(saga_id, req->saga_id, sizeof saga_id);
		ok = true;
	}
	sagas__v1__wait_saga_request__free_unpacked(req, NULL);
	if (!ok)
		return;
	saga_row row;
	int rc;
	API_DB(a, w, rc, store_get_saga(w->conn, saga_id, &row));
	if (rc != 0 || saga_wait_over(&row.s)) {
		api_answer_wait(saga_id, rc, &row, rc == 0 && saga_is_terminal(row.s.state), reply);
		return;
	}
	waits_as as = {.start = false};
	if (!api_hold_wait(a, w, call, &row, wait_ms ? wait_ms : WAITS_DEFAULT_MS, &as, true))
		api_answer_wait(saga_id, 0, &row, false, reply);
}

/* An orchestrator method's handler: fills `reply` for `call`. */
typedef void api_handler(api *a, api_worker *w, const rpc_request *call, rpc_reply *reply);

/* The handler of each method of the table (methods.h) the orchestrator
 * serves; NULL: answered UNIMPLEMENTED. */
static api_handler *const api_handlers[METHOD_COUNT] = {
    [METHOD_Orchestrator_StartSaga] = api_start_saga,
    [METHOD_Orchestrator_GetSaga] = api_get_saga,
    [METHOD_Orchestrator_ListSagas] = api_list_sagas,
    [METHOD_Orchestrator_GetSagaHistory] = api_history,
    [METHOD_Orchestrator_RetrySaga] = api_retry_saga,
    [METHOD_Orchestrator_WaitSaga] = api_wait_saga,
    [METHOD_Orchestrator_WatchHistory] = api_watch_history,
    [METHOD_Orchestrator_CancelSaga] = api_cancel_saga,
    [METHOD_Orchestrator_ListAudit] = api_list_audit,
};

static void api_handle(void *app, void *worker, const rpc_request *call, rpc_reply *reply)
{
	api *a = app;
	api_worker *w = worker;
	w->deadline_mono_ms = call->deadline_mono_ms;
	enum method_id id = method_find(call->method);
	if (id != METHOD_NONE && api_handlers[id] != NULL)
		api_handlers[id](a, w, call, reply);
	else {
		rpc_reply_error(reply, RPC_UNIMPLEMENTED, "unknown_method", "unknown method \"%s\"",
		    call->method);
		rpc_refusal_note(call->pipe, "unknown_method", call->method);
	}
}

/* api_batch_deadline sets the worker's deadline for the statements of a
 * batch of `n` calls: the latest of theirs (none when one has none), so
 * that one call with a short deadline does not cut the others' statement. */
static void api_batch_deadline(api_worker *w, const rpc_request *calls, size_t n)
{
	int64_t d = 0;
	for (size_t i = 0; i < n; i++) {
		if (calls[i].deadline_mono_ms <= 0) {
			d = 0;
			break;
		}
		if (calls[i].deadline_mono_ms > d)
			d = calls[i].deadline_mono_ms;
	}
	w->deadline_mono_ms = d;
}

/* api_handle_batch serves calls that arrived together: their StartSagas as
 * one insert statement (one commit, store_insert_sagas), their GetSagas as
 * one read (store_get_sagas), anything else one by one. Every reply is sent
 * after the commit that makes it true. */
static void api_handle_batch(
    void *app, void *worker, const rpc_request *calls, rpc_reply *replies, size_t n)
{
	api *a = app;
	api_worker *w = worker;
	/* the sagas to insert, as stored, and as read: n of each at most */
	saga_row *rows = malloc(4 * n * sizeof *rows);
	if (rows == NULL) {
		for (size_t i = 0; i < n; i++)
			api_handle(app, worker, &calls[i], &replies[i]);
		return;
	}
	saga_row *stored = rows + n, *got = rows + 2 * n, *submit = rows + 3 * n;
	api_batch_deadline(w, calls, n);
	size_t nsubmit = 0;
	bool created[RPC_BATCH_MAX], found[RPC_BATCH_MAX];
	int32_t waits_ms[RPC_BATCH_MAX];
	char ids[RPC_BATCH_MAX][VALID_UUID_LEN + 1];
	const char *idp[RPC_BATCH_MAX];
	size_t start_at[RPC_BATCH_MAX], get_at[RPC_BATCH_MAX], ns = 0, ng = 0;
	for (size_t i = 0; i < n; i++) {
		enum method_id id = method_find(calls[i].method);
		if (id == METHOD_Orchestrator_StartSaga) {
			if (api_parse_start(a, &calls[i], &rows[ns], &waits_ms[ns], &replies[i]))
				start_at[ns++] = i;
		} else if (id == METHOD_Orchestrator_GetSaga) {
			if (api_parse_get(&calls[i], ids[ng], &replies[i])) {
				idp[ng] = ids[ng];
				get_at[ng++] = i;
			}
		} else {
			api_handle(app, worker, &calls[i], &replies[i]);
		}
	}
	/* the StartSagas that wait name this instance (api_start_saga) */
	const char *waiters[RPC_BATCH_MAX];
	for (size_t k = 0; k < ns; k++)
		waiters[k] = waits_ms[k] > 0 ? a->instance : NULL;
	if (ns == 1) {
		int rc;
		API_DB(a, w, rc,
		    store_insert_saga(
		        w->conn, &rows[0], a->instance, waiters[0], &created[0], &stored[0]));
		/* created[0] is set only when the insert ran (the fuzz target
		 * found it read unset when the database was away) */
		api_answer_start(a, w, &calls[start_at[0]], &rows[0], waits_ms[0], rc,
		    rc == 0 && created[0], &stored[0], &replies[start_at[0]], submit, &nsubmit);
	} else if (ns > 1) {
		int rc;
		API_DB(a, w, rc,
		    store_insert_sagas(w->conn, rows, waiters, ns, a->instance, created, stored));
		log_hold(); /* the "started" lines in one write */
		for (size_t k = 0; k < ns; k++)
			api_answer_start(a, w, &calls[start_at[k]], &rows[k], waits_ms[k], rc,
			    rc == 0 && created[k], &stored[k], &replies[start_at[k]], submit,
			    &nsubmit);
		log_release();
	}
	api_submit(a, submit, nsubmit);
	if (ng > 0) {
		int rc;
		API_DB(a, w, rc, store_get_sagas(w->conn, idp, ng, got, found));
		for (size_t k = 0; k < ng; k++)
			api_answer_get(a, w->conn, ids[k], rc == 0 && !found[k] ? -ENOENT : rc,
			    &got[k], &replies[get_at[k]]);
	}
	free(rows);
}

/* api_pipe_closed: a client connection closed; its waiting calls go. */
static void api_pipe_closed(void *app, uint32_t pipe_id)
{
	api *a = app;
	waits_pipe_closed(a->waits, pipe_id);
	api_list_pipe_closed(pipe_id);
}

/* What a batch frame may carry: calls answered at once with small replies
 * (WaitSaga and the lists are not): the table's BATCH rows (methods.h). */
static const char *const api_batch_methods[] = {METHODS_Orchestrator(METHOD_BATCH_PATH) NULL};

/* api_linger_us: rpc_server_ops.linger_us. A worker holding a StartSaga
 * that waits for its saga's end (wait_ms > 0) waits a->batch_delay_us for
 * more when at least a->batch_siblings commands are in flight: then other
 * sagas are moving and more StartSagas are likely within the delay (the
 * reasoning of PostgreSQL's commit_delay and commit_siblings); they are
 * stored with one statement and their first commands sent in one frame.
 * Such a call is answered when its saga ends, tens of ms later, so the
 * delay is a small share of it. A StartSaga answered at once (no wait_ms),
 * any other call (GetSaga polls, lists, probes) and one saga at a time never
 * wait: for them the delay would be most of the call. */
static int64_t api_linger_us(void *app, const rpc_linger_frame *frames, size_t n)
{
	api *a = app;
	if (a->batch_delay_us <= 0)
		return 0;
	bool waiting_start = false;
	for (size_t i = 0; i < n && !waiting_start; i++) {
		if (method_find(frames[i].method) != METHOD_Orchestrator_StartSaga)
			continue;
		Sagas__V1__StartSagaRequest *req = sagas__v1__start_saga_request__unpack(
		    NULL, frames[i].payload_len, frames[i].payload);
		if (req == NULL)
			continue; /* refused when served */
		waiting_start = req->wait_ms > 0;
		sagas__v1__start_saga_request__free_unpacked(req, NULL);
	}
	if (!waiting_start)
		return 0;
	int inflight = 0;
	for (int i = 0; i < a->n_engines && inflight < a->batch_siblings; i++)
		inflight += engine_inflight(a->engs[i]);
	return inflight >= a->batch_siblings ? a->batch_delay_us : 0;
}

const rpc_server_ops *api_server_ops(void)
{
	static const rpc_server_ops ops = {
	    .batch_methods = api_batch_methods,
	    .worker_init = api_worker_init,
	    .worker_fini = api_worker_fini,
	    .handle = api_handle,
	    .handle_batch = api_handle_batch,
	    .pipe_closed = api_pipe_closed,
	    .linger_us = api_linger_us,
	};
	return &ops;
}
