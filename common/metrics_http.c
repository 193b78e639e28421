/* metrics_http: the /metrics listener (metrics_http.h), on libmicrohttpd:
 * it bounds its connections where they are accepted (METRICS_CONNS_MAX in
 * all, METRICS_CONNS_PER_IP from one address) and closes one idle for
 * METRICS_CONN_TIMEOUT_S, a TLS handshake that stalls included, so a flood
 * costs the daemon at most that many descriptors (nng's HTTP server, used
 * before, has no such bounds: a flood took thousands of descriptors and
 * hundreds of MB). Over https it verifies the client certificate against
 * --metrics-tls-ca with GnuTLS before answering, and closes the connection
 * without an HTTP status when there is none or it does not verify. */
#include "metrics_http.h"

#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gnutls/gnutls.h>
#include <microhttpd.h>
#include <nng/nng.h>

#include "authz.h"
#include "metrics.h"

/* a request's headers past this (bytes) are refused: a scrape needs < 1 KiB */
#define METRICS_CONN_MEMORY (32 * 1024)

static struct MHD_Daemon *metrics_mhd;
static bool metrics_tls;
/* the PEM texts given to the library (certificate, key, CA), kept until it
 * stops (it keeps pointers to them) */
static char *metrics_pem[3];

/* metrics_pem_free frees (the key's text zeroed first) the kept PEM texts. */
static void metrics_pem_free(void)
{
	for (int i = 0; i < 3; i++) {
		if (metrics_pem[i])
			memset(metrics_pem[i], 0, strlen(metrics_pem[i]));
		free(metrics_pem[i]);
		metrics_pem[i] = NULL;
	}
}

static const metric_def METRICS_SCRAPES = {"sagas_metrics_scrapes_total",
    "Scrapes of /metrics answered by this process", METRIC_COUNTER, "", NULL, 0};
static const metric_def METRICS_CONNS = {"sagas_metrics_connections",
    "Open connections to the metrics listener (at most 16, 8 from one address)", METRIC_GAUGE, "",
    NULL, 0};
static const metric_def METRICS_REFUSED = {"sagas_metrics_refused_total",
    "Metrics requests refused: no verified client certificate (unverified; the connection is "
    "closed without an answer)",
    METRIC_COUNTER, "reason", NULL, 0};

int metrics_url_check(const char *url, bool *tls, char *why, size_t len)
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
		snprintf(why, len, "\"%s\": give no path (metrics are served at /metrics)", url);
	else if (strcmp(u->u_scheme, "http") == 0 && !tls_host_local(u->u_hostname))
		snprintf(why, len,
		    "\"%s\" is plain HTTP on an address other hosts can reach: use https:// with "
		    "--tls-cert, --tls-key and --metrics-tls-ca (docs/security.md), or 127.0.0.1",
		    url);
	else {
		*tls = strcmp(u->u_scheme, "https") == 0;
		rc = 0;
	}
	nng_url_free(u);
	return rc;
}

/* metrics_verified is true when the https connection's peer showed a
 * certificate that verifies against --metrics-tls-ca (GnuTLS: chain, dates). */
static bool metrics_verified(struct MHD_Connection *conn)
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

/* metrics_answer queues a plain-text answer with `status`. */
static enum MHD_Result metrics_answer(
    struct MHD_Connection *conn, unsigned status, char *text, size_t len, bool owned)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(
	    len, text, owned ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
	if (r == NULL) {
		if (owned)
			free(text);
		return MHD_NO;
	}
	MHD_add_response_header(r, "Content-Type",
	    status == 200 ? "text/plain; version=0.0.4; charset=utf-8"
	                  : "text/plain; charset=utf-8");
	if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
		MHD_add_response_header(r, "Allow", "GET");
	enum MHD_Result rc = MHD_queue_response(conn, status, r);
	MHD_destroy_response(r);
	return rc;
}

/* metrics_request answers one request: GET /metrics with the exposition,
 * 404 for another path, 405 for another method; over https nothing at all
 * (the connection closed) without a verified client certificate. */
static enum MHD_Result metrics_request(void *cls, struct MHD_Connection *conn, const char *url,
    const char *method, const char *version, const char *upload, size_t *upload_len, void **req_cls)
{
	(void)cls, (void)version, (void)upload, (void)upload_len, (void)req_cls;
	if (metrics_tls && !metrics_verified(conn)) {
		metric_inc(metric_get1(&METRICS_REFUSED, "unverified"));
		authz_count_refusal("unverified", 1);
		authz_log_limited("unverified", NULL,
		    "metrics: closed a connection without a verified client certificate "
		    "(--metrics-tls-ca)");
		return MHD_NO;
	}
	static char not_found[] = "not found: metrics are at /metrics\n";
	static char not_allowed[] = "method not allowed: GET /metrics\n";
	if (strcmp(url, "/metrics") != 0)
		return metrics_answer(
		    conn, MHD_HTTP_NOT_FOUND, not_found, strlen(not_found), false);
	if (strcmp(method, "GET") != 0)
		return metrics_answer(
		    conn, MHD_HTTP_METHOD_NOT_ALLOWED, not_allowed, strlen(not_allowed), false);
	size_t n = 0;
	char *text = metrics_render(&n);
	if (text == NULL)
		return MHD_NO;
	metric_inc(metric_get(&METRICS_SCRAPES, NULL));
	return metrics_answer(conn, MHD_HTTP_OK, text, n, true);
}

/* metrics_conn_event keeps sagas_metrics_connections. */
static void metrics_conn_event(void *cls, struct MHD_Connection *conn, void **socket_ctx,
    enum MHD_ConnectionNotificationCode code)
{
	(void)cls, (void)conn, (void)socket_ctx;
	metric_add(
	    metric_get(&METRICS_CONNS, NULL), code == MHD_CONNECTION_NOTIFY_STARTED ? 1 : -1);
}

/* metrics_bind makes the listening socket of `url` (checked). Returns the
 * descriptor, or a negative errno with `err` filled. */
static int metrics_bind(const char *url, bool *v6, char *err, size_t len)
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
		snprintf(err, len, "could not listen on %s: %s", url, strerror(e));
		if (fd >= 0)
			close(fd);
		return -e;
	}
	return fd;
}

int metrics_http_start(const char *url, const tls_files *tls, char *err, size_t len)
{
	bool want_tls;
	if (metrics_url_check(url, &want_tls, err, len) != 0)
		return -EINVAL;
	if (url[0] == '\0')
		return 0;
	if (want_tls && (tls == NULL || !tls->cert || !tls->key || !tls->ca)) {
		snprintf(err, len, "%s is https: it needs a certificate, its key and a CA", url);
		return -EINVAL;
	}
	if (want_tls) {
		const char *path[3] = {tls->cert, tls->key, tls->ca};
		const char *what[3] = {"certificate", "key", "CA"};
		for (int i = 0; i < 3; i++)
			if ((metrics_pem[i] = tls_read(path[i], what[i], err, len)) == NULL) {
				metrics_pem_free();
				return -EINVAL;
			}
	}
	metric_add(metric_get(&METRICS_SCRAPES, NULL), 0);
	metric_add(metric_get(&METRICS_CONNS, NULL), 0);
	metric_add(metric_get1(&METRICS_REFUSED, "unverified"), 0);
	bool v6 = false;
	int fd = metrics_bind(url, &v6, err, len);
	if (fd < 0) {
		metrics_pem_free();
		return fd;
	}
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL | (v6 ? MHD_USE_IPv6 : 0)
	    | (want_tls ? MHD_USE_TLS : 0);
	metrics_tls = want_tls;
	struct MHD_OptionItem tls_opts[] = {
	    {MHD_OPTION_HTTPS_MEM_CERT, 0, metrics_pem[0]},
	    {MHD_OPTION_HTTPS_MEM_KEY, 0, metrics_pem[1]},
	    {MHD_OPTION_HTTPS_MEM_TRUST, 0, metrics_pem[2]},
	    {MHD_OPTION_HTTPS_PRIORITIES, 0, (void *)"NORMAL:-VERS-TLS1.0:-VERS-TLS1.1"},
	    {MHD_OPTION_END, 0, NULL},
	};
	metrics_mhd = MHD_start_daemon(flags, 0, NULL, NULL, metrics_request, NULL,
	    MHD_OPTION_LISTEN_SOCKET, fd, MHD_OPTION_CONNECTION_LIMIT, (unsigned)METRICS_CONNS_MAX,
	    MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)METRICS_CONNS_PER_IP,
	    MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)METRICS_CONN_TIMEOUT_S,
	    MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)METRICS_CONN_MEMORY,
	    MHD_OPTION_NOTIFY_CONNECTION, metrics_conn_event, NULL, MHD_OPTION_ARRAY,
	    want_tls ? tls_opts : &tls_opts[4], MHD_OPTION_END);
	if (metrics_mhd == NULL) {
		close(fd);
		metrics_pem_free();
		snprintf(err, len, "could not serve %s (libmicrohttpd refused to start%s)", url,
		    want_tls ? ": a certificate, key or CA it cannot use?" : "");
		return -EIO;
	}
	return 0;
}

void metrics_http_stop(void)
{
	if (metrics_mhd == NULL)
		return;
	/* MHD_stop_daemon closes the listening socket given to it */
	MHD_stop_daemon(metrics_mhd);
	metrics_mhd = NULL;
	metrics_pem_free();
}
