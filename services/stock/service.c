#include "service.h"

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
#define STOCK_SCHEMA_VERSION 3

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

#define STOCK_FIELDS {{"sku", true, 0, 0, NULL}, {"qty", false, 1, VALID_QTY_MAX, NULL}}, 2

static const pkit_method stock_methods[] = {
    {METHOD_Stock_ReserveStock, STOCK_OP_RESERVE, "reserve stock", "reserve",
        &sagas__v1__reserve_stock_request__descriptor, STOCK_FIELDS,
        &sagas__v1__reserve_stock_reply__descriptor, "on_hand", NULL},
    {METHOD_Stock_ReleaseStock, STOCK_OP_RELEASE, "release stock", "release",
        &sagas__v1__release_stock_request__descriptor, STOCK_FIELDS,
        &sagas__v1__release_stock_reply__descriptor, NULL, NULL},
};

static const pkit_refusal stock_refusals[] = {
    {REASON_OUT_OF_STOCK, "out of stock", false},
    {REASON_UNKNOWN_SKU, "unknown sku", true},
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
    .refusals = stock_refusals,
    .n_refusals = sizeof stock_refusals / sizeof stock_refusals[0],
    .args_name = "sku or qty",
    .value_name = "on hand",
    .sql = &stock_sql,
};
