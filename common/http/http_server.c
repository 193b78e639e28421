/* http_server: a bounded HTTP listener on libmicrohttpd (http_server.h).
 * It bounds its connections where they are accepted (conns_max in all,
 * conns_per_ip from one address) and closes one idle for timeout_s, a TLS
 * handshake that stalls included, so a flood costs the process at most that
 * many descriptors. Over https it verifies the client certificate against
 * the callers' CA with GnuTLS before the handler runs, and closes the
 * connection without an HTTP status when there is none or it does not
 * verify. */
#include "http_server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gnutls/gnutls.h>
#include <microhttpd.h>
#include <nng/nng.h>

#include "authz.h"
#include "http_names.h"
#include "metrics.h"

struct http_server {
	struct MHD_Daemon *mhd;
	http_server_cfg cfg; /* url and tls are not kept */
	bool tls;
	/* the PEM texts given to the library (certificate, key, CA), kept
	 * until it stops (it keeps pointers to them) */
	char *pem[3];
	http_names names; /* what a request's Host and Origin may name */
	/* the open connections, in all and by address (conns_max slots, one
	 * per address with n > 0), under mu: the caps are ours (on_accept), so
	 * a connection refused at them is counted and logged */
	pthread_mutex_t mu;
	unsigned open;
	struct conn_ip {
		unsigned char addr[16];
		unsigned char len; /* 4 or 16; 0: a free slot */
		unsigned n;
	} * ips;
};

static const metric_def HTTP_REFUSALS = {"sagas_http_refusals_total",
    "HTTP requests refused before their handler ran: a Host header that is not one of the "
    "listener's names (host: 421) or a state-changing request from a foreign Origin (origin: "
    "403), a path with a percent-escape (bad_path: 400), a connection past conns_max or "
    "conns_per_ip (conn_cap: closed); docs/security.md, \"DNS rebinding\"",
    METRIC_COUNTER, "listener,reason", NULL, 0};

/* One request's state between the library's calls. */
typedef struct http_call {
	char *body;
	size_t len, cap;
	bool too_big;
	bool checked; /* the client certificate was checked */
	/* "host", "origin", "duplicate" or "bad_path": answered 421, 403, 400
	 * or 400 */
	const char *refused;
} http_call;

/* BAD_PATH is what on_uri leaves in a request's state for a raw path with
 * a '%' in it (a static mark, not allocated: nothing to free if the
 * request ends before the access handler runs). */
static char BAD_PATH;

/* pem_free frees (the key's text zeroed first) the kept PEM texts. */
static void pem_free(http_server *s)
{
	for (int i = 0; i < 3; i++) {
		if (s->pem[i])
			memset(s->pem[i], 0, strlen(s->pem[i]));
		free(s->pem[i]);
		s->pem[i] = NULL;
	}
}

int http_url_check(
    const char *url, bool *tls, const char *ca_option, const char *path_hint, char *why, size_t len)
{
	*tls = false;
	if (url[0] == '\0')
		return 0;
	nng_url *u = NULL;
	if (nng_url_parse(&u, url) != 0) {
		snprintf(why, len,
		    "\"%s\" is not a URL (http://127.0.0.1:PORT or https://HOST:PORT)", url);
		return -EINVAL;
	}
	int rc = -EINVAL;
	size_t hl = strlen(u->u_host), pl = strlen(u->u_port);
	bool has_port = pl > 0 && hl > pl && u->u_host[hl - pl - 1] == ':'
	    && strcmp(u->u_host + hl - pl, u->u_port) == 0;
	long port
	    = strspn(u->u_port, "0123456789") == pl && pl <= 5 ? strtol(u->u_port, NULL, 10) : -1;
	if (strcmp(u->u_scheme, "http") != 0 && strcmp(u->u_scheme, "https") != 0)
		snprintf(
		    why, len, "\"%s\": the scheme must be http:// (loopback) or https://", url);
	else if (u->u_userinfo != NULL)
		snprintf(why, len, "\"%s\": a listener URL has no user part", url);
	else if (u->u_hostname[0] == '\0')
		snprintf(why, len, "\"%s\": no host (e.g. 127.0.0.1, or 0.0.0.0 with https)", url);
	else if (!has_port || port < 1 || port > 65535)
		snprintf(why, len, "\"%s\": the port must be given, 1 to 65535", url);
	else if ((u->u_path[0] != '\0' && strcmp(u->u_path, "/") != 0) || u->u_query != NULL
	    || u->u_fragment != NULL)
		snprintf(why, len, "\"%s\": give no path (%s)", url, path_hint);
	else if (strcmp(u->u_scheme, "http") == 0 && !tls_host_local(u->u_hostname))
		snprintf(why, len,
		    "\"%s\" is plain HTTP on an address other hosts can reach: use https:// with "
		    "--tls-cert, --tls-key and %s (docs/security.md), or 127.0.0.1",
		    url, ca_option);
	else {
		*tls = strcmp(u->u_scheme, "https") == 0;
		rc = 0;
	}
	nng_url_free(u);
	return rc;
}

/* peer_text writes the connection's peer address into buf. */
static const char *peer_text(struct MHD_Connection *conn, char *buf, size_t len)
{
	snprintf(buf, len, "unknown");
	const union MHD_ConnectionInfo *ci
	    = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	if (ci == NULL || ci->client_addr == NULL)
		return buf;
	char host[INET6_ADDRSTRLEN] = "";
	const struct sockaddr *sa = ci->client_addr;
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *a = (const void *)sa;
		inet_ntop(AF_INET, &a->sin_addr, host, sizeof host);
		snprintf(buf, len, "%s:%u", host, ntohs(a->sin_port));
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *a = (const void *)sa;
		inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof host);
		snprintf(buf, len, "[%s]:%u", host, ntohs(a->sin6_port));
	}
	return buf;
}

/* verified is true when the https connection's peer showed a certificate
 * that verifies against the callers' CA (GnuTLS: chain, dates). */
static bool verified(struct MHD_Connection *conn)
{
	const union MHD_ConnectionInfo *ci
	    = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_GNUTLS_SESSION);
	if (ci == NULL || ci->tls_session == NULL)
		return false;
	gnutls_session_t s = (gnutls_session_t)ci->tls_session;
	unsigned n = 0, status = 0;
	if (gnutls_certificate_get_peers(s, &n) == NULL || n == 0)
		return false;
	return gnutls_certificate_verify_peers2(s, &status) == 0 && status == 0;
}

/* refuse_unverified counts and logs a connection closed for want of a
 * verified client certificate. */
static void refuse_unverified(http_server *s, struct MHD_Connection *conn)
{
	char peer[64], what[256];
	peer_text(conn, peer, sizeof peer);
	authz_count_refusal("unverified", 1);
	snprintf(what, sizeof what,
	    "%s: closed a connection without a verified client certificate (%s)", s->cfg.name,
	    s->cfg.ca_option);
	authz_log_limited("unverified", peer, what);
	if (s->cfg.on_unverified)
		s->cfg.on_unverified(s->cfg.arg);
}

/* queue_reply hands `rep` to the library (and its body: freed here or by
 * the library). */
static enum MHD_Result queue_reply(struct MHD_Connection *conn, http_reply *rep)
{
	if (rep->status == 0) {
		if (!rep->body_static)
			free(rep->body);
		return MHD_NO;
	}
	struct MHD_Response *r
	    = MHD_create_response_from_buffer(rep->body_len, rep->body ? rep->body : (char *)"",
	        rep->body && !rep->body_static ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
	if (r == NULL) {
		if (!rep->body_static)
			free(rep->body);
		return MHD_NO;
	}
	if (rep->content_type)
		MHD_add_response_header(r, "Content-Type", rep->content_type);
	for (int i = 0; i < rep->n_headers && i < HTTP_REPLY_HEADERS_MAX; i++)
		MHD_add_response_header(r, rep->headers[i][0], rep->headers[i][1]);
	enum MHD_Result rc = MHD_queue_response(conn, rep->status, r);
	MHD_destroy_response(r);
	return rc;
}

/* body_add appends an upload chunk, up to cfg.max_body bytes. */
static void body_add(http_server *s, http_call *c, const char *data, size_t n)
{
	if (c->too_big || n == 0)
		return;
	if (c->len + n > s->cfg.max_body) {
		c->too_big = true;
		return;
	}
	if (c->len + n + 1 > c->cap) {
		size_t cap = c->cap ? c->cap : 1024;
		while (cap < c->len + n + 1)
			cap *= 2;
		char *b = realloc(c->body, cap);
		if (b == NULL) {
			c->too_big = true;
			return;
		}
		c->body = b, c->cap = cap;
	}
	memcpy(c->body + c->len, data, n);
	c->len += n;
	c->body[c->len] = '\0';
}

/* declared_too_big is true when Content-Length says more than max_body. */
static bool declared_too_big(http_server *s, struct MHD_Connection *conn)
{
	const char *cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Content-Length");
	if (cl == NULL)
		return false;
	char *end = NULL;
	unsigned long long n = strtoull(cl, &end, 10);
	return end == cl || *end != '\0' || n > s->cfg.max_body;
}

/* refusal_count0 exports the listener's refusal counters at 0. */
static void refusal_count0(const http_server *s)
{
	static const char *const reasons[] = {"host", "origin"};
	for (int i = 0; i < 2; i++) {
		const char *v[2] = {s->cfg.label ? s->cfg.label : s->cfg.name, reasons[i]};
		metric_add(metric_get(&HTTP_REFUSALS, v), 0);
	}
}

/* refusal_count adds one to sagas_http_refusals_total{listener,reason}. */
static void refusal_count(const http_server *s, const char *reason)
{
	const char *v[2] = {s->cfg.label ? s->cfg.label : s->cfg.name, reason};
	metric_inc(metric_get(&HTTP_REFUSALS, v));
}

/* printable copies at most 80 bytes of `in` (NULL: "(none)") into out,
 * each byte outside printable ASCII as '?': a header value goes into a log
 * line. */
static const char *printable(const char *in, char *out, size_t len)
{
	if (in == NULL)
		return snprintf(out, len, "(none)"), out;
	size_t i = 0;
	for (; in[i] != '\0' && i < 80 && i + 1 < len; i++)
		out[i] = in[i] >= 0x20 && in[i] < 0x7f ? in[i] : '?';
	out[i] = '\0';
	return out;
}

/* check_names returns NULL when the request's Host (and, for a method
 * that changes state, its Origin when present) name this listener, else
 * the refusal's reason ("host", "origin") after counting and logging it. */
/* count_names counts the Host and Origin headers of a request (an
 * MHD_KeyValueIterator; `cls` is an int[2]). */
static enum MHD_Result count_names(
    void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
	(void)kind;
	(void)value;
	int *n = cls;
	if (strcasecmp(key, "Host") == 0)
		n[0]++;
	else if (strcasecmp(key, "Origin") == 0)
		n[1]++;
	return MHD_YES;
}

static const char *check_names(http_server *s, struct MHD_Connection *conn, const char *method)
{
	const char *host = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Host");
	const char *origin = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Origin");
	const char *reason = NULL;
	int n[2] = {0, 0};
	(void)MHD_get_connection_values(conn, MHD_HEADER_KIND, count_names, n);
	if (n[0] > 1 || n[1] > 1)
		reason = "duplicate"; /* RFC 9112: one Host; a proxy may read the other */
	else if (!http_names_host_ok(&s->names, host))
		reason = "host";
	else if (origin != NULL && http_method_changes(method)
	    && !http_names_origin_ok(&s->names, origin))
		reason = "origin";
	if (reason == NULL)
		return NULL;
	refusal_count(s, reason);
	char peer[64], what[512], shown[96];
	peer_text(conn, peer, sizeof peer);
	if (reason[0] == 'd')
		snprintf(what, sizeof what,
		    "%s: refused a request with %d Host and %d Origin headers: at most one of each "
		    "(400)",
		    s->cfg.label ? s->cfg.label : s->cfg.name, n[0], n[1]);
	else if (reason[0] == 'h')
		snprintf(what, sizeof what,
		    "%s: refused a request for Host %s: not one of this listener's names (421; "
		    "--http-allowed-hosts, docs/security.md \"DNS rebinding\")",
		    s->cfg.label ? s->cfg.label : s->cfg.name,
		    printable(host, shown, sizeof shown));
	else
		snprintf(what, sizeof what,
		    "%s: refused a %.10s from Origin %s: not one of this listener's names (403; "
		    "--http-allowed-hosts, docs/security.md \"DNS rebinding\")",
		    s->cfg.label ? s->cfg.label : s->cfg.name, method,
		    printable(origin, shown, sizeof shown));
	authz_log_limited(reason[0] == 'o' ? "http_origin" : "http_host", peer, what);
	return reason;
}

/* on_uri is the library's URI log callback: it sees the request's raw
 * URI before it is percent-decoded and returns &BAD_PATH (the request's
 * first state) when its path (before any '?') holds a '%': the routes and
 * ids are plain ASCII, and a decoded %2F or %00 would let a path that a
 * proxy's rule for literal paths does not match reach a route. Else NULL. */
static void *on_uri(void *cls, const char *uri, struct MHD_Connection *conn)
{
	(void)cls, (void)conn;
	size_t path = strcspn(uri, "?");
	return memchr(uri, '%', path) != NULL ? &BAD_PATH : NULL;
}

/* refuse_bad_path counts and logs a request refused by on_uri. */
static void refuse_bad_path(http_server *s, struct MHD_Connection *conn, const char *method)
{
	refusal_count(s, "bad_path");
	char peer[64], what[256];
	peer_text(conn, peer, sizeof peer);
	snprintf(what, sizeof what,
	    "%s: refused a %.10s whose path has a percent-escape: the routes have none (400)",
	    s->cfg.label ? s->cfg.label : s->cfg.name, method);
	authz_log_limited("http_path", peer, what);
}

/* refuse_closing answers `status` with the static JSON body `msg`, not to
 * be cached or sniffed, and closes the connection: a refusal before any
 * handler ran. */
static enum MHD_Result refuse_closing(struct MHD_Connection *conn, unsigned status, char *msg)
{
	http_reply rep = {.status = status,
	    .content_type = "application/json",
	    .body = msg,
	    .body_len = strlen(msg),
	    .body_static = true};
	rep.headers[0][0] = "Connection", rep.headers[0][1] = "close";
	rep.headers[1][0] = "X-Content-Type-Options", rep.headers[1][1] = "nosniff";
	rep.headers[2][0] = "Cache-Control", rep.headers[2][1] = "no-store";
	rep.n_headers = 3;
	return queue_reply(conn, &rep);
}

/* refuse_names answers a request refused by check_names: 421 for a Host,
 * 403 for an Origin, a short JSON body, and the connection closed. */
static enum MHD_Result refuse_names(struct MHD_Connection *conn, const char *reason)
{
	static char host_msg[] = "{\"code\":\"PERMISSION_DENIED\",\"reason\":\"misdirected\","
	                         "\"message\":\"this listener does not answer to that Host "
	                         "(docs/security.md, DNS rebinding)\"}\n";
	static char origin_msg[] = "{\"code\":\"PERMISSION_DENIED\",\"reason\":\"foreign_origin\","
	                           "\"message\":\"a state-changing request from another origin "
	                           "(docs/security.md, DNS rebinding)\"}\n";
	static char dup_msg[] = "{\"code\":\"INVALID_ARGUMENT\",\"reason\":\"duplicate_header\","
	                        "\"message\":\"at most one Host and one Origin header\"}\n";
	static char path_msg[] = "{\"code\":\"INVALID_ARGUMENT\",\"reason\":\"bad_path\","
	                         "\"message\":\"a path with a percent-escape\"}\n";
	if (reason[0] == 'd')
		return refuse_closing(conn, 400, dup_msg);
	if (reason[0] == 'b')
		return refuse_closing(conn, 400, path_msg);
	bool host = reason[0] == 'h';
	return refuse_closing(conn, host ? 421 : 403, host ? host_msg : origin_msg);
}

/* on_request is the library's access handler: the first call (headers
 * read) checks the client certificate, the Host and Origin and the
 * declared size, the next ones
 * gather the body, the last one runs the handler. */
static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
    const char *method, const char *version, const char *upload, size_t *upload_len, void **req_cls)
{
	(void)version;
	http_server *s = cls;
	http_call *c = *req_cls;
	if (c == NULL || c == (void *)&BAD_PATH) {
		bool bad_path = c != NULL;
		*req_cls = NULL;
		if (s->tls && !verified(conn)) {
			refuse_unverified(s, conn);
			return MHD_NO;
		}
		if ((c = calloc(1, sizeof *c)) == NULL)
			return MHD_NO;
		c->refused = check_names(s, conn, method);
		if (c->refused == NULL && bad_path) {
			refuse_bad_path(s, conn, method);
			c->refused = "bad_path";
		}
		c->too_big = declared_too_big(s, conn);
		*req_cls = c;
		return MHD_YES;
	}
	if (*upload_len > 0) {
		body_add(s, c, upload, *upload_len);
		*upload_len = 0;
		return MHD_YES;
	}
	http_reply rep = {0};
	if (c->refused != NULL)
		return refuse_names(conn, c->refused);
	if (c->too_big) {
		static char msg[] = "{\"code\":\"RESOURCE_EXHAUSTED\",\"reason\":\"too_big\","
		                    "\"message\":\"the request body is too big\"}\n";
		return refuse_closing(conn, 413, msg);
	}
	char peer[64];
	http_request req = {.method = method,
	    .path = url,
	    .body = c->body ? c->body : "",
	    .body_len = c->len,
	    .peer = peer_text(conn, peer, sizeof peer),
	    .conn = conn};
	s->cfg.handler(s->cfg.arg, &req, &rep);
	return queue_reply(conn, &rep);
}

/* on_completed frees a request's state. */
static void on_completed(
    void *cls, struct MHD_Connection *conn, void **req_cls, enum MHD_RequestTerminationCode toe)
{
	(void)cls, (void)conn, (void)toe;
	http_call *c = *req_cls;
	if (c != NULL && c != (void *)&BAD_PATH) {
		free(c->body);
		free(c);
	}
	*req_cls = NULL;
}

/* ip_key writes the address of `sa` (IPv4 or IPv6) into key; returns its
 * length, 0 for another family. */
static unsigned char ip_key(const struct sockaddr *sa, unsigned char key[16])
{
	if (sa != NULL && sa->sa_family == AF_INET) {
		memcpy(key, &((const struct sockaddr_in *)(const void *)sa)->sin_addr, 4);
		return 4;
	}
	if (sa != NULL && sa->sa_family == AF_INET6) {
		memcpy(key, &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr, 16);
		return 16;
	}
	return 0;
}

/* ip_find returns the slot of `key` (len bytes), or with `add` a free one
 * made its own, or NULL. Under s->mu. */
static struct conn_ip *ip_find(
    http_server *s, const unsigned char *key, unsigned char len, bool add)
{
	struct conn_ip *free_slot = NULL;
	for (unsigned i = 0; i < s->cfg.conns_max; i++) {
		struct conn_ip *e = &s->ips[i];
		if (e->len == len && memcmp(e->addr, key, len) == 0)
			return e;
		if (e->len == 0 && free_slot == NULL)
			free_slot = e;
	}
	if (add && free_slot != NULL) {
		memcpy(free_slot->addr, key, len);
		free_slot->len = len;
		free_slot->n = 0;
		return free_slot;
	}
	return NULL;
}

/* on_accept is the library's accept policy: it refuses a connection past
 * conns_max in all or conns_per_ip from its address, counted
 * (sagas_http_refusals_total{reason="conn_cap"}) and logged at most once per
 * address per AUTHZ_LOG_INTERVAL_MS. It runs on the listening thread, as
 * does on_conn_event's count of a connection started. */
static enum MHD_Result on_accept(void *cls, const struct sockaddr *addr, socklen_t addrlen)
{
	(void)addrlen;
	http_server *s = cls;
	unsigned char key[16];
	unsigned char len = ip_key(addr, key);
	pthread_mutex_lock(&s->mu);
	const struct conn_ip *e = len > 0 ? ip_find(s, key, len, false) : NULL;
	bool all = s->open >= s->cfg.conns_max;
	bool one = !all && e != NULL && e->n >= s->cfg.conns_per_ip;
	pthread_mutex_unlock(&s->mu);
	if (!all && !one)
		return MHD_YES;
	refusal_count(s, "conn_cap");
	char peer[64] = "unknown", host[INET6_ADDRSTRLEN] = "", what[256];
	if (len > 0 && inet_ntop(len == 4 ? AF_INET : AF_INET6, key, host, sizeof host) != NULL)
		snprintf(peer, sizeof peer, "%s", host);
	if (all)
		snprintf(what, sizeof what,
		    "%s: closed a new connection: %u open, the most in all (conns_max)",
		    s->cfg.label ? s->cfg.label : s->cfg.name, s->cfg.conns_max);
	else
		snprintf(what, sizeof what,
		    "%s: closed a new connection: %u open from its address, the most from one",
		    s->cfg.label ? s->cfg.label : s->cfg.name, s->cfg.conns_per_ip);
	authz_log_limited("http_conn_cap", peer, what);
	return MHD_NO;
}

/* conn_track counts a connection started (delta 1: its address's slot kept
 * in *socket_ctx) or closed (-1). */
static void conn_track(http_server *s, struct MHD_Connection *conn, void **socket_ctx, int delta)
{
	pthread_mutex_lock(&s->mu);
	if (delta > 0) {
		s->open++;
		const union MHD_ConnectionInfo *ci
		    = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
		unsigned char key[16];
		unsigned char len = ci != NULL ? ip_key(ci->client_addr, key) : 0;
		struct conn_ip *e = len > 0 ? ip_find(s, key, len, true) : NULL;
		if (e != NULL)
			e->n++;
		*socket_ctx = e;
	} else {
		if (s->open > 0)
			s->open--;
		struct conn_ip *e = *socket_ctx;
		if (e != NULL && e->n > 0 && --e->n == 0)
			e->len = 0;
		*socket_ctx = NULL;
	}
	pthread_mutex_unlock(&s->mu);
}

/* on_conn_event counts connections opened and closed (on_accept's caps)
 * and tells the owner. */
static void on_conn_event(void *cls, struct MHD_Connection *conn, void **socket_ctx,
    enum MHD_ConnectionNotificationCode code)
{
	http_server *s = cls;
	conn_track(s, conn, socket_ctx, code == MHD_CONNECTION_NOTIFY_STARTED ? 1 : -1);
	if (s->cfg.on_conn)
		s->cfg.on_conn(s->cfg.arg, code == MHD_CONNECTION_NOTIFY_STARTED ? 1 : -1);
}

/* bind_url makes the listening socket of `url` (checked). Returns the
 * descriptor, or a negative errno with `err` filled. */
static int bind_url(const char *url, bool *v6, char *err, size_t len)
{
	nng_url *u = NULL;
	if (nng_url_parse(&u, url) != 0) {
		snprintf(err, len, "could not parse %s", url);
		return -EINVAL;
	}
	struct addrinfo hints = {.ai_family = AF_UNSPEC,
	    .ai_socktype = SOCK_STREAM,
	    .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
	struct addrinfo *ai = NULL;
	int g = getaddrinfo(u->u_hostname, u->u_port, &hints, &ai);
	nng_url_free(u);
	if (g != 0) {
		snprintf(err, len, "could not listen on %s: %s", url, gai_strerror(g));
		return -EINVAL;
	}
	int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0), e = 0, one = 1;
	*v6 = ai->ai_family == AF_INET6;
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0
	    || bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, 64) != 0)
		e = errno;
	freeaddrinfo(ai);
	if (e != 0) {
		snprintf(err, len, "could not listen on %s: %s%s", url, strerror(e),
		    e == EADDRINUSE ? " (something else listens there: another process, or another "
		                      "listener of this one; on one host, each daemon needs ports "
		                      "of its own, e.g. --metrics-listen)"
		                    : "");
		if (fd >= 0)
			close(fd);
		return -e;
	}
	return fd;
}

/* read_pems reads the certificate, key and CA of an https listener. */
static int read_pems(http_server *s, const tls_files *tls, char *err, size_t len)
{
	if (tls == NULL || !tls->cert || !tls->key || !tls->ca || !tls->cert[0] || !tls->key[0]
	    || !tls->ca[0]) {
		snprintf(
		    err, len, "%s is https: it needs a certificate, its key and a CA", s->cfg.url);
		return -EINVAL;
	}
	const char *path[3] = {tls->cert, tls->key, tls->ca};
	const char *what[3] = {"certificate", "key", "CA"};
	for (int i = 0; i < 3; i++)
		if ((s->pem[i] = tls_read(path[i], what[i], err, len)) == NULL) {
			pem_free(s);
			return -EINVAL;
		}
	return 0;
}

/* start_mhd starts the library on the bound socket fd. */
static struct MHD_Daemon *start_mhd(http_server *s, int fd, bool v6)
{
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL | (v6 ? MHD_USE_IPv6 : 0)
	    | (s->tls ? MHD_USE_TLS : 0)
	    | (s->cfg.thread_per_conn ? MHD_USE_THREAD_PER_CONNECTION : 0);
	struct MHD_OptionItem tls_opts[] = {
	    {MHD_OPTION_HTTPS_MEM_CERT, 0, s->pem[0]},
	    {MHD_OPTION_HTTPS_MEM_KEY, 0, s->pem[1]},
	    {MHD_OPTION_HTTPS_MEM_TRUST, 0, s->pem[2]},
	    {MHD_OPTION_HTTPS_PRIORITIES, 0, (void *)"NORMAL:-VERS-TLS1.0:-VERS-TLS1.1"},
	    {MHD_OPTION_END, 0, NULL},
	};
	/* the per-address cap is ours (on_accept), which counts and logs what
	 * it refuses; the library's, which refuses silently, stays one above as
	 * a backstop (its count falls a little after ours). conns_max in all
	 * stays the library's (unchanged: it leaves a new connection in the
	 * kernel's backlog while it is full); on_accept counts any past it
	 * that it is asked about */
	return MHD_start_daemon(flags, 0, on_accept, s, on_request, s, MHD_OPTION_LISTEN_SOCKET, fd,
	    MHD_OPTION_CONNECTION_LIMIT, s->cfg.conns_max, MHD_OPTION_PER_IP_CONNECTION_LIMIT,
	    s->cfg.conns_per_ip + 1, MHD_OPTION_CONNECTION_TIMEOUT, s->cfg.timeout_s,
	    MHD_OPTION_CONNECTION_MEMORY_LIMIT, s->cfg.header_memory, MHD_OPTION_NOTIFY_CONNECTION,
	    on_conn_event, s, MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
	    MHD_OPTION_URI_LOG_CALLBACK, on_uri, s, MHD_OPTION_ARRAY,
	    s->tls ? tls_opts : &tls_opts[4], MHD_OPTION_END);
}

int http_server_start(http_server **out, const http_server_cfg *cfg, char *err, size_t len)
{
	*out = NULL;
	bool want_tls;
	if (http_url_check(cfg->url, &want_tls, cfg->ca_option, "serve at the root", err, len) != 0)
		return -EINVAL;
	if (cfg->url[0] == '\0')
		return 0;
	http_server *s = calloc(1, sizeof *s);
	if (s == NULL) {
		snprintf(err, len, "out of memory");
		return -ENOMEM;
	}
	s->cfg = *cfg;
	s->tls = want_tls;
	if ((s->ips = calloc(cfg->conns_max > 0 ? cfg->conns_max : 1, sizeof *s->ips)) == NULL) {
		free(s);
		snprintf(err, len, "out of memory");
		return -ENOMEM;
	}
	pthread_mutex_init(&s->mu, NULL);
	int rc = http_names_init(&s->names, cfg->url, cfg->allowed_hosts, err, len);
	if (rc == 0 && want_tls)
		rc = read_pems(s, cfg->tls, err, len);
	bool v6 = false;
	int fd = rc == 0 ? bind_url(cfg->url, &v6, err, len) : rc;
	if (fd < 0) {
		pem_free(s);
		pthread_mutex_destroy(&s->mu);
		free(s->ips);
		free(s);
		return fd;
	}
	if ((s->mhd = start_mhd(s, fd, v6)) == NULL) {
		close(fd);
		pem_free(s);
		snprintf(err, len, "could not serve %s (libmicrohttpd refused to start%s)",
		    cfg->url, want_tls ? ": a certificate, key or CA it cannot use?" : "");
		pthread_mutex_destroy(&s->mu);
		free(s->ips);
		free(s);
		return -EIO;
	}
	s->cfg.url = NULL;
	s->cfg.tls = NULL;
	s->cfg.allowed_hosts = NULL;
	refusal_count0(s);
	*out = s;
	return 0;
}

void http_server_stop(http_server *s)
{
	if (s == NULL)
		return;
	/* MHD_stop_daemon closes the listening socket given to it */
	MHD_stop_daemon(s->mhd);
	pem_free(s);
	pthread_mutex_destroy(&s->mu);
	free(s->ips);
	free(s);
}

const char *http_request_header(const http_request *req, const char *name)
{
	return MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, name);
}

/* A query walk in progress. */
typedef struct query_walk {
	int (*fn)(void *, const char *, const char *);
	void *arg;
	int rc;
} query_walk;

static enum MHD_Result query_one(
    void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
	(void)kind;
	query_walk *w = cls;
	w->rc = w->fn(w->arg, key, value ? value : "");
	return w->rc == 0 ? MHD_YES : MHD_NO;
}

int http_request_query(const http_request *req,
    int (*fn)(void *fn_arg, const char *key, const char *value), void *fn_arg)
{
	query_walk w = {fn, fn_arg, 0};
	MHD_get_connection_values(req->conn, MHD_GET_ARGUMENT_KIND, query_one, &w);
	return w.rc;
}
