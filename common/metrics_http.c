/* metrics_http: the /metrics listener (metrics_http.h). */
#include "metrics_http.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nng/nng.h>
#include <nng/supplemental/http/http.h>

#include "metrics.h"

static nng_http_server *metrics_srv;

static const metric_def METRICS_SCRAPES = {"sagas_metrics_scrapes_total",
    "Scrapes of /metrics answered by this process", METRIC_COUNTER, "", NULL, 0};

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
	long port = strtol(u->u_port, NULL, 10);
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

/* metrics_get answers GET /metrics with the exposition. */
static void metrics_get(nng_aio *aio)
{
	nng_http_res *res = NULL;
	size_t n = 0;
	char *text = metrics_render(&n);
	int rv = text ? nng_http_res_alloc(&res) : NNG_ENOMEM;
	if (rv == 0)
		rv = nng_http_res_set_header(
		    res, "Content-Type", "text/plain; version=0.0.4; charset=utf-8");
	if (rv == 0)
		rv = nng_http_res_copy_data(res, text, n);
	free(text);
	if (rv != 0) {
		nng_http_res_free(res);
		nng_aio_finish(aio, rv);
		return;
	}
	metric_inc(metric_get(&METRICS_SCRAPES, NULL));
	nng_aio_set_output(aio, 0, res);
	nng_aio_finish(aio, 0);
}

int metrics_http_start(const char *url, tls_conf *tls, char *err, size_t len)
{
	bool want_tls;
	if (metrics_url_check(url, &want_tls, err, len) != 0)
		return -EINVAL;
	if (url[0] == '\0')
		return 0;
	metric_add(metric_get(&METRICS_SCRAPES, NULL), 0);
	nng_url *u = NULL;
	nng_http_handler *h = NULL;
	int rv = nng_url_parse(&u, url);
	if (rv == 0)
		rv = nng_http_server_hold(&metrics_srv, u);
	nng_url_free(u);
	if (rv == 0 && want_tls)
		rv = tls ? nng_http_server_set_tls(metrics_srv, tls_conf_nng(tls)) : NNG_EINVAL;
	if (rv == 0)
		rv = nng_http_handler_alloc(&h, "/metrics", metrics_get);
	if (rv == 0 && (rv = nng_http_server_add_handler(metrics_srv, h)) != 0)
		nng_http_handler_free(h);
	if (rv == 0)
		rv = nng_http_server_start(metrics_srv);
	if (rv != 0) {
		snprintf(err, len, "could not listen on %s: %s", url, nng_strerror(rv));
		if (metrics_srv)
			nng_http_server_release(metrics_srv);
		metrics_srv = NULL;
		return rv == NNG_EADDRINUSE ? -EADDRINUSE : rv == NNG_ENOMEM ? -ENOMEM : -EIO;
	}
	return 0;
}

void metrics_http_stop(void)
{
	if (metrics_srv == NULL)
		return;
	nng_http_server_stop(metrics_srv);
	nng_http_server_release(metrics_srv);
	metrics_srv = NULL;
}
