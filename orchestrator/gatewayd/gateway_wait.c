/* gateway_wait: the calls of gatewayd that wait for a saga to end, each on
 * a link of its own that is closed when its HTTP caller goes away
 * (gateway.h, gw_call_waiting). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <nng/nng.h>
#include <nng/supplemental/util/platform.h>

#include "gateway.h"
#include "log.h"
#include "metrics.h"

static const metric_def GW_WAITS = {"sagas_gateway_waits",
    "calls waiting for a saga to end (WaitSaga, StartSaga with waitMs) under way now, each on a "
    "link of its own to orchestratord",
    METRIC_GAUGE, NULL, NULL, 0};
static const metric_def GW_WAITS_ABANDONED = {"sagas_gateway_waits_abandoned_total",
    "waiting calls ended because their HTTP caller closed its connection (their link closed: "
    "orchestratord dropped the wait)",
    METRIC_COUNTER, NULL, NULL, 0};

/* One waiting call: its outcome, filled on an nng thread. */
typedef struct gw_wait {
	nng_mtx *mtx;
	nng_cv *cv;
	bool done;
	rpc_result *res;
} gw_wait;

/* gw_wait_done keeps the outcome (the payload copied: it lives only
 * during the callback) and wakes the request's thread. */
static void gw_wait_done(void *arg, const rpc_result *res)
{
	gw_wait *w = arg;
	nng_mtx_lock(w->mtx);
	*w->res = *res;
	w->res->payload = NULL;
	if (res->payload_len > 0) {
		w->res->payload = malloc(res->payload_len);
		if (w->res->payload == NULL) {
			w->res->code = RPC_INTERNAL;
			w->res->payload_len = 0;
		} else
			memcpy(w->res->payload, res->payload, res->payload_len);
	}
	w->done = true;
	nng_cv_wake(w->cv);
	nng_mtx_unlock(w->mtx);
}

/* gw_wait_until_done waits for the call of `w` on link `c`, looking at the
 * HTTP caller every GW_GONE_POLL_MS; when it has gone, closes `c` (the
 * call completes UNAVAILABLE at once) and sets *c to NULL. Returns whether
 * the caller went away. */
static bool gw_wait_until_done(gw_wait *w, rpc_client **c, const http_request *req)
{
	bool gone = false;
	nng_mtx_lock(w->mtx);
	while (!w->done) {
		nng_cv_until(w->cv, nng_clock() + GW_GONE_POLL_MS);
		if (w->done || gone)
			continue;
		nng_mtx_unlock(w->mtx);
		if (http_request_gone(req)) {
			gone = true;
			/* waits for the callback, which takes w->mtx */
			rpc_client_close(*c);
			*c = NULL;
		}
		nng_mtx_lock(w->mtx);
	}
	nng_mtx_unlock(w->mtx);
	return gone;
}

void gw_wait_metrics_init(void)
{
	metric_add(metric_get(&GW_WAITS, NULL), 0);
	metric_add(metric_get(&GW_WAITS_ABANDONED, NULL), 0);
}

int gw_call_waiting(const gw_listener *l, const char *method, const ProtobufCMessage *m,
    int64_t timeout_ms, const http_request *req, rpc_result *res)
{
	memset(res, 0, sizeof *res);
	gw_wait w = {.res = res};
	if (nng_mtx_alloc(&w.mtx) != 0)
		return -ENOMEM;
	if (nng_cv_alloc(&w.cv, w.mtx) != 0) {
		nng_mtx_free(w.mtx);
		return -ENOMEM;
	}
	/* as the listener's own link: no resend behind the caller's back */
	rpc_client_opts opts = {.resend_ms = 0, .failover = false};
	rpc_client *c = NULL;
	int rc = rpc_client_open_urls(&c, l->urls, &opts);
	if (rc == 0)
		rc = rpc_call_async(c, method, m, timeout_ms, gw_wait_done, &w);
	if (rc == 0) {
		metric *waits = metric_get(&GW_WAITS, NULL);
		metric_add(waits, 1);
		bool gone = gw_wait_until_done(&w, &c, req);
		metric_add(waits, -1);
		if (gone) {
			metric_inc(metric_get(&GW_WAITS_ABANDONED, NULL));
			log_debug(NULL, "%s %s from %s: the caller went away; its wait ended",
			    req->method, req->path, req->peer);
			rpc_result_clear(res);
			rc = -ECONNRESET;
		}
	}
	rpc_client_close(c);
	nng_cv_free(w.cv);
	nng_mtx_free(w.mtx);
	return rc;
}
