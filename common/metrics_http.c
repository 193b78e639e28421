/* metrics_http: the /metrics listener (metrics_http.h). */
#include "metrics_http.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>

#include <nng/nng.h>
#include <nng/supplemental/http/http.h>
#include <nng/supplemental/util/platform.h>

#include <uthash.h>

#include "authz.h"
#include "clock.h"
#include "metrics.h"
#include "sockscan.h"

static nng_http_server *metrics_srv;

/* ---- the connection bound ----
 *
 * nng's HTTP server neither caps its connections nor times them out, and
 * over https a peer without a certificate can hold one in its handshake
 * for as long as it likes: a flood of them would take every descriptor and
 * stop the daemon's RPC too. A reaper thread looks at the listener's
 * connections (sockscan.h: this process's own sockets on its port) every
 * METRICS_REAP_EVERY_MS, and every METRICS_REAP_BUSY_MS while it is closing
 * any: it shuts down each connection open for METRICS_CONN_MAX_MS (a
 * scraper reconnects at its next scrape) and, past METRICS_CONNS_MAX, the
 * newest ones. Counted in sagas_metrics_connections_closed_total{reason}. */
#define METRICS_CONNS_MAX     16
#define METRICS_CONN_MAX_MS   30000
#define METRICS_REAP_EVERY_MS 1000
#define METRICS_REAP_BUSY_MS  10
#define METRICS_KILL_MAX      1024

typedef struct metrics_conn {
	unsigned long inode;
	int64_t first_ms;
	unsigned gen;
	UT_hash_handle hh;
} metrics_conn;

static struct {
	nng_thread *thread;
	nng_mtx *mtx;
	nng_cv *cv;
	bool running;
	unsigned port;
	unsigned gen;
	metrics_conn *conns;
} mr;

static const metric_def METRICS_CLOSED = {"sagas_metrics_connections_closed_total",
    "Connections to the metrics listener shut down by its bound: open too long (age) or past "
    "the most allowed at once (cap)",
    METRIC_COUNTER, "reason", NULL, 0};

/* metrics_seen notes one connection (sockscan_tcp's callback). */
static void metrics_seen(void *arg, const sockscan_conn *c)
{
	int64_t now = *(const int64_t *)arg;
	metrics_conn *m = NULL;
	HASH_FIND(hh, mr.conns, &c->inode, sizeof c->inode, m);
	if (m == NULL && (m = calloc(1, sizeof *m)) != NULL) {
		m->inode = c->inode;
		m->first_ms = now;
		HASH_ADD(hh, mr.conns, inode, sizeof m->inode, m);
	}
	if (m != NULL)
		m->gen = mr.gen;
}

/* metrics_newest_first orders connections newest first. */
static int metrics_newest_first(const metrics_conn *a, const metrics_conn *b)
{
	return a->first_ms < b->first_ms ? 1 : a->first_ms > b->first_ms ? -1 : 0;
}

/* metrics_reap_pass is one look at the listener's connections; returns how
 * many it shut down. */
static int metrics_reap_pass(void)
{
	static unsigned long kill[METRICS_KILL_MAX];
	int64_t now = clock_mono_ms();
	sockscan_own own;
	mr.gen++;
	if (sockscan_own_read(&own) == 0)
		sockscan_tcp(&mr.port, 1, &own, metrics_seen, &now);
	sockscan_own_free(&own);
	int nkill = 0, aged = 0, capped = 0;
	size_t live = 0;
	metrics_conn *m, *tmp;
	HASH_ITER(hh, mr.conns, m, tmp)
	{
		if (m->gen != mr.gen) { /* gone */
			HASH_DEL(mr.conns, m);
			free(m);
		} else {
			live++;
		}
	}
	HASH_SORT(mr.conns, metrics_newest_first);
	size_t rank = 0, over = live > METRICS_CONNS_MAX ? live - METRICS_CONNS_MAX : 0;
	HASH_ITER(hh, mr.conns, m, tmp)
	{
		bool cap = rank++ < over, age = now - m->first_ms >= METRICS_CONN_MAX_MS;
		if ((cap || age) && nkill < METRICS_KILL_MAX) {
			kill[nkill++] = m->inode;
			if (cap)
				capped++;
			else
				aged++;
		}
	}
	if (nkill == 0)
		return 0;
	int done = sockscan_shutdown(kill, nkill);
	metric_add(metric_get1(&METRICS_CLOSED, "age"), aged);
	metric_add(metric_get1(&METRICS_CLOSED, "cap"), capped);
	if (capped > 0) {
		char what[200];
		snprintf(what, sizeof what,
		    "metrics: closed %d connections past the most allowed at once (%d)", capped,
		    METRICS_CONNS_MAX);
		authz_log_limited("metrics_cap", NULL, what);
	}
	return done;
}

static void metrics_reaper_main(void *arg)
{
	(void)arg;
	nng_mtx_lock(mr.mtx);
	int64_t wait = METRICS_REAP_EVERY_MS;
	while (mr.running) {
		nng_cv_until(mr.cv, nng_clock() + (nng_time)wait);
		if (!mr.running)
			break;
		nng_mtx_unlock(mr.mtx);
		int done = metrics_reap_pass();
		nng_mtx_lock(mr.mtx);
		wait = done > 0 ? METRICS_REAP_BUSY_MS : METRICS_REAP_EVERY_MS;
	}
	nng_mtx_unlock(mr.mtx);
}

/* metrics_reaper_start starts the reaper for the listener's bound port. */
static int metrics_reaper_start(void)
{
	nng_sockaddr sa;
	int rv = nng_http_server_get_addr(metrics_srv, &sa);
	if (rv != 0)
		return rv;
	mr.port = sa.s_family == NNG_AF_INET6 ? ntohs(sa.s_in6.sa_port) : ntohs(sa.s_in.sa_port);
	metric_add(metric_get1(&METRICS_CLOSED, "age"), 0);
	metric_add(metric_get1(&METRICS_CLOSED, "cap"), 0);
	if ((rv = nng_mtx_alloc(&mr.mtx)) != 0)
		return rv;
	if ((rv = nng_cv_alloc(&mr.cv, mr.mtx)) != 0) {
		nng_mtx_free(mr.mtx);
		return rv;
	}
	mr.running = true;
	if ((rv = nng_thread_create(&mr.thread, metrics_reaper_main, NULL)) != 0) {
		mr.running = false;
		nng_cv_free(mr.cv);
		nng_mtx_free(mr.mtx);
	}
	return rv;
}

static void metrics_reaper_stop(void)
{
	if (mr.thread == NULL)
		return;
	nng_mtx_lock(mr.mtx);
	mr.running = false;
	nng_cv_wake(mr.cv);
	nng_mtx_unlock(mr.mtx);
	nng_thread_destroy(mr.thread); /* joins */
	mr.thread = NULL;
	nng_cv_free(mr.cv);
	nng_mtx_free(mr.mtx);
	metrics_conn *m, *tmp;
	HASH_ITER(hh, mr.conns, m, tmp)
	{
		HASH_DEL(mr.conns, m);
		free(m);
	}
}

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
	if (rv == 0 && (rv = metrics_reaper_start()) != 0)
		nng_http_server_stop(metrics_srv);
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
	metrics_reaper_stop();
	nng_http_server_stop(metrics_srv);
	nng_http_server_release(metrics_srv);
	metrics_srv = NULL;
}
