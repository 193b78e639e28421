/* rpc_server_internal: the server's types (its slots, workers, frames and
 * calls), shared by rpc_server.c and rpc_frame.c and by no other module. */
#ifndef SAGA_RPC_SERVER_INTERNAL_H
#define SAGA_RPC_SERVER_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <nng/nng.h>
#include <nng/supplemental/util/platform.h>

#include "rpc.h"
#include "rpc_internal.h"
#include "sagas/v1/rpc.pb-c.h"

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
	int64_t recv_ms;    /* clock_mono_ms when the request was received (taken off
	                       the connection by this slot's receive) */
	uint32_t busy_pipe; /* the connection whose call it holds (rpc_conn.busy),
	                       0 for none */
	unsigned roles;     /* of the request's caller: its listener's */
	const char *method; /* of a held call: its metrics label (authz_method_name) */
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
	rpc_conns conns;   /* its listeners and connections (rpc_conn.c) */
	bool open_methods; /* methods outside the roles table go to the handler */
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
	int64_t recv_ms; /* clock_mono_ms when its slot received it */
	unsigned roles;  /* its caller's (authz.h) */
	uint32_t pipe;   /* its connection */
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

/* ---- frames (rpc_frame.c) ---- */

/* rpc_encode_reply packs `reply` (borrowed) with `request_id` into a new
 * nng message the caller owns, or NULL when out of memory. */
nng_msg *rpc_encode_reply(const rpc_reply *reply, const char *request_id);

/* rpc_server_open_frame decodes the request frame f->msg into f->env and
 * sets f->n, the calls it carries: 1 for a plain envelope, its calls for a
 * batch, 0 when it is refused as a whole (f->answered, f->reply). */
void rpc_server_open_frame(rpc_frame *f);

/* rpc_server_decode checks the call `it` of server `s` and answers what the
 * server answers itself (it->answered, it->drop); otherwise fills *call
 * (borrowing from it->env) for the handler. */
void rpc_server_decode(rpc_server *s, rpc_item *it, rpc_request *call);

/* rpc_encode_batch_reply packs the replies of the batch frame `f`'s calls
 * (in `items`) into one new nng message the caller owns, or NULL when out
 * of memory. */
nng_msg *rpc_encode_batch_reply(const rpc_frame *f, const rpc_item *items);

#endif
