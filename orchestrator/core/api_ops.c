/* api_ops: the Orchestrator service's operator actions (orchestrator.proto),
 * admin role only (methods.h): RetrySaga (a re-arm), CancelSaga (rule 11)
 * and ListAudit (the audit trail, issue 36). Every action that changes a
 * saga is recorded in table audit with its caller (its listener's roles
 * and its address: nng gives no certificate subject) in the transaction
 * that changes it. Served by the API's workers (api.c's table of
 * handlers; api_internal.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_internal.h"
#include "authz.h"
#include "codec.h"
#include "dbclock.h"
#include "decide.h"
#include "log.h"
#include "status.h"
#include "store.h"
#include "valid.h"

/* ListAudit's page: by default and at most */
#define API_AUDIT_DEFAULT 100
#define API_AUDIT_MAX     1000

/* The caller of `call` as the audit trail records it, in the caller's
 * buffers. */
typedef struct api_caller {
	char role[64];
	char peer[64];
} api_caller;

static store_actor api_actor(
    const rpc_request *call, api_caller *c, const char *reason, const char *request_id)
{
	authz_role_names(call->roles, c->role, (int)sizeof c->role);
	rpc_peer(call->pipe, c->peer, sizeof c->peer);
	return (store_actor) {
	    .role = c->role, .peer = c->peer, .reason = reason, .request_id = request_id};
}

/* api_note_ok is true when `s` is an operator's reason: valid_note's line
 * of at most STORE_NOTE_MAX - 1 bytes, or "" when !required. Else fills
 * `reply` (INVALID_ARGUMENT naming the field). */
static bool api_note_ok(const char *s, bool required, rpc_reply *reply)
{
	size_t len = strlen(s);
	if (len == 0 && !required)
		return true;
	if (len == 0) {
		rpc_reply_error(reply, RPC_INVALID_ARGUMENT, "bad_field",
		    "missing reason: say why (it is kept in the audit trail)");
		return false;
	}
	if (len >= STORE_NOTE_MAX) {
		rpc_reply_error(reply, RPC_INVALID_ARGUMENT, "bad_field",
		    "invalid reason: %zu bytes, at most %d", len, STORE_NOTE_MAX - 1);
		return false;
	}
	if (!valid_note(s, STORE_NOTE_MAX - 1)) {
		rpc_reply_error(reply, RPC_INVALID_ARGUMENT, "bad_field",
		    "invalid reason: expected " VALID_NOTE_RULE);
		return false;
	}
	return true;
}

/* api_refused logs a refused operator action (it changed nothing) with its
 * caller and the reply's code and reason. */
static void api_refused(
    const char *what, const char *saga_id, const rpc_request *call, const rpc_reply *reply)
{
	api_caller c;
	(void)api_actor(call, &c, "", "");
	log_info(valid_uuid(saga_id) ? saga_id : NULL, "%s by %s at %s refused: %s (%s): %s", what,
	    c.role, c.peer, rpc_code_name(reply->code), reply->reason, reply->message);
}

/* the edge of horizon_may_send: older, no participant takes a saga's
 * commands (rule R3); 0 without retention */
static int64_t api_horizon_edge(const api *a, int64_t now)
{
	return a->horizon.retention_ms > 0 ? now - a->horizon.retention_ms + a->horizon.skew_ms : 0;
}

void api_retry_saga(api *a, api_worker *w, const rpc_request *call, rpc_reply *reply)
{
	Sagas__V1__RetrySagaRequest *req = (Sagas__V1__RetrySagaRequest *)rpc_unpack(
	    &sagas__v1__retry_saga_request__descriptor, call, reply);
	if (req == NULL)
		return;
	if (!valid_uuid(req->saga_id)) {
		rpc_reply_error(reply, RPC_INVALID_ARGUMENT, "bad_field",
		    "invalid saga_id: not a canonical lowercase UUID");
		goto out_free;
	}
	if (!api_note_ok(req->reason, false, reply))
		goto out_free;
	api_caller caller;
	store_actor who = api_actor(call, &caller, req->reason, "");
	saga_row row;
	int rc;
	int64_t now = dbclock_now_ms();
	int64_t edge = api_horizon_edge(a, now);
	/* API_DB re-runs on a lost connection: it takes the error as rc, and
	 * leaves `res` STORE_REARM_ERROR when it never got to call */
	store_rearm_result res = STORE_REARM_ERROR;
	int err = 0;
	API_DB(
	    a, w, rc, (res = store_rearm(w->conn, req->saga_id, now, edge, &who, &row, &err), err));
	switch (res) {
	case STORE_REARM_OK:
		break;
	case STORE_REARM_NOT_FOUND:
		rpc_reply_error(
		    reply, RPC_NOT_FOUND, "unknown_saga", "saga %s does not exist", req->saga_id);
		goto out_free;
	case STORE_REARM_TERMINAL:
		rpc_reply_error(reply, RPC_FAILED_PRECONDITION, "terminal",
		    "saga %s has finished: nothing to retry", req->saga_id);
		goto out_free;
	case STORE_REARM_PAST_HORIZON:
		rpc_reply_error(reply, RPC_FAILED_PRECONDITION, REASON_PAST_HORIZON,
		    "saga %s started before the retention horizon: no participant takes its "
		    "commands any more; settle it by hand (docs/operations.md, \"Retention\")",
		    req->saga_id);
		goto out_free;
	case STORE_REARM_ERROR:
		api_db_error(reply, rc, "retry saga");
		goto out_free;
	}
	log_info(row.saga_id, "re-armed by an operator (%s at %s) in %s%s%s%s", caller.role,
	    caller.peer, row.state, req->reason[0] ? " (\"" : "", req->reason,
	    req->reason[0] ? "\")" : "");
	Sagas__V1__Saga m;
	Sagas__V1__Order o;
	codec_saga_to_pb(&m, &o, &row);
	Sagas__V1__RetrySagaReply out = SAGAS__V1__RETRY_SAGA_REPLY__INIT;
	out.saga = &m;
	rpc_reply_ok(reply, &out.base);
out_free:
	if (reply->code != RPC_OK)
		api_refused("retry", req->saga_id, call, reply);
	sagas__v1__retry_saga_request__free_unpacked(req, NULL);
}

/* What api_cancel_decide needs. */
typedef struct api_cancel_ctx {
	api *a;
	api_worker *w;
	int64_t now;
} api_cancel_ctx;

/* store_decide_fn of CancelSaga: the transition on SAGA_EV_CANCEL over the
 * flow of the version the saga started with (rule 11), due at once; the
 * sweep of any orchestrator claims it and sends its compensations. */
static int api_cancel_decide(
    void *arg, const saga_row *row, saga_row *after, store_update *up, const char **refused)
{
	api_cancel_ctx *c = arg;
	const orch_def_version *v
	    = orch_defs_version((orch_defs *)c->a->defs, c->w->conn, row->def_id);
	if (v == NULL)
		return -1;
	saga_flow_event ev = {.kind = SAGA_EV_CANCEL};
	saga_flow_decision d;
	if (decide_row(v, row, &ev, c->now, 0, &c->a->policy, &d, after) != 0)
		return -1;
	if (d.ignored) {
		*refused = d.refused != NULL ? d.refused : REASON_PAST_PIVOT;
		return 0;
	}
	up->state_changed = d.state_changed;
	up->attention_raised = d.attention_raised;
	up->event = d.event_name;
	return 0;
}

/* the words of a refused cancel's message */
static const char *api_cancel_refusal(const char *why)
{
	if (strcmp(why, REASON_COMPENSATING) == 0)
		return "it is compensating already";
	if (strcmp(why, REASON_CANCELLED) == 0)
		return "it has ended cancelled already";
	return "its pivot has succeeded: it only moves forward now (rule 3)";
}

void api_cancel_saga(api *a, api_worker *w, const rpc_request *call, rpc_reply *reply)
{
	Sagas__V1__CancelSagaRequest *req = (Sagas__V1__CancelSagaRequest *)rpc_unpack(
	    &sagas__v1__cancel_saga_request__descriptor, call, reply);
	if (req == NULL)
		return;
	if (!valid_uuid(req->saga_id)) {
		rpc_reply_error(reply, RPC_INVALID_ARGUMENT, "bad_field",
		    "invalid saga_id: not a canonical lowercase UUID");
		goto out_free;
	}
	if (!valid_uuid(req->request_id)) {
		rpc_reply_error(reply, RPC_INVALID_ARGUMENT, "bad_field",
		    "invalid request_id: not a canonical lowercase UUID (the cancel's "
		    "idempotency key)");
		goto out_free;
	}
	if (!api_note_ok(req->reason, true, reply))
		goto out_free;
	api_caller caller;
	store_actor who = api_actor(call, &caller, req->reason, req->request_id);
	saga_row row;
	int rc;
	api_cancel_ctx ctx = {.a = a, .w = w, .now = dbclock_floor_ms()};
	int64_t edge = api_horizon_edge(a, dbclock_now_ms());
	store_cancel_result res = STORE_CANCEL_ERROR;
	const char *refused = NULL;
	int err = 0;
	API_DB(a, w, rc,
	    (res = store_cancel(w->conn, req->saga_id, &who, edge, a->instance, api_cancel_decide,
	         &ctx, &row, &refused, &err),
	        err));
	switch (res) {
	case STORE_CANCEL_OK:
	case STORE_CANCEL_REPLAYED:
		break;
	case STORE_CANCEL_NOT_FOUND:
		rpc_reply_error(
		    reply, RPC_NOT_FOUND, "unknown_saga", "saga %s does not exist", req->saga_id);
		goto out_free;
	case STORE_CANCEL_PAST_HORIZON:
		rpc_reply_error(reply, RPC_FAILED_PRECONDITION, REASON_PAST_HORIZON,
		    "saga %s started before the retention horizon: no participant takes its "
		    "compensations any more; settle it by hand (docs/operations.md, "
		    "\"Retention\")",
		    req->saga_id);
		goto out_free;
	case STORE_CANCEL_REFUSED:
		rpc_reply_error(reply, RPC_FAILED_PRECONDITION, refused,
		    "saga %s is %s: nothing changed (%s)", req->saga_id, row.state,
		    api_cancel_refusal(refused));
		goto out_free;
	case STORE_CANCEL_KEY_MISMATCH:
		rpc_reply_error(reply, RPC_ALREADY_EXISTS, REASON_KEY_MISMATCH,
		    "request_id %s was a cancel of saga %s with another reason: nothing changed "
		    "(a new cancel needs a new request_id)",
		    req->request_id, req->saga_id);
		goto out_free;
	case STORE_CANCEL_UNDECIDED:
		rpc_reply_error(reply, RPC_UNAVAILABLE, "definition_unavailable",
		    "saga %s started under a version of its definition this orchestratord "
		    "cannot run: nothing changed; ask one that runs it",
		    req->saga_id);
		goto out_free;
	case STORE_CANCEL_ERROR:
		api_db_error(reply, rc, "cancel saga");
		goto out_free;
	}
	if (res == STORE_CANCEL_OK)
		log_info(row.saga_id, "cancelled by an operator (%s at %s): now %s (\"%s\")",
		    caller.role, caller.peer, row.state, req->reason);
	else
		log_info(row.saga_id,
		    "cancel by an operator (%s at %s) repeated (request %s): answered as taken, "
		    "nothing changed",
		    caller.role, caller.peer, req->request_id);
	Sagas__V1__Saga m;
	Sagas__V1__Order o;
	codec_saga_to_pb(&m, &o, &row);
	Sagas__V1__CancelSagaReply out = SAGAS__V1__CANCEL_SAGA_REPLY__INIT;
	out.saga = &m;
	out.replayed = res == STORE_CANCEL_REPLAYED;
	rpc_reply_ok(reply, &out.base);
out_free:
	if (reply->code != RPC_OK)
		api_refused("cancel", req->saga_id, call, reply);
	sagas__v1__cancel_saga_request__free_unpacked(req, NULL);
}

void api_list_audit(api *a, api_worker *w, const rpc_request *call, rpc_reply *reply)
{
	Sagas__V1__ListAuditRequest *req = (Sagas__V1__ListAuditRequest *)rpc_unpack(
	    &sagas__v1__list_audit_request__descriptor, call, reply);
	if (req == NULL)
		return;
	store_audit_entry *es = NULL;
	size_t n = 0;
	Sagas__V1__AuditEntry *ms = NULL, **mp = NULL;
	int limit = req->page_size == 0 ? API_AUDIT_DEFAULT : req->page_size;
	if (req->saga_id[0] != '\0' && !valid_uuid(req->saga_id)) {
		rpc_reply_error(reply, RPC_INVALID_ARGUMENT, "bad_field",
		    "invalid saga_id: not a canonical lowercase UUID");
		goto out_free;
	}
	if (req->action[0] != '\0' && strcmp(req->action, "cancel") != 0
	    && strcmp(req->action, "retry") != 0) {
		rpc_reply_error(reply, RPC_INVALID_ARGUMENT, "bad_field",
		    "invalid action: expected cancel or retry");
		goto out_free;
	}
	if (limit < 1 || limit > API_AUDIT_MAX) {
		rpc_reply_error(reply, RPC_INVALID_ARGUMENT, "bad_field",
		    "invalid page_size: %d is outside 0..%d", (int)req->page_size, API_AUDIT_MAX);
		goto out_free;
	}
	if (req->before_id < 0) {
		rpc_reply_error(reply, RPC_INVALID_ARGUMENT, "bad_field",
		    "invalid before_id: expected 0 (the newest) or an entry's id");
		goto out_free;
	}
	int rc;
	/* one more than the page: whether there is a next one */
	API_DB(a, w, rc,
	    store_list_audit(
	        w->conn, req->saga_id, req->action, req->before_id, limit + 1, &es, &n));
	if (rc != 0) {
		api_db_error(reply, rc, "read the audit trail");
		goto out_free;
	}
	bool more = n > (size_t)limit;
	if (more)
		n = (size_t)limit;
	ms = calloc(n + 1, sizeof *ms);
	mp = calloc(n + 1, sizeof *mp);
	if (ms == NULL || mp == NULL) {
		rpc_reply_error(reply, RPC_INTERNAL, "", "out of memory");
		goto out_free;
	}
	for (size_t i = 0; i < n; i++) {
		codec_audit_to_pb(&ms[i], &es[i]);
		mp[i] = &ms[i];
	}
	Sagas__V1__ListAuditReply out = SAGAS__V1__LIST_AUDIT_REPLY__INIT;
	out.n_entries = n;
	out.entries = mp;
	out.next_before_id = more && n > 0 ? es[n - 1].id : 0;
	rpc_reply_ok(reply, &out.base);
out_free:
	free(es);
	free(ms);
	free(mp);
	sagas__v1__list_audit_request__free_unpacked(req, NULL);
}
