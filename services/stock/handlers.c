#include "handlers.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "pg.h"
#include "sagas/v1/stock.pb-c.h"
#include "stock_logic.h"
#include "store.h"
#include "valid.h"

/* ---- validation at the edge: bad input changes nothing ---- */

static bool stock_check_saga_id(rpc_reply *r, const char *s)
{
	if (valid_uuid(s))
		return true;
	rpc_reply_error(
	    r, RPC_INVALID_ARGUMENT, "bad_field", "invalid saga_id: not a canonical UUID");
	return false;
}

static bool stock_check_sku(rpc_reply *r, const char *s)
{
	if (valid_name(s))
		return true;
	rpc_reply_error(r, RPC_INVALID_ARGUMENT, "bad_field",
	    "invalid sku: must be 1..%d bytes of UTF-8 without control characters", VALID_NAME_MAX);
	return false;
}

static bool stock_check_range(rpc_reply *r, const char *field, int64_t v, int64_t min, int64_t max)
{
	if (v >= min && v <= max)
		return true;
	rpc_reply_error(r, RPC_INVALID_ARGUMENT, "bad_field",
	    "invalid %s: %" PRId64 " is outside %" PRId64 "..%" PRId64, field, v, min, max);
	return false;
}

static void stock_malformed(rpc_reply *r, const char *what)
{
	rpc_reply_error(r, RPC_INVALID_ARGUMENT, "malformed_payload", "could not decode %s", what);
}

/* stock_store_failed answers a store error. A database failure is reported
 * as such, never as a business refusal, so the orchestrator retries. */
static void stock_store_failed(rpc_reply *r, int rc, const char *what, const char *saga_id)
{
	switch (rc) {
	case PG_ERR_CONNECTION:
		rpc_reply_error(r, RPC_UNAVAILABLE, "database_unavailable",
		    "could not %s: database unavailable", what);
		break;
	case PG_ERR_INJECTED:
		rpc_reply_error(r, RPC_UNAVAILABLE, "fault_injected",
		    "could not %s: injected failure before commit", what);
		break;
	case PG_ERR_RETRY:
		rpc_reply_error(r, RPC_UNAVAILABLE, "database_busy",
		    "could not %s: too many concurrent attempts", what);
		break;
	case -ENOMEM:
		rpc_reply_error(
		    r, RPC_INTERNAL, "out_of_memory", "could not %s: out of memory", what);
		break;
	default:
		rpc_reply_error(r, RPC_INTERNAL, "database_error",
		    "could not %s: internal database error", what);
		break;
	}
	log_warn(saga_id, "could not %s: %s", what, r->reason);
}

/* stock_refusal answers a refusal decided by stock_decide(). */
static void stock_refusal(rpc_reply *r, const stock_outcome *o, const char *what, const char *sku)
{
	if (strcmp(o->reason, REASON_OUT_OF_STOCK) == 0)
		rpc_reply_error(r, o->code, o->reason, "could not %s: out of stock", what);
	else if (strcmp(o->reason, REASON_UNKNOWN_SKU) == 0)
		rpc_reply_error(
		    r, o->code, o->reason, "could not %s: unknown sku \"%s\"", what, sku);
	else if (strcmp(o->reason, REASON_TOMBSTONE) == 0)
		rpc_reply_error(
		    r, o->code, o->reason, "could not %s: the saga was already compensated", what);
	else if (strcmp(o->reason, REASON_KEY_MISMATCH) == 0)
		rpc_reply_error(r, o->code, o->reason,
		    "could not %s: saga id already used with another sku or qty", what);
	else
		rpc_reply_error(r, o->code, o->reason, "could not %s: %s", what, o->reason);
}

/* stock_log_outcome logs a decided command: what changed at info, a
 * duplicate answered from the record at debug. */
static void stock_log_outcome(const char *saga_id, const char *op, const stock_cmd *cmd,
    const stock_outcome *o, int64_t on_hand)
{
	enum log_level lvl = o->write_record ? LOG_LEVEL_INFO : LOG_LEVEL_DEBUG;
	log_msg(lvl, saga_id, "%s sku=%s qty=%" PRId32 ": %s%s%s, on hand %" PRId64 "%s", op,
	    cmd->sku, cmd->qty, stock_status_name(o->reply_status), *o->reason ? " " : "",
	    o->reason, on_hand, o->write_record ? "" : " (from record)");
}

/* ---- methods ---- */

/* A decoded ReserveStock or ReleaseStock: what the store applies. */
typedef struct stock_call {
	Sagas__V1__ReserveStockRequest *reserve; /* one of the two is set */
	Sagas__V1__ReleaseStockRequest *release;
	const char *saga_id; /* borrowed from the request */
	stock_cmd cmd;
} stock_call;

/* stock_parse decodes and checks a ReserveStock (op STOCK_OP_RESERVE) or
 * ReleaseStock payload into *c. Returns false with the error in `r` (and
 * nothing to free) when the payload is malformed or a field is invalid. */
static bool stock_parse(const rpc_request *call, stock_op op, stock_call *c, rpc_reply *r)
{
	const char *what = op == STOCK_OP_RESERVE ? "ReserveStockRequest" : "ReleaseStockRequest";
	const ProtobufCMessage *base;
	const char *saga_id, *sku;
	int32_t qty;
	memset(c, 0, sizeof *c);
	if (op == STOCK_OP_RESERVE) {
		c->reserve = sagas__v1__reserve_stock_request__unpack(
		    NULL, call->payload_len, call->payload);
		if (c->reserve == NULL)
			goto malformed;
		base = &c->reserve->base;
		saga_id = c->reserve->saga_id;
		sku = c->reserve->sku;
		qty = c->reserve->qty;
	} else {
		c->release = sagas__v1__release_stock_request__unpack(
		    NULL, call->payload_len, call->payload);
		if (c->release == NULL)
			goto malformed;
		base = &c->release->base;
		saga_id = c->release->saga_id;
		sku = c->release->sku;
		qty = c->release->qty;
	}
	if (!valid_pb_exact(base, call->payload_len)) {
		rpc_reply_error(r, RPC_INVALID_ARGUMENT, "malformed_payload",
		    "could not decode %s: not a canonical encoding " VALID_CANONICAL_HINT, what);
		goto out_free;
	}
	if (!stock_check_saga_id(r, saga_id) || !stock_check_sku(r, sku)
	    || !stock_check_range(r, "qty", qty, 1, VALID_QTY_MAX))
		goto out_free;
	c->saga_id = saga_id;
	c->cmd = (stock_cmd) {.op = op, .sku = sku, .qty = qty};
	return true;
malformed:
	stock_malformed(r, what);
	return false;
out_free:
	sagas__v1__reserve_stock_request__free_unpacked(c->reserve, NULL);
	sagas__v1__release_stock_request__free_unpacked(c->release, NULL);
	memset(c, 0, sizeof *c);
	return false;
}

static void stock_call_free(stock_call *c)
{
	if (c->reserve)
		sagas__v1__reserve_stock_request__free_unpacked(c->reserve, NULL);
	if (c->release)
		sagas__v1__release_stock_request__free_unpacked(c->release, NULL);
	memset(c, 0, sizeof *c);
}

/* stock_answer fills the reply of an applied command: store error `rc`,
 * or the committed outcome `o` with the sku's units `on_hand` after it. */
static void stock_answer(
    const stock_call *c, int rc, const stock_outcome *o, int64_t on_hand, rpc_reply *r)
{
	bool reserve = c->cmd.op == STOCK_OP_RESERVE;
	const char *what = reserve ? "reserve stock" : "release stock";
	if (rc != 0) {
		stock_store_failed(r, rc, what, c->saga_id);
		return;
	}
	stock_log_outcome(c->saga_id, reserve ? "reserve" : "release", &c->cmd, o, on_hand);
	if (o->code != RPC_OK) {
		stock_refusal(r, o, what, c->cmd.sku);
		return;
	}
	if (reserve) {
		Sagas__V1__ReserveStockReply rep = SAGAS__V1__RESERVE_STOCK_REPLY__INIT;
		rep.status = (Sagas__V1__ReservationStatus)o->reply_status;
		rep.on_hand = on_hand;
		rpc_reply_ok(r, &rep.base);
	} else {
		Sagas__V1__ReleaseStockReply rep = SAGAS__V1__RELEASE_STOCK_REPLY__INIT;
		rep.status = (Sagas__V1__ReservationStatus)o->reply_status;
		rpc_reply_ok(r, &rep.base);
	}
}

/* stock_command serves one ReserveStock or ReleaseStock alone: its own
 * transaction (stock_store_apply). */
static void stock_command(stock_store *st, const rpc_request *call, stock_op op, rpc_reply *r)
{
	stock_call c;
	if (!stock_parse(call, op, &c, r))
		return;
	stock_outcome o;
	int64_t on_hand = 0;
	int rc = stock_store_apply(st, c.saga_id, &c.cmd, &o, &on_hand);
	stock_answer(&c, rc, &o, on_hand, r);
	stock_call_free(&c);
}

static void stock_reserve(stock_store *st, const rpc_request *call, rpc_reply *r)
{
	stock_command(st, call, STOCK_OP_RESERVE, r);
}

static void stock_release(stock_store *st, const rpc_request *call, rpc_reply *r)
{
	stock_command(st, call, STOCK_OP_RELEASE, r);
}

static void stock_set(stock_store *st, const rpc_request *call, rpc_reply *r)
{
	Sagas__V1__SetStockRequest *req
	    = sagas__v1__set_stock_request__unpack(NULL, call->payload_len, call->payload);
	if (req == NULL) {
		stock_malformed(r, "SetStockRequest");
		return;
	}
	if (!valid_pb_exact(&req->base, call->payload_len)) {
		rpc_reply_error(r, RPC_INVALID_ARGUMENT, "malformed_payload",
		    "could not decode SetStockRequest: not a canonical "
		    "encoding " VALID_CANONICAL_HINT);
		goto out_free;
	}
	if (!stock_check_sku(r, req->sku)
	    || !stock_check_range(r, "on_hand", req->on_hand, 0, VALID_AMOUNT_MAX))
		goto out_free;
	int rc = stock_store_set(st, req->sku, req->on_hand);
	if (rc != 0) {
		stock_store_failed(r, rc, "set stock", NULL);
		goto out_free;
	}
	log_info(NULL, "set stock sku=%s on hand %" PRId64, req->sku, req->on_hand);
	Sagas__V1__SetStockReply rep = SAGAS__V1__SET_STOCK_REPLY__INIT;
	rep.on_hand = req->on_hand;
	rpc_reply_ok(r, &rep.base);
out_free:
	sagas__v1__set_stock_request__free_unpacked(req, NULL);
}

static void stock_list(stock_store *st, const rpc_request *call, rpc_reply *r)
{
	Sagas__V1__ListStockRequest *req
	    = sagas__v1__list_stock_request__unpack(NULL, call->payload_len, call->payload);
	if (req == NULL) {
		stock_malformed(r, "ListStockRequest");
		return;
	}
	if (!valid_pb_exact(&req->base, call->payload_len)) {
		rpc_reply_error(r, RPC_INVALID_ARGUMENT, "malformed_payload",
		    "could not decode ListStockRequest: not a canonical "
		    "encoding " VALID_CANONICAL_HINT);
		sagas__v1__list_stock_request__free_unpacked(req, NULL);
		return;
	}
	bool include = req->include_reservations;
	int32_t limit = req->limit;
	sagas__v1__list_stock_request__free_unpacked(req, NULL);
	if (!stock_check_range(r, "limit", limit, 0, STOCK_LIST_LIMIT_MAX))
		return;
	if (limit == 0)
		limit = STOCK_LIST_LIMIT_DEFAULT;

	stock_listing l;
	int rc = stock_store_list(st, include, limit, &l);
	if (rc != 0) {
		stock_store_failed(r, rc, "list stock", NULL);
		return;
	}
	Sagas__V1__StockItem *items = calloc(l.n_items + 1, sizeof *items);
	Sagas__V1__StockItem **item_ptrs = calloc(l.n_items + 1, sizeof *item_ptrs);
	Sagas__V1__Reservation *recs = calloc(l.n_reservations + 1, sizeof *recs);
	Sagas__V1__Reservation **rec_ptrs = calloc(l.n_reservations + 1, sizeof *rec_ptrs);
	if (items == NULL || item_ptrs == NULL || recs == NULL || rec_ptrs == NULL) {
		stock_store_failed(r, -ENOMEM, "list stock", NULL);
		goto out_free;
	}
	Sagas__V1__ListStockReply rep = SAGAS__V1__LIST_STOCK_REPLY__INIT;
	for (size_t i = 0; i < l.n_items; i++) {
		Sagas__V1__StockItem init = SAGAS__V1__STOCK_ITEM__INIT;
		items[i] = init;
		items[i].sku = l.items[i].sku;
		items[i].on_hand = l.items[i].on_hand;
		items[i].live_reservations = l.items[i].live_reservations;
		items[i].reserved_qty = l.items[i].reserved_qty;
		item_ptrs[i] = &items[i];
	}
	rep.n_items = l.n_items;
	rep.items = item_ptrs;
	/* rows are added while the reply stays within its byte budget (a
	 * page of long skus could otherwise pass the frame limit) */
	size_t bytes = sagas__v1__list_stock_reply__get_packed_size(&rep) + 2;
	size_t n = 0;
	for (; n < l.n_reservations; n++) {
		Sagas__V1__Reservation init = SAGAS__V1__RESERVATION__INIT;
		recs[n] = init;
		recs[n].saga_id = l.reservations[n].saga_id;
		recs[n].sku = l.reservations[n].sku;
		recs[n].qty = l.reservations[n].qty;
		recs[n].status = (Sagas__V1__ReservationStatus)l.reservations[n].status;
		/* tag + length prefix (<= 2 bytes for a row) + the row */
		bytes += 3 + sagas__v1__reservation__get_packed_size(&recs[n]);
		if (bytes > RPC_REPLY_BUDGET)
			break;
		rec_ptrs[n] = &recs[n];
	}
	rep.n_reservations = n;
	rep.reservations = rec_ptrs;
	rep.reservations_truncated = l.reservations_truncated || n < l.n_reservations;
	rpc_reply_ok(r, &rep.base);
out_free:
	free(items);
	free(item_ptrs);
	free(recs);
	free(rec_ptrs);
	stock_listing_free(&l);
}

#define STOCK_RESERVE_METHOD "/sagas.v1.Stock/ReserveStock"
#define STOCK_RELEASE_METHOD "/sagas.v1.Stock/ReleaseStock"

typedef struct stock_method {
	const char *name;
	void (*fn)(stock_store *st, const rpc_request *call, rpc_reply *r);
} stock_method;

static const stock_method stock_methods[] = {
    {STOCK_RESERVE_METHOD, stock_reserve},
    {STOCK_RELEASE_METHOD, stock_release},
    {"/sagas.v1.Stock/SetStock", stock_set},
    {"/sagas.v1.Stock/ListStock", stock_list},
};

static void stock_handle(void *app, void *worker, const rpc_request *call, rpc_reply *reply)
{
	for (size_t i = 0; i < sizeof stock_methods / sizeof stock_methods[0]; i++) {
		if (strcmp(call->method, stock_methods[i].name) == 0) {
			stock_methods[i].fn(worker, call, reply);
			return;
		}
	}
	/* the method name came off the wire: bounded in the message */
	rpc_reply_error(
	    reply, RPC_UNIMPLEMENTED, "unknown_method", "unknown method \"%s\"", call->method);
}

/* stock_handle_batch serves calls that arrived together: their
 * ReserveStock and ReleaseStock commands in one transaction
 * (stock_store_apply_batch), in arrival order, and the rest one by one.
 * When the batch cannot commit (bad data, a database error), each command
 * is applied alone, so one bad command fails only its own call. */
static void stock_handle_batch(
    void *app, void *worker, const rpc_request *calls, rpc_reply *replies, size_t n)
{
	stock_store *st = worker;
	stock_call cs[RPC_BATCH_MAX];
	stock_batch_cmd cmds[RPC_BATCH_MAX];
	size_t at[RPC_BATCH_MAX], m = 0;
	for (size_t i = 0; i < n; i++) {
		stock_op op = strcmp(calls[i].method, STOCK_RESERVE_METHOD) == 0 ? STOCK_OP_RESERVE
		    : strcmp(calls[i].method, STOCK_RELEASE_METHOD) == 0         ? STOCK_OP_RELEASE
		                                                                 : 0;
		if (op == 0) {
			stock_handle(app, worker, &calls[i], &replies[i]);
			continue;
		}
		if (!stock_parse(&calls[i], op, &cs[m], &replies[i]))
			continue;
		cmds[m] = (stock_batch_cmd) {.saga_id = cs[m].saga_id, .cmd = cs[m].cmd};
		at[m++] = i;
	}
	if (m == 0)
		return;
	int rc = m > 1 ? stock_store_apply_batch(st, cmds, m) : -1;
	if (m > 1 && rc != 0)
		log_warn(NULL,
		    "a batch of %zu stock commands could not commit (%d): applying each alone", m,
		    rc);
	for (size_t k = 0; k < m; k++) {
		int one = rc == PG_ERR_CONNECTION ? rc : 0; /* no database: all fail alike */
		if (rc != 0 && rc != PG_ERR_CONNECTION)     /* each command alone, in order */
			one = stock_store_apply(
			    st, cmds[k].saga_id, &cmds[k].cmd, &cmds[k].out, &cmds[k].on_hand);
		stock_answer(&cs[k], one, &cmds[k].out, cmds[k].on_hand, &replies[at[k]]);
		stock_call_free(&cs[k]);
	}
}

static int stock_worker_init(void *app, void **worker)
{
	const stock_app *a = app;
	stock_store *st = NULL;
	int rc = stock_store_open(&st, a->conninfo, a->connect_wait_ms, a->cache);
	if (rc != 0)
		return rc;
	*worker = st;
	return 0;
}

static void stock_worker_fini(void *app, void *worker)
{
	(void)app;
	uint64_t fast = 0, fell_back = 0;
	if (worker != NULL)
		stock_store_fast_counts(worker, &fast, &fell_back);
	participant_log_fast_counts(fast, fell_back);
	stock_store_close(worker);
}

/* What a batch frame may carry: the saga commands (small replies). */
static const char *const stock_batch_methods[] = {STOCK_RESERVE_METHOD, STOCK_RELEASE_METHOD, NULL};

const rpc_server_ops stock_rpc_ops = {
    .batch_methods = stock_batch_methods,
    .worker_init = stock_worker_init,
    .worker_fini = stock_worker_fini,
    .handle = stock_handle,
    .handle_batch = stock_handle_batch,
};
