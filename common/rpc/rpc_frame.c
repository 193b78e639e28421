/* rpc_frame: the server's frames (rpc_server_internal.h): a request frame
 * decoded and each call's envelope checked (request id, method, deadline,
 * roles, the server's own services, the fault points), and the reply
 * envelopes packed, one call's or a batch's. rpc_server.c receives, queues,
 * serves and sends them. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nng/nng.h>
#include <nng/supplemental/util/platform.h>

#include "authz.h"
#include "clock.h"
#include "fault.h"
#include "rpc.h"
#include "rpc_internal.h"
#include "rpc_server_internal.h"
#include "sagas/v1/rpc.pb-c.h"
#include "valid.h"

void rpc_refusal_note(uint32_t pipe, const char *reason, const char *method)
{
	char esc[160], peer[96], what[256];
	valid_escape(esc, sizeof esc, method ? method : "");
	authz_count_refusal(reason, 1);
	snprintf(what, sizeof what, "refused a call (%s) of method \"%s\"", reason, esc);
	authz_log_limited(reason, pipe != 0 ? rpc_peer(pipe, peer, sizeof peer) : NULL, what);
}

/* rpc_reply_envelope fills `env` (borrowing from `reply`). */
static void rpc_reply_envelope(
    Sagas__V1__ReplyEnvelope *env, const rpc_reply *reply, const char *request_id)
{
	sagas__v1__reply_envelope__init(env);
	env->request_id = (char *)request_id;
	env->code = reply->code;
	env->message = (char *)reply->message;
	env->reason = (char *)reply->reason;
	env->payload.data = reply->payload;
	env->payload.len = reply->payload_len;
}

/* rpc_encode_reply packs `reply` into a new nng message, or NULL. */
nng_msg *rpc_encode_reply(const rpc_reply *reply, const char *request_id)
{
	Sagas__V1__ReplyEnvelope env;
	rpc_reply_envelope(&env, reply, request_id);
	size_t n = sagas__v1__reply_envelope__get_packed_size(&env);
	nng_msg *m = NULL;
	if (nng_msg_alloc(&m, n) != 0)
		return NULL;
	sagas__v1__reply_envelope__pack(&env, nng_msg_body(m));
	return m;
}

/* rpc_server_open_frame decodes a request frame and says how many calls
 * it carries (f->n): 1 for a plain envelope, its calls for a batch, 0 when
 * it is refused as a whole (f->answered: undecodable, or a bad batch). */
void rpc_server_open_frame(rpc_frame *f)
{
	f->n = 0;
	/* a call inside a call is refused call by call (a batch inside a
	 * batch); deeper nesting is refused before protobuf-c recurses into
	 * it (valid_pb_nesting) */
	if (!valid_pb_nesting(nng_msg_body(f->msg), nng_msg_len(f->msg), RPC_ENVELOPE_CALLS_FIELD,
	        RPC_ENVELOPE_NESTING_MAX)) {
		f->env = NULL;
		f->answered = true;
		rpc_reply_error(&f->reply, RPC_INVALID_ARGUMENT, "malformed_envelope",
		    "could not decode request envelope: calls nested more than %d deep",
		    RPC_ENVELOPE_NESTING_MAX);
		rpc_refusal_note(f->pipe, "malformed_envelope", NULL);
		return;
	}
	f->env
	    = sagas__v1__request_envelope__unpack(NULL, nng_msg_len(f->msg), nng_msg_body(f->msg));
	if (f->env == NULL) {
		f->answered = true;
		rpc_reply_error(&f->reply, RPC_INVALID_ARGUMENT, "malformed_envelope",
		    "could not decode request envelope");
		rpc_refusal_note(f->pipe, "malformed_envelope", NULL);
		return;
	}
	/* the envelope, and each call of a batch inside it, held to the rule
	 * of payloads (rpc_unpack): a NUL in a string ("/sagas.v1.Stock/
	 * SetStock\0junk" would be served as SetStock while another reader of
	 * the frame sees more) or a field sent twice packs back shorter */
	if (!valid_pb_exact(&f->env->base, nng_msg_len(f->msg))) {
		f->answered = true;
		rpc_reply_error(&f->reply, RPC_INVALID_ARGUMENT, "malformed_envelope",
		    "could not decode request envelope: not a canonical "
		    "encoding " VALID_CANONICAL_HINT);
		rpc_refusal_note(f->pipe, "malformed_envelope", f->env->method);
		return;
	}
	if (strcmp(f->env->method, RPC_BATCH_METHOD) != 0) {
		f->n = 1; /* a plain call: rpc_server_decode checks the rest */
		return;
	}
	size_t idlen = strlen(f->env->request_id);
	f->answered = true;
	if (f->roles == 0) {
		/* a listener with no role (Health only) takes one call a frame:
		 * its rate (rpc_rate_take) counts frames */
		rpc_reply_error(&f->reply, RPC_UNAUTHENTICATED, "unauthenticated",
		    "a batch needs a role: this listener answers Health/Check alone");
		rpc_refusal_note(f->pipe, "unauthenticated", f->env->method);
		return;
	}
	if (idlen > RPC_REQUEST_ID_MAX || !valid_utf8(f->env->request_id, idlen)) {
		rpc_reply_error(&f->reply, RPC_INVALID_ARGUMENT, "bad_field",
		    "invalid request_id: at most %d bytes of UTF-8", RPC_REQUEST_ID_MAX);
		rpc_refusal_note(f->pipe, "bad_field", f->env->method);
		return;
	}
	memcpy(f->request_id, f->env->request_id, idlen + 1);
	if (f->env->n_calls < 1 || f->env->n_calls > RPC_BATCH_CALLS_MAX) {
		rpc_reply_error(&f->reply, RPC_INVALID_ARGUMENT, "bad_field",
		    "invalid calls: a batch carries 1 to %d calls, got %zu", RPC_BATCH_CALLS_MAX,
		    f->env->n_calls);
		rpc_refusal_note(f->pipe, "bad_field", f->env->method);
		return;
	}
	if (f->env->payload.len > 0) {
		rpc_reply_error(&f->reply, RPC_INVALID_ARGUMENT, "bad_field",
		    "invalid payload: a batch carries its calls, not a payload");
		rpc_refusal_note(f->pipe, "bad_field", f->env->method);
		return;
	}
	f->answered = false;
	f->batch = true;
	f->n = f->env->n_calls;
}

/* rpc_batchable is true when `method` may travel in a batch frame
 * (rpc_server_ops.batch_methods). */
static bool rpc_batchable(const rpc_server *s, const char *method)
{
	if (s->ops->batch_methods == NULL)
		return true;
	for (const char *const *m = s->ops->batch_methods; *m != NULL; m++)
		if (strcmp(*m, method) == 0)
			return true;
	return false;
}

/* rpc_call_deadline is the deadline of the call `env`, on this host's
 * monotonic clock (ms), for a frame received at `recv_ms` (monotonic, when
 * a slot took it off the connection): recv_ms + timeout_ms, a duration, so
 * no clocks of two hosts are compared (docs/saga-semantics.md, rule T3). An envelope without
 * timeout_ms (a client older than it) is read by its absolute deadline_unix_ms, compared with this
 * host's wall clock as before. 0: the call has no deadline. */
static int64_t rpc_call_deadline(const Sagas__V1__RequestEnvelope *env, int64_t recv_ms)
{
	int64_t deadline = 0;
	/* a deadline past what an int64 holds is no deadline (a hostile
	 * INT64_MAX must not overflow: signed overflow is undefined) */
	if (env->timeout_ms > 0)
		return __builtin_add_overflow(recv_ms, env->timeout_ms, &deadline) ? 0 : deadline;
	if (env->deadline_unix_ms > 0) {
		int64_t left = 0, now = clock_mono_ms();
		if (__builtin_sub_overflow(env->deadline_unix_ms, clock_wall_ms(), &left))
			return 0;
		if (left <= 0)
			return now; /* passed: due now */
		return __builtin_add_overflow(now, left, &deadline) ? 0 : deadline;
	}
	return 0;
}

/* rpc_server_decode checks one call's envelope and answers what the server
 * answers itself: a bad field, a passed deadline, Health, Admin, and the
 * fault points before the handler. Sets it->answered or it->drop when the
 * handler must not see the call, and fills *call otherwise. */
void rpc_server_decode(rpc_server *s, rpc_item *it, rpc_request *call)
{
	const Sagas__V1__RequestEnvelope *env = it->env;
	rpc_reply *reply = &it->reply;
	it->answered = true;
	size_t idlen = strlen(env->request_id);
	if (idlen > RPC_REQUEST_ID_MAX || !valid_utf8(env->request_id, idlen)) {
		rpc_reply_error(reply, RPC_INVALID_ARGUMENT, "bad_field",
		    "invalid request_id: at most %d bytes of UTF-8", RPC_REQUEST_ID_MAX);
		rpc_refusal_note(it->frame->pipe, "bad_field", env->method);
		return;
	}
	memcpy(it->request_id, env->request_id, idlen + 1);
	if (!valid_utf8(env->method, strlen(env->method))) {
		rpc_reply_error(
		    reply, RPC_INVALID_ARGUMENT, "bad_field", "invalid method: not UTF-8");
		rpc_refusal_note(it->frame->pipe, "bad_field", env->method);
		return;
	}
	if (strcmp(env->method, RPC_BATCH_METHOD) == 0) {
		rpc_reply_error(reply, RPC_INVALID_ARGUMENT, "bad_field",
		    "invalid calls: a batch inside a batch");
		rpc_refusal_note(it->frame->pipe, "bad_field", env->method);
		return;
	}
	if (env->n_calls > 0) {
		rpc_reply_error(reply, RPC_INVALID_ARGUMENT, "bad_field",
		    "invalid calls: only %s carries calls", RPC_BATCH_METHOD);
		rpc_refusal_note(it->frame->pipe, "bad_field", env->method);
		return;
	}
	if (it->frame->batch && !rpc_batchable(s, env->method)) {
		rpc_reply_error(reply, RPC_INVALID_ARGUMENT, "bad_field",
		    "invalid method: \"%s\" cannot travel in a batch; send it alone", env->method);
		rpc_refusal_note(it->frame->pipe, "bad_field", env->method);
		return;
	}
	if (env->timeout_ms < 0) {
		rpc_reply_error(reply, RPC_INVALID_ARGUMENT, "bad_field",
		    "invalid timeout_ms: %" PRId64 " is negative", env->timeout_ms);
		rpc_refusal_note(it->frame->pipe, "bad_field", env->method);
		return;
	}
	int64_t deadline = rpc_call_deadline(env, it->frame->recv_ms);
	if (deadline > 0 && deadline <= clock_mono_ms()) {
		rpc_reply_error(reply, RPC_DEADLINE_EXCEEDED, "deadline",
		    "deadline passed before the call was served");
		return;
	}
	/* who may call what (authz.h), before anything serves the call */
	unsigned roles = it->frame->roles;
	enum authz_verdict v = authz_decide(env->method, roles);
	if (v == AUTHZ_UNKNOWN_METHOD && !s->open_methods) {
		rpc_reply_error(reply, RPC_UNIMPLEMENTED, "unknown_method", "unknown method \"%s\"",
		    env->method);
		rpc_refusal_note(it->frame->pipe, "unknown_method", env->method);
		return;
	}
	if (v == AUTHZ_UNAUTHENTICATED || v == AUTHZ_PERMISSION_DENIED) {
		char peer[96], have[64];
		authz_note_refusal(
		    v, env->method, roles, rpc_peer(it->frame->pipe, peer, sizeof peer));
		if (v == AUTHZ_UNAUTHENTICATED)
			rpc_reply_error(reply, RPC_UNAUTHENTICATED, "unauthenticated",
			    "%s needs a verified client certificate", env->method);
		else
			rpc_reply_error(reply, RPC_PERMISSION_DENIED, "permission_denied",
			    "the caller's role (%s) may not call %s (docs/security.md)",
			    authz_role_names(roles, have, sizeof have), env->method);
		return;
	}
	*call = (rpc_request) {
	    .method = env->method,
	    .request_id = env->request_id,
	    .deadline_mono_ms = deadline,
	    .payload = env->payload.data,
	    .payload_len = env->payload.len,
	    .in_batch = it->frame->batch,
	    .held = it->frame->batch ? NULL : it,
	    .roles = roles,
	    .pipe = it->frame->pipe,
	};
	/* the server's own services (Health, Admin) before fault injection
	 * and the daemon's handler */
	for (const rpc_service *const *sv = s->ops->services; sv && *sv; sv++) {
		size_t n = strlen((*sv)->name);
		if (env->method[0] == '/' && strncmp(env->method + 1, (*sv)->name, n) == 0
		    && env->method[n + 1] == '/') {
			(*sv)->handle((*sv)->ctx, call, reply);
			return;
		}
	}
	/* failure injection (fault.h): off unless armed */
	int64_t delay_ms = 0;
	if (fault_check(FAULT_DELAY, env->method, &delay_ms))
		nng_msleep((nng_duration)delay_ms);
	if (fault_check(FAULT_DROP_REQUEST, env->method, NULL)) {
		it->drop = true;
		return;
	}
	if (fault_check(FAULT_UNAVAILABLE, env->method, NULL)) {
		rpc_reply_error(
		    reply, RPC_UNAVAILABLE, "fault_injected", "unavailable (injected fault)");
		return;
	}
	it->answered = false;
}

/* rpc_encode_batch_reply packs the replies of a batch frame's calls (those
 * not dropped) into one reply frame, or NULL when out of memory. */
nng_msg *rpc_encode_batch_reply(const rpc_frame *f, const rpc_item *items)
{
	Sagas__V1__ReplyEnvelope *rs = calloc(f->n, sizeof *rs);
	Sagas__V1__ReplyEnvelope **ptrs = calloc(f->n, sizeof *ptrs);
	nng_msg *m = NULL;
	if (rs != NULL && ptrs != NULL) {
		size_t k = 0;
		for (size_t i = 0; i < f->n; i++) {
			const rpc_item *it = &items[f->first + i];
			if (it->drop)
				continue; /* the client times the call out */
			rpc_reply_envelope(&rs[k], &it->reply, it->request_id);
			ptrs[k] = &rs[k];
			k++;
		}
		Sagas__V1__ReplyEnvelope env = SAGAS__V1__REPLY_ENVELOPE__INIT;
		env.request_id = (char *)f->request_id;
		env.code = RPC_OK;
		env.message = env.reason = "";
		env.n_replies = k;
		env.replies = ptrs;
		size_t n = sagas__v1__reply_envelope__get_packed_size(&env);
		if (nng_msg_alloc(&m, n) == 0)
			sagas__v1__reply_envelope__pack(&env, nng_msg_body(m));
		else
			m = NULL;
	}
	free(rs);
	free(ptrs);
	return m;
}
