/* rpc_batch: the client's batches (rpc.h rpc_batch_open): calls gathered
 * into batch frames of up to RPC_BATCH_MAX calls, one timeout each, sent as
 * one pending call of rpc_client.c. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nng/nng.h>

#include "rpc.h"
#include "rpc_client_internal.h"
#include "rpc_internal.h"
#include "sagas/v1/rpc.pb-c.h"

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
	if (c->opts.duplicate)
		return rpc_call_async(c, method, req, timeout_ms, done, arg);
	size_t plen = 0;
	uint8_t *pbuf = rpc_pack_payload(req, &plen);
	if (pbuf == NULL)
		return -ENOMEM;
	size_t need = plen + strlen(method) + 48;
	/* a frame stays under half of what a server takes by default */
	size_t room = (c->opts.max_msg < RPC_MAX_REQUEST_DEFAULT ? c->opts.max_msg
	                                                         : RPC_MAX_REQUEST_DEFAULT)
	    / 2;
	if (need > room) {
		free(pbuf);
		return rpc_call_async(c, method, req, timeout_ms, done, arg);
	}
	/* a frame has one timeout: a call with another one sends the calls
	 * gathered so far and begins the next frame */
	if (b->n == b->max_calls || b->bytes + need > room
	    || (b->n > 0 && timeout_ms != b->timeout_ms))
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
