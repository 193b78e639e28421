/* metrics_http: the /metrics listener (metrics_http.h), on the shared
 * bounded HTTP listener (http_server.h): at most METRICS_CONNS_MAX
 * connections, METRICS_CONNS_PER_IP from one address, one idle for
 * METRICS_CONN_TIMEOUT_S closed (nng's HTTP server, used before, has no such
 * bounds: a flood took thousands of descriptors and hundreds of MB). Over
 * https the client certificate is verified against --metrics-tls-ca before
 * answering, and a connection without one is closed without an HTTP status. */
#include "metrics_http.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http_server.h"
#include "metrics.h"

/* a request's headers past this (bytes) are refused: a scrape needs < 1 KiB */
#define METRICS_CONN_MEMORY (32 * 1024)

static http_server *metrics_srv;

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
	return http_url_check(
	    url, tls, "--metrics-tls-ca", "metrics are served at /metrics", why, len);
}

/* metrics_text sets a plain-text answer with `status`. */
static void metrics_text(http_reply *rep, unsigned status, char *text, size_t len, bool owned)
{
	rep->status = status;
	rep->body = text;
	rep->body_len = len;
	rep->body_static = !owned;
	rep->content_type = status == 200 ? "text/plain; version=0.0.4; charset=utf-8"
	                                  : "text/plain; charset=utf-8";
	if (status == 405) {
		rep->headers[0][0] = "Allow", rep->headers[0][1] = "GET";
		rep->n_headers = 1;
	}
}

/* metrics_request answers one request: GET /metrics with the exposition,
 * 404 for another path, 405 for another method (the client certificate was
 * checked by http_server). */
static void metrics_request(void *arg, const http_request *req, http_reply *rep)
{
	(void)arg;
	static char not_found[] = "not found: metrics are at /metrics\n";
	static char not_allowed[] = "method not allowed: GET /metrics\n";
	if (strcmp(req->path, "/metrics") != 0) {
		metrics_text(rep, 404, not_found, strlen(not_found), false);
		return;
	}
	if (strcmp(req->method, "GET") != 0) {
		metrics_text(rep, 405, not_allowed, strlen(not_allowed), false);
		return;
	}
	size_t n = 0;
	char *text = metrics_render(&n);
	if (text == NULL)
		return; /* status 0: closed */
	metric_inc(metric_get(&METRICS_SCRAPES, NULL));
	metrics_text(rep, 200, text, n, true);
}

/* metrics_conn_event keeps sagas_metrics_connections. */
static void metrics_conn_event(void *arg, int delta)
{
	(void)arg;
	metric_add(metric_get(&METRICS_CONNS, NULL), delta);
}

/* metrics_unverified counts sagas_metrics_refused_total{unverified}. */
static void metrics_unverified(void *arg)
{
	(void)arg;
	metric_inc(metric_get1(&METRICS_REFUSED, "unverified"));
}

int metrics_http_start(
    const char *url, const tls_files *tls, const char *allowed_hosts, char *err, size_t len)
{
	bool want_tls;
	if (metrics_url_check(url, &want_tls, err, len) != 0)
		return -EINVAL;
	if (url[0] == '\0')
		return 0;
	metric_add(metric_get(&METRICS_SCRAPES, NULL), 0);
	metric_add(metric_get(&METRICS_CONNS, NULL), 0);
	metric_add(metric_get1(&METRICS_REFUSED, "unverified"), 0);
	http_server_cfg cfg = {.url = url,
	    .tls = tls,
	    .handler = metrics_request,
	    .conns_max = METRICS_CONNS_MAX,
	    .conns_per_ip = METRICS_CONNS_PER_IP,
	    .timeout_s = METRICS_CONN_TIMEOUT_S,
	    .header_memory = METRICS_CONN_MEMORY,
	    .max_body = 1024,
	    .name = "metrics",
	    .ca_option = "--metrics-tls-ca",
	    .allowed_hosts = allowed_hosts,
	    .label = "metrics",
	    .on_conn = metrics_conn_event,
	    .on_unverified = metrics_unverified};
	return http_server_start(&metrics_srv, &cfg, err, len);
}

void metrics_http_stop(void)
{
	http_server_stop(metrics_srv);
	metrics_srv = NULL;
}
