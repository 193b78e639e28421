/* rpc_client_internal: the client's types (the client, its pending calls,
 * their groups and batch calls) and steps, shared by rpc_client.c,
 * rpc_envelope.c and rpc_batch.c and by no other module. */
#ifndef SAGA_RPC_CLIENT_INTERNAL_H
#define SAGA_RPC_CLIENT_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <nng/nng.h>
#include <nng/supplemental/util/platform.h>

#include "rpc.h"
#include "sagas/v1/rpc.pb-c.h"

typedef struct rpc_pending rpc_pending;

struct rpc_client {
	nng_socket sock;
	rpc_client_opts opts;
	atomic_uint_fast64_t next_id;
	nng_mtx *mtx; /* guards everything below and every rpc_pending's timer fields */
	nng_cv *cv;
	long pipes; /* connections up now (rpc_client_connected) */
	nng_thread *timer;
	rpc_pending *head, *tail; /* calls awaiting their deadline, earliest first */
	int64_t timer_until;      /* clock_mono_ms the timer thread sleeps until */
	long calls;               /* calls started and not yet finished */
	bool closing;
};

/* The bytes REQ puts before the body (the request id), which count
 * against the server's frame limit. */
#define RPC_REQ_HEADER 4

/* Room for a client request id: a uint64 in decimal. */
#define RPC_RID_MAX 24

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

/* ---- envelopes (rpc_envelope.c) ---- */

/* rpc_pack_envelope packs `env` (borrowed) into a new frame the caller
 * owns; NULL (and *err: -EMSGSIZE over c's max_msg, -ENOMEM) on failure. */
nng_msg *rpc_pack_envelope(rpc_client *c, const Sagas__V1__RequestEnvelope *env, int *err);

/* rpc_pack_payload encodes `req` into a malloc'd buffer the caller frees
 * (*len bytes); NULL when out of memory. */
uint8_t *rpc_pack_payload(const ProtobufCMessage *req, size_t *len);

/* rpc_envelope_init fills `env` for a call of `method` with the payload
 * `pbuf` (`plen` bytes, borrowed) and a timeout of `timeout_ms` (0: none),
 * with the client's next request id written into `rid`. Returns that id. */
uint64_t rpc_envelope_init(rpc_client *c, Sagas__V1__RequestEnvelope *env, const char *method,
    char rid[RPC_RID_MAX], int64_t timeout_ms, uint8_t *pbuf, size_t plen);

/* rpc_encode_request builds the request frame of a call of `method` with
 * `req` and `timeout_ms`, owned by the caller; NULL (and *err) on failure. */
nng_msg *rpc_encode_request(
    rpc_client *c, const char *method, const ProtobufCMessage *req, int64_t timeout_ms, int *err);

/* rpc_result_of fills *res from the reply envelope `env`; its payload points
 * into `env` (borrowed: valid while `env` is). */
void rpc_result_of(rpc_result *res, const Sagas__V1__ReplyEnvelope *env);

/* rpc_reply_unpack decodes the reply frame `bytes` (`len` bytes), or NULL
 * when it does not decode or nests too deep. Free with
 * sagas__v1__reply_envelope__free_unpacked. */
Sagas__V1__ReplyEnvelope *rpc_reply_unpack(const uint8_t *bytes, size_t len);

/* rpc_transport_result fills *res with the result of a call the transport
 * failed with the nng error `nng_rv` (a timeout: DEADLINE_EXCEEDED, else
 * UNAVAILABLE; reason "transport"). */
void rpc_transport_result(rpc_result *res, int nng_rv);

/* ---- pending calls (rpc_client.c) ---- */

/* rpc_pending_open makes a call for frame `req` (taken, also on failure)
 * with its context and aio, not yet started, into *out. Returns 0 or a
 * negative errno. */
int rpc_pending_open(rpc_client *c, nng_msg *req, int64_t timeout_ms, rpc_pending **out);

/* rpc_pending_discard frees a call rpc_pending_open made and never started
 * (NULL: nothing). */
void rpc_pending_discard(rpc_pending *p);

/* rpc_pending_launch arms the timer of and sends the `n` calls `ps`, which
 * are then the client's. */
void rpc_pending_launch(rpc_client *c, rpc_pending **ps, int n);

#endif
