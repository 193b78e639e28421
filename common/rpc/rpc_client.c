/* rpc_client: the client side of rpc.h (REQ contexts, the timer thread,
 * the blocking form). Its types are in rpc_client_internal.h, envelopes in
 * rpc_envelope.c, batches in rpc_batch.c. */
#include "rpc.h"
#include "rpc_client_internal.h"
#include "rpc_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nng/nng.h>
#include <nng/protocol/reqrep0/req.h>
#include <nng/supplemental/util/platform.h>

#include "clock.h"
#include "log.h"
#include "sagas/v1/rpc.pb-c.h"
#include "valid.h"

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

bool rpc_url_ok(const char *url)
{
	static const char *const schemes[] = {"tcp://", "tcp4://", "tcp6://", "ipc://", "inproc://",
	    "abstract://", "ws://", "tls+tcp://", "tls+tcp4://", "tls+tcp6://"};
	if (url == NULL)
		return false;
	/* a space or control byte inside is a typo (two URLs without their
	 * comma), never an address nng would dial as meant */
	for (const char *p = url; *p; p++)
		if ((unsigned char)*p <= ' ' || *p == 0x7f)
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

/* rpc_client_dial starts a dialer of `url` (with `tls`, NULL for a plain
 * URL) on c's socket: synchronously when `now`. Returns 0 or an nng error. */
static int rpc_client_dial(rpc_client *c, const char *url, tls_conf *tls, bool now)
{
	nng_dialer d = NNG_DIALER_INITIALIZER;
	int rv = nng_dialer_create(&d, c->sock, url);
	if (rv == 0 && tls != NULL)
		rv = nng_dialer_set_ptr(d, NNG_OPT_TLS_CONFIG, tls_conf_nng(tls));
	if (rv == 0 && tls != NULL)
		rv = nng_dialer_set_bool(d, NNG_OPT_TCP_NODELAY, true);
	if (rv == 0)
		rv = nng_dialer_start(d, now ? 0 : NNG_FLAG_NONBLOCK);
	if (rv != 0)
		nng_dialer_close(d); /* an invalid id (never created) is ignored */
	return rv;
}

/* rpc_client_dial_all starts a dialer for each entry of `u`. Without
 * connect_now each dials in the background. With it, each is dialed now,
 * those that fail again in the background, and the result is the first
 * failure when none connected (a refused TLS handshake before any other
 * one: it says the most). Returns 0 or an nng error; *refused is true when
 * that error is a refused TLS handshake. */
/* rpc_client_pipe_event counts a connection that came up or went away
 * (nng's pipe callback, on one of its threads). */
static void rpc_client_pipe_event(nng_pipe p, nng_pipe_ev ev, void *arg)
{
	(void)p;
	rpc_client *c = arg;
	nng_mtx_lock(c->mtx);
	if (ev == NNG_PIPE_EV_ADD_POST) {
		c->pipes++;
	} else if (c->pipes > 0) {
		c->pipes--;
	}
	nng_mtx_unlock(c->mtx);
}

int rpc_client_connected(rpc_client *c)
{
	nng_mtx_lock(c->mtx);
	long n = c->pipes;
	nng_mtx_unlock(c->mtx);
	return (int)n;
}

static int rpc_client_dial_all(rpc_client *c, const rpc_urls *u, bool *refused)
{
	bool now = c->opts.connect_now;
	*refused = false;
	int first = 0;
	size_t up = 0;
	*refused = false;
	for (size_t i = 0; i < u->n; i++) {
		int rv = rpc_client_dial(c, u->url[i], u->tls[i], now);
		if (rv == 0) {
			up++;
			continue;
		}
		/* a TLS server that refuses the client's certificate (or its
		 * lack of one) may close the connection in the handshake
		 * instead of sending an alert */
		bool tls_refused = u->tls[i] != NULL && rv == NNG_ECONNSHUT;
		if (first == 0 || (tls_refused && !*refused)) {
			first = rv;
			*refused = tls_refused;
		}
		if (!now) /* the CLI reports it itself */
			log_error(NULL, "could not dial %s: %s", u->url[i], nng_strerror(rv));
		else if (u->n > 1)
			/* a replica that is down now: it joins when it is back */
			(void)rpc_client_dial(c, u->url[i], u->tls[i], false);
	}
	return up > 0 ? 0 : first;
}

int rpc_client_open_urls(rpc_client **out, const rpc_urls *u, const rpc_client_opts *opts)
{
	if (u->n == 0 || u->n > RPC_URLS_MAX)
		return -EINVAL;
	for (size_t i = 0; i < u->n; i++)
		if (tls_url(u->url[i]) != (u->tls[i] != NULL))
			return -EINVAL; /* a TLS URL needs its configuration, a plain one none */
	rpc_client *c = calloc(1, sizeof *c);
	if (c == NULL)
		return -ENOMEM;
	if (opts)
		c->opts = *opts;
	c->opts.tls = NULL;
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
	/* REQ resends every 60 s by default; make it explicit (house style).
	 * A list's socket gets a resend time longer than any call waits: nng
	 * then moves the requests of a connection that closed to another one
	 * at once (rpc.h, rpc_client_open_urls) */
	nng_duration resend = c->opts.resend_ms > 0 ? (nng_duration)c->opts.resend_ms
	    : u->n > 1 && c->opts.failover          ? (nng_duration)RPC_FAILOVER_RESEND_MS
	                                            : NNG_DURATION_INFINITE;
	nng_socket_set_ms(c->sock, NNG_OPT_REQ_RESENDTIME, resend);
	nng_socket_set_size(c->sock, NNG_OPT_RECVMAXSZ, c->opts.max_msg);
	nng_socket_set_ms(c->sock, NNG_OPT_RECONNMINT, 50);
	nng_socket_set_ms(c->sock, NNG_OPT_RECONNMAXT, 1000);
	bool refused = false;
	rv = nng_pipe_notify(c->sock, NNG_PIPE_EV_ADD_POST, rpc_client_pipe_event, c);
	if (rv == 0)
		rv = nng_pipe_notify(c->sock, NNG_PIPE_EV_REM_POST, rpc_client_pipe_event, c);
	if (rv == 0)
		rv = rpc_client_dial_all(c, u, &refused);
	if (rv != 0) {
		nng_close(c->sock);
		rpc_client_free(c);
		return refused ? -EACCES : rpc_errno(rv);
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

int rpc_client_open(rpc_client **out, const char *url, const rpc_client_opts *opts)
{
	if (url == NULL)
		return -EINVAL;
	rpc_urls u = {.n = 1, .url = {(char *)url}, .tls = {opts ? opts->tls : NULL}};
	return rpc_client_open_urls(out, &u, opts);
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
	Sagas__V1__ReplyEnvelope *env = rpc_reply_unpack(nng_msg_body(m), nng_msg_len(m));
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
int rpc_pending_open(rpc_client *c, nng_msg *req, int64_t timeout_ms, rpc_pending **out)
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
void rpc_pending_discard(rpc_pending *p)
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
void rpc_pending_launch(rpc_client *c, rpc_pending **ps, int n)
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
