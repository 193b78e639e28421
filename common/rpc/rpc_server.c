/* rpc_server: the server side of rpc.h (REP contexts, the queue, the
 * workers, batches, held calls). Its types are in rpc_server_internal.h,
 * the decoding and checking of frames and the packing of replies in
 * rpc_frame.c. */
#include "rpc.h"
#include "rpc_internal.h"
#include "rpc_server_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nng/nng.h>
#include <nng/protocol/reqrep0/rep.h>
#include <nng/supplemental/tls/tls.h>
#include <nng/supplemental/util/platform.h>
#include <nng/transport/tls/tls.h>

#include "authz.h"
#include "clock.h"
#include "fault.h"
#include "log.h"
#include "metrics.h"
#include "sagas/v1/rpc.pb-c.h"
#include "valid.h"

static const metric_def RPC_REQUESTS = {"sagas_rpc_requests_total",
    "Calls answered, by method (the roles table's names; \"unknown\" for any other) and "
    "status code",
    METRIC_COUNTER, "method,code", NULL, 0};

/* rpc_count counts one answered call of `method` (NULL: a frame that did
 * not decode) with status `code`. */
static void rpc_count(const char *method, int code)
{
	const char *v[2] = {authz_method_name(method), rpc_code_name(code)};
	metric_inc(metric_get(&RPC_REQUESTS, v));
}

rpc_held *rpc_hold(const rpc_request *call)
{
	rpc_item *it = call->held;
	if (it == NULL)
		return NULL; /* a call inside a batch is answered with the batch */
	it->held = true;
	rpc_slot *sl = it->frame->slot;
	memcpy(sl->request_id, it->request_id, sizeof it->request_id);
	sl->method = authz_method_name(call->method);
	sl->pipe = nng_pipe_id(nng_msg_get_pipe(it->frame->msg));
	rpc_server *s = sl->srv;
	nng_mtx_lock(s->mtx);
	s->held++;
	nng_mtx_unlock(s->mtx);
	return (rpc_held *)sl;
}

static void rpc_slot_recv(rpc_slot *sl)
{
	if (sl->busy_pipe != 0) { /* its last call is answered (or dropped) */
		rpc_conns_busy(&sl->srv->conns, sl->busy_pipe, -1, NULL, NULL);
		sl->busy_pipe = 0;
	}
	nng_aio_set_timeout(sl->aio, NNG_DURATION_INFINITE);
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
	/* a peer that reads no replies must not keep the slot (and with
	 * enough calls, every slot): see rpc_slot_cb */
	nng_aio_set_timeout(sl->aio, RPC_SEND_TIMEOUT_MS);
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
		if (rv == NNG_ETIMEDOUT && sl->busy_pipe != 0) {
			/* the peer read no reply for RPC_SEND_TIMEOUT_MS: its
			 * connection goes, and every slot its calls held with it */
			char peer[96], what[160];
			snprintf(what, sizeof what,
			    "closed a connection that read no reply for %d ms",
			    RPC_SEND_TIMEOUT_MS);
			authz_log_limited(
			    "no_read", rpc_peer(sl->busy_pipe, peer, sizeof peer), what);
			rpc_conns_doom(&s->conns, sl->busy_pipe);
		}
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
	uint32_t pipe = nng_pipe_id(nng_msg_get_pipe(sl->msg));
	int busy = 0;
	bool over_rate = false;
	int li = rpc_conns_busy(&s->conns, pipe, +1, &busy, &over_rate);
	sl->roles = li >= 0 ? s->conns.listeners[li].roles : 0; /* not open: no role */
	sl->busy_pipe = li >= 0 ? pipe : 0;
	if (li >= 0 && sl->roles == 0 && (busy > RPC_NO_ROLE_INFLIGHT_MAX || over_rate)) {
		/* a listener with no role answers only Health, a probe now and
		 * then: a peer that piles calls up is not a probe, however fast
		 * the workers answer them */
		char peer[96];
		authz_count_refusal("piling", 1);
		authz_log_limited("piling", rpc_peer(pipe, peer, sizeof peer),
		    "closed a connection to a Health-only listener that sent calls without "
		    "waiting for their replies");
		rpc_conns_doom(&s->conns, pipe);
		nng_msg_free(sl->msg);
		sl->msg = NULL;
		rpc_slot_recv(sl);
		return;
	}
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

/* rpc_server_reply sends a frame's reply on its slot (or, for a dropped
 * call, abandons the request by receiving again), and frees the frame's
 * request and its calls' replies. */
static void rpc_server_reply(rpc_frame *f, rpc_item *items)
{
	rpc_slot *sl = f->slot;
	nng_msg *out = NULL;
	bool held = false;
	for (size_t i = 0; !f->answered && i < f->n; i++) {
		const rpc_item *it = &items[f->first + i];
		if (!it->drop && !it->held) /* a held one: at rpc_held_reply */
			rpc_count(it->env ? it->env->method : NULL, it->reply.code);
	}
	if (f->answered) {
		rpc_count(f->env ? f->env->method : NULL, f->reply.code);
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

/* rpc_pipe_cb: nng says a client connection is about to be added
 * (NNG_PIPE_EV_ADD_PRE) or closed (NNG_PIPE_EV_REM_POST). */
static void rpc_pipe_cb(nng_pipe p, nng_pipe_ev ev, void *arg)
{
	rpc_server *s = arg;
	if (ev == NNG_PIPE_EV_ADD_PRE) {
		rpc_conns_added(&s->conns, p);
		return;
	}
	rpc_conns_removed(&s->conns, nng_pipe_id(p));
	if (s->ops->pipe_closed)
		s->ops->pipe_closed(s->app, nng_pipe_id(p));
}

void rpc_held_reply(rpc_held *h, rpc_reply *reply)
{
	rpc_slot *sl = (rpc_slot *)h;
	rpc_server *s = sl->srv;
	rpc_count(sl->method, reply->code);
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
		f->roles = taken[i]->roles;
		f->pipe = nng_pipe_id(nng_msg_get_pipe(f->msg));
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
	rpc_conns_fini(&s->conns);
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
	rpc_conns_stop_reaper(&s->conns);
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

int rpc_server_serve_on(
    rpc_server **out, const rpc_server_cfg *cfg, const rpc_server_ops *ops, void *app)
{
	int contexts = cfg->contexts ? cfg->contexts : RPC_SERVER_CONTEXTS;
	int workers = cfg->workers;
	if (workers < 1 || workers > 256 || contexts < 1 || contexts > 65536 || ops == NULL
	    || ops->handle == NULL || cfg->nlisten < 1 || cfg->nlisten > RPC_LISTEN_MAX
	    || cfg->max_conns < 0)
		return -EINVAL;
	for (size_t i = 0; i < cfg->nlisten; i++)
		if (tls_url(cfg->listen[i].url) != (cfg->listen[i].tls != NULL))
			return -EINVAL; /* a TLS URL needs its configuration, a plain one none */
	rpc_server *s = calloc(1, sizeof *s);
	if (s == NULL)
		return -ENOMEM;
	s->ops = ops;
	s->app = app;

	s->open_methods = cfg->open_methods;
	int rv = nng_mtx_alloc(&s->mtx);
	if (rv == 0)
		rv = nng_cv_alloc(&s->cv, s->mtx);
	if (rv == 0)
		rv = rpc_conns_init(&s->conns,
		    cfg->max_conns ? cfg->max_conns : RPC_MAX_CONNS_DEFAULT,
		    cfg->idle_ms ? cfg->idle_ms : RPC_IDLE_TIMEOUT_DEFAULT_MS);
	if (rv != 0) {
		rpc_server_free(s);
		return rpc_errno(rv);
	}
	rv = nng_rep0_open(&s->sock);
	if (rv != 0) {
		rpc_server_free(s);
		return rpc_errno(rv);
	}
	nng_socket_set_size(
	    s->sock, NNG_OPT_RECVMAXSZ, cfg->max_msg ? cfg->max_msg : RPC_MAX_REQUEST_DEFAULT);
	nng_pipe_notify(s->sock, NNG_PIPE_EV_ADD_PRE, rpc_pipe_cb, s);
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
	for (size_t i = 0; i < cfg->nlisten; i++)
		if ((rv = rpc_conns_listen(&s->conns, s->sock, (int)i, &cfg->listen[i])) != 0)
			goto out_close;
	if ((rv = rpc_conns_start_reaper(&s->conns)) != 0)
		goto out_close;
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

int rpc_server_start(rpc_server **out, const char *url, int workers, int contexts, size_t max_msg,
    const rpc_server_ops *ops, void *app)
{
	rpc_listen l = {.url = url, .roles = AUTHZ_ALL};
	rpc_server_cfg cfg = {
	    .listen = &l,
	    .nlisten = 1,
	    .workers = workers,
	    .contexts = contexts,
	    .max_msg = max_msg ? max_msg : RPC_MAX_MSG_DEFAULT,
	    .open_methods = true, /* a test's or a tool's own methods */
	};
	return rpc_server_serve_on(out, &cfg, ops, app);
}

void rpc_server_stop(rpc_server *s)
{
	if (s == NULL)
		return;
	rpc_server_close_and_join(s);
	rpc_server_free(s);
}
