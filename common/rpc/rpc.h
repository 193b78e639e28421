/* rpc: the gRPC-style RPC layer over nng REQ/REP (docs/protocol.md).
 *
 * The only module that touches nng sockets and the envelope. A request frame
 * is a sagas.v1.RequestEnvelope; a reply frame a sagas.v1.ReplyEnvelope with a
 * status code numbered as gRPC's codes.
 *
 * Server: one REP socket with RPC_SERVER_CONTEXTS receive contexts, a queue
 * of received requests and a pool of worker threads, each with its own
 * per-worker state (typically a PGconn). A worker takes every queued request
 * (up to RPC_BATCH_MAX) at once, so under load requests are served in
 * batches (one transaction for many commands) and concurrently. Client: one REQ socket; one nng_ctx
 * per request in flight, completed through a callback (async) or waited for (sync).
 */
#ifndef SAGA_RPC_H
#define SAGA_RPC_H

#include <protobuf-c/protobuf-c.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "status.h"
#include "tls.h"

#define RPC_MAX_MSG_DEFAULT (1u << 20) /* bytes: reply frames above are dropped */
/* The largest request frame a server takes by default (bytes). The largest
 * legitimate one is a batch of RPC_BATCH_CALLS_MAX calls of the biggest
 * request, about 29 KiB (docs/protocol.md, "Frame limits"; checked by
 * test_rpc_batch); a frame declared bigger closes the connection before
 * anything is allocated, and a connection that sends part of a frame holds
 * at most this much. Clients cut their batch frames at half of it. */
#define RPC_MAX_REQUEST_DEFAULT (64u << 10)
/* The most connections a listener keeps open by default; more are closed
 * as they arrive (logged once per interval). */
#define RPC_MAX_CONNS_DEFAULT 1000
/* How long a connection may go without a whole request while none of its
 * calls is being served or held, by default (ms): then the server closes it
 * (a stalled half frame, an idle peer); a client of this project dials
 * again by itself. */
#define RPC_IDLE_TIMEOUT_DEFAULT_MS 60000
/* How long a reply may wait to be taken by its peer (ms): a connection
 * whose peer reads no reply for this long is closed, freeing the receive
 * contexts its calls held (a peer that sends and never reads would
 * otherwise hold every one). */
#define RPC_SEND_TIMEOUT_MS 5000
/* The most calls a connection to a listener with no role (Health only) may
 * have in service at once; past it the connection is closed. */
#define RPC_NO_ROLE_INFLIGHT_MAX 4
/* The most calls such a connection may send a second (a token bucket,
 * rpc_rate_take: at most that many at once, then that rate); past it the
 * connection is closed too. A batch frame is refused there (one call a
 * frame: rpc_server_open_frame). */
#define RPC_NO_ROLE_CALLS_PER_S 8
/* How long a connection to a TLS listener may take to finish its handshake
 * (ms); then the server closes it (rpc_conn.c: nng 1.5.2 would wait for
 * ever, and the connection cap does not count it yet). */
#define RPC_HANDSHAKE_TIMEOUT_MS 10000
/* The most bytes of rows a list reply (ListSagas, ListStock, ListAccounts)
 * carries, so that the frame stays under a client's RPC_MAX_MSG_DEFAULT. */
#define RPC_REPLY_BUDGET    (RPC_MAX_MSG_DEFAULT - 64 * 1024)
#define RPC_SERVER_CONTEXTS 256 /* requests a server holds at once */
#define RPC_BATCH_MAX       128 /* requests a worker takes at once */
/* The method of a frame that carries several calls (RequestEnvelope.calls,
 * docs/protocol.md "Batches"), and the most calls one may carry. */
#define RPC_BATCH_METHOD "/sagas.v1.Rpc/Batch"
/* The field numbers of the recursive envelope fields (RequestEnvelope
 * .calls, ReplyEnvelope.replies) and how deep they may nest in a frame
 * before it is refused undecoded (valid_pb_nesting): a batch's calls are
 * level 1, a call inside one (refused as "a batch inside a batch") level 2. */
#define RPC_ENVELOPE_CALLS_FIELD   5
#define RPC_ENVELOPE_REPLIES_FIELD 6
#define RPC_ENVELOPE_NESTING_MAX   2
#define RPC_BATCH_CALLS_MAX        128
#define RPC_REASON_MAX             64
#define RPC_MESSAGE_MAX            256
#define RPC_REQUEST_ID_MAX         64

/* rpc_code_name returns the name of a status code ("OK", "INVALID_ARGUMENT", ...),
 * or "UNKNOWN_CODE" for numbers outside 0..16. Static storage. */
const char *rpc_code_name(int code);

/* ---- server ---- */

/* One decoded request as a handler sees it; all pointers are borrowed for
 * the duration of the handler call. */
typedef struct rpc_request {
	const char *method;       /* "/sagas.v1.Stock/ReserveStock" */
	const char *request_id;   /* at most RPC_REQUEST_ID_MAX bytes */
	int64_t deadline_mono_ms; /* the call's deadline on this host's monotonic
	                             clock (clock_mono_ms): the envelope's
	                             timeout_ms counted from when the server took
	                             the frame off the connection; 0 = none */
	const uint8_t *payload;
	size_t payload_len;
	bool in_batch;  /* came in a batch frame: it cannot be held (rpc_hold) */
	unsigned roles; /* the caller's roles (authz.h): its listener's */
	uint32_t pipe;  /* the caller's connection, for rpc_peer */
	void *held;     /* the server's: what rpc_hold needs; do not touch */
} rpc_request;

/* A call whose reply is sent later (rpc_hold). */
typedef struct rpc_held rpc_held;

/* What a handler answers. Starts zeroed (OK, no payload). */
typedef struct rpc_reply {
	int code;
	char reason[RPC_REASON_MAX];
	char message[RPC_MESSAGE_MAX];
	uint8_t *payload; /* malloc'd; freed by the server after sending */
	size_t payload_len;
} rpc_reply;

/* rpc_reply_ok sets code OK and packs `msg` as the payload. Returns 0, or
 * -ENOMEM (then the reply is INTERNAL). */
int rpc_reply_ok(rpc_reply *r, const ProtobufCMessage *msg);

/* rpc_reply_error sets a non-OK code, a stable reason (may be "") and a
 * printf-style message, and drops any payload. */
void rpc_reply_error(rpc_reply *r, int code, const char *reason, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* rpc_unpack decodes `call`'s payload as a message of type `desc` and
 * insists on its canonical encoding (valid_pb_exact), as every handler of
 * this project does before it reads a field. Returns the message (the
 * caller's: free it with protobuf_c_message_free_unpacked or the type's
 * __free_unpacked, and cast it to the type of `desc`), or NULL with `r`
 * filled: INVALID_ARGUMENT malformed_payload, "could not decode <Type>"
 * when the bytes do not decode, "could not decode <Type>: not a canonical
 * encoding " VALID_CANONICAL_HINT when they decode but do not pack back to
 * the same length (<Type> is desc->short_name, "StartSagaRequest"). An
 * empty payload decodes (every field at its default). Thread-safe. */
ProtobufCMessage *rpc_unpack(
    const ProtobufCMessageDescriptor *desc, const rpc_request *call, rpc_reply *r);

/* What rpc_server_ops.linger_us sees of a frame it holds. */
typedef struct rpc_linger_frame {
	const char *method;
	const uint8_t *payload;
	size_t payload_len;
} rpc_linger_frame;

/* A service the server answers itself, for every daemon the same way
 * (Health, Admin), before the daemon's own handler: a call whose method is
 * "/" name "/..." goes to `handle`, which must fill `reply`. `ctx` is
 * passed back. Runs on a worker thread. */
typedef struct rpc_service {
	const char *name; /* "sagas.v1.Admin" */
	void (*handle)(void *ctx, const rpc_request *call, rpc_reply *reply);
	void *ctx;
} rpc_service;

/* rpc_peer writes the address of the caller on connection `pipe`
 * (rpc_request.pipe) as "1.2.3.4:5678", "[::1]:5678" or the URL's path
 * into buf (len bytes; "unknown" when closed). Returns buf. */
const char *rpc_peer(uint32_t pipe, char *buf, size_t len);

/* rpc_refusal_note counts a call refused before its handler ran (or by its
 * payload's decoding) in sagas_rpc_refusals_total{reason} and logs a
 * WARNING naming the caller on connection `pipe` (0: unknown), `reason`
 * (static storage, one of AUTHZ_REFUSAL_REASONS) and `method` (may be NULL;
 * escaped by valid_escape, cut short), at most once
 * per reason and address per AUTHZ_LOG_INTERVAL_MS (authz_log_limited).
 * Thread-safe. */
void rpc_refusal_note(uint32_t pipe, const char *reason, const char *method);

typedef struct rpc_server_ops {
	/* Called once in each worker thread before it serves; sets *worker.
	 * A non-zero return stops that worker (logged). May be NULL. */
	int (*worker_init)(void *app, void **worker);
	/* Called once in each worker thread when it stops. May be NULL. */
	void (*worker_fini)(void *app, void *worker);
	/* Serves one call; must fill `reply`. Runs on the worker's thread. */
	void (*handle)(void *app, void *worker, const rpc_request *call, rpc_reply *reply);
	/* Serves `n` calls (1..RPC_BATCH_MAX) that arrived together; must fill
	 * every replies[i] (zeroed on entry) for calls[i]. The server sends
	 * the replies only after it returns, so a daemon may apply the calls'
	 * commands in one transaction and must return only after its commit
	 * (docs/architecture.md, "Batching"). Runs on the worker's thread.
	 * NULL: `handle` is called for each call. Never called while a fault
	 * is armed (fault_any): then every call goes alone through `handle`. */
	void (*handle_batch)(
	    void *app, void *worker, const rpc_request *calls, rpc_reply *replies, size_t n);
	/* The full names of the methods a batch frame may carry (their
	 * replies are small and immediate), NULL-terminated; a call of any
	 * other method in a batch is refused with INVALID_ARGUMENT. NULL: any
	 * method. */
	const char *const *batch_methods;
	/* Batching under load (like PostgreSQL's commit_delay): called by a
	 * worker that has taken `n` frames (1..RPC_BATCH_MAX-1) and found no
	 * more queued; frames[i] is frame i's method and payload
	 * (RPC_BATCH_METHOD and no payload for a batch frame, "" for one that
	 * did not decode; borrowed for the call, the payload not yet checked).
	 * Returns how long to wait for more, in microseconds (0: serve now).
	 * While one worker waits, new calls queue for it and wake no other
	 * worker, so they are served with the ones it holds as one batch
	 * (handle_batch). Runs on the worker thread with no lock held; must be
	 * cheap and thread-safe. Never asked while a fault is armed, or
	 * without handle_batch. NULL: never wait. */
	int64_t (*linger_us)(void *app, const rpc_linger_frame *frames, size_t n);
	/* Called when a client connection (an nng pipe, rpc_held_pipe) closes,
	 * on an nng thread that holds the socket's lock: it must only note the
	 * id and return (no rpc call, no rpc_held_reply). May be NULL. */
	void (*pipe_closed)(void *app, uint32_t pipe_id);
	/* The services the server answers before `handle` (Health, Admin),
	 * NULL-terminated; may be NULL. Borrowed until rpc_server_stop. */
	const rpc_service *const *services;
} rpc_server_ops;

/* One listener of a server. */
typedef struct rpc_listen {
	const char *url; /* "tls+tcp://0.0.0.0:7102", "tcp://127.0.0.1:7102" */
	unsigned roles;  /* the roles (authz.h) its callers have */
	tls_conf *tls;   /* for a TLS URL (tls.h); borrowed until
	                    rpc_server_stop; NULL for a plain one */
} rpc_listen;

/* What a server listens on and how much it holds. */
typedef struct rpc_server_cfg {
	const rpc_listen *listen; /* 1..RPC_LISTEN_MAX listeners, borrowed */
	size_t nlisten;
	int workers;       /* worker threads, 1..256 */
	int contexts;      /* calls held at once, queued, served or held
	                      (0 = RPC_SERVER_CONTEXTS; at most 65536) */
	size_t max_msg;    /* largest request frame (0 = RPC_MAX_REQUEST_DEFAULT) */
	int max_conns;     /* open connections per listener (0 =
	                      RPC_MAX_CONNS_DEFAULT) */
	int64_t idle_ms;   /* close a connection with no whole request for this
	                      long and nothing in service (0 =
	                      RPC_IDLE_TIMEOUT_DEFAULT_MS; -1 = never) */
	bool open_methods; /* methods outside the roles table go to the handler
	                      (tests of the RPC layer); false: UNIMPLEMENTED */
} rpc_server_cfg;

#define RPC_LISTEN_MAX 4

typedef struct rpc_server rpc_server;

/* rpc_server_serve_on starts a server as `cfg` says (borrowed for the call;
 * its listeners' tls until rpc_server_stop). Every call is checked against
 * the roles table (authz.h) with the roles of the listener it came on
 * before anything else serves it. A TLS listener takes only connections
 * whose client certificate its CA verified; a connection past max_conns, or
 * idle past idle_ms with nothing in service, is closed (logged at most once
 * per interval). `ops` and `app` are borrowed until rpc_server_stop.
 * Returns 0 and *out, or a negative errno (-EADDRINUSE, -EINVAL, -ENOMEM);
 * a listener that fails is logged with its URL. */
int rpc_server_serve_on(rpc_server **out, const rpc_server_cfg *cfg, const rpc_server_ops *ops,
    void *app) __attribute__((warn_unused_result));

/* rpc_server_start is rpc_server_serve_on with one plain listener on `url`
 * whose callers have every role, for tests and tools on loopback: `workers`,
 * `contexts` and `max_msg` as in rpc_server_cfg. */
int rpc_server_start(rpc_server **out, const char *url, int workers, int contexts, size_t max_msg,
    const rpc_server_ops *ops, void *app) __attribute__((warn_unused_result));

/* rpc_hold, called by a handler (handle or handle_batch) while it serves
 * `call`, keeps the call open: the server sends no reply when the handler
 * returns (whatever it filled in is dropped), and the context stays taken
 * until rpc_held_reply. For long polls (Orchestrator/WaitSaga). The handler
 * must copy what it needs from `call`: its pointers end with the handler.
 * Returns the token to reply with, or NULL when the call cannot be held
 * (then the handler answers as usual). */
rpc_held *rpc_hold(const rpc_request *call);

/* rpc_held_pipe is the id of the client connection a held call came on
 * (see rpc_server_ops.pipe_closed). */
uint32_t rpc_held_pipe(const rpc_held *h);

/* rpc_held_reply sends `reply` for a held call (from any thread, even
 * before the handler that held it has returned), frees its payload and ends
 * the token. Call it exactly once per token, and never after
 * rpc_server_stop of the server the call came to. */
void rpc_held_reply(rpc_held *h, rpc_reply *reply);

/* rpc_server_stop closes the socket, waits for the workers to finish their
 * current call and frees the server. NULL is ignored. */
void rpc_server_stop(rpc_server *s);

/* ---- client ---- */

typedef struct rpc_client_opts {
	int64_t resend_ms; /* NNG_OPT_REQ_RESENDTIME; 0 = never resend */
	size_t max_msg;    /* 0 = RPC_MAX_MSG_DEFAULT */
	bool duplicate;    /* send every request twice at once, report the
	                      reply that arrives last (tests idempotency) */
	bool connect_now;  /* dial synchronously: rpc_client_open fails with
	                      -ECONNREFUSED when nothing listens (the CLI) */
	tls_conf *tls;     /* for a TLS URL (tls_client_new); borrowed until
	                      rpc_client_close; NULL for a plain one */
	bool failover;     /* with resend_ms 0 and two or more URLs
	                      (rpc_client_open_urls): a request whose
	                      connection closes is re-sent at once on another
	                      one; only for idempotent requests */
} rpc_client_opts;

/* The outcome of one call. A transport failure (no connection, timeout,
 * malformed reply) has transport = true and code UNAVAILABLE or
 * DEADLINE_EXCEEDED. */
typedef struct rpc_result {
	int code;
	bool transport;
	char reason[RPC_REASON_MAX];
	char message[RPC_MESSAGE_MAX];
	uint8_t *payload; /* reply message bytes; see the owner rules below */
	size_t payload_len;
} rpc_result;

typedef struct rpc_client rpc_client;

/* ---- URL lists: the replicas of one service ----
 * A service may run as several processes on one database (replicas,
 * docs/operations.md "Replicas"); its callers take a comma-separated list
 * of their URLs ("tcp://127.0.0.1:5001,tcp://127.0.0.1:5002") and dial
 * them all from one REQ socket (rpc_client_open_urls). */

/* The most URLs in one list. */
#define RPC_URLS_MAX 16

/* A parsed list of URLs, each with its TLS configuration. */
typedef struct rpc_urls {
	size_t n;                    /* 1..RPC_URLS_MAX */
	char *url[RPC_URLS_MAX];     /* each NUL-terminated, inside buf */
	tls_conf *tls[RPC_URLS_MAX]; /* rpc_urls_tls: for each TLS entry, else NULL */
	/* the name the server's certificate must hold when the entry says
	 * "?server_name=NAME" (inside buf), else NULL: its URL's host */
	const char *server_name[RPC_URLS_MAX];
	char *buf; /* malloc'd copy of the list */
} rpc_urls;

/* rpc_urls_parse splits `list` at commas (spaces around an entry are
 * dropped) into *out, which the caller frees with rpc_urls_free (also after
 * a failure). Every entry must pass rpc_url_ok and appear once. A TLS
 * entry may end in "?server_name=NAME" (tls_name_ok): its server's
 * certificate must then name NAME, whatever address the URL dials
 * (out->server_name[i]; out->url[i] is the URL without it, as nng dials
 * it). The reasons of a bad one are "server_name= is for tls+tcp:// URLs"
 * and "bad server_name (letters, digits, '.', '-' and '_')". Returns 0,
 * -ENOMEM, or -EINVAL with `err` (len bytes) naming the bad entry without
 * a prefix: "\"foo\": expected tls+tcp://HOST:PORT, tcp://HOST:PORT or
 * ipc://PATH" for a single URL, "\"foo\" (entry 2 of 3): ..." in a list;
 * the reasons are that one, "empty", "the same URL as entry N" and "N URLs:
 * at most 16". */
int rpc_urls_parse(rpc_urls *out, const char *list, char *err, size_t len)
    __attribute__((warn_unused_result));

/* rpc_urls_tls_entry returns the first TLS entry of `u` (tls_url), or
 * NULL when there is none. Borrowed from `u`. */
const char *rpc_urls_tls_entry(const rpc_urls *u);

/* rpc_urls_all_tls is true when every entry of `u` is a TLS URL. */
bool rpc_urls_all_tls(const rpc_urls *u);

/* rpc_urls_tls makes u->tls[i] for each TLS entry with tls_client_new(`f`)
 * (each its own: the server's name is u->server_name[i] when given, else
 * its URL's host; the handshake fails unless the server's certificate
 * names it). Returns 0, or a
 * negative errno with `err` (len bytes) "<url> (entry i of n): <reason>"
 * (just "<reason>" for a single URL); the ones made stay in `u` for
 * rpc_urls_free. */
int rpc_urls_tls(rpc_urls *u, const tls_files *f, char *err, size_t len)
    __attribute__((warn_unused_result));

/* rpc_urls_free frees the list's copy and its TLS configurations and
 * zeroes *u; a zeroed or NULL `u` is ignored. */
void rpc_urls_free(rpc_urls *u);

/* rpc_urls_text writes the list back as "a,b" into buf (len bytes; cut
 * short when it does not fit), for logs. Returns buf. */
const char *rpc_urls_text(const rpc_urls *u, char *buf, size_t len);

/* rpc_client_connected is how many connections `c` has up now (to the
 * replicas of its list, or its one URL). Thread-safe. */
int rpc_client_connected(rpc_client *c);

/* rpc_url_ok is true when `url` has a scheme nng can listen on or dial
 * (tcp, tcp4, tcp6, ipc, inproc, abstract, ws) and something after it, and
 * holds no space or control byte (two URLs missing their comma). */
bool rpc_url_ok(const char *url);

/* rpc_client_open makes a REQ socket dialing `url` in the background (it
 * connects and reconnects by itself; calls wait for a connection until their
 * timeout). `opts` may be NULL for defaults. A TLS URL needs opts->tls.
 * Returns 0 and *out, or a negative errno (-EINVAL: a TLS URL without
 * opts->tls, or a plain one with it; with connect_now, -ECONNREFUSED when
 * nothing listens and -EACCES when the TLS handshake was refused). */
int rpc_client_open(rpc_client **out, const char *url, const rpc_client_opts *opts)
    __attribute__((warn_unused_result));

/* rpc_client_open_urls is rpc_client_open for the replicas of one service:
 * one REQ socket with a dialer for each entry of `u` (borrowed for the
 * call; each dialer with u->tls[i], opts->tls is ignored), so that calls
 * are spread over the replicas that are connected (nng's REQ sends each
 * request on the next idle connection) and none go to one that is down.
 With opts->failover, two or more entries and opts->resend_ms 0,
 * NNG_OPT_REQ_RESENDTIME is set to RPC_FAILOVER_RESEND_MS: nng 1.5.2 then
 * re-sends a request whose connection closed (its replica died) at once on
 * another connection, where with resend off it fails the call
 * (NNG_ECONNRESET: UNAVAILABLE, the caller retries); the time is longer
 * than any call's timeout, so a live connection never gets a resend. With
 * connect_now, each entry is dialed synchronously, one after another, and
 * those that fail are dialed again in the background: it fails only when
 * none connected (-ECONNREFUSED, or -EACCES when a TLS handshake was
 * refused). An entry that accepts connections but never completes the
 * handshake (a frozen process) costs nng's handshake limit (10 s) before
 * the next is dialed. Returns 0 and *out, or a negative errno as
 * rpc_client_open. */
int rpc_client_open_urls(rpc_client **out, const rpc_urls *u, const rpc_client_opts *opts)
    __attribute__((warn_unused_result));

/* The resend time of a list's REQ socket (rpc_client_open_urls), in ms:
 * a day, longer than any call waits. */
#define RPC_FAILOVER_RESEND_MS (24 * 3600 * 1000)

/* rpc_client_close closes the socket (calls in flight complete with
 * UNAVAILABLE) and frees the client. NULL is ignored. */
void rpc_client_close(rpc_client *c);

/* Called once per call, on an nng thread; `res` and its payload are valid
 * only during the callback. Must not block for long. */
typedef void (*rpc_done_fn)(void *arg, const rpc_result *res);

/* rpc_call_async sends `req` to `method` with a timeout of `timeout_ms`
 * (also sent as the envelope deadline). Returns 0 when the call is under
 * way (`done` will run exactly once), or a negative errno (then `done` is
 * never called: -ENOMEM, -EMSGSIZE when the request is too big). */
int rpc_call_async(rpc_client *c, const char *method, const ProtobufCMessage *req,
    int64_t timeout_ms, rpc_done_fn done, void *arg) __attribute__((warn_unused_result));

/* A batch: calls gathered by one thread and sent as one frame
 * (RPC_BATCH_METHOD), so that many commands cost one message each way; the
 * server serves them together. Each call still has its own request id,
 * deadline, reply and `done` callback, as with rpc_call_async. */
typedef struct rpc_batch rpc_batch;

/* rpc_batch_open starts an empty batch for client `c` that sends a frame
 * each `max_calls` calls (clamped to 1..RPC_BATCH_MAX). Returns it, or NULL
 * when out of memory (then send each call with rpc_call_async). The batch is
 * the caller's until rpc_batch_send; use it from one thread. */
rpc_batch *rpc_batch_open(rpc_client *c, int max_calls);

/* rpc_batch_add adds a call, as rpc_call_async would make it: `method` must
 * stay valid until rpc_batch_send (a string literal); `req` is encoded now.
 * A call in duplicate mode (opts.duplicate) and a call bigger than half of
 * max_msg go out at once on their own (rpc_call_async), ahead of the batch.
 * When the batch holds max_calls calls or half of max_msg bytes, or the
 * call's timeout differs from the batch's (a frame has one timeout), the
 * calls gathered are sent and a new frame begins with the call. Returns 0 when `done` will run
 * exactly once, or a negative errno as rpc_call_async (then it never
 * runs). */
int rpc_batch_add(rpc_batch *b, const char *method, const ProtobufCMessage *req, int64_t timeout_ms,
    rpc_done_fn done, void *arg) __attribute__((warn_unused_result));

/* rpc_batch_send sends the calls added (one plain frame for a lone call)
 * and frees `b` (NULL is ignored). A call that cannot be sent is answered
 * through its `done` at once, as a transport failure (UNAVAILABLE, possibly
 * on this thread). A call missing from the server's batch reply (dropped by
 * failure injection) times out as a lone call would. */
void rpc_batch_send(rpc_batch *b);

/* rpc_call is the blocking form. Fills *res; res->payload is malloc'd and
 * freed by rpc_result_clear. Returns 0 when a result was produced (even a
 * non-OK one), or a negative errno as rpc_call_async. */
int rpc_call(rpc_client *c, const char *method, const ProtobufCMessage *req, int64_t timeout_ms,
    rpc_result *res) __attribute__((warn_unused_result));

/* rpc_result_clear frees the payload of a result from rpc_call. */
void rpc_result_clear(rpc_result *res);

/* rpc_call_raw sends `len` raw bytes as a frame, without an envelope, and waits up
 * to timeout_ms for any reply frame, for tests of malformed input. Returns 0
 * and a malloc'd reply in *reply (length *reply_len), -ETIMEDOUT when none came, or a
 * negative errno. */
int rpc_call_raw(rpc_client *c, const uint8_t *bytes, size_t len, int64_t timeout_ms,
    uint8_t **reply, size_t *reply_len);

/* rpc_decode_reply decodes a reply frame into *res (payload malloc'd).
 * Returns 0, or -EBADMSG when the bytes are not a ReplyEnvelope. */
int rpc_decode_reply(const uint8_t *bytes, size_t len, rpc_result *res);

#endif
