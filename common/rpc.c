#include "rpc.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nng/nng.h>
#include <nng/protocol/reqrep0/rep.h>
#include <nng/protocol/reqrep0/req.h>
#include <nng/supplemental/util/platform.h>

#include "admin.h"
#include "clock.h"
#include "fault.h"
#include "health.h"
#include "log.h"
#include "sagas/v1/rpc.pb-c.h"
#include "valid.h"

const char *rpc_code_name(int code)
{
	static const char *names[] = {"OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT",
	    "DEADLINE_EXCEEDED", "NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED",
	    "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED",
	    "INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED"};
	if (code < 0 || code > 16)
		return "UNKNOWN_CODE";
	return names[code];
}

/* rpc_errno maps an nng error to a negative errno: the one place that does. */
static int rpc_errno(int nng_rv)
{
	switch (nng_rv) {
	case 0:
		return 0;
	case NNG_ENOMEM:
		return -ENOMEM;
	case NNG_EADDRINUSE:
		return -EADDRINUSE;
	case NNG_EINVAL:
	case NNG_EADDRINVAL:
		return -EINVAL;
	case NNG_ETIMEDOUT:
		return -ETIMEDOUT;
	case NNG_ECLOSED:
		return -ESHUTDOWN;
	case NNG_EMSGSIZE:
		return -EMSGSIZE;
	case NNG_ECONNREFUSED:
		return -ECONNREFUSED;
	default:
		return -EIO;
	}
}

int rpc_reply_ok(rpc_reply *r, const ProtobufCMessage *msg)
{
	free(r->payload);
	r->payload = NULL;
	r->payload_len = 0;
	r->code = RPC_OK;
	r->reason[0] = r->message[0] = '\0';
	size_t n = protobuf_c_message_get_packed_size(msg);
	r->payload = malloc(n ? n : 1);
	if (r->payload == NULL) {
		rpc_reply_error(r, RPC_INTERNAL, "", "out of memory");
		return -ENOMEM;
	}
	r->payload_len = protobuf_c_message_pack(msg, r->payload);
	return 0;
}

void rpc_reply_error(rpc_reply *r, int code, const char *reason, const char *fmt, ...)
{
	free(r->payload);
	r->payload = NULL;
	r->payload_len = 0;
	r->code = code;
	valid_utf8_copy(r->reason, sizeof r->reason, reason ? reason : "");
	/* formatted whole (up to 4 times the room), then cut at a character
	 * boundary: a message quoting a long method or name stays UTF-8 */
	char text[4 * RPC_MESSAGE_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(text, sizeof text, fmt, ap);
	va_end(ap);
	valid_utf8_copy(r->message, sizeof r->message, text);
}

/* ---- server ----
 *
 * RPC_SERVER_CONTEXTS REP contexts ("slots") receive concurrently, each
 * through its own aio. A received request is put on the server's queue; a
 * worker takes everything queued (up to RPC_BATCH_MAX), serves it, and sends
 * each reply on its slot's context; the send's completion starts the slot's
 * next receive. A slot is owned by exactly one party at a time: nng while a
 * receive or send is under way, the queue, or one worker. */

struct rpc_server;

enum { RPC_SLOT_RECV, RPC_SLOT_SEND };

typedef struct rpc_slot {
	struct rpc_server *srv;
	nng_ctx ctx;
	nng_aio *aio;
	int state;                               /* RPC_SLOT_RECV or RPC_SLOT_SEND */
	nng_msg *msg;                            /* the request, from receive until served */
	struct rpc_slot *next;                   /* queue link */
	char request_id[RPC_REQUEST_ID_MAX + 1]; /* of a held call */
	uint32_t pipe;                           /* of a held call */
	int64_t recv_ms;                         /* clock_mono_ms when the request arrived */
} rpc_slot;

typedef struct rpc_worker {
	struct rpc_server *srv;
	nng_thread *thread;
	int index;
} rpc_worker;

struct rpc_server {
	nng_socket sock;
	const rpc_server_ops *ops;
	void *app;
	nng_mtx *mtx; /* guards the queue, closing and the counts below */
	nng_cv *cv;
	rpc_slot *qhead, *qtail;
	bool closing;
	bool lingering;         /* a worker waits for more calls (ops->linger_us) */
	atomic_bool closing_cb; /* closing, for the slot callbacks */
	int held;               /* calls held (rpc_hold) and not yet answered */
	int sending;            /* replies handed to nng and not yet sent */
	rpc_slot *slots;
	int nslots;
	int nworkers;
	rpc_worker *workers;
};

/* One received frame while a worker serves it: a plain call, or a batch
 * (RPC_BATCH_METHOD) whose calls are served with the other frames' calls and
 * answered together in one reply frame. */
typedef struct rpc_frame {
	rpc_slot *slot;
	nng_msg *msg; /* the request frame, taken from the slot: a held call's slot
	                 may receive the next request while this one is served */
	Sagas__V1__RequestEnvelope *env; /* NULL when it did not decode */
	bool batch;                      /* env->calls are the calls */
	bool answered;                   /* refused as a whole: `reply` answers it */
	rpc_reply reply;
	char request_id[RPC_REQUEST_ID_MAX + 1];
	size_t first, n; /* its calls: items[first .. first + n) */
	int64_t recv_ms; /* clock_mono_ms when the frame arrived */
} rpc_frame;

/* The decoded form of one call while a worker serves it. */
typedef struct rpc_item {
	rpc_frame *frame;
	const Sagas__V1__RequestEnvelope *env; /* the call's envelope (borrowed) */
	rpc_reply reply;
	char request_id[RPC_REQUEST_ID_MAX + 1];
	bool answered; /* reply already final (refused at the edge, health, admin) */
	bool drop;     /* send no reply (fault drop_request or drop_reply) */
	bool held;     /* rpc_hold: the reply comes later, rpc_held_reply */
} rpc_item;

rpc_held *rpc_hold(const rpc_request *call)
{
	rpc_item *it = call->held;
	if (it == NULL)
		return NULL; /* a call inside a batch is answered with the batch */
	it->held = true;
	rpc_slot *sl = it->frame->slot;
	memcpy(sl->request_id, it->request_id, sizeof it->request_id);
	sl->pipe = nng_pipe_id(nng_msg_get_pipe(it->frame->msg));
	rpc_server *s = sl->srv;
	nng_mtx_lock(s->mtx);
	s->held++;
	nng_mtx_unlock(s->mtx);
	return (rpc_held *)sl;
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
static nng_msg *rpc_encode_reply(const rpc_reply *reply, const char *request_id)
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

static void rpc_slot_recv(rpc_slot *sl)
{
	sl->state = RPC_SLOT_RECV;
	nng_ctx_recv(sl->ctx, sl->aio);
}

/* rpc_slot_send hands the reply `out` to nng on the slot's context; its
 * completion (rpc_slot_cb) starts the slot's next receive. */
static void rpc_slot_send(rpc_slot *sl, nng_msg *out)
{
	rpc_server *s = sl->srv;
	nng_mtx_lock(s->mtx);
	s->sending++;
	nng_mtx_unlock(s->mtx);
	sl->state = RPC_SLOT_SEND;
	nng_aio_set_msg(sl->aio, out);
	nng_ctx_send(sl->ctx, sl->aio);
}

/* rpc_slot_cb runs on an nng thread when a slot's receive or send ends. */
static void rpc_slot_cb(void *arg)
{
	rpc_slot *sl = arg;
	rpc_server *s = sl->srv;
	int rv = nng_aio_result(sl->aio);
	/* while stopping, a slot never receives again: nng completes the sends
	 * a closing pipe drops as if they were sent, and a receive started
	 * while the socket closes panics or hangs nng 1.5.2 */
	bool closing = atomic_load(&s->closing_cb);
	if (sl->state == RPC_SLOT_SEND) {
		if (rv != 0)
			nng_msg_free(nng_aio_get_msg(sl->aio)); /* not handed over */
		nng_mtx_lock(s->mtx);
		if (--s->sending == 0 && s->closing)
			nng_cv_wake(s->cv);
		nng_mtx_unlock(s->mtx);
		if (rv == NNG_ECLOSED || closing)
			return;
		rpc_slot_recv(sl);
		return;
	}
	if (rv == NNG_ECLOSED || closing) {
		if (rv == 0)
			nng_msg_free(nng_aio_get_msg(sl->aio)); /* too late to serve */
		return;
	}
	if (rv != 0) {
		/* a receive can only fail when closing or out of memory; try
		 * again rather than lose the slot */
		rpc_slot_recv(sl);
		return;
	}
	sl->msg = nng_aio_get_msg(sl->aio);
	sl->recv_ms = clock_mono_ms(); /* a call's timeout counts from here */
	sl->next = NULL;
	nng_mtx_lock(s->mtx);
	if (s->qtail)
		s->qtail->next = sl;
	else
		s->qhead = sl;
	s->qtail = sl;
	bool wake = !s->lingering; /* a lingering worker takes it when it wakes */
	nng_mtx_unlock(s->mtx);
	/* after the unlock, so the worker woken does not block on s->mtx
	 * still held here; rpc_server_free stops every slot's aio (waiting
	 * for this callback) before it frees the cv */
	if (wake)
		nng_cv_wake1(s->cv);
}

/* rpc_server_open_frame decodes a request frame and says how many calls
 * it carries (f->n): 1 for a plain envelope, its calls for a batch, 0 when
 * it is refused as a whole (f->answered: undecodable, or a bad batch). */
static void rpc_server_open_frame(rpc_frame *f)
{
	f->env
	    = sagas__v1__request_envelope__unpack(NULL, nng_msg_len(f->msg), nng_msg_body(f->msg));
	f->n = 0;
	if (f->env == NULL) {
		f->answered = true;
		rpc_reply_error(&f->reply, RPC_INVALID_ARGUMENT, "malformed_envelope",
		    "could not decode request envelope");
		return;
	}
	if (strcmp(f->env->method, RPC_BATCH_METHOD) != 0) {
		f->n = 1; /* a plain call: rpc_server_decode checks the rest */
		return;
	}
	size_t idlen = strlen(f->env->request_id);
	f->answered = true;
	if (idlen > RPC_REQUEST_ID_MAX || !valid_utf8(f->env->request_id, idlen)) {
		rpc_reply_error(&f->reply, RPC_INVALID_ARGUMENT, "bad_field",
		    "invalid request_id: at most %d bytes of UTF-8", RPC_REQUEST_ID_MAX);
		return;
	}
	memcpy(f->request_id, f->env->request_id, idlen + 1);
	if (f->env->n_calls < 1 || f->env->n_calls > RPC_BATCH_CALLS_MAX) {
		rpc_reply_error(&f->reply, RPC_INVALID_ARGUMENT, "bad_field",
		    "invalid calls: a batch carries 1 to %d calls, got %zu", RPC_BATCH_CALLS_MAX,
		    f->env->n_calls);
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
 * monotonic clock (ms), for a frame that arrived at `recv_ms` (monotonic):
 * arrival + timeout_ms, a duration, so no clocks of two hosts are compared
 * (docs/saga-semantics.md, rule T3). An envelope without timeout_ms (a client
 * older than it) is read by its absolute deadline_unix_ms, compared with
 * this host's wall clock as before. 0: the call has no deadline. */
static int64_t rpc_call_deadline(const Sagas__V1__RequestEnvelope *env, int64_t recv_ms)
{
	if (env->timeout_ms > 0)
		return recv_ms + env->timeout_ms;
	if (env->deadline_unix_ms > 0) {
		int64_t left = env->deadline_unix_ms - clock_wall_ms();
		int64_t now = clock_mono_ms();
		return left > 0 ? now + left : now; /* passed: due now */
	}
	return 0;
}

/* rpc_server_decode checks one call's envelope and answers what the server
 * answers itself: a bad field, a passed deadline, Health, Admin, and the
 * fault points before the handler. Sets it->answered or it->drop when the
 * handler must not see the call, and fills *call otherwise. */
static void rpc_server_decode(rpc_server *s, rpc_item *it, rpc_request *call)
{
	const Sagas__V1__RequestEnvelope *env = it->env;
	rpc_reply *reply = &it->reply;
	it->answered = true;
	size_t idlen = strlen(env->request_id);
	if (idlen > RPC_REQUEST_ID_MAX || !valid_utf8(env->request_id, idlen)) {
		rpc_reply_error(reply, RPC_INVALID_ARGUMENT, "bad_field",
		    "invalid request_id: at most %d bytes of UTF-8", RPC_REQUEST_ID_MAX);
		return;
	}
	memcpy(it->request_id, env->request_id, idlen + 1);
	if (!valid_utf8(env->method, strlen(env->method))) {
		rpc_reply_error(
		    reply, RPC_INVALID_ARGUMENT, "bad_field", "invalid method: not UTF-8");
		return;
	}
	if (strcmp(env->method, RPC_BATCH_METHOD) == 0) {
		rpc_reply_error(reply, RPC_INVALID_ARGUMENT, "bad_field",
		    "invalid calls: a batch inside a batch");
		return;
	}
	if (env->n_calls > 0) {
		rpc_reply_error(reply, RPC_INVALID_ARGUMENT, "bad_field",
		    "invalid calls: only %s carries calls", RPC_BATCH_METHOD);
		return;
	}
	if (it->frame->batch && !rpc_batchable(s, env->method)) {
		rpc_reply_error(reply, RPC_INVALID_ARGUMENT, "bad_field",
		    "invalid method: \"%s\" cannot travel in a batch; send it alone", env->method);
		return;
	}
	if (env->timeout_ms < 0) {
		rpc_reply_error(reply, RPC_INVALID_ARGUMENT, "bad_field",
		    "invalid timeout_ms: %" PRId64 " is negative", env->timeout_ms);
		return;
	}
	int64_t deadline = rpc_call_deadline(env, it->frame->recv_ms);
	if (deadline > 0 && deadline <= clock_mono_ms()) {
		rpc_reply_error(reply, RPC_DEADLINE_EXCEEDED, "deadline",
		    "deadline passed before the call was served");
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
	};
	/* Health and Admin before fault injection and the daemon's handler */
	if (health_handle(call, reply, s->ops->service, s->ops->healthy, s->app))
		return;
	if (admin_handle(call, reply))
		return;
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
static nng_msg *rpc_encode_batch_reply(const rpc_frame *f, const rpc_item *items)
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

/* rpc_server_reply sends a frame's reply on its slot (or, for a dropped
 * call, abandons the request by receiving again), and frees the frame's
 * request and its calls' replies. */
static void rpc_server_reply(rpc_frame *f, rpc_item *items)
{
	rpc_slot *sl = f->slot;
	nng_msg *out = NULL;
	bool held = false;
	if (f->answered) {
		out = rpc_encode_reply(&f->reply, f->request_id);
	} else if (f->batch) {
		out = rpc_encode_batch_reply(f, items);
	} else {
		rpc_item *it = &items[f->first];
		held = it->held;
		if (!it->drop && !held)
			out = rpc_encode_reply(&it->reply, it->request_id);
	}
	free(f->reply.payload);
	for (size_t i = 0; i < f->n; i++)
		free(items[f->first + i].reply.payload);
	if (f->env)
		sagas__v1__request_envelope__free_unpacked(f->env, NULL);
	nng_msg_free(f->msg);
	f->msg = NULL;
	if (held)
		return; /* the slot is rpc_held_reply's now (it may have run already) */
	if (out == NULL) {
		/* dropped, or out of memory: the next receive on this context
		 * abandons the request; the client times out and retries */
		rpc_slot_recv(sl);
		return;
	}
	rpc_slot_send(sl, out);
}

uint32_t rpc_held_pipe(const rpc_held *h)
{
	return ((const rpc_slot *)h)->pipe;
}

/* rpc_pipe_cb: nng says a client connection closed (NNG_PIPE_EV_REM_POST,
 * under the socket's lock). */
static void rpc_pipe_cb(nng_pipe p, nng_pipe_ev ev, void *arg)
{
	rpc_server *s = arg;
	if (ev == NNG_PIPE_EV_REM_POST && s->ops->pipe_closed)
		s->ops->pipe_closed(s->app, nng_pipe_id(p));
}

void rpc_held_reply(rpc_held *h, rpc_reply *reply)
{
	rpc_slot *sl = (rpc_slot *)h;
	rpc_server *s = sl->srv;
	nng_msg *out = rpc_encode_reply(reply, sl->request_id);
	free(reply->payload);
	reply->payload = NULL;
	reply->payload_len = 0;
	if (out == NULL) {
		if (!atomic_load(&s->closing_cb))
			rpc_slot_recv(sl); /* out of memory: the client times out */
	} else {
		rpc_slot_send(sl, out);
	}
	/* counted down after the send is counted up: no instant with neither */
	nng_mtx_lock(s->mtx);
	if (--s->held == 0 && s->closing)
		nng_cv_wake(s->cv);
	nng_mtx_unlock(s->mtx);
}

/* rpc_server_handle runs the daemon's handler on the `m` calls at idx[]:
 * as batches of up to RPC_BATCH_MAX when it has handle_batch and no fault
 * is armed, else one by one with the fault points after the handler. */
static void rpc_server_handle(
    rpc_server *s, void *wstate, rpc_item *items, rpc_request *calls, const size_t *idx, size_t m)
{
	if (m > 0 && s->ops->handle_batch != NULL && !fault_any()) {
		rpc_reply replies[RPC_BATCH_MAX];
		for (size_t at = 0; at < m; at += RPC_BATCH_MAX) {
			size_t k = m - at < RPC_BATCH_MAX ? m - at : RPC_BATCH_MAX;
			memset(replies, 0, k * sizeof *replies);
			s->ops->handle_batch(s->app, wstate, calls + at, replies, k);
			for (size_t j = 0; j < k; j++)
				items[idx[at + j]].reply = replies[j];
		}
		return;
	}
	for (size_t k = 0; k < m; k++) {
		rpc_item *it = &items[idx[k]];
		s->ops->handle(s->app, wstate, &calls[k], &it->reply);
		fault_exit_if(FAULT_EXIT_AFTER_COMMIT, calls[k].method);
		it->drop = fault_check(FAULT_DROP_REPLY, calls[k].method, NULL);
	}
}

/* rpc_server_serve serves the `n` frames a worker took at once: the
 * server's own answers first, then the daemon's handler for the calls of
 * all the frames together (rpc_server_handle), then one reply per frame. */
/* rpc_server_take_frames opens the frames of taken[from .. to) into
 * frames[from .. to) (rpc_server_open_frame). */
static void rpc_server_take_frames(rpc_frame *frames, rpc_slot **taken, size_t from, size_t to)
{
	for (size_t i = from; i < to; i++) {
		rpc_frame *f = &frames[i];
		memset(f, 0, sizeof *f);
		f->slot = taken[i];
		f->msg = taken[i]->msg;
		f->recv_ms = taken[i]->recv_ms;
		taken[i]->msg = NULL;
		rpc_server_open_frame(f);
	}
}

/* rpc_server_serve serves the `n` opened frames (rpc_server_take_frames)
 * as one batch and sends their replies. */
static void rpc_server_serve(rpc_server *s, void *wstate, rpc_frame *frames, size_t n)
{
	size_t total = 0;
	for (size_t i = 0; i < n; i++) {
		frames[i].first = total;
		total += frames[i].n;
	}
	rpc_item *items = calloc(total ? total : 1, sizeof *items);
	rpc_request *calls = calloc(total ? total : 1, sizeof *calls);
	size_t *idx = calloc(total ? total : 1, sizeof *idx);
	if (items == NULL || calls == NULL || idx == NULL) {
		for (size_t i = 0; i < n; i++) {
			frames[i].n = 0;
			frames[i].answered = true;
			rpc_reply_error(
			    &frames[i].reply, RPC_RESOURCE_EXHAUSTED, "", "out of memory");
		}
		total = 0;
	}
	size_t m = 0;
	for (size_t i = 0; i < n; i++) {
		rpc_frame *f = &frames[i];
		for (size_t k = 0; k < f->n; k++) {
			rpc_item *it = &items[f->first + k];
			it->frame = f;
			it->env = f->batch ? f->env->calls[k] : f->env;
			rpc_server_decode(s, it, &calls[m]);
			if (!it->answered && !it->drop)
				idx[m++] = f->first + k;
		}
	}
	rpc_server_handle(s, wstate, items, calls, idx, m);
	for (size_t i = 0; i < n; i++)
		rpc_server_reply(&frames[i], items);
	free(items);
	free(calls);
	free(idx);
}

/* rpc_queue_take moves queued slots into taken[n ..] until `max` are taken
 * or the queue is empty; returns the new count. Caller holds s->mtx. */
static size_t rpc_queue_take(rpc_server *s, rpc_slot **taken, size_t n, size_t max)
{
	while (s->qhead != NULL && n < max) {
		taken[n++] = s->qhead;
		s->qhead = s->qhead->next;
	}
	if (s->qhead == NULL)
		s->qtail = NULL;
	return n;
}

static void rpc_worker_main(void *arg)
{
	rpc_worker *w = arg;
	rpc_server *s = w->srv;
	void *wstate = NULL;
	if (s->ops->worker_init && s->ops->worker_init(s->app, &wstate) != 0) {
		log_error(NULL, "rpc worker %d could not start", w->index);
		return;
	}
	rpc_slot *taken[RPC_BATCH_MAX];
	rpc_frame *frames = calloc(RPC_BATCH_MAX, sizeof *frames);
	rpc_linger_frame lf[RPC_BATCH_MAX];
	if (frames == NULL) {
		log_error(NULL, "rpc worker %d could not start: out of memory", w->index);
		if (s->ops->worker_fini)
			s->ops->worker_fini(s->app, wstate);
		return;
	}
	for (;;) {
		nng_mtx_lock(s->mtx);
		/* while one worker lingers, the queue is its own */
		while (!s->closing && (s->qhead == NULL || s->lingering))
			nng_cv_wait(s->cv);
		if (s->closing) {
			nng_mtx_unlock(s->mtx);
			break;
		}
		/* one call at a time while a fault is armed, so each fault
		 * point fires for exactly the call it names */
		size_t max = fault_any() ? 1 : RPC_BATCH_MAX;
		size_t n = rpc_queue_take(s, taken, 0, max), opened = 0;
		/* fewer than max taken: the queue is empty, and no one lingers
		 * (the wait above) */
		if (n < max && s->ops->linger_us && s->ops->handle_batch) {
			/* batching under load: the daemon may wait a little for
			 * more calls, which queue for this worker alone
			 * (rpc_slot_cb), depending on what it took */
			s->lingering = true;
			nng_mtx_unlock(s->mtx);
			rpc_server_take_frames(frames, taken, 0, n);
			opened = n;
			for (size_t i = 0; i < n; i++) {
				const Sagas__V1__RequestEnvelope *env = frames[i].env;
				lf[i].method = env != NULL ? env->method : "";
				lf[i].payload = env != NULL ? env->payload.data : NULL;
				lf[i].payload_len = env != NULL ? env->payload.len : 0;
			}
			clock_sleep_us(s->ops->linger_us(s->app, lf, n));
			nng_mtx_lock(s->mtx);
			s->lingering = false;
			n = rpc_queue_take(s, taken, n, max);
		}
		if (s->qhead != NULL)
			nng_cv_wake1(s->cv); /* more for another worker */
		nng_mtx_unlock(s->mtx);
		rpc_server_take_frames(frames, taken, opened, n);
		rpc_server_serve(s, wstate, frames, n);
	}
	free(frames);
	if (s->ops->worker_fini)
		s->ops->worker_fini(s->app, wstate);
}

/* rpc_server_free frees what rpc_server_start made; the socket is closed
 * and no worker runs. */
static void rpc_server_free(rpc_server *s)
{
	for (int i = 0; i < s->nslots; i++) {
		rpc_slot *sl = &s->slots[i];
		if (sl->aio) {
			nng_aio_stop(sl->aio); /* waits for its callback */
			nng_aio_free(sl->aio);
		}
	}
	/* requests received but never served */
	for (rpc_slot *sl = s->qhead; sl; sl = sl->next)
		nng_msg_free(sl->msg);
	free(s->slots);
	free(s->workers);
	if (s->cv)
		nng_cv_free(s->cv);
	if (s->mtx)
		nng_mtx_free(s->mtx);
	free(s);
}

/* How long rpc_server_stop waits for replies under way, and then for the
 * pipes to write them (ms). */
#define RPC_STOP_DRAIN_MS 2000
#define RPC_STOP_FLUSH_MS 100

/* rpc_server_close_and_join stops the queue, joins the workers, lets the
 * replies under way go out and closes the socket. */
static void rpc_server_close_and_join(rpc_server *s)
{
	nng_mtx_lock(s->mtx);
	s->closing = true;
	atomic_store(&s->closing_cb, true);
	nng_cv_wake(s->cv);
	nng_mtx_unlock(s->mtx);
	/* the workers finish the batch they serve and send its replies */
	for (int i = 0; i < s->nworkers; i++)
		nng_thread_destroy(s->workers[i].thread); /* joins */
	s->nworkers = 0;
	/* the replies already handed over, and those of held calls answered
	 * meanwhile (the orchestrator answers its waits before it stops),
	 * reach their clients before the socket closes */
	nng_time until = nng_clock() + RPC_STOP_DRAIN_MS;
	nng_mtx_lock(s->mtx);
	bool sent_any = s->held > 0 || s->sending > 0;
	while ((s->held > 0 || s->sending > 0) && nng_clock() < until)
		nng_cv_until(s->cv, until);
	nng_mtx_unlock(s->mtx);
	if (sent_any)
		nng_msleep(RPC_STOP_FLUSH_MS); /* the pipes write what they took */
	nng_close(s->sock); /* every receive and send left ends with NNG_ECLOSED */
}

int rpc_server_start(rpc_server **out, const char *url, int workers, int contexts, size_t max_msg,
    const rpc_server_ops *ops, void *app)
{
	if (contexts == 0)
		contexts = RPC_SERVER_CONTEXTS;
	if (workers < 1 || workers > 256 || contexts < 1 || contexts > 65536 || ops == NULL
	    || ops->handle == NULL)
		return -EINVAL;
	rpc_server *s = calloc(1, sizeof *s);
	if (s == NULL)
		return -ENOMEM;
	s->ops = ops;
	s->app = app;
	int rv = nng_mtx_alloc(&s->mtx);
	if (rv == 0)
		rv = nng_cv_alloc(&s->cv, s->mtx);
	if (rv != 0) {
		rpc_server_free(s);
		return rpc_errno(rv);
	}
	rv = nng_rep0_open(&s->sock);
	if (rv != 0) {
		rpc_server_free(s);
		return rpc_errno(rv);
	}
	nng_socket_set_size(s->sock, NNG_OPT_RECVMAXSZ, max_msg ? max_msg : RPC_MAX_MSG_DEFAULT);
	if (ops->pipe_closed)
		nng_pipe_notify(s->sock, NNG_PIPE_EV_REM_POST, rpc_pipe_cb, s);
	s->slots = calloc((size_t)contexts, sizeof *s->slots);
	s->workers = calloc((size_t)workers, sizeof *s->workers);
	if (s->slots == NULL || s->workers == NULL) {
		rv = NNG_ENOMEM;
		goto out_close;
	}
	for (int i = 0; i < contexts; i++) {
		rpc_slot *sl = &s->slots[i];
		sl->srv = s;
		rv = nng_aio_alloc(&sl->aio, rpc_slot_cb, sl);
		if (rv != 0)
			goto out_close;
		s->nslots++;
		rv = nng_ctx_open(&sl->ctx, s->sock);
		if (rv != 0)
			goto out_close;
	}
	rv = nng_listen(s->sock, url, NULL, 0);
	if (rv != 0) {
		log_error(NULL, "could not listen on %s: %s", url, nng_strerror(rv));
		goto out_close;
	}
	for (int i = 0; i < workers; i++) {
		s->workers[i].srv = s;
		s->workers[i].index = i;
		rv = nng_thread_create(&s->workers[i].thread, rpc_worker_main, &s->workers[i]);
		if (rv != 0) {
			rpc_server_close_and_join(s);
			rpc_server_free(s);
			return rpc_errno(rv);
		}
		s->nworkers++;
	}
	for (int i = 0; i < s->nslots; i++)
		rpc_slot_recv(&s->slots[i]);
	*out = s;
	return 0;
out_close:
	nng_close(s->sock);
	rpc_server_free(s);
	return rpc_errno(rv);
}

void rpc_server_stop(rpc_server *s)
{
	if (s == NULL)
		return;
	rpc_server_close_and_join(s);
	rpc_server_free(s);
}

/* ---- client ----
 *
 * Timeouts. A call's deadline is kept by the client's own timer thread,
 * never by nng's aio timeouts (nng_aio_set_timeout, NNG_OPT_RECVTIMEO):
 * with nng 1.5.2 the "nng:aio:expire" thread takes an expired aio's cancel
 * function and its argument (our REQ context) under its lock, drops the lock
 * and calls it; when the reply lands in that window, our callback closes the
 * context and the expire thread then cancels on a freed context (SIGSEGV on
 * a null pointer in that thread, or heap corruption, under a burst of
 * commands timing out). The timer thread instead cancels with nng_aio_cancel
 * while holding c->mtx, and a call unlinks itself from the timer under c->mtx
 * before it closes its context, so a context is never closed while it is
 * being cancelled. tests/unit/test_rpc_timeout_storm.c is the reproducer. */

typedef struct rpc_pending rpc_pending;

struct rpc_client {
	nng_socket sock;
	rpc_client_opts opts;
	atomic_uint_fast64_t next_id;
	nng_mtx *mtx; /* guards everything below and every rpc_pending's timer fields */
	nng_cv *cv;
	nng_thread *timer;
	rpc_pending *head, *tail; /* calls awaiting their deadline, earliest first */
	int64_t timer_until;      /* clock_mono_ms the timer thread sleeps until */
	long calls;               /* calls started and not yet finished */
	bool closing;
};

bool rpc_url_ok(const char *url)
{
	static const char *const schemes[]
	    = {"tcp://", "tcp4://", "tcp6://", "ipc://", "inproc://", "abstract://", "ws://"};
	if (url == NULL)
		return false;
	for (size_t i = 0; i < sizeof schemes / sizeof schemes[0]; i++) {
		size_t n = strlen(schemes[i]);
		if (strncmp(url, schemes[i], n) == 0 && url[n] != '\0')
			return true;
	}
	return false;
}

static void rpc_timer_main(void *arg);

/* The longest the timer thread sleeps with no call in flight (ms): a call
 * whose deadline comes later then needs no wake-up of its own. */
#define RPC_TIMER_IDLE_MS 1000

static void rpc_client_free(rpc_client *c)
{
	if (c->cv)
		nng_cv_free(c->cv);
	if (c->mtx)
		nng_mtx_free(c->mtx);
	free(c);
}

int rpc_client_open(rpc_client **out, const char *url, const rpc_client_opts *opts)
{
	rpc_client *c = calloc(1, sizeof *c);
	if (c == NULL)
		return -ENOMEM;
	if (opts)
		c->opts = *opts;
	if (c->opts.max_msg == 0)
		c->opts.max_msg = RPC_MAX_MSG_DEFAULT;
	if (nng_mtx_alloc(&c->mtx) != 0 || nng_cv_alloc(&c->cv, c->mtx) != 0) {
		rpc_client_free(c);
		return -ENOMEM;
	}
	int rv = nng_req0_open(&c->sock);
	if (rv != 0) {
		rpc_client_free(c);
		return rpc_errno(rv);
	}
	/* REQ resends every 60 s by default; make it explicit (house style) */
	nng_socket_set_ms(c->sock, NNG_OPT_REQ_RESENDTIME,
	    c->opts.resend_ms > 0 ? (nng_duration)c->opts.resend_ms : NNG_DURATION_INFINITE);
	nng_socket_set_size(c->sock, NNG_OPT_RECVMAXSZ, c->opts.max_msg);
	nng_socket_set_ms(c->sock, NNG_OPT_RECONNMINT, 50);
	nng_socket_set_ms(c->sock, NNG_OPT_RECONNMAXT, 1000);
	rv = nng_dial(c->sock, url, NULL, c->opts.connect_now ? 0 : NNG_FLAG_NONBLOCK);
	if (rv != 0) {
		if (!c->opts.connect_now) /* the CLI reports it itself */
			log_error(NULL, "could not dial %s: %s", url, nng_strerror(rv));
		nng_close(c->sock);
		rpc_client_free(c);
		return rpc_errno(rv);
	}
	atomic_init(&c->next_id, 1);
	rv = nng_thread_create(&c->timer, rpc_timer_main, c);
	if (rv != 0) {
		nng_close(c->sock);
		rpc_client_free(c);
		return rpc_errno(rv);
	}
	*out = c;
	return 0;
}

void rpc_client_close(rpc_client *c)
{
	if (c == NULL)
		return;
	/* every call in flight completes (ECLOSED: UNAVAILABLE); wait for
	 * their callbacks to be done with c before freeing it */
	nng_close(c->sock);
	nng_mtx_lock(c->mtx);
	c->closing = true;
	nng_cv_wake(c->cv);
	nng_time until = nng_clock() + 10000;
	while (c->calls > 0 && nng_clock() < until)
		nng_cv_until(c->cv, until);
	long left = c->calls;
	nng_mtx_unlock(c->mtx);
	nng_thread_destroy(c->timer); /* joins */
	if (left > 0) {
		/* never seen; leaking beats freeing under a late callback */
		log_error(NULL, "rpc client closed with %ld calls unfinished", left);
		return;
	}
	rpc_client_free(c);
}

/* The bytes REQ puts before the body (the request id), which count
 * against the server's frame limit. */
#define RPC_REQ_HEADER 4

/* Room for a client request id: a uint64 in decimal. */
#define RPC_RID_MAX 24

/* rpc_pack_envelope packs `env` into a new frame; NULL (and *err) when it
 * is over max_msg or out of memory. */
static nng_msg *rpc_pack_envelope(rpc_client *c, const Sagas__V1__RequestEnvelope *env, int *err)
{
	size_t n = sagas__v1__request_envelope__get_packed_size(env);
	nng_msg *m = NULL;
	if (n + RPC_REQ_HEADER > c->opts.max_msg) {
		*err = -EMSGSIZE;
	} else if (nng_msg_alloc(&m, n) != 0) {
		*err = -ENOMEM;
		m = NULL;
	} else {
		sagas__v1__request_envelope__pack(env, nng_msg_body(m));
	}
	return m;
}

/* rpc_pack_payload encodes `req` into a malloc'd buffer (*len bytes). */
static uint8_t *rpc_pack_payload(const ProtobufCMessage *req, size_t *len)
{
	size_t plen = protobuf_c_message_get_packed_size(req);
	uint8_t *pbuf = malloc(plen ? plen : 1);
	if (pbuf != NULL)
		*len = protobuf_c_message_pack(req, pbuf);
	return pbuf;
}

/* rpc_envelope_init fills `env` for a call of `method` with the payload
 * `pbuf` (`plen` bytes, borrowed) and a timeout of `timeout_ms` (0: none), with the client's next
 * request id written into `rid`. Returns that id. */
static uint64_t rpc_envelope_init(rpc_client *c, Sagas__V1__RequestEnvelope *env,
    const char *method, char rid[RPC_RID_MAX], int64_t timeout_ms, uint8_t *pbuf, size_t plen)
{
	uint64_t id = atomic_fetch_add(&c->next_id, 1);
	snprintf(rid, RPC_RID_MAX, "%" PRIu64, id);
	sagas__v1__request_envelope__init(env);
	env->method = (char *)method;
	env->request_id = rid;
	/* a duration, not an instant: the server counts it on its own clock
	 * (no deadline_unix_ms, which old servers would compare with theirs) */
	env->timeout_ms = timeout_ms > 0 ? timeout_ms : 0;
	env->payload.data = pbuf;
	env->payload.len = plen;
	return id;
}

/* rpc_encode_request builds a request frame; NULL on failure. */
static nng_msg *rpc_encode_request(
    rpc_client *c, const char *method, const ProtobufCMessage *req, int64_t timeout_ms, int *err)
{
	size_t plen = 0;
	uint8_t *pbuf = rpc_pack_payload(req, &plen);
	if (pbuf == NULL) {
		*err = -ENOMEM;
		return NULL;
	}
	char rid[RPC_RID_MAX];
	Sagas__V1__RequestEnvelope env;
	rpc_envelope_init(c, &env, method, rid, timeout_ms, pbuf, plen);
	nng_msg *m = rpc_pack_envelope(c, &env, err);
	free(pbuf);
	return m;
}

/* rpc_result_of fills *res from the reply envelope `env`; its payload points
 * into `env` (borrowed: valid while `env` is). */
static void rpc_result_of(rpc_result *res, const Sagas__V1__ReplyEnvelope *env)
{
	memset(res, 0, sizeof *res);
	res->code = env->code;
	valid_utf8_copy(res->reason, sizeof res->reason, env->reason);
	valid_utf8_copy(res->message, sizeof res->message, env->message);
	res->payload = env->payload.data;
	res->payload_len = env->payload.len;
}

int rpc_decode_reply(const uint8_t *bytes, size_t len, rpc_result *res)
{
	memset(res, 0, sizeof *res);
	Sagas__V1__ReplyEnvelope *env = sagas__v1__reply_envelope__unpack(NULL, len, bytes);
	if (env == NULL)
		return -EBADMSG;
	rpc_result_of(res, env);
	res->payload = NULL;
	res->payload_len = 0;
	if (env->payload.len > 0) {
		res->payload = malloc(env->payload.len);
		if (res->payload == NULL) {
			sagas__v1__reply_envelope__free_unpacked(env, NULL);
			return -ENOMEM;
		}
		memcpy(res->payload, env->payload.data, env->payload.len);
		res->payload_len = env->payload.len;
	}
	sagas__v1__reply_envelope__free_unpacked(env, NULL);
	return 0;
}

static void rpc_transport_result(rpc_result *res, int nng_rv)
{
	memset(res, 0, sizeof *res);
	res->transport = true;
	res->code = nng_rv == NNG_ETIMEDOUT ? RPC_DEADLINE_EXCEEDED : RPC_UNAVAILABLE;
	snprintf(res->reason, sizeof res->reason, "transport");
	snprintf(res->message, sizeof res->message, "%s", nng_strerror(nng_rv));
}

/* A group of copies of one call (two in duplicate mode). */
typedef struct rpc_group {
	nng_mtx *mtx;
	int pending;
	rpc_done_fn done;
	void *arg;
} rpc_group;

/* One call of a batch frame in flight. */
typedef struct rpc_sub {
	rpc_done_fn done;
	void *arg;
	uint64_t id; /* its request id */
	bool finished;
} rpc_sub;

struct rpc_pending {
	rpc_client *client;
	rpc_group *group; /* a plain frame's call (and its copy) */
	rpc_sub *subs;    /* or the calls of rpc_batch_send: a lone one */
	size_t nsubs;
	bool batch;    /* in a batch frame (nsubs > 1) */
	bool sleeping; /* a batch reply lacked some calls: they wait out the deadline */
	nng_ctx ctx;
	nng_aio *aio;
	nng_msg *req;
	bool receiving;
	int64_t expire_mono;
	/* under client->mtx: */
	rpc_pending *prev, *next; /* on the timer list while armed */
	bool armed;
	bool timed_out; /* the timer cancelled this call */
};

/* rpc_timer_arm puts p on the timer list (sorted by deadline; deadlines
 * mostly grow, so the walk from the tail is short). c->mtx held. */
static void rpc_timer_arm(rpc_client *c, rpc_pending *p)
{
	rpc_pending *q = c->tail;
	while (q != NULL && q->expire_mono > p->expire_mono)
		q = q->prev;
	p->prev = q;
	p->next = q ? q->next : c->head;
	if (p->next)
		p->next->prev = p;
	else
		c->tail = p;
	if (q)
		q->next = p;
	else
		c->head = p;
	p->armed = true;
	/* a deadline before the timer thread's next wake-up: wake it now (most
	 * calls need no wake-up: it wakes at least every RPC_TIMER_IDLE_MS) */
	if (p->expire_mono < c->timer_until)
		nng_cv_wake(c->cv);
}

/* rpc_timer_disarm takes p off the timer list. c->mtx held. */
static void rpc_timer_disarm(rpc_client *c, rpc_pending *p)
{
	if (!p->armed)
		return;
	if (p->prev)
		p->prev->next = p->next;
	else
		c->head = p->next;
	if (p->next)
		p->next->prev = p->prev;
	else
		c->tail = p->prev;
	p->prev = p->next = NULL;
	p->armed = false;
}

/* The timer thread: cancels each call at its deadline. nng_aio_cancel runs
 * the protocol's cancel function here, with c->mtx held, so the call cannot
 * close its context meanwhile (rpc_pending_finish disarms under c->mtx
 * first); the call's callback then runs on an nng thread. */
static void rpc_timer_main(void *arg)
{
	rpc_client *c = arg;
	nng_mtx_lock(c->mtx);
	while (!c->closing) {
		rpc_pending *p = c->head;
		int64_t now = clock_mono_ms();
		if (p == NULL) {
			c->timer_until = now + RPC_TIMER_IDLE_MS;
			nng_cv_until(c->cv, nng_clock() + RPC_TIMER_IDLE_MS);
			continue;
		}
		if (p->expire_mono > now) {
			c->timer_until = p->expire_mono;
			nng_cv_until(c->cv, nng_clock() + (nng_time)(p->expire_mono - now));
			continue;
		}
		c->timer_until = now;
		rpc_timer_disarm(c, p);
		p->timed_out = true;
		nng_aio_cancel(p->aio);
	}
	nng_mtx_unlock(c->mtx);
}

static void rpc_pending_finish(rpc_pending *p, rpc_result *res)
{
	rpc_client *c = p->client;
	nng_mtx_lock(c->mtx);
	rpc_timer_disarm(c, p); /* from here the timer no longer touches p */
	nng_mtx_unlock(c->mtx);
	rpc_group *g = p->group;
	if (g != NULL) {
		nng_mtx_lock(g->mtx);
		bool last = --g->pending == 0;
		nng_mtx_unlock(g->mtx);
		if (last) {
			/* the copy that finishes last answers (duplicate mode) */
			g->done(g->arg, res);
			nng_mtx_free(g->mtx);
			free(g);
		}
	}
	for (size_t i = 0; i < p->nsubs; i++)
		if (!p->subs[i].finished)
			p->subs[i].done(p->subs[i].arg, res);
	free(p->subs);
	free(res->payload);
	nng_ctx_close(p->ctx);
	nng_aio_reap(p->aio);
	free(p);
	nng_mtx_lock(c->mtx);
	if (--c->calls == 0 && c->closing)
		nng_cv_wake(c->cv); /* rpc_client_close waits for this */
	nng_mtx_unlock(c->mtx);
}

/* rpc_pending_rv is the result of p's aio, a cancellation by the timer
 * reported as the timeout it is. */
static int rpc_pending_rv(rpc_pending *p)
{
	int rv = nng_aio_result(p->aio);
	if (rv == NNG_ECANCELED) {
		nng_mtx_lock(p->client->mtx);
		if (p->timed_out)
			rv = NNG_ETIMEDOUT;
		nng_mtx_unlock(p->client->mtx);
	}
	return rv;
}

/* rpc_sub_find is the call of batch p with request id `rid`, or NULL. The
 * replies come in the order of the calls: the search starts at *from. */
static rpc_sub *rpc_sub_find(rpc_pending *p, const char *rid, size_t *from)
{
	char *end = NULL;
	errno = 0;
	unsigned long long id = strtoull(rid, &end, 10);
	if (errno != 0 || end == rid || *end != '\0')
		return NULL;
	for (size_t k = 0; k < p->nsubs; k++) {
		rpc_sub *sub = &p->subs[(*from + k) % p->nsubs];
		if (sub->id == id && !sub->finished) {
			*from = (*from + k + 1) % p->nsubs;
			return sub;
		}
	}
	return NULL;
}

/* rpc_batch_reply hands each call of batch p its reply from frame `m`.
 * Returns true when every call is answered; false leaves the rest waiting
 * (*res is then unset), or fills *res with what answers them all. */
static bool rpc_batch_reply(rpc_pending *p, nng_msg *m, rpc_result *res, bool *all_alike)
{
	*all_alike = true;
	Sagas__V1__ReplyEnvelope *env
	    = sagas__v1__reply_envelope__unpack(NULL, nng_msg_len(m), nng_msg_body(m));
	if (env == NULL) {
		rpc_transport_result(res, NNG_EPROTO);
		snprintf(res->message, sizeof res->message, "malformed reply envelope");
		return false;
	}
	if (env->code != RPC_OK) {
		/* refused as a whole (or an old server): every call alike */
		rpc_result_of(res, env);
		res->payload = NULL; /* freed with env below */
		res->payload_len = 0;
		sagas__v1__reply_envelope__free_unpacked(env, NULL);
		return false;
	}
	*all_alike = false;
	size_t from = 0, answered = 0;
	for (size_t i = 0; i < env->n_replies; i++) {
		const Sagas__V1__ReplyEnvelope *r = env->replies[i];
		rpc_sub *sub = rpc_sub_find(p, r->request_id, &from);
		if (sub == NULL)
			continue; /* not ours, or a second reply: ignored */
		rpc_result one;
		rpc_result_of(&one, r);
		sub->finished = true;
		sub->done(sub->arg, &one);
		answered++;
	}
	sagas__v1__reply_envelope__free_unpacked(env, NULL);
	return answered == p->nsubs;
}

static void rpc_pending_cb(void *arg)
{
	rpc_pending *p = arg;
	rpc_client *c = p->client;
	rpc_result res;
	int rv = rpc_pending_rv(p);
	if (p->sleeping) {
		/* the calls the server dropped time out, as lone calls would */
		rpc_transport_result(&res, NNG_ETIMEDOUT);
		rpc_pending_finish(p, &res);
		return;
	}
	if (!p->receiving) {
		if (rv != 0) {
			nng_msg_free(p->req); /* not handed over */
			rpc_transport_result(&res, rv);
			rpc_pending_finish(p, &res);
			return;
		}
		p->receiving = true;
		/* under c->mtx: the timer either fired before (then no receive)
		 * or cancels the receive once it is registered */
		nng_mtx_lock(c->mtx);
		bool late = p->timed_out;
		if (!late)
			nng_ctx_recv(p->ctx, p->aio);
		nng_mtx_unlock(c->mtx);
		if (late) {
			rpc_transport_result(&res, NNG_ETIMEDOUT);
			rpc_pending_finish(p, &res);
		}
		return;
	}
	if (rv == 0 && p->batch) {
		nng_msg *m = nng_aio_get_msg(p->aio);
		bool all_alike = false;
		bool done = rpc_batch_reply(p, m, &res, &all_alike);
		nng_msg_free(m);
		if (done || all_alike) {
			if (done)
				memset(&res, 0, sizeof res); /* no call left to answer */
			rpc_pending_finish(p, &res);
			return;
		}
		/* wait out the deadline for the rest, under c->mtx as above */
		nng_mtx_lock(c->mtx);
		bool late = p->timed_out;
		if (!late) {
			p->sleeping = true;
			int64_t left = p->expire_mono - clock_mono_ms();
			nng_sleep_aio((nng_duration)(left > 0 ? left : 0), p->aio);
		}
		nng_mtx_unlock(c->mtx);
		if (late) {
			rpc_transport_result(&res, NNG_ETIMEDOUT);
			rpc_pending_finish(p, &res);
		}
		return;
	}
	if (rv != 0) {
		rpc_transport_result(&res, rv);
	} else {
		nng_msg *m = nng_aio_get_msg(p->aio);
		if (rpc_decode_reply(nng_msg_body(m), nng_msg_len(m), &res) != 0) {
			rpc_transport_result(&res, NNG_EPROTO);
			snprintf(res.message, sizeof res.message, "malformed reply envelope");
		}
		nng_msg_free(m);
	}
	rpc_pending_finish(p, &res);
}

/* rpc_pending_open makes a call for frame `req` (taken, also on failure)
 * with its context and aio, not yet started. Returns 0 or a negative errno. */
static int rpc_pending_open(rpc_client *c, nng_msg *req, int64_t timeout_ms, rpc_pending **out)
{
	rpc_pending *p = calloc(1, sizeof *p);
	if (p == NULL) {
		nng_msg_free(req);
		return -ENOMEM;
	}
	p->client = c;
	p->req = req;
	p->expire_mono = clock_mono_ms() + (timeout_ms > 0 ? timeout_ms : 1);
	int rv = nng_ctx_open(&p->ctx, c->sock);
	if (rv == 0) {
		rv = nng_aio_alloc(&p->aio, rpc_pending_cb, p);
		if (rv != 0)
			nng_ctx_close(p->ctx);
	}
	if (rv != 0) {
		nng_msg_free(req);
		free(p);
		return rpc_errno(rv);
	}
	*out = p;
	return 0;
}

/* rpc_pending_discard frees a call rpc_pending_open made and never started. */
static void rpc_pending_discard(rpc_pending *p)
{
	if (p == NULL)
		return;
	nng_aio_free(p->aio);
	nng_ctx_close(p->ctx);
	nng_msg_free(p->req);
	free(p);
}

/* rpc_pending_launch arms and sends the `n` calls: under c->mtx, so the
 * timer cancels a send only once it is registered ("Timeouts" above). */
static void rpc_pending_launch(rpc_client *c, rpc_pending **ps, int n)
{
	nng_mtx_lock(c->mtx);
	for (int i = 0; i < n; i++) {
		c->calls++;
		rpc_timer_arm(c, ps[i]);
		nng_aio_set_timeout(ps[i]->aio, NNG_DURATION_INFINITE);
		nng_aio_set_msg(ps[i]->aio, ps[i]->req);
		nng_ctx_send(ps[i]->ctx, ps[i]->aio);
	}
	nng_mtx_unlock(c->mtx);
}

int rpc_call_async(rpc_client *c, const char *method, const ProtobufCMessage *req,
    int64_t timeout_ms, rpc_done_fn done, void *arg)
{
	int copies = c->opts.duplicate ? 2 : 1;
	int err = 0;
	rpc_pending *ps[2] = {NULL, NULL};
	rpc_group *g = calloc(1, sizeof *g);
	if (g == NULL || nng_mtx_alloc(&g->mtx) != 0) {
		free(g);
		return -ENOMEM;
	}
	g->pending = copies;
	g->done = done;
	g->arg = arg;
	for (int i = 0; i < copies; i++) {
		nng_msg *m = rpc_encode_request(c, method, req, timeout_ms, &err);
		if (m == NULL)
			goto out_undo;
		err = rpc_pending_open(c, m, timeout_ms, &ps[i]);
		if (err != 0)
			goto out_undo;
		ps[i]->group = g;
	}
	rpc_pending_launch(c, ps, copies);
	return 0;
out_undo:
	for (int i = 0; i < copies; i++)
		rpc_pending_discard(ps[i]);
	nng_mtx_free(g->mtx);
	free(g);
	return err;
}

/* ---- batches (rpc_batch_open) ---- */

struct rpc_batch {
	rpc_client *c;
	size_t max_calls;   /* a frame each max_calls calls */
	int64_t timeout_ms; /* of every call in the batch */
	size_t n;
	size_t bytes; /* the calls' encoded size, about */
	Sagas__V1__RequestEnvelope envs[RPC_BATCH_MAX];
	char ids[RPC_BATCH_MAX][RPC_RID_MAX];
	rpc_sub subs[RPC_BATCH_MAX];
};

rpc_batch *rpc_batch_open(rpc_client *c, int max_calls)
{
	rpc_batch *b = calloc(1, sizeof *b);
	if (b == NULL)
		return NULL;
	b->c = c;
	b->max_calls = max_calls < 1    ? 1
	    : max_calls > RPC_BATCH_MAX ? RPC_BATCH_MAX
	                                : (size_t)max_calls;
	return b;
}

/* rpc_batch_fail answers the calls of b that could not be sent. */
static void rpc_batch_fail(rpc_batch *b, int err)
{
	rpc_result res;
	rpc_transport_result(&res, NNG_ECLOSED); /* UNAVAILABLE */
	snprintf(res.message, sizeof res.message, "could not send: %s", strerror(-err));
	for (size_t i = 0; i < b->n; i++)
		b->subs[i].done(b->subs[i].arg, &res);
}

/* rpc_batch_flush sends the calls gathered so far and empties b. */
static void rpc_batch_flush(rpc_batch *b)
{
	if (b->n == 0)
		return;
	rpc_client *c = b->c;
	int err = 0;
	nng_msg *m = NULL;
	rpc_pending *p = NULL;
	if (b->n == 1) {
		/* a lone call goes as a plain frame */
		m = rpc_pack_envelope(c, &b->envs[0], &err);
	} else {
		Sagas__V1__RequestEnvelope *ptrs[RPC_BATCH_MAX];
		for (size_t i = 0; i < b->n; i++)
			ptrs[i] = &b->envs[i];
		char rid[RPC_RID_MAX];
		Sagas__V1__RequestEnvelope env;
		rpc_envelope_init(c, &env, RPC_BATCH_METHOD, rid, b->timeout_ms, NULL, 0);
		env.n_calls = b->n;
		env.calls = ptrs;
		m = rpc_pack_envelope(c, &env, &err);
	}
	if (m != NULL)
		err = rpc_pending_open(c, m, b->timeout_ms, &p);
	if (err == 0) {
		p->subs = malloc(b->n * sizeof *p->subs);
		if (p->subs == NULL) {
			rpc_pending_discard(p);
			err = -ENOMEM;
		} else {
			memcpy(p->subs, b->subs, b->n * sizeof *p->subs);
			p->nsubs = b->n;
			p->batch = b->n > 1;
		}
	}
	if (err == 0)
		rpc_pending_launch(c, &p, 1);
	else
		rpc_batch_fail(b, err);
	for (size_t i = 0; i < b->n; i++)
		free(b->envs[i].payload.data);
	b->n = 0;
	b->bytes = 0;
}

int rpc_batch_add(rpc_batch *b, const char *method, const ProtobufCMessage *req, int64_t timeout_ms,
    rpc_done_fn done, void *arg)
{
	rpc_client *c = b->c;
	if (c->opts.duplicate || (b->n > 0 && timeout_ms != b->timeout_ms))
		return rpc_call_async(c, method, req, timeout_ms, done, arg);
	size_t plen = 0;
	uint8_t *pbuf = rpc_pack_payload(req, &plen);
	if (pbuf == NULL)
		return -ENOMEM;
	size_t need = plen + strlen(method) + 48;
	if (need > c->opts.max_msg / 2) {
		free(pbuf);
		return rpc_call_async(c, method, req, timeout_ms, done, arg);
	}
	if (b->n == b->max_calls || b->bytes + need > c->opts.max_msg / 2)
		rpc_batch_flush(b);
	if (b->n == 0)
		b->timeout_ms = timeout_ms;
	size_t i = b->n++;
	uint64_t id = rpc_envelope_init(c, &b->envs[i], method, b->ids[i], timeout_ms, pbuf, plen);
	b->subs[i] = (rpc_sub) {.done = done, .arg = arg, .id = id};
	b->bytes += need;
	return 0;
}

void rpc_batch_send(rpc_batch *b)
{
	if (b == NULL)
		return;
	rpc_batch_flush(b);
	free(b);
}

/* Blocking calls wait on a condition variable fed by the async path. */
typedef struct rpc_sync {
	nng_mtx *mtx;
	nng_cv *cv;
	bool done;
	rpc_result *res;
} rpc_sync;

static void rpc_sync_done(void *arg, const rpc_result *res)
{
	rpc_sync *s = arg;
	nng_mtx_lock(s->mtx);
	*s->res = *res;
	s->res->payload = NULL;
	if (res->payload_len > 0) {
		s->res->payload = malloc(res->payload_len);
		if (s->res->payload == NULL) {
			s->res->code = RPC_INTERNAL;
			s->res->payload_len = 0;
		} else {
			memcpy(s->res->payload, res->payload, res->payload_len);
		}
	}
	s->done = true;
	nng_cv_wake(s->cv);
	nng_mtx_unlock(s->mtx);
}

int rpc_call(rpc_client *c, const char *method, const ProtobufCMessage *req, int64_t timeout_ms,
    rpc_result *res)
{
	rpc_sync s = {.res = res};
	memset(res, 0, sizeof *res);
	if (nng_mtx_alloc(&s.mtx) != 0)
		return -ENOMEM;
	if (nng_cv_alloc(&s.cv, s.mtx) != 0) {
		nng_mtx_free(s.mtx);
		return -ENOMEM;
	}
	int rc = rpc_call_async(c, method, req, timeout_ms, rpc_sync_done, &s);
	if (rc == 0) {
		nng_mtx_lock(s.mtx);
		while (!s.done)
			nng_cv_wait(s.cv);
		nng_mtx_unlock(s.mtx);
	}
	nng_cv_free(s.cv);
	nng_mtx_free(s.mtx);
	return rc;
}

void rpc_result_clear(rpc_result *res)
{
	free(res->payload);
	res->payload = NULL;
	res->payload_len = 0;
}

int rpc_call_raw(rpc_client *c, const uint8_t *bytes, size_t len, int64_t timeout_ms,
    uint8_t **reply, size_t *reply_len)
{
	nng_ctx ctx;
	nng_aio *aio = NULL;
	nng_msg *m = NULL;
	int rv = nng_ctx_open(&ctx, c->sock);
	if (rv != 0)
		return rpc_errno(rv);
	if ((rv = nng_aio_alloc(&aio, NULL, NULL)) != 0)
		goto out_ctx;
	if ((rv = nng_msg_alloc(&m, len)) != 0)
		goto out_aio;
	if (len > 0)
		memcpy(nng_msg_body(m), bytes, len);
	nng_aio_set_timeout(aio, (nng_duration)timeout_ms);
	nng_aio_set_msg(aio, m);
	nng_ctx_send(ctx, aio);
	nng_aio_wait(aio);
	if ((rv = nng_aio_result(aio)) != 0) {
		nng_msg_free(m);
		goto out_aio;
	}
	nng_ctx_recv(ctx, aio);
	nng_aio_wait(aio);
	if ((rv = nng_aio_result(aio)) != 0)
		goto out_aio;
	m = nng_aio_get_msg(aio);
	*reply_len = nng_msg_len(m);
	*reply = malloc(*reply_len ? *reply_len : 1);
	if (*reply == NULL)
		rv = NNG_ENOMEM;
	else
		memcpy(*reply, nng_msg_body(m), *reply_len);
	nng_msg_free(m);
out_aio:
	nng_aio_free(aio);
out_ctx:
	nng_ctx_close(ctx);
	return rpc_errno(rv);
}
