/* rpc_internal: what rpc.c, rpc_server.c and rpc_client.c share and no
 * other module may use. */
#ifndef SAGA_RPC_INTERNAL_H
#define SAGA_RPC_INTERNAL_H

/* rpc_errno maps an nng error (NNG_E*, 0) to 0 or a negative errno
 * (-ENOMEM, -EADDRINUSE, -EINVAL, -ETIMEDOUT, -ESHUTDOWN, -EMSGSIZE,
 * -ECONNREFUSED, -EACCES for a failed TLS handshake, else -EIO): the one place that does. */
int rpc_errno(int nng_rv);

/* ---- a server's listeners and connections (rpc_conn.c) ---- */

#include <nng/nng.h>
#include <nng/supplemental/util/platform.h>

#include "rpc.h"

/* One listener and what its callers are. */
typedef struct rpc_lsn {
	nng_listener l;
	int id;         /* nng_listener_id, to know a pipe's listener */
	unsigned roles; /* authz.h */
	bool tls;
	int conns; /* under rpc_conns.mtx: open connections */
	int port;  /* a TLS listener's bound TCP port, for the handshake reaper */
	char url[256];
} rpc_lsn;

/* A server's listeners and open connections; zeroed, then rpc_conns_init. */
typedef struct rpc_conns {
	rpc_lsn listeners[RPC_LISTEN_MAX];
	int nlisten;
	int max_conns;   /* per listener */
	int64_t idle_ms; /* <= 0: never */
	nng_mtx *mtx;    /* guards table, the listeners' counts, reaping */
	nng_cv *cv;
	struct rpc_conn *table; /* by pipe id (uthash) */
	bool reaping;           /* the reaper runs */
	nng_thread *reaper;
	struct rpc_hs *hs; /* connections still in their TLS handshake (rpc_conn.c) */
	unsigned hs_gen;
} rpc_conns;

/* rpc_conns_init sets the cap (connections per listener) and the idle
 * timeout (ms) and makes the lock. Returns 0 or an nng error. */
int rpc_conns_init(rpc_conns *c, int max_conns, int64_t idle_ms);

/* rpc_conns_listen makes listener `ls` as c->listeners[i] on `sock` (its
 * TLS configuration, TCP_NODELAY) and starts it. Returns 0 or an nng error
 * (logged with the URL). */
int rpc_conns_listen(rpc_conns *c, nng_socket sock, int i, const rpc_listen *ls);

/* rpc_conns_added admits a new connection (NNG_PIPE_EV_ADD_PRE), or closes
 * it: a TLS one whose client certificate was not verified, or one past its
 * listener's cap (logged at most once per peer per interval). */
void rpc_conns_added(rpc_conns *c, nng_pipe p);

/* rpc_conns_removed forgets a closed connection (NNG_PIPE_EV_REM_POST). */
void rpc_conns_removed(rpc_conns *c, uint32_t id);

/* A token bucket of calls a second (rpc_rate_take); zeroed to start. */
typedef struct rpc_rate {
	bool started;
	int64_t at_ms; /* clock_mono_ms of the last take */
	int64_t milli; /* thousandths of a call in the bucket */
} rpc_rate;

/* rpc_rate_take takes one call from bucket r at now_ms (ms, clock_mono_ms)
 * for a rate of per_s calls a second and a burst of per_s: a first take
 * finds the bucket full; it refills per_s thousandths of a call a ms (a
 * clock that goes back refills nothing). Returns whether a call was there
 * (false: over the rate). Pure. For the Health-only listener (docs/
 * security.md, "Bounded resources": a rate that does not depend on how
 * fast the server answers, as calls in service do, and that has no window
 * edge to burst across). */
bool rpc_rate_take(rpc_rate *r, int64_t now_ms, int per_s);

/* rpc_conns_busy adds `delta` to the calls in service of connection `id`
 * (a whole request arrived: +1, also marking it not idle and taking one
 * from its bucket of RPC_NO_ROLE_CALLS_PER_S; answered: -1), sets *busy
 * (may be NULL) to how many it has in service now and *over_rate (may be
 * NULL) to whether this request was past its rate. Returns the index of its
 * listener, or -1 when it is not open (then *busy and *over_rate are left
 * alone). */
int rpc_conns_busy(rpc_conns *c, uint32_t id, int delta, int *busy, bool *over_rate);

/* rpc_conns_doom has the reaper close connection `id` at once (from any
 * thread, an nng callback too: it only marks it). For a peer that reads no
 * replies, or sends more than its listener allows in flight. */
void rpc_conns_doom(rpc_conns *c, uint32_t id);

/* rpc_conns_start_reaper starts the thread that, about once a second,
 * closes the connections doomed (rpc_conns_doom), those idle past idle_ms
 * with nothing in service (never when idle_ms <= 0), and those to a TLS
 * listener still in their handshake after RPC_HANDSHAKE_TIMEOUT_MS; stop it with
 * rpc_conns_stop_reaper before the socket closes. Returns 0 or an nng
 * error. */
int rpc_conns_start_reaper(rpc_conns *c);
void rpc_conns_stop_reaper(rpc_conns *c);

/* rpc_conns_fini frees the table and the lock (the reaper stopped). */
void rpc_conns_fini(rpc_conns *c);

#endif
