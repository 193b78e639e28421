/* rpc_envelope: the client's envelopes: a call's request envelope built and
 * packed into a frame (its request id, timeout and payload), a reply frame
 * decoded into an rpc_result, and the result of a transport failure. */
#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nng/nng.h>

#include "rpc.h"
#include "rpc_client_internal.h"
#include "rpc_internal.h"
#include "sagas/v1/rpc.pb-c.h"
#include "valid.h"

/* rpc_pack_envelope packs `env` into a new frame; NULL (and *err) when it
 * is over max_msg or out of memory. */
nng_msg *rpc_pack_envelope(rpc_client *c, const Sagas__V1__RequestEnvelope *env, int *err)
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
uint8_t *rpc_pack_payload(const ProtobufCMessage *req, size_t *len)
{
	size_t plen = protobuf_c_message_get_packed_size(req);
	uint8_t *pbuf = malloc(plen ? plen : 1);
	if (pbuf != NULL)
		*len = protobuf_c_message_pack(req, pbuf);
	return pbuf;
}

/* rpc_envelope_init fills `env` for a call of `method` with the payload
 * `pbuf` (`plen` bytes, borrowed) and a timeout of `timeout_ms` (0: none),
 * with the client's next request id written into `rid`. Returns that id. */
uint64_t rpc_envelope_init(rpc_client *c, Sagas__V1__RequestEnvelope *env, const char *method,
    char rid[RPC_RID_MAX], int64_t timeout_ms, uint8_t *pbuf, size_t plen)
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
nng_msg *rpc_encode_request(
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
void rpc_result_of(rpc_result *res, const Sagas__V1__ReplyEnvelope *env)
{
	memset(res, 0, sizeof *res);
	res->code = env->code;
	/* the server's texts are printed and put in JSON: UTF-8 whatever it
	 * sent (valid_utf8_copy) */
	valid_utf8_copy(res->reason, sizeof res->reason, env->reason);
	valid_utf8_copy(res->message, sizeof res->message, env->message);
	res->payload = env->payload.data;
	res->payload_len = env->payload.len;
}

/* rpc_reply_unpack decodes a reply frame, or NULL when it does not decode
 * or nests replies deeper than a batch's: refused before protobuf-c
 * recurses into it (valid_pb_nesting). Free with
 * sagas__v1__reply_envelope__free_unpacked. */
Sagas__V1__ReplyEnvelope *rpc_reply_unpack(const uint8_t *bytes, size_t len)
{
	if (!valid_pb_nesting(bytes, len, RPC_ENVELOPE_REPLIES_FIELD, RPC_ENVELOPE_NESTING_MAX))
		return NULL;
	return sagas__v1__reply_envelope__unpack(NULL, len, bytes);
}

int rpc_decode_reply(const uint8_t *bytes, size_t len, rpc_result *res)
{
	memset(res, 0, sizeof *res);
	Sagas__V1__ReplyEnvelope *env = rpc_reply_unpack(bytes, len);
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

void rpc_transport_result(rpc_result *res, int nng_rv)
{
	memset(res, 0, sizeof *res);
	res->transport = true;
	res->code = nng_rv == NNG_ETIMEDOUT ? RPC_DEADLINE_EXCEEDED : RPC_UNAVAILABLE;
	snprintf(res->reason, sizeof res->reason, "transport");
	snprintf(res->message, sizeof res->message, "%s", nng_strerror(nng_rv));
}
