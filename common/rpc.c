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
	snprintf(r->reason, sizeof r->reason, "%s", reason ? reason : "");
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(r->message, sizeof r->message, fmt, ap);
	va_end(ap);
}

/* ---- server ---- */

struct rpc_server;

typedef struct rpc_worker {
	struct rpc_server *srv;
	nng_thread *thread;
	int index;
} rpc_worker;

struct rpc_server {
	nng_socket sock;
	const rpc_server_ops *ops;
	void *app;
	int nworkers;
	rpc_worker *workers;
};

/* rpc_server_serve decodes one request frame and fills `reply`. */
static void rpc_server_serve(
    rpc_server *s, void *wstate, nng_msg *msg, rpc_reply *reply, char *request_id, bool *drop)
{
	Sagas__V1__RequestEnvelope *env
	    = sagas__v1__request_envelope__unpack(NULL, nng_msg_len(msg), nng_msg_body(msg));
	if (env == NULL) {
		rpc_reply_error(reply, RPC_INVALID_ARGUMENT, "malformed_envelope",
		    "could not decode request envelope");
		return;
	}
	size_t idlen = strlen(env->request_id);
	if (idlen > RPC_REQUEST_ID_MAX || !valid_utf8(env->request_id, idlen)) {
		rpc_reply_error(reply, RPC_INVALID_ARGUMENT, "bad_field",
		    "invalid request_id: at most %d bytes of UTF-8", RPC_REQUEST_ID_MAX);
		goto out_free_env;
	}
	memcpy(request_id, env->request_id, idlen + 1);
	if (!valid_utf8(env->method, strlen(env->method))) {
		rpc_reply_error(
		    reply, RPC_INVALID_ARGUMENT, "bad_field", "invalid method: not UTF-8");
		goto out_free_env;
	}
	if (env->deadline_unix_ms > 0 && env->deadline_unix_ms <= clock_wall_ms()) {
		rpc_reply_error(reply, RPC_DEADLINE_EXCEEDED, "deadline",
		    "deadline passed before the call was served");
		goto out_free_env;
	}
	rpc_request call = {
	    .method = env->method,
	    .request_id = env->request_id,
	    .deadline_ms = env->deadline_unix_ms,
	    .payload = env->payload.data,
	    .payload_len = env->payload.len,
	};
	/* Health and Admin before fault injection and the daemon's handler */
	if (health_handle(&call, reply, s->ops->service, s->ops->healthy, s->app))
		goto out_free_env;
	if (admin_handle(&call, reply))
		goto out_free_env;
	/* failure injection (fault.h): off unless armed */
	int64_t delay_ms = 0;
	if (fault_check(FAULT_DELAY, env->method, &delay_ms))
		nng_msleep((nng_duration)delay_ms);
	if (fault_check(FAULT_DROP_REQUEST, env->method, NULL)) {
		*drop = true;
		goto out_free_env;
	}
	if (fault_check(FAULT_UNAVAILABLE, env->method, NULL)) {
		rpc_reply_error(
		    reply, RPC_UNAVAILABLE, "fault_injected", "unavailable (injected fault)");
		goto out_free_env;
	}
	s->ops->handle(s->app, wstate, &call, reply);
	fault_exit_if(FAULT_EXIT_AFTER_COMMIT, env->method);
	*drop = fault_check(FAULT_DROP_REPLY, env->method, NULL);
out_free_env:
	sagas__v1__request_envelope__free_unpacked(env, NULL);
}

/* rpc_server_encode packs `reply` into a new nng message, or NULL. */
static nng_msg *rpc_encode_reply(const rpc_reply *reply, const char *request_id)
{
	Sagas__V1__ReplyEnvelope env = SAGAS__V1__REPLY_ENVELOPE__INIT;
	env.request_id = (char *)request_id;
	env.code = reply->code;
	env.message = (char *)reply->message;
	env.reason = (char *)reply->reason;
	env.payload.data = reply->payload;
	env.payload.len = reply->payload_len;
	size_t n = sagas__v1__reply_envelope__get_packed_size(&env);
	nng_msg *m = NULL;
	if (nng_msg_alloc(&m, n) != 0)
		return NULL;
	sagas__v1__reply_envelope__pack(&env, nng_msg_body(m));
	return m;
}

static void rpc_worker_main(void *arg)
{
	rpc_worker *w = arg;
	rpc_server *s = w->srv;
	void *wstate = NULL;
	nng_ctx ctx;
	nng_aio *aio = NULL;
	if (s->ops->worker_init && s->ops->worker_init(s->app, &wstate) != 0) {
		log_error(NULL, "rpc worker %d could not start", w->index);
		return;
	}
	if (nng_ctx_open(&ctx, s->sock) != 0 || nng_aio_alloc(&aio, NULL, NULL) != 0) {
		log_error(NULL, "rpc worker %d: could not open context", w->index);
		goto out_fini;
	}
	for (;;) {
		nng_ctx_recv(ctx, aio);
		nng_aio_wait(aio);
		int rv = nng_aio_result(aio);
		if (rv == NNG_ECLOSED)
			break;
		if (rv != 0)
			continue;
		nng_msg *msg = nng_aio_get_msg(aio);
		rpc_reply reply = {0};
		char request_id[RPC_REQUEST_ID_MAX + 1] = "";
		bool drop = false;
		rpc_server_serve(s, wstate, msg, &reply, request_id, &drop);
		nng_msg_free(msg);
		if (drop) {
			/* the next receive on this context abandons the request */
			free(reply.payload);
			continue;
		}
		nng_msg *out = rpc_encode_reply(&reply, request_id);
		free(reply.payload);
		if (out == NULL)
			continue; /* out of memory: the client times out and retries */
		nng_aio_set_msg(aio, out);
		nng_ctx_send(ctx, aio);
		nng_aio_wait(aio);
		rv = nng_aio_result(aio);
		if (rv != 0) {
			nng_msg_free(out); /* not handed over */
			if (rv == NNG_ECLOSED)
				break;
		}
	}
	nng_aio_free(aio);
	nng_ctx_close(ctx);
out_fini:
	if (s->ops->worker_fini)
		s->ops->worker_fini(s->app, wstate);
}

int rpc_server_start(rpc_server **out, const char *url, int workers, size_t max_msg,
    const rpc_server_ops *ops, void *app)
{
	if (workers < 1 || workers > 256 || ops == NULL || ops->handle == NULL)
		return -EINVAL;
	rpc_server *s = calloc(1, sizeof *s);
	if (s == NULL)
		return -ENOMEM;
	s->ops = ops;
	s->app = app;
	int rv = nng_rep0_open(&s->sock);
	if (rv != 0)
		goto out_free;
	nng_socket_set_size(s->sock, NNG_OPT_RECVMAXSZ, max_msg ? max_msg : RPC_MAX_MSG_DEFAULT);
	rv = nng_listen(s->sock, url, NULL, 0);
	if (rv != 0) {
		log_error(NULL, "could not listen on %s: %s", url, nng_strerror(rv));
		goto out_close;
	}
	s->workers = calloc((size_t)workers, sizeof *s->workers);
	if (s->workers == NULL) {
		rv = NNG_ENOMEM;
		goto out_close;
	}
	for (int i = 0; i < workers; i++) {
		s->workers[i].srv = s;
		s->workers[i].index = i;
		rv = nng_thread_create(&s->workers[i].thread, rpc_worker_main, &s->workers[i]);
		if (rv != 0) {
			nng_close(s->sock);
			for (int k = 0; k < i; k++)
				nng_thread_destroy(s->workers[k].thread);
			free(s->workers);
			goto out_free;
		}
		s->nworkers++;
	}
	*out = s;
	return 0;
out_close:
	nng_close(s->sock);
out_free:
	free(s);
	return rpc_errno(rv);
}

void rpc_server_stop(rpc_server *s)
{
	if (s == NULL)
		return;
	nng_close(s->sock);
	for (int i = 0; i < s->nworkers; i++)
		nng_thread_destroy(s->workers[i].thread); /* joins */
	free(s->workers);
	free(s);
}

/* ---- client ---- */

struct rpc_client {
	nng_socket sock;
	rpc_client_opts opts;
	atomic_uint_fast64_t next_id;
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

int rpc_client_open(rpc_client **out, const char *url, const rpc_client_opts *opts)
{
	rpc_client *c = calloc(1, sizeof *c);
	if (c == NULL)
		return -ENOMEM;
	if (opts)
		c->opts = *opts;
	if (c->opts.max_msg == 0)
		c->opts.max_msg = RPC_MAX_MSG_DEFAULT;
	int rv = nng_req0_open(&c->sock);
	if (rv != 0) {
		free(c);
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
		free(c);
		return rpc_errno(rv);
	}
	atomic_init(&c->next_id, 1);
	*out = c;
	return 0;
}

void rpc_client_close(rpc_client *c)
{
	if (c == NULL)
		return;
	nng_close(c->sock);
	free(c);
}

/* rpc_encode_request builds a request frame; NULL on failure. */
static nng_msg *rpc_encode_request(
    rpc_client *c, const char *method, const ProtobufCMessage *req, int64_t timeout_ms, int *err)
{
	size_t plen = protobuf_c_message_get_packed_size(req);
	uint8_t *pbuf = malloc(plen ? plen : 1);
	if (pbuf == NULL) {
		*err = -ENOMEM;
		return NULL;
	}
	protobuf_c_message_pack(req, pbuf);
	char rid[32];
	snprintf(rid, sizeof rid, "%" PRIuFAST64, atomic_fetch_add(&c->next_id, 1));
	Sagas__V1__RequestEnvelope env = SAGAS__V1__REQUEST_ENVELOPE__INIT;
	env.method = (char *)method;
	env.request_id = rid;
	env.deadline_unix_ms = timeout_ms > 0 ? clock_wall_ms() + timeout_ms : 0;
	env.payload.data = pbuf;
	env.payload.len = plen;
	size_t n = sagas__v1__request_envelope__get_packed_size(&env);
	nng_msg *m = NULL;
	if (n > c->opts.max_msg) {
		*err = -EMSGSIZE;
	} else if (nng_msg_alloc(&m, n) != 0) {
		*err = -ENOMEM;
	} else {
		sagas__v1__request_envelope__pack(&env, nng_msg_body(m));
	}
	free(pbuf);
	return m;
}

int rpc_decode_reply(const uint8_t *bytes, size_t len, rpc_result *res)
{
	memset(res, 0, sizeof *res);
	Sagas__V1__ReplyEnvelope *env = sagas__v1__reply_envelope__unpack(NULL, len, bytes);
	if (env == NULL)
		return -EBADMSG;
	res->code = env->code;
	snprintf(res->reason, sizeof res->reason, "%s", env->reason);
	snprintf(res->message, sizeof res->message, "%s", env->message);
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

typedef struct rpc_pending {
	rpc_group *group;
	nng_ctx ctx;
	nng_aio *aio;
	nng_msg *req;
	bool receiving;
	int64_t expire_mono;
} rpc_pending;

static void rpc_pending_finish(rpc_pending *p, rpc_result *res)
{
	rpc_group *g = p->group;
	nng_mtx_lock(g->mtx);
	bool last = --g->pending == 0;
	nng_mtx_unlock(g->mtx);
	if (last) {
		/* the copy that finishes last answers (duplicate mode) */
		g->done(g->arg, res);
		nng_mtx_free(g->mtx);
		free(g);
	}
	free(res->payload);
	nng_ctx_close(p->ctx);
	nng_aio_reap(p->aio);
	free(p);
}

static void rpc_pending_cb(void *arg)
{
	rpc_pending *p = arg;
	rpc_result res;
	int rv = nng_aio_result(p->aio);
	if (!p->receiving) {
		if (rv != 0) {
			nng_msg_free(p->req); /* not handed over */
			rpc_transport_result(&res, rv);
			rpc_pending_finish(p, &res);
			return;
		}
		p->receiving = true;
		int64_t left = p->expire_mono - clock_mono_ms();
		nng_aio_set_timeout(p->aio, left > 0 ? (nng_duration)left : 1);
		nng_ctx_recv(p->ctx, p->aio);
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
		rpc_pending *p = calloc(1, sizeof *p);
		if (p == NULL) {
			err = -ENOMEM;
			goto out_undo;
		}
		ps[i] = p;
		p->group = g;
		p->expire_mono = clock_mono_ms() + timeout_ms;
		p->req = rpc_encode_request(c, method, req, timeout_ms, &err);
		if (p->req == NULL)
			goto out_undo;
		int rv = nng_ctx_open(&p->ctx, c->sock);
		if (rv == 0) {
			rv = nng_aio_alloc(&p->aio, rpc_pending_cb, p);
			if (rv != 0)
				nng_ctx_close(p->ctx);
		}
		if (rv != 0) {
			err = rpc_errno(rv);
			goto out_undo;
		}
	}
	for (int i = 0; i < copies; i++) {
		nng_aio_set_timeout(ps[i]->aio, timeout_ms > 0 ? (nng_duration)timeout_ms : 1);
		nng_aio_set_msg(ps[i]->aio, ps[i]->req);
		nng_ctx_send(ps[i]->ctx, ps[i]->aio);
	}
	return 0;
out_undo:
	for (int i = 0; i < copies; i++) {
		if (ps[i] == NULL)
			continue;
		if (ps[i]->aio) {
			nng_aio_free(ps[i]->aio);
			nng_ctx_close(ps[i]->ctx);
		}
		nng_msg_free(ps[i]->req);
		free(ps[i]);
	}
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
