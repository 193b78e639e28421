/* api_list: ListSagas (orchestrator.proto): validation, the caps on
 * listings served at once, the statement timeout of the call's deadline and
 * the cancel of a listing whose client went away (api_internal.h). */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "api_internal.h"
#include "authz.h"
#include "clock.h"
#include "codec.h"
#include "log.h"
#include "metrics.h"
#include "page_token.h"
#include "sagas/v1/orchestrator.pb-c.h"
#include "status.h"
#include "store.h"
#include "valid.h"

#define API_LIST_DEFAULT 100
#define API_LIST_MAX     10000
/* ListSagas' ages and margins, in ms: at most ten years and one year */
#define API_OLDER_THAN_MAX INT64_C(315360000000)
/* created_after/before_unix_ms: up to the year 9999 */
#define API_INSTANT_MAX INT64_C(253402300799999)
#define API_MARGIN_MAX  INT64_C(31536000000)
/* with_counts: COMPLETED and CANCELLED are counted exactly up to this many */
#define API_COUNT_BOUND 10000
/* listings in service at once, whatever the caps say (one per worker at
 * most: workers are at most 64) */
#define API_LIST_SLOTS 64

static const metric_def M_LIST_REFUSED = {"sagas_api_listings_refused_total",
    "ListSagas calls refused RESOURCE_EXHAUSTED before reading anything, by the cap they met "
    "(overall: --max-listings; caller: --max-listings-per-caller)",
    METRIC_COUNTER, "cap", NULL, 0};
static const metric_def M_LIST_RUNNING = {"sagas_api_listings",
    "ListSagas calls being served now (at most --max-listings)", METRIC_GAUGE, "", NULL, 0};
static const metric_def M_LIST_CANCELLED = {"sagas_api_listings_cancelled_total",
    "ListSagas statements the database ended early, by why: statement_timeout (the call's "
    "deadline came), client_gone (its connection closed: a cancel request was sent)",
    METRIC_COUNTER, "why", NULL, 0};

/* One listing in service: who asked, on which connection, and whether that
 * connection has closed since. */
typedef struct api_list_slot {
	bool busy;
	bool gone; /* its connection closed: cancel the statement */
	uint32_t pipe;
	char caller[96]; /* the peer's address without its port */
} api_list_slot;

static pthread_mutex_t api_list_mtx = PTHREAD_MUTEX_INITIALIZER;
static api_list_slot api_list_slots[API_LIST_SLOTS];

/* api_list_caller writes the caller of connection `pipe` (its address
 * without the port: one host, however many connections it opens) into buf. */
static void api_list_caller(uint32_t pipe, char *buf, size_t len)
{
	char peer[96];
	rpc_peer(pipe, peer, sizeof peer);
	char *colon = strrchr(peer, ':');
	if (colon != NULL && strchr(peer, '/') == NULL)
		*colon = '\0';
	snprintf(buf, len, "%s", peer);
}

/* api_list_enter takes a slot for a listing of `call` within a's caps.
 * Returns the slot's index, or -1 with *cap the cap met ("overall",
 * "caller"). */
static int api_list_enter(const api *a, const rpc_request *call, const char **cap)
{
	char caller[96];
	api_list_caller(call->pipe, caller, sizeof caller);
	int overall = a->max_listings > 0 ? a->max_listings : 1;
	if (overall > API_LIST_SLOTS)
		overall = API_LIST_SLOTS;
	int per = a->max_listings_per_caller > 0 ? a->max_listings_per_caller : overall;
	int busy = 0, mine = 0, free_at = -1;
	pthread_mutex_lock(&api_list_mtx);
	for (int i = 0; i < API_LIST_SLOTS; i++) {
		if (!api_list_slots[i].busy) {
			if (free_at < 0)
				free_at = i;
			continue;
		}
		busy++;
		if (strcmp(api_list_slots[i].caller, caller) == 0)
			mine++;
	}
	*cap = busy >= overall ? "overall" : mine >= per ? "caller" : NULL;
	if (*cap == NULL && free_at >= 0) {
		api_list_slot *sl = &api_list_slots[free_at];
		sl->busy = true;
		sl->gone = false;
		sl->pipe = call->pipe;
		snprintf(sl->caller, sizeof sl->caller, "%s", caller);
		busy++;
	} else {
		free_at = -1;
		if (*cap == NULL)
			*cap = "overall";
	}
	pthread_mutex_unlock(&api_list_mtx);
	if (free_at >= 0)
		metric_set(metric_get(&M_LIST_RUNNING, NULL), busy);
	return free_at;
}

/* api_list_leave gives slot `i` back. */
static void api_list_leave(int i)
{
	int busy = 0;
	pthread_mutex_lock(&api_list_mtx);
	api_list_slots[i].busy = false;
	for (int k = 0; k < API_LIST_SLOTS; k++)
		busy += api_list_slots[k].busy;
	pthread_mutex_unlock(&api_list_mtx);
	metric_set(metric_get(&M_LIST_RUNNING, NULL), busy);
}

void api_list_metrics_init(void)
{
	metric_add(metric_get1(&M_LIST_REFUSED, "overall"), 0);
	metric_add(metric_get1(&M_LIST_REFUSED, "caller"), 0);
	metric_add(metric_get1(&M_LIST_CANCELLED, "statement_timeout"), 0);
	metric_add(metric_get1(&M_LIST_CANCELLED, "client_gone"), 0);
	metric_set(metric_get(&M_LIST_RUNNING, NULL), 0);
}

void api_list_pipe_closed(uint32_t pipe)
{
	pthread_mutex_lock(&api_list_mtx);
	for (int i = 0; i < API_LIST_SLOTS; i++)
		if (api_list_slots[i].busy && api_list_slots[i].pipe == pipe)
			api_list_slots[i].gone = true;
	pthread_mutex_unlock(&api_list_mtx);
}

/* api_list_gone: pg_watch_gone_fn of a listing; arg is its slot index. */
static bool api_list_gone(void *arg)
{
	int i = (int)(intptr_t)arg;
	pthread_mutex_lock(&api_list_mtx);
	bool gone = api_list_slots[i].gone;
	pthread_mutex_unlock(&api_list_mtx);
	return gone;
}

/* api_list_refuse answers a listing over a cap: RESOURCE_EXHAUSTED, counted
 * and logged (at most once per caller and interval). */
static void api_list_refuse(
    const api *a, const rpc_request *call, const char *cap, rpc_reply *reply)
{
	metric_inc(metric_get1(&M_LIST_REFUSED, cap));
	char peer[96], what[160];
	rpc_peer(call->pipe, peer, sizeof peer);
	bool overall = strcmp(cap, "overall") == 0;
	snprintf(what, sizeof what, "refused a ListSagas: %d listings in service already (%s)",
	    overall ? a->max_listings : a->max_listings_per_caller,
	    overall ? "--max-listings" : "--max-listings-per-caller, this caller's");
	authz_log_limited("listings", peer, what);
	rpc_reply_error(reply, RPC_RESOURCE_EXHAUSTED, "too_many_listings",
	    "could not list sagas: %d listings in service already (%s); try again later",
	    overall ? a->max_listings : a->max_listings_per_caller,
	    overall ? "--max-listings" : "--max-listings-per-caller");
}

/* api_list_timeout_ms is the statement_timeout of a listing of `call`:
 * what is left of its deadline less the reply's margin (at least 1 ms), or
 * API_STATEMENT_MAX_MS without a deadline. */
static int64_t api_list_timeout_ms(const rpc_request *call)
{
	if (call->deadline_mono_ms <= 0)
		return API_STATEMENT_MAX_MS;
	int64_t left = call->deadline_mono_ms - clock_mono_ms() - API_STATEMENT_MARGIN_MS;
	if (left > API_STATEMENT_MAX_MS)
		left = API_STATEMENT_MAX_MS;
	return left > 0 ? left : 1;
}

/* api_list_failed answers a listing whose statement failed with `rc`,
 * counting and logging a cancel. */
static void api_list_failed(
    const rpc_request *call, int rc, const store_watch *wt, const char *what, rpc_reply *reply)
{
	if (rc == PG_ERR_CANCELED) {
		char peer[96];
		rpc_peer(call->pipe, peer, sizeof peer);
		metric_inc(metric_get1(
		    &M_LIST_CANCELLED, wt->cancelled ? "client_gone" : "statement_timeout"));
		log_info(NULL, "%s for %s cancelled in the database: %s", what, peer,
		    wt->cancelled ? "its client went away"
		                  : "the call's deadline came (statement_timeout)");
	}
	api_db_error(reply, rc, what);
}

/* api_list_sagas_check checks the fields of the ListSagas request `req`
 * (all but its page token): true when they are in range, else false with
 * the INVALID_ARGUMENT `reply` filled. */
static bool api_list_sagas_check(const Sagas__V1__ListSagasRequest *req, rpc_reply *reply)
{
	if ((int)req->state < 0 || (int)req->state > SAGA_STATE_LAST) {
		rpc_reply_error(reply, RPC_INVALID_ARGUMENT, "bad_field",
		    "invalid state: %d is not a SagaState", (int)req->state);
		return false;
	}
	if (req->limit < 0 || req->limit > API_LIST_MAX) {
		rpc_reply_error(reply, RPC_INVALID_ARGUMENT, "bad_field",
		    "invalid limit: must be 0..%d", API_LIST_MAX);
		return false;
	}
	if (req->older_than_ms < 0 || req->older_than_ms > API_OLDER_THAN_MAX) {
		rpc_reply_error(reply, RPC_INVALID_ARGUMENT, "bad_field",
		    "invalid older_than_ms: must be 0..%lld", (long long)API_OLDER_THAN_MAX);
		return false;
	}
	if (req->overdue_margin_ms < 0 || req->overdue_margin_ms > API_MARGIN_MAX) {
		rpc_reply_error(reply, RPC_INVALID_ARGUMENT, "bad_field",
		    "invalid overdue_margin_ms: must be 0..%lld", (long long)API_MARGIN_MAX);
		return false;
	}
	if (req->stuck_after_ms < 0 || req->stuck_after_ms > API_MARGIN_MAX) {
		rpc_reply_error(reply, RPC_INVALID_ARGUMENT, "bad_field",
		    "invalid stuck_after_ms: must be 0..%lld", (long long)API_MARGIN_MAX);
		return false;
	}
	if (!api_def_name(req->type, 'a', 'z')) {
		rpc_reply_error(reply, RPC_INVALID_ARGUMENT, "bad_field",
		    "invalid type: a saga type's name is [a-z][a-z0-9_]*, at most 64 bytes");
		return false;
	}
	if (!api_def_name(req->state_name, 'A', 'Z')) {
		rpc_reply_error(reply, RPC_INVALID_ARGUMENT, "bad_field",
		    "invalid state_name: a state's name is [A-Z][A-Z0-9_]*, at most 64 bytes");
		return false;
	}
	if (req->state_name[0] != '\0' && req->state != 0) {
		rpc_reply_error(reply, RPC_INVALID_ARGUMENT, "bad_field",
		    "invalid state_name: give state or state_name, not both");
		return false;
	}
	if (req->customer[0] != '\0' && !valid_name(req->customer)) {
		rpc_reply_error(reply, RPC_INVALID_ARGUMENT, "bad_field",
		    "invalid customer: must be " VALID_NAME_RULE);
		return false;
	}
	if (req->created_after_unix_ms < 0 || req->created_after_unix_ms > API_INSTANT_MAX
	    || req->created_before_unix_ms < 0 || req->created_before_unix_ms > API_INSTANT_MAX) {
		rpc_reply_error(reply, RPC_INVALID_ARGUMENT, "bad_field",
		    "invalid %s: must be 0..%lld (ms since the epoch)",
		    req->created_after_unix_ms < 0 || req->created_after_unix_ms > API_INSTANT_MAX
		        ? "created_after_unix_ms"
		        : "created_before_unix_ms",
		    (long long)API_INSTANT_MAX);
		return false;
	}
	return true;
}

/* api_list_counts fills out->counts (cs and cp, SAGA_STATE_LAST entries) from
 * the database. Returns 0, or fills `reply` and returns -1. */
static int api_list_counts(api *a, api_worker *w, const rpc_request *call, store_watch *wt,
    Sagas__V1__ListSagasReply *out, Sagas__V1__StateCount *cs, Sagas__V1__StateCount **cp,
    rpc_reply *reply)
{
	store_count n[SAGA_STATE_LAST + 1];
	int rc;
	API_DB(a, w, rc, store_count_sagas(w->conn, API_COUNT_BOUND, wt, n));
	if (rc != 0) {
		api_list_failed(call, rc, wt, "count sagas", reply);
		return -1;
	}
	for (int s = 1; s <= SAGA_STATE_LAST; s++) {
		sagas__v1__state_count__init(&cs[s - 1]);
		cs[s - 1].state = (Sagas__V1__SagaState)s;
		cs[s - 1].count = n[s].n;
		cs[s - 1].more = n[s].more;
		cp[s - 1] = &cs[s - 1];
	}
	out->n_counts = SAGA_STATE_LAST;
	out->counts = cp;
	return 0;
}

void api_list_sagas(api *a, api_worker *w, const rpc_request *call, rpc_reply *reply)
{
	Sagas__V1__ListSagasRequest *req = (Sagas__V1__ListSagasRequest *)rpc_unpack(
	    &sagas__v1__list_sagas_request__descriptor, call, reply);
	if (req == NULL)
		return;
	saga_row *rows = NULL;
	size_t n = 0;
	Sagas__V1__Saga *ms = NULL, **mp = NULL;
	Sagas__V1__Order *os = NULL;
	char **js = NULL; /* each saga's input_json (api_saga_input) */
	size_t njs = 0;
	Sagas__V1__StateCount counts[SAGA_STATE_LAST];
	Sagas__V1__StateCount *countp[SAGA_STATE_LAST];
	int slot = -1;
	if (!api_list_sagas_check(req, reply))
		goto out_free;
	page_key after;
	bool has_after = req->page_token != NULL && req->page_token[0] != '\0';
	if (has_after && page_token_decode(req->page_token, &after) != 0) {
		rpc_reply_error(reply, RPC_INVALID_ARGUMENT, "bad_field",
		    "invalid page_token: not a token of a ListSagas reply");
		goto out_free;
	}
	int limit = req->limit ? req->limit : API_LIST_DEFAULT;
	store_list_query q = {.state = (saga_state)req->state,
	    .attention_only = req->attention_only,
	    .overdue = req->overdue,
	    .margin_ms = req->overdue_margin_ms ? req->overdue_margin_ms : a->overdue_margin_ms,
	    .stuck_ms = req->stuck_after_ms ? req->stuck_after_ms : a->stuck_after_ms,
	    .older_than_ms = req->older_than_ms,
	    .customer = req->customer,
	    .type = req->type,
	    .state_name = req->state_name,
	    .created_after_ms = req->created_after_unix_ms,
	    .created_before_ms = req->created_before_unix_ms,
	    .after = has_after,
	    .after_us = has_after ? after.created_us : 0,
	    .after_id = has_after ? after.saga_id : NULL,
	    /* one more than the page: is there a next page? */
	    .limit = limit + 1};
	/* nothing read yet: a listing over a cap changes nothing */
	const char *cap = NULL;
	slot = api_list_enter(a, call, &cap);
	if (slot < 0) {
		api_list_refuse(a, call, cap, reply);
		goto out_free;
	}
	store_watch wt = {.timeout_ms = api_list_timeout_ms(call),
	    .gone = api_list_gone,
	    .arg = (void *)(intptr_t)slot};
	int rc;
	API_DB(a, w, rc, store_list_sagas(w->conn, &q, &wt, &rows, &n));
	if (rc != 0) {
		api_list_failed(call, rc, &wt, "list sagas", reply);
		goto out_free;
	}
	bool more = n > (size_t)limit;
	if (more)
		n = (size_t)limit;
	ms = calloc(n + 1, sizeof *ms);
	os = calloc(n + 1, sizeof *os);
	mp = calloc(n + 1, sizeof *mp);
	js = calloc(n + 1, sizeof *js);
	if (ms == NULL || os == NULL || mp == NULL || js == NULL) {
		rpc_reply_error(reply, RPC_INTERNAL, "", "out of memory");
		goto out_free;
	}
	size_t k = 0, bytes = 0;
	for (; k < n; k++) {
		codec_saga_to_pb(&ms[k], &os[k], &rows[k]);
		api_saga_input(a, w->conn, &rows[k], &ms[k], &js[k]);
		njs = k + 1;
		/* tag + length prefix (<= 3 bytes for a saga) + the saga */
		bytes += 4 + sagas__v1__saga__get_packed_size(&ms[k]);
		if (bytes > RPC_REPLY_BUDGET)
			break;
		mp[k] = &ms[k];
	}
	Sagas__V1__ListSagasReply out = SAGAS__V1__LIST_SAGAS_REPLY__INIT;
	out.n_sagas = k;
	out.sagas = mp;
	out.truncated = k < n;
	char token[PAGE_TOKEN_LEN + 1] = "";
	if ((more || k < n) && k > 0) {
		page_key last = {.created_us = rows[k - 1].created_us};
		snprintf(last.saga_id, sizeof last.saga_id, "%s", rows[k - 1].saga_id);
		if (page_token_encode(&last, token) != 0) {
			/* a created_at past the year 9999: the row, not the request */
			rpc_reply_error(reply, RPC_INTERNAL, "database_error",
			    "could not list sagas: saga %s has a created_at out of range",
			    rows[k - 1].saga_id);
			goto out_free;
		}
	}
	out.next_page_token = token;
	if (req->with_counts) {
		wt.timeout_ms = api_list_timeout_ms(call);
		if (api_list_counts(a, w, call, &wt, &out, counts, countp, reply) != 0)
			goto out_free;
	}
	if (req->overdue) {
		out.overdue_margin_ms = q.margin_ms;
		out.stuck_after_ms = q.stuck_ms;
	}
	rpc_reply_ok(reply, &out.base);
out_free:
	if (slot >= 0)
		api_list_leave(slot);
	free(rows);
	free(ms);
	free(os);
	free(mp);
	for (size_t j = 0; j < njs; j++)
		free(js[j]);
	free(js);
	sagas__v1__list_sagas_request__free_unpacked(req, NULL);
}
