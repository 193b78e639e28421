/* gateway_http: gatewayd's routes (gateway.h; docs/protocol.md, "The HTTP
 * API"). Each request is matched to a route, checked against the roles
 * table with its listener's one role, turned into the call's request
 * message (the JSON body, then the query parameters, then the saga id of
 * the path), sent to orchestratord and its reply turned back into JSON.
 * Errors are {"code", "reason", "message"} with the gRPC status name and
 * its HTTP status. */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>

#include "authz.h"
#include "gateway.h"
#include "log.h"
#include "methods.h"
#include "metrics.h"
#include "pbjson.h"
#include "sagas/v1/health.pb-c.h"
#include "sagas/v1/orchestrator.pb-c.h"
#include "status.h"
#include "valid.h"

/* The Content-Security-Policy of the console's files. */
#define GW_CSP "default-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"
/* The longest saga id segment of a path that is matched (longer: 404). */
#define GW_ID_MAX 128
/* WaitSaga's wait when wait_ms is 0 (orchestrator.proto) */
#define GW_WAIT_DEFAULT_MS 10000
/* The longest Allow header of a path ("GET, POST, PUT, PATCH, DELETE"). */
#define GW_ALLOW_MAX 32

/* One route: an HTTP method and path pattern ("*" is the saga id) and the
 * orchestrator call it makes: a row of the table of methods (methods.h)
 * with an HTTP route. */
typedef struct gw_route {
	const char *method;
	const char *pattern;
	const char *rpc;
	const ProtobufCMessageDescriptor *req;
	const ProtobufCMessageDescriptor *rep;
	char allow[GW_ALLOW_MAX]; /* every method of this pattern, for 405's Allow */
} gw_route;

/* The services whose methods a route may call (their request and reply
 * messages are read from protoc-c's descriptors). */
static const ProtobufCServiceDescriptor *const gw_services[] = {
    &sagas__v1__orchestrator__descriptor,
    &sagas__v1__health__descriptor,
};

/* The HTTP methods of a route, in the order an Allow header lists them. */
static const char *const gw_verbs[] = {"GET", "POST", "PUT", "PATCH", "DELETE"};

static gw_route gw_routes[METHOD_COUNT]; /* written once, by gw_routes_build */
static size_t gw_n_routes;
static pthread_once_t gw_routes_once = PTHREAD_ONCE_INIT;

/* gw_routes_build fills gw_routes from the rows of the table of methods
 * that have an HTTP route, with their messages from the service
 * descriptors. A row whose method no descriptor here has is a bug: logged,
 * and left out (its path answers 404). */
static void gw_routes_build(void)
{
	for (int i = 0; i < METHOD_COUNT; i++) {
		const method_row *row = &method_table[i];
		if (row->http_path == NULL)
			continue;
		const ProtobufCMethodDescriptor *md = NULL;
		for (size_t s = 0; md == NULL && s < sizeof gw_services / sizeof gw_services[0];
		     s++)
			if (strcmp(gw_services[s]->short_name, row->service) == 0)
				md = protobuf_c_service_descriptor_get_method_by_name(
				    gw_services[s], row->name);
		if (md == NULL) {
			log_error(
			    NULL, "%s has an HTTP route but no descriptor in gatewayd", row->path);
			continue;
		}
		gw_route *r = &gw_routes[gw_n_routes++];
		r->method = row->http_verb;
		r->pattern = row->http_path;
		r->rpc = row->path;
		r->req = md->input;
		r->rep = md->output;
	}
	for (size_t i = 0; i < gw_n_routes; i++) {
		size_t at = 0;
		for (size_t v = 0; v < sizeof gw_verbs / sizeof gw_verbs[0]; v++) {
			bool has = false;
			for (size_t j = 0; j < gw_n_routes && !has; j++)
				has = strcmp(gw_routes[j].pattern, gw_routes[i].pattern) == 0
				    && strcmp(gw_routes[j].method, gw_verbs[v]) == 0;
			if (has)
				at += (size_t)snprintf(gw_routes[i].allow + at,
				    at < GW_ALLOW_MAX ? GW_ALLOW_MAX - at : 0, "%s%s",
				    at ? ", " : "", gw_verbs[v]);
		}
	}
}

static const metric_def GW_REFUSALS = {"sagas_gateway_refusals_total",
    "HTTP API calls gatewayd refused before forwarding them: the listener's role may not make "
    "the call (permission_denied)",
    METRIC_COUNTER, "reason", NULL, 0};
static const metric_def GW_REQUESTS = {"sagas_gateway_requests_total",
    "HTTP API requests answered by gatewayd, by HTTP status class (2xx, 4xx, 5xx)", METRIC_COUNTER,
    "class", NULL, 0};

void gw_metrics_init(void)
{
	metric_add(metric_get1(&GW_REFUSALS, "permission_denied"), 0);
	metric_add(metric_get1(&GW_REFUSALS, "unauthenticated"), 0);
	static const char *const classes[] = {"2xx", "4xx", "5xx"};
	for (size_t i = 0; i < 3; i++)
		metric_add(metric_get1(&GW_REQUESTS, classes[i]), 0);
	gw_wait_metrics_init();
}

/* gw_header adds a header (static strings) to the reply. */
static void gw_header(http_reply *rep, const char *name, const char *value)
{
	if (rep->n_headers >= HTTP_REPLY_HEADERS_MAX)
		return;
	rep->headers[rep->n_headers][0] = name;
	rep->headers[rep->n_headers][1] = value;
	rep->n_headers++;
}

/* gw_http_status maps a gRPC status code to its HTTP status. */
static unsigned gw_http_status(int code)
{
	switch (code) {
	case RPC_OK:
		return 200;
	case RPC_INVALID_ARGUMENT:
	case RPC_FAILED_PRECONDITION:
	case RPC_OUT_OF_RANGE:
		return 400;
	case RPC_UNAUTHENTICATED:
		return 401;
	case RPC_PERMISSION_DENIED:
		return 403;
	case RPC_NOT_FOUND:
		return 404;
	case RPC_ALREADY_EXISTS:
	case RPC_ABORTED:
		return 409;
	case RPC_RESOURCE_EXHAUSTED:
		return 429;
	case RPC_CANCELLED:
		return 499;
	case RPC_UNIMPLEMENTED:
		return 501;
	case RPC_UNAVAILABLE:
		return 503;
	case RPC_DEADLINE_EXCEEDED:
		return 504;
	default: /* INTERNAL, UNKNOWN, DATA_LOSS */
		return 500;
	}
}

/* gw_json sets a JSON reply: `j` (stolen) with `status`. */
static void gw_json(http_reply *rep, unsigned status, json_t *j)
{
	char *text = j != NULL ? json_dumps(j, JSON_COMPACT) : NULL;
	json_decref(j);
	if (text == NULL) {
		static char oom[]
		    = "{\"code\":\"INTERNAL\",\"reason\":\"\",\"message\":\"out of memory\"}";
		rep->status = 500;
		rep->body = oom;
		rep->body_len = strlen(oom);
		rep->body_static = true;
	} else {
		rep->status = status;
		rep->body = text;
		rep->body_len = strlen(text);
	}
	rep->content_type = "application/json";
}

/* gw_utf8_clean replaces, in place, every byte of `s` that is not part of
 * a well-formed UTF-8 sequence with '?' (a message cut inside a character,
 * a peer's bytes), so that it can go into JSON. */
static void gw_utf8_clean(char *s)
{
	unsigned char *p = (unsigned char *)s;
	while (*p != '\0') {
		int n = *p < 0x80         ? 1
		    : (*p & 0xe0) == 0xc0 ? 2
		    : (*p & 0xf0) == 0xe0 ? 3
		    : (*p & 0xf8) == 0xf0 ? 4
		                          : 0;
		bool ok = n > 0 && !(n == 2 && *p < 0xc2) && !(n == 4 && *p > 0xf4);
		for (int i = 1; ok && i < n; i++)
			ok = (p[i] & 0xc0) == 0x80;
		/* no overlong form, no surrogate, nothing past U+10FFFF */
		if (ok
		    && ((p[0] == 0xe0 && p[1] < 0xa0) || (p[0] == 0xed && p[1] >= 0xa0)
		        || (p[0] == 0xf0 && p[1] < 0x90) || (p[0] == 0xf4 && p[1] >= 0x90)))
			ok = false;
		if (!ok) {
			*p++ = '?';
			continue;
		}
		p += n;
	}
}

/* gw_error sets an error reply: {"code","reason","message"} with the HTTP
 * status of `code` (or `http` when non-zero). */
static void gw_error(http_reply *rep, unsigned http, int code, const char *reason, const char *fmt,
    ...) __attribute__((format(printf, 5, 6)));

static void gw_error(
    http_reply *rep, unsigned http, int code, const char *reason, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	gw_utf8_clean(msg);
	json_t *j = json_pack("{s:s, s:s, s:s?}", "code", rpc_code_name(code), "reason",
	    reason != NULL ? reason : "", "message", msg);
	if (j == NULL) /* a message that is not UTF-8 (from the peer) */
		j = json_pack("{s:s, s:s, s:s}", "code", rpc_code_name(code), "reason",
		    reason != NULL ? reason : "", "message", "(not UTF-8)");
	gw_json(rep, http != 0 ? http : gw_http_status(code), j);
}

/* gw_match is true when `path` matches `pattern`; the "*" segment is
 * copied into id (GW_ID_MAX bytes). */
static bool gw_match(const char *pattern, const char *path, char *id)
{
	while (*pattern != '\0') {
		if (*pattern == '*') {
			size_t n = strcspn(path, "/");
			if (n == 0 || n >= GW_ID_MAX)
				return false;
			memcpy(id, path, n);
			id[n] = '\0';
			path += n;
			pattern++;
			continue;
		}
		if (*pattern++ != *path++)
			return false;
	}
	return *path == '\0';
}

/* ---- the console ---- */

/* gw_console serves GET / and GET /console/NAME. Returns false when the
 * path is not the console's. */
static bool gw_console(const http_request *req, http_reply *rep)
{
	const char *name = NULL;
	if (strcmp(req->path, "/") == 0 || strcmp(req->path, "/console/") == 0)
		name = "index.html";
	else if (strncmp(req->path, "/console/", 9) == 0)
		name = req->path + 9;
	else
		return false;
	if (strcmp(req->method, "GET") != 0 && strcmp(req->method, "HEAD") != 0) {
		gw_header(rep, "Allow", "GET, HEAD");
		gw_error(rep, 405, RPC_UNIMPLEMENTED, "method_not_allowed",
		    "%s %s: the console's files are read with GET", req->method, req->path);
		return true;
	}
	size_t len = 0;
	const char *type = NULL;
	const char *data = strchr(name, '/') == NULL ? gw_console_find(name, &len, &type) : NULL;
	if (data == NULL) {
		gw_error(rep, 404, RPC_NOT_FOUND, "no_route", "no console file %s", req->path);
		return true;
	}
	rep->status = 200;
	rep->body = (char *)data;
	rep->body_len = len;
	rep->body_static = true;
	rep->content_type = type;
	gw_header(rep, "Content-Security-Policy", GW_CSP);
	gw_header(rep, "Referrer-Policy", "no-referrer");
	return true;
}

/* ---- building the request message ---- */

/* A query walk: the message being filled and its first error. */
typedef struct gw_query {
	ProtobufCMessage *msg;
	bool path_id; /* the path gives saga_id */
	char err[PBJSON_ERR_MAX];
} gw_query;

/* gw_query_one sets one query parameter on the message. */
static int gw_query_one(void *arg, const char *key, const char *value)
{
	gw_query *q = arg;
	if (q->path_id && (strcmp(key, "saga_id") == 0 || strcmp(key, "sagaId") == 0)) {
		snprintf(q->err, sizeof q->err, "%.64s: the saga id is given in the path", key);
		return -1;
	}
	return pbjson_set_text(q->msg, key, value, q->err, sizeof q->err) == 0 ? 0 : -1;
}

/* gw_json_type_ok is true when a POST's Content-Type is application/json
 * (any case, parameters allowed). */
static bool gw_json_type_ok(const http_request *req)
{
	const char *ct = http_request_header(req, "Content-Type");
	if (ct == NULL || strncasecmp(ct, "application/json", 16) != 0)
		return false;
	return ct[16] == '\0' || ct[16] == ';' || ct[16] == ' ';
}

/* gw_body_message makes the request message of `r` from the body (POST)
 * or from nothing (GET). Returns it, or NULL after setting a 400. */
static ProtobufCMessage *gw_body_message(
    const gw_route *r, const http_request *req, http_reply *rep)
{
	json_t *j;
	json_error_t je;
	bool has_body = strcmp(req->method, "POST") == 0 && req->body_len > 0;
	if (has_body)
		j = json_loadb(
		    req->body, req->body_len, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &je);
	else
		j = json_object();
	if (j == NULL) {
		gw_error(rep, 0, RPC_INVALID_ARGUMENT, "bad_json",
		    "the body is not JSON: %s (line %d, column %d)", je.text, je.line, je.column);
		return NULL;
	}
	char err[PBJSON_ERR_MAX] = "";
	ProtobufCMessage *m = pbjson_from_json(r->req, j, err, sizeof err);
	json_decref(j);
	if (m == NULL)
		gw_error(rep, 0, RPC_INVALID_ARGUMENT, "bad_field", "invalid %s", err);
	return m;
}

/* gw_idempotency_key applies the Idempotency-Key header to a StartSaga:
 * the saga id when the body has none. Returns false after setting a 400. */
static bool gw_idempotency_key(ProtobufCMessage *m, const http_request *req, http_reply *rep)
{
	const char *key = http_request_header(req, "Idempotency-Key");
	if (key == NULL)
		return true;
	Sagas__V1__StartSagaRequest *s = (Sagas__V1__StartSagaRequest *)m;
	if (!valid_uuid(key)) {
		gw_error(rep, 0, RPC_INVALID_ARGUMENT, "bad_field",
		    "invalid Idempotency-Key: not a canonical lowercase UUID");
		return false;
	}
	if (s->saga_id[0] != '\0' && strcmp(s->saga_id, key) != 0) {
		gw_error(rep, 0, RPC_INVALID_ARGUMENT, "bad_field",
		    "invalid Idempotency-Key: it differs from sagaId (give one of them)");
		return false;
	}
	char err[PBJSON_ERR_MAX];
	return pbjson_set_text(m, "saga_id", key, err, sizeof err) == 0;
}

/* gw_request_message builds the whole request message: body, query, path
 * id, Idempotency-Key. Returns it (free with
 * protobuf_c_message_free_unpacked), or NULL after setting the error. */
static ProtobufCMessage *gw_request_message(
    const gw_route *r, const char *id, const http_request *req, http_reply *rep)
{
	ProtobufCMessage *m = gw_body_message(r, req, rep);
	if (m == NULL)
		return NULL;
	gw_query q = {.msg = m, .path_id = id[0] != '\0'};
	if (http_request_query(req, gw_query_one, &q) != 0) {
		gw_error(rep, 0, RPC_INVALID_ARGUMENT, "bad_field", "invalid %s", q.err);
		goto out_free;
	}
	/* a body naming another saga than the path is refused, not overridden
	 * (as a query's sagaId is) */
	const ProtobufCFieldDescriptor *fd
	    = protobuf_c_message_descriptor_get_field_by_name(m->descriptor, "saga_id");
	if (id[0] != '\0' && fd != NULL && fd->type == PROTOBUF_C_TYPE_STRING) {
		const char *body_id = *(char *const *)((const char *)m + fd->offset);
		if (body_id != NULL && body_id[0] != '\0' && strcmp(body_id, id) != 0) {
			gw_error(rep, 0, RPC_INVALID_ARGUMENT, "bad_field",
			    "invalid sagaId: the saga id is given in the path");
			goto out_free;
		}
	}
	if (id[0] != '\0' && pbjson_set_text(m, "saga_id", id, q.err, sizeof q.err) != 0) {
		gw_error(rep, 0, RPC_INTERNAL, "", "%s", q.err);
		goto out_free;
	}
	if (r->req == &sagas__v1__start_saga_request__descriptor
	    && !gw_idempotency_key(m, req, rep))
		goto out_free;
	return m;
out_free:
	protobuf_c_message_free_unpacked(m, NULL);
	return NULL;
}

/* ---- the call ---- */

/* gw_timeout is the call's timeout: --request-timeout plus the wait the
 * request asks for (WaitSaga, StartSaga with wait_ms). */
static int64_t gw_timeout(const gw_listener *l, const ProtobufCMessage *m)
{
	int64_t wait = 0;
	if (m->descriptor == &sagas__v1__wait_saga_request__descriptor) {
		wait = ((const Sagas__V1__WaitSagaRequest *)m)->wait_ms;
		if (wait == 0)
			wait = GW_WAIT_DEFAULT_MS;
	} else if (m->descriptor == &sagas__v1__start_saga_request__descriptor)
		wait = ((const Sagas__V1__StartSagaRequest *)m)->wait_ms;
	return l->timeout_ms + (wait > 0 ? wait : 0);
}

/* gw_health answers /healthz from a Health/Check reply. */
static void gw_health(const ProtobufCMessage *reply, http_reply *rep)
{
	const Sagas__V1__HealthCheckResponse *h = (const void *)reply;
	bool up
	    = h->status == SAGAS__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__SERVING_STATUS_SERVING;
	gw_json(rep, up ? 200 : 503, json_pack("{s:s}", "status", up ? "SERVING" : "NOT_SERVING"));
}

/* gw_answer turns an OK reply payload into the HTTP answer. */
static void gw_answer(const gw_route *r, const rpc_result *res, http_reply *rep)
{
	ProtobufCMessage *m
	    = protobuf_c_message_unpack(r->rep, NULL, res->payload_len, res->payload);
	if (m == NULL) {
		gw_error(rep, 0, RPC_INTERNAL, "bad_reply", "malformed reply from orchestratord");
		return;
	}
	if (r->rep == &sagas__v1__health_check_response__descriptor) {
		gw_health(m, rep);
		protobuf_c_message_free_unpacked(m, NULL);
		return;
	}
	unsigned status = 200;
	if (r->rep == &sagas__v1__start_saga_reply__descriptor
	    && ((Sagas__V1__StartSagaReply *)m)->created)
		status = 201;
	char err[PBJSON_ERR_MAX] = "";
	json_t *j = pbjson_to_json(m, err, sizeof err);
	protobuf_c_message_free_unpacked(m, NULL);
	if (j == NULL)
		gw_error(rep, 0, RPC_INTERNAL, "bad_reply", "reply from orchestratord: %s", err);
	else
		gw_json(rep, status, j);
}

/* gw_waits is true when the call waits for a saga to end: WaitSaga, and
 * StartSaga with wait_ms. */
static bool gw_waits(const ProtobufCMessage *m)
{
	return m->descriptor == &sagas__v1__wait_saga_request__descriptor
	    || (m->descriptor == &sagas__v1__start_saga_request__descriptor
	        && ((const Sagas__V1__StartSagaRequest *)m)->wait_ms > 0);
}

/* gw_forward sends the call and answers with its outcome; a waiting call
 * goes on a link of its own, ended when the caller goes (gw_call_waiting;
 * then nobody is answered: status 0 closes the connection). */
static void gw_forward(const gw_listener *l, const gw_route *r, const ProtobufCMessage *m,
    const http_request *req, http_reply *rep)
{
	rpc_result res;
	int err = gw_waits(m) ? gw_call_waiting(l, r->rpc, m, gw_timeout(l, m), req, &res)
	                      : rpc_call(l->up, r->rpc, m, gw_timeout(l, m), &res);
	if (err == -ECONNRESET) {
		rep->status = 0;
		return;
	}
	if (err != 0) {
		if (err == -EMSGSIZE)
			gw_error(rep, 413, RPC_RESOURCE_EXHAUSTED, "too_big",
			    "the call is too big for one frame to orchestratord");
		else
			gw_error(rep, 500, RPC_INTERNAL, "",
			    "could not send the call to orchestratord: %s", strerror(-err));
		return;
	}
	if (res.code == RPC_OK)
		gw_answer(r, &res, rep);
	else if (r->rep == &sagas__v1__health_check_response__descriptor && res.transport)
		gw_json(rep, 503, json_pack("{s:s}", "status", "UNREACHABLE"));
	else if (res.transport) {
		/* nng says "Timed out"; messages here are lowercase */
		char *msg = res.message;
		if (msg[0] >= 'A' && msg[0] <= 'Z' && msg[1] >= 'a' && msg[1] <= 'z')
			msg[0] = (char)(msg[0] - 'A' + 'a');
		gw_error(rep, 0, res.code, "upstream", "could not reach orchestratord: %s", msg);
	} else
		gw_error(rep, 0, res.code, res.reason, "%s", res.message);
	rpc_result_clear(&res);
}

/* gw_allowed checks the listener's role for the call; a refusal changes
 * nothing, is counted and logged, and answered 403 (401 without a role). */
static bool gw_allowed(
    const gw_listener *l, const gw_route *r, const http_request *req, http_reply *rep)
{
	enum authz_verdict v = authz_decide(r->rpc, l->role);
	if (v == AUTHZ_ALLOWED)
		return true;
	if (v == AUTHZ_UNKNOWN_METHOD) {
		gw_error(rep, 0, RPC_UNIMPLEMENTED, "", "%s is not in the roles table", r->rpc);
		return false;
	}
	authz_note_refusal(v, r->rpc, l->role, req->peer);
	bool unauth = v == AUTHZ_UNAUTHENTICATED;
	metric_inc(metric_get1(&GW_REFUSALS, unauth ? "unauthenticated" : "permission_denied"));
	char need[64];
	authz_role_names(authz_method_roles(r->rpc), need, sizeof need);
	gw_error(rep, 0, unauth ? RPC_UNAUTHENTICATED : RPC_PERMISSION_DENIED, "role",
	    "%s %s is for the %s role; this listener serves the %s role", req->method, req->path,
	    need, l->role_name);
	return false;
}

/* gw_route_find finds the route of the request: NULL with *allow set when
 * the path is known but not the method, NULL with *allow NULL when the path
 * is unknown. */
static const gw_route *gw_route_find(const http_request *req, char *id, const char **allow)
{
	*allow = NULL;
	pthread_once(&gw_routes_once, gw_routes_build);
	for (size_t i = 0; i < gw_n_routes; i++) {
		id[0] = '\0';
		if (!gw_match(gw_routes[i].pattern, req->path, id))
			continue;
		*allow = gw_routes[i].allow;
		if (strcmp(gw_routes[i].method, req->method) == 0)
			return &gw_routes[i];
	}
	return NULL;
}

/* gw_api serves one API request. */
static void gw_api(const gw_listener *l, const http_request *req, http_reply *rep)
{
	char id[GW_ID_MAX];
	const char *allow;
	const gw_route *r = gw_route_find(req, id, &allow);
	if (r == NULL && allow != NULL) {
		gw_header(rep, "Allow", allow);
		gw_error(rep, 405, RPC_UNIMPLEMENTED, "method_not_allowed", "%s %s: allowed: %s",
		    req->method, req->path, allow);
		return;
	}
	if (r == NULL) {
		gw_error(rep, 404, RPC_NOT_FOUND, "no_route", "no route %s %s (docs/protocol.md)",
		    req->method, req->path);
		return;
	}
	/* the role first: a call the listener may not make is refused (and
	 * counted, logged) whatever its body, a browser's form post included */
	if (!gw_allowed(l, r, req, rep))
		return;
	if (strcmp(r->method, "POST") == 0 && !gw_json_type_ok(req)) {
		gw_error(rep, 415, RPC_INVALID_ARGUMENT, "content_type",
		    "POST %s takes Content-Type: application/json", req->path);
		return;
	}
	ProtobufCMessage *m = gw_request_message(r, id, req, rep);
	if (m == NULL)
		return;
	gw_forward(l, r, m, req, rep);
	/* an operator's call (admin only: retry, cancel, the audit trail): the
	 * orchestrator's audit trail names this gateway's link, so the HTTP
	 * caller is logged here */
	if ((authz_method_roles(r->rpc) & ~(unsigned)AUTHZ_ADMIN) == 0)
		log_info(id[0] ? id : NULL, "%s %s from %s: %u", req->method, req->path, req->peer,
		    rep->status ? rep->status : 200u);
	protobuf_c_message_free_unpacked(m, NULL);
}

void gw_handle(void *arg, const http_request *req, http_reply *rep)
{
	const gw_listener *l = arg;
	gw_header(rep, "X-Content-Type-Options", "nosniff");
	gw_header(rep, "Cache-Control", "no-store");
	if (!gw_console(req, rep))
		gw_api(l, req, rep);
	if (rep->status == 0) /* the caller went away: nothing answered */
		return;
	const char *cls = rep->status >= 500 ? "5xx" : rep->status >= 400 ? "4xx" : "2xx";
	metric_inc(metric_get1(&GW_REQUESTS, cls));
}
