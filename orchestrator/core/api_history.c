/* api_history: the Orchestrator service's history methods
 * (orchestrator.proto): GetSagaHistory, one saga's history, and
 * WatchHistory, the feed of every saga's history after a cursor
 * (docs/protocol.md, "The history feed"). Served by the API's workers
 * (api.c's table of handlers; api_internal.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "api_internal.h"
#include "authz.h"
#include "codec.h"
#include "feed_cursor.h"
#include "sagas/v1/orchestrator.pb-c.h"
#include "status.h"
#include "store.h"
#include "valid.h"

/* WatchHistory's page: by default and at most */
#define API_FEED_DEFAULT 1000
#define API_FEED_MAX     10000

void api_history(api *a, api_worker *w, const rpc_request *call, rpc_reply *reply)
{
	Sagas__V1__GetSagaHistoryRequest *req = (Sagas__V1__GetSagaHistoryRequest *)rpc_unpack(
	    &sagas__v1__get_saga_history_request__descriptor, call, reply);
	if (req == NULL)
		return;
	store_history_entry *hs = NULL;
	size_t n = 0;
	Sagas__V1__HistoryEntry *ms = NULL, **mp = NULL;
	if (!valid_uuid(req->saga_id)) {
		rpc_reply_error(reply, RPC_INVALID_ARGUMENT, "bad_field",
		    "invalid saga_id: not a canonical lowercase UUID");
		goto out_free;
	}
	int rc;
	API_DB(a, w, rc, store_history(w->conn, req->saga_id, &hs, &n));
	if (rc == -ENOENT) {
		rpc_reply_error(
		    reply, RPC_NOT_FOUND, "unknown_saga", "saga %s does not exist", req->saga_id);
		goto out_free;
	}
	if (rc != 0) {
		api_db_error(reply, rc, "read history");
		goto out_free;
	}
	ms = calloc(n + 1, sizeof *ms);
	mp = calloc(n + 1, sizeof *mp);
	if (ms == NULL || mp == NULL) {
		rpc_reply_error(reply, RPC_INTERNAL, "", "out of memory");
		goto out_free;
	}
	/* who acted and their words are the admin role's to read, as the audit
	 * trail is (docs/security.md): a client sees that an operator acted
	 * (the event), not who or why */
	bool admin = (call->roles & AUTHZ_ADMIN) != 0;
	for (size_t i = 0; i < n; i++) {
		if (!admin) {
			hs[i].actor[0] = '\0';
			hs[i].note[0] = '\0';
		}
		codec_history_to_pb(&ms[i], &hs[i]);
		mp[i] = &ms[i];
	}
	Sagas__V1__GetSagaHistoryReply out = SAGAS__V1__GET_SAGA_HISTORY_REPLY__INIT;
	out.n_entries = n;
	out.entries = mp;
	rpc_reply_ok(reply, &out.base);
out_free:
	free(hs);
	free(ms);
	free(mp);
	sagas__v1__get_saga_history_request__free_unpacked(req, NULL);
}

/* api_feed_reply answers WatchHistory with the entries es[0..n) (at most
 * `limit` of them are sent; n > limit says more are ready), cutting the
 * page where the frame's budget ends, and the cursor to go on from
 * (feed_cursor_after_page: after the last entry sent under (from->seen,
 * later), or `later` alone when every entry of it was sent) with `more`
 * (feed_page_more: also true at the end of a run begun under an earlier
 * snapshot, which misses what committed since). */
static void api_feed_reply(rpc_reply *reply, const uint8_t *key, const feed_cursor *from,
    const char *later, store_feed_entry *es, size_t n, size_t limit)
{
	Sagas__V1__FeedEntry *fs = calloc(n + 1, sizeof *fs);
	Sagas__V1__HistoryEntry *hs = calloc(n + 1, sizeof *hs);
	Sagas__V1__FeedEntry **fp = calloc(n + 1, sizeof *fp);
	feed_cursor *next = malloc(sizeof *next);
	char *text = malloc(FEED_CURSOR_MAX + 1);
	if (fs == NULL || hs == NULL || fp == NULL || next == NULL || text == NULL) {
		rpc_reply_error(reply, RPC_INTERNAL, "", "out of memory");
		goto out_free;
	}
	size_t k = 0, bytes = 2 * FEED_CURSOR_MAX;
	for (; k < n && k < limit; k++) {
		sagas__v1__feed_entry__init(&fs[k]);
		codec_history_to_pb(&hs[k], &es[k].h);
		fs[k].saga_id = es[k].saga_id;
		fs[k].entry = &hs[k];
		bytes += 8 + sagas__v1__feed_entry__get_packed_size(&fs[k]);
		if (bytes > RPC_REPLY_BUDGET)
			break;
		fp[k] = &fs[k];
	}
	/* where the next page starts (after the last entry sent, or the later
	 * snapshot whole) and whether to call again at once */
	bool more = feed_cursor_after_page(from, later, k<n, k, k> 0 ? es[k - 1].xid : 0,
	    k > 0 ? es[k - 1].saga_id : NULL, k > 0 ? es[k - 1].h.version : 0, next);
	if (feed_cursor_encode(next, key, text, FEED_CURSOR_MAX + 1) != 0) {
		rpc_reply_error(reply, RPC_INTERNAL, "", "could not make the feed's cursor");
		goto out_free;
	}
	Sagas__V1__WatchHistoryReply out = SAGAS__V1__WATCH_HISTORY_REPLY__INIT;
	out.n_entries = k;
	out.entries = fp;
	out.cursor = text;
	out.more = more;
	rpc_reply_ok(reply, &out.base);
out_free:
	free(fs);
	free(hs);
	free(fp);
	free(next);
	free(text);
}

/* api_feed_start fills *c with the cursor `after` names: decoded, or for
 * "" the empty snapshot (from the first row) or, with from_now, the
 * database's snapshot now. Returns 0, or fills `reply` and returns -1. */
static int api_feed_start(api *a, api_worker *w, const Sagas__V1__WatchHistoryRequest *req,
    feed_cursor *c, rpc_reply *reply)
{
	if (req->after[0] != '\0') {
		if (req->from_now) {
			rpc_reply_error(reply, RPC_INVALID_ARGUMENT, "bad_field",
			    "invalid from_now: give either after or from_now");
			return -1;
		}
		if (feed_cursor_decode(req->after, w->feed_key, c) != 0) {
			rpc_reply_error(reply, RPC_INVALID_ARGUMENT, "bad_field",
			    "invalid after: not a cursor of a WatchHistory reply");
			return -1;
		}
		return 0;
	}
	memset(c, 0, sizeof *c);
	snprintf(c->seen, sizeof c->seen, "%s", FEED_SNAPSHOT_EMPTY);
	if (!req->from_now)
		return 0;
	int rc;
	API_DB(a, w, rc, store_snapshot(w->conn, c->seen));
	if (rc != 0) {
		api_db_error(reply, rc, "read the database's snapshot");
		return -1;
	}
	return 0;
}

/* WatchHistory (orchestrator.proto; docs/protocol.md, "The history
 * feed"): a page of the feed after the request's cursor. */
void api_watch_history(api *a, api_worker *w, const rpc_request *call, rpc_reply *reply)
{
	Sagas__V1__WatchHistoryRequest *req = (Sagas__V1__WatchHistoryRequest *)rpc_unpack(
	    &sagas__v1__watch_history_request__descriptor, call, reply);
	if (req == NULL)
		return;
	feed_cursor *from = malloc(sizeof *from);
	char *later = malloc(FEED_SNAPSHOT_MAX + 1);
	store_feed_entry *es = NULL;
	size_t n = 0;
	if (from == NULL || later == NULL) {
		rpc_reply_error(reply, RPC_INTERNAL, "", "out of memory");
		goto out_free;
	}
	if (req->limit < 0 || req->limit > API_FEED_MAX) {
		rpc_reply_error(reply, RPC_INVALID_ARGUMENT, "bad_field",
		    "invalid limit: must be 0..%d", API_FEED_MAX);
		goto out_free;
	}
	int rc = 0;
	if (!w->has_feed_key) {
		API_DB(a, w, rc, store_feed_key(w->conn, w->feed_key));
		if (rc != 0) {
			api_db_error(reply, rc, "read the feed's key");
			goto out_free;
		}
		w->has_feed_key = true;
	}
	if (api_feed_start(a, w, req, from, reply) != 0)
		goto out_free;
	int limit = req->limit ? req->limit : API_FEED_DEFAULT;
	/* one more than the page: are more ready? */
	API_DB(a, w, rc, store_feed(w->conn, from, limit + 1, &es, &n, later));
	if (rc != 0) {
		api_db_error(reply, rc, "read the history feed");
		goto out_free;
	}
	api_feed_reply(reply, w->feed_key, from, later, es, n, (size_t)limit);
out_free:
	free(es);
	free(from);
	free(later);
	sagas__v1__watch_history_request__free_unpacked(req, NULL);
}
