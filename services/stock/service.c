#include "service.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "handlers.h"
#include "sagas/v1/stock.pb-c.h"
#include "schema_sql.h"
#include "status.h"
#include "valid.h"

/* The advisory lock key that serialises schema application ("stockschm"). */
#define STOCK_SCHEMA_LOCK_KEY "7310587035298048109"
/* The version of sql/schema.sql (docs/operations.md, "Upgrading"): raise it
 * with every change of the schema; a database that records a newer one is
 * refused at start. */
#define STOCK_SCHEMA_VERSION 1

/* ---- the kit's terms: text[0] = sku (the row's key), num[0] = qty ---- */

void stock_args_of(const stock_cmd *cmd, pkit_args *a)
{
	*a = (pkit_args) {.op = cmd->op, .text = {cmd->sku}, .num = {cmd->qty}};
}

static void stock_record_of(const pkit_record *r, stock_record *out)
{
	out->status = (stock_status)r->status;
	snprintf(out->sku, sizeof out->sku, "%s", r->text[0]);
	out->qty = (int32_t)r->num[0];
}

void stock_outcome_of(const pkit_outcome *o, stock_outcome *out)
{
	*out = (stock_outcome) {.code = o->code,
	    .reason = o->reason,
	    .reply_status = (stock_status)o->reply_status,
	    .write_record = o->write_record,
	    .write_row = o->write_row,
	    .on_hand = o->value};
	stock_record_of(&o->record, &out->record);
}

/* stock_kit_decide is stock_decide (rules 2, 5, 6) in the kit's terms. */
static void stock_kit_decide(
    const pkit_record *rec, const pkit_row *row, const pkit_args *a, pkit_outcome *out)
{
	stock_record r;
	stock_record_of(rec, &r);
	const stock_row w = {.exists = row->exists, .on_hand = row->value};
	const stock_cmd cmd = {.op = (stock_op)a->op, .sku = a->text[0], .qty = (int32_t)a->num[0]};
	stock_outcome o;
	stock_decide(&r, &w, &cmd, &o);
	*out = (pkit_outcome) {.code = o.code,
	    .reason = o.reason,
	    .reply_status = o.reply_status,
	    .write_record = o.write_record,
	    .record = {.status = o.record.status, .num = {o.record.qty}},
	    .write_row = o.write_row,
	    .value = o.on_hand};
	snprintf(out->record.text[0], sizeof out->record.text[0], "%s", o.record.sku);
}

static const char *stock_kit_status_name(int s)
{
	return stock_status_name((stock_status)s);
}

static int stock_kit_status_parse(const char *name)
{
	return stock_status_parse(name);
}

/* ---- the saga commands: ReserveStock and ReleaseStock carry the same
 * fields (saga_id, sku, qty) ---- */

static bool stock_fields(
    const char *saga_id, const char *sku, int32_t qty, pkit_cmd *c, rpc_reply *r)
{
	if (!pkit_check_saga_id(r, saga_id) || !pkit_check_name(r, "sku", sku)
	    || !pkit_check_range(r, "qty", qty, 1, VALID_QTY_MAX))
		return false;
	c->saga_id = saga_id;
	c->args.text[0] = sku;
	c->args.num[0] = qty;
	return true;
}

static bool stock_reserve_args(const ProtobufCMessage *msg, pkit_cmd *c, rpc_reply *r)
{
	const Sagas__V1__ReserveStockRequest *q = (const Sagas__V1__ReserveStockRequest *)msg;
	return stock_fields(q->saga_id, q->sku, q->qty, c, r);
}

static bool stock_release_args(const ProtobufCMessage *msg, pkit_cmd *c, rpc_reply *r)
{
	const Sagas__V1__ReleaseStockRequest *q = (const Sagas__V1__ReleaseStockRequest *)msg;
	return stock_fields(q->saga_id, q->sku, q->qty, c, r);
}

static void stock_reserve_reply(const pkit_cmd *c, rpc_reply *r)
{
	Sagas__V1__ReserveStockReply rep = SAGAS__V1__RESERVE_STOCK_REPLY__INIT;
	rep.status = (Sagas__V1__ReservationStatus)c->out.reply_status;
	rep.on_hand = c->value;
	rpc_reply_ok(r, &rep.base);
}

static void stock_release_reply(const pkit_cmd *c, rpc_reply *r)
{
	Sagas__V1__ReleaseStockReply rep = SAGAS__V1__RELEASE_STOCK_REPLY__INIT;
	rep.status = (Sagas__V1__ReservationStatus)c->out.reply_status;
	rpc_reply_ok(r, &rep.base);
}

/* stock_refusal answers a refusal decided by stock_decide(). */
static void stock_refusal(rpc_reply *r, const pkit_cmd *c, const char *what)
{
	const pkit_outcome *o = &c->out;
	if (strcmp(o->reason, REASON_OUT_OF_STOCK) == 0)
		rpc_reply_error(r, o->code, o->reason, "could not %s: out of stock", what);
	else if (strcmp(o->reason, REASON_UNKNOWN_SKU) == 0)
		rpc_reply_error(r, o->code, o->reason, "could not %s: unknown sku \"%s\"", what,
		    c->args.text[0]);
	else if (strcmp(o->reason, REASON_TOMBSTONE) == 0)
		rpc_reply_error(
		    r, o->code, o->reason, "could not %s: the saga was already compensated", what);
	else if (strcmp(o->reason, REASON_KEY_MISMATCH) == 0)
		rpc_reply_error(r, o->code, o->reason,
		    "could not %s: saga id already used with another sku or qty", what);
	else
		rpc_reply_error(r, o->code, o->reason, "could not %s: %s", what, o->reason);
}

static void stock_describe(const pkit_cmd *c, char *buf, size_t len)
{
	snprintf(buf, len, "sku=%s qty=%" PRId64, c->args.text[0], c->args.num[0]);
}

static const pkit_method stock_methods[] = {
    {STOCK_RESERVE_METHOD, STOCK_OP_RESERVE, "reserve stock", "reserve",
        &sagas__v1__reserve_stock_request__descriptor, stock_reserve_args, stock_reserve_reply},
    {STOCK_RELEASE_METHOD, STOCK_OP_RELEASE, "release stock", "release",
        &sagas__v1__release_stock_request__descriptor, stock_release_args, stock_release_reply},
};

static pkit_sql stock_sql;

const pkit_service stock_service = {
    .name = "stock",
    .schema = {.what = "stock",
        .sql = stock_schema_sql,
        .lock_key = STOCK_SCHEMA_LOCK_KEY,
        .version = STOCK_SCHEMA_VERSION,
        .prog = "stockd"},
    .records = "reservations",
    .text_cols = {"sku"},
    .n_text = 1,
    .num_cols = {"qty"},
    .n_num = 1,
    .rows = "stock",
    .row_key = "sku",
    .row_value = "on_hand",
    .fast_op = STOCK_OP_RESERVE,
    .decide = stock_kit_decide,
    .status_name = stock_kit_status_name,
    .status_parse = stock_kit_status_parse,
    .methods = stock_methods,
    .n_methods = sizeof stock_methods / sizeof stock_methods[0],
    .others = stock_admin_methods,
    .n_others = STOCK_ADMIN_METHODS,
    .refusal = stock_refusal,
    .describe = stock_describe,
    .value_name = "on hand",
    .sql = &stock_sql,
};
