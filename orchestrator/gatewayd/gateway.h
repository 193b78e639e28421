/* gateway: gatewayd, the HTTP/JSON API beside the nng one (docs/protocol.md,
 * "The HTTP API"; docs/architecture.md, "The HTTP gateway").
 *
 * gatewayd serves HTTP/JSON and calls orchestratord over nng as an ordinary
 * client, so the orchestrator's own validation, limits and roles apply
 * unchanged and the saga hot path is untouched. Each HTTP listener serves
 * exactly one role (client on --listen, admin on --admin-listen): a call the
 * role may not make is refused here (403, counted, logged) before it is
 * forwarded, whatever roles the nng link to the orchestrator carries.
 *
 * gateway.c: options and the process; gateway_http.c: the routes, the JSON
 * mapping of each call (pbjson.h) and the errors; gateway_console.c: the
 * web console's static files, embedded at build time.
 */
#ifndef SAGA_GATEWAY_H
#define SAGA_GATEWAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "http_server.h"
#include "rpc.h"

/* The bounds of one HTTP listener (docs/security.md, "Bounded resources"). */
#define GW_CONNS_MAX      64
#define GW_CONNS_PER_IP   16
#define GW_CONN_TIMEOUT_S 30
/* request headers past this (bytes) are refused by the library (431) */
#define GW_HEADER_MEMORY (64 * 1024)

/* One HTTP listener: the role it serves and where its calls go. */
typedef struct gw_listener {
	unsigned role;         /* AUTHZ_CLIENT or AUTHZ_ADMIN: the one role */
	const char *role_name; /* "client", "admin" */
	rpc_client *up;        /* orchestratord, dialed with this role's identity */
	const rpc_urls *urls;  /* its URLs and TLS: a waiting call's own link */
	int64_t timeout_ms;    /* --request-timeout: a call's own time */
	http_server *srv;
} gw_listener;

/* gw_handle is the http_server handler of a listener (`arg` is its
 * gw_listener, borrowed for the server's life): routes the request, checks
 * the role, calls the orchestrator and answers JSON (gateway_http.c). */
void gw_handle(void *arg, const http_request *req, http_reply *rep);

/* How often a waiting call looks whether its HTTP caller is still there
 * (ms). */
#define GW_GONE_POLL_MS 200

/* gw_call_waiting makes a call that waits for a saga to end (WaitSaga, a
 * StartSaga with wait_ms) as rpc_call does, but on a link of its own to
 * orchestratord (l->urls), and ends it when the HTTP caller of `req` goes
 * away (http_request_gone, looked at every GW_GONE_POLL_MS): the link is
 * closed, which ends the call here at once and makes orchestratord drop
 * the wait it holds for that link (waits.h), so an abandoned wait holds
 * neither a gateway thread nor an orchestrator's wait for its wait_ms.
 * Counted in sagas_gateway_waits (under way) and
 * sagas_gateway_waits_abandoned_total. Returns 0 with *res filled
 * (rpc_result_clear frees it), -ECONNRESET when the caller went away
 * (nothing to answer; *res empty), or a negative errno as rpc_call and
 * rpc_client_open_urls. Runs on the request's thread (gateway_wait.c). */
int gw_call_waiting(const gw_listener *l, const char *method, const ProtobufCMessage *m,
    int64_t timeout_ms, const http_request *req, rpc_result *res);

/* gw_metrics_init registers gatewayd's own metrics at 0 (and
 * gw_wait_metrics_init, gateway_wait.c's). */
void gw_metrics_init(void);
void gw_wait_metrics_init(void);

/* gw_console_find returns the embedded console file at `name` ("index.html",
 * "app.js"; no directories), with its length in *len and its Content-Type
 * in *type (static storage), or NULL when there is none. */
const char *gw_console_find(const char *name, size_t *len, const char **type);

#endif
