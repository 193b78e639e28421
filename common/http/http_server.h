/* http_server: a bounded HTTP listener on libmicrohttpd and GnuTLS, shared
 * by the /metrics listener of every daemon (metrics_http.h) and the HTTP
 * API of gatewayd (docs/protocol.md, "The HTTP API").
 *
 * The rule is the RPC listeners' (docs/security.md): plain http:// only on
 * an address no other host can reach (127.0.0.0/8, ::1, localhost),
 * anywhere else https:// with the server's certificate and a CA whose
 * client certificates may call it: a caller without one gets no HTTP status
 * at all (the connection is closed), and is counted
 * (sagas_rpc_refusals_total{reason="unverified"}) and logged at most once
 * per address per AUTHZ_LOG_INTERVAL_MS.
 *
 * Bounds, each the caller's: the connections in all and from one address
 * (past them a new connection is closed at once, without an HTTP status;
 * seen on gatewayd's thread_per_conn listeners for both caps), an idle
 * timeout (a stalled TLS handshake included), the memory
 * of one connection's request headers, and the bytes of a request body
 * (past it: 413, the handler is not called).
 *
 * Names (http_names.h, docs/security.md "DNS rebinding"): a request whose
 * Host header is not one of the listener's names (its listen address,
 * localhost, 127.0.0.1 and [::1] with its port when it listens on loopback
 * or every address, cfg.allowed_hosts) is answered 421 Misdirected
 * Request, and a POST, PUT, DELETE or PATCH whose Origin header is present
 * and names none of them 403, before the handler runs: nothing is changed,
 * the refusal is counted (sagas_http_refusals_total{listener,reason="host"
 * or "origin"}) and logged at most once per address per
 * AUTHZ_LOG_INTERVAL_MS. A request without a Host (HTTP/1.0) is refused as
 * a foreign one: every browser sends Host, and no client of ours omits it.
 * Paths: a request whose raw path (before any '?') holds a '%' is answered
 * 400 bad_path before the handler runs, counted (reason="bad_path") and
 * logged the same way: the library decodes the path, so a %2F would act as
 * a '/' and a %00 would cut it, past a proxy's rule for literal paths; no
 * route or id of ours needs an escape.
 */
#ifndef SAGA_HTTP_SERVER_H
#define SAGA_HTTP_SERVER_H

#include <stdbool.h>
#include <stddef.h>

#include "tls.h"

/* The most extra headers a reply carries. */
#define HTTP_REPLY_HEADERS_MAX 8

/* One request, as the handler sees it; every pointer is borrowed for the
 * handler call only. */
typedef struct http_request {
	const char *method; /* "GET", "POST", ... */
	const char *path;   /* the URL's path, percent-decoded, without the query */
	const char *body;   /* the request body (NUL-terminated), "" when none */
	size_t body_len;    /* bytes of body, without the NUL */
	const char *peer;   /* the caller's address, "1.2.3.4:5678" or "[::1]:5678" */
	void *conn;         /* the library's connection: for http_request_header
	                       and http_request_query */
} http_request;

/* What the handler answers: starts zeroed. status 0 closes the connection
 * without an answer. */
typedef struct http_reply {
	unsigned status;          /* e.g. 200 */
	const char *content_type; /* static storage; NULL: no Content-Type */
	char *body;               /* malloc'd: the server frees it; NULL: empty */
	size_t body_len;
	bool body_static; /* body is static storage: not freed */
	/* extra headers, name and value, both static storage or living as long
	 * as the server (e.g. "Allow", "GET, POST") */
	const char *headers[HTTP_REPLY_HEADERS_MAX][2];
	int n_headers;
} http_reply;

/* The handler of every request: fills `rep` (zeroed). Runs on one of the
 * library's threads (one per connection with thread_per_conn, else the one
 * polling thread: then it must not block). */
typedef void (*http_handler_fn)(void *arg, const http_request *req, http_reply *rep);

/* What a listener serves and how much it holds (http_server_start). */
typedef struct http_server_cfg {
	const char *url;         /* checked by http_url_check; borrowed for the call */
	const tls_files *tls;    /* for https: cert, key and ca (the callers' CA);
	                            borrowed for the call (the texts are copied) */
	http_handler_fn handler; /* required */
	void *arg;               /* passed back to the callbacks */
	unsigned conns_max;      /* connections in all */
	unsigned conns_per_ip;   /* connections from one address */
	unsigned timeout_s;      /* closed after this long without a byte */
	size_t header_memory;    /* bytes a connection's request headers may take */
	size_t max_body;         /* bytes of a request body; more: 413 */
	bool thread_per_conn;    /* a thread per connection (a handler may block) */
	const char *name;        /* for logs: "metrics", "gatewayd"; static storage */
	const char *ca_option;   /* the option of the CA, for logs: "--metrics-tls-ca" */
	/* --http-allowed-hosts: more names the listener answers to ("host" or
	 * "host:port", comma-separated; checked by http_hosts_check); NULL or
	 * "": only its own; borrowed for the call (parsed and copied) */
	const char *allowed_hosts;
	/* the `listener` label of sagas_http_refusals_total: "metrics",
	 * "client", "admin"; static storage; NULL: `name` */
	const char *label;
	/* optional: the open connections changed by `delta` (+1, -1) */
	void (*on_conn)(void *arg, int delta);
	/* optional: a connection without a verified client certificate was
	 * closed (already counted and logged) */
	void (*on_unverified)(void *arg);
} http_server_cfg;

typedef struct http_server http_server;

/* http_url_check checks a listener URL (borrowed): "" (none),
 * http://HOST:PORT on loopback, or https://HOST:PORT; no user part, no path
 * but "/", no query. `ca_option` names the CA option in the reason
 * ("--metrics-tls-ca") and `path_hint` says where things are served
 * ("metrics are served at /metrics"). Sets *tls to whether it is https.
 * Returns 0, or -EINVAL with a one-line reason in `why` (len bytes). */
int http_url_check(const char *url, bool *tls, const char *ca_option, const char *path_hint,
    char *why, size_t len);

/* http_server_start starts a listener as `cfg` says (cfg->url "" starts
 * nothing: *out is NULL, returns 0). For https it reads the PEM files
 * cfg->tls names and keeps their texts until http_server_stop. Returns 0
 * and *out, or a negative errno with a one-line reason in `err`:
 * -EADDRINUSE (the port is taken), -EINVAL (a URL or host it cannot bind,
 * https without its three files, a PEM file it cannot read, an
 * allowed_hosts entry that does not parse), -ENOMEM, -EIO
 * (the library did not start: TLS files it cannot use). */
int http_server_start(http_server **out, const http_server_cfg *cfg, char *err, size_t len);

/* http_server_stop stops the listener (the connections open are closed)
 * and frees it. NULL is ignored. */
void http_server_stop(http_server *s);

/* http_request_header returns the value of request header `name` (any
 * case), or NULL. Borrowed for the handler call. */
const char *http_request_header(const http_request *req, const char *name);

/* http_request_query calls fn(fn_arg, key, value) for each query parameter
 * of the request, percent-decoded, in order (value "" for a key without
 * "="), until fn returns non-zero. Returns that value, or 0. */
int http_request_query(const http_request *req,
    int (*fn)(void *fn_arg, const char *key, const char *value), void *fn_arg);

/* http_request_gone is true when the caller of `req` has closed its
 * connection or it failed: the socket reports a hang-up (the peer's FIN,
 * POLLRDHUP; a reset) now, without reading from it. For a handler that
 * waits long (thread_per_conn), polled between waits. A caller that only
 * shut down its sending side (a half-close; no browser or HTTP library
 * does) counts as gone. Thread: the handler's (common/http/http_gone.c). */
bool http_request_gone(const http_request *req);

#endif
