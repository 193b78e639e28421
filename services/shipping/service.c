#include "service.h"

#include <stdio.h>
#include <string.h>

#include "handlers.h"
#include "sagas/v1/shipping.pb-c.h"
#include "schema_sql.h"
#include "status.h"
#include "valid.h"

/* The advisory lock key that serialises schema application ("shipngschm"),
 * distinct from the other participants' so sharing one database is
 * harmless. */
#define SHIPPING_SCHEMA_LOCK_KEY "7310587035298048111"
/* The version of sql/schema.sql (docs/operations.md, "Upgrading"): raise it
 * with every change of the schema; a database that records a newer one is
 * refused at start. */
#define SHIPPING_SCHEMA_VERSION 3

/* ---- the kit's terms: text[0] = customer, text[1] = sku, num[0] = qty;
 * no rows ---- */

static void shipping_record_of(const pkit_record *r, shipping_record *out)
{
	out->status = (shipping_status)r->status;
	snprintf(out->customer, sizeof out->customer, "%s", r->text[0]);
	snprintf(out->sku, sizeof out->sku, "%s", r->text[1]);
	out->qty = (int32_t)r->num[0];
}

/* shipping_kit_decide is shipping_decide (rules 2, 6) in the kit's terms. */
static void shipping_kit_decide(
    const pkit_record *rec, const pkit_row *row, const pkit_args *a, pkit_outcome *out)
{
	(void)row; /* no rows */
	shipping_record r;
	shipping_record_of(rec, &r);
	const shipping_cmd cmd = {.op = (shipping_op)a->op,
	    .customer = a->text[0],
	    .sku = a->text[1],
	    .qty = (int32_t)a->num[0]};
	shipping_outcome o;
	shipping_decide(&r, &cmd, &o);
	*out = (pkit_outcome) {.code = o.code,
	    .reason = o.reason,
	    .reply_status = o.reply_status,
	    .write_record = o.write_record,
	    .record = {.status = o.record.status, .num = {o.record.qty}}};
	snprintf(out->record.text[0], sizeof out->record.text[0], "%s", o.record.customer);
	snprintf(out->record.text[1], sizeof out->record.text[1], "%s", o.record.sku);
}

static const char *shipping_kit_status_name(int s)
{
	return shipping_status_name((shipping_status)s);
}

static int shipping_kit_status_parse(const char *name)
{
	return shipping_status_parse(name);
}

/* ---- the saga command ---- */

static const pkit_method shipping_methods[] = {
    {METHOD_Shipping_ShipOrder, SHIPPING_OP_SHIP, "ship order", "ship",
        &sagas__v1__ship_order_request__descriptor,
        {{"customer", true, 0, 0, NULL}, {"sku", true, 0, 0, NULL},
            {"qty", false, 1, VALID_QTY_MAX, NULL}},
        3, &sagas__v1__ship_order_reply__descriptor, NULL, "created"},
};

static pkit_sql shipping_sql;

const pkit_service shipping_service = {
    .name = "shipping",
    .schema = {.what = "shipping",
        .sql = shipping_schema_sql,
        .lock_key = SHIPPING_SCHEMA_LOCK_KEY,
        .version = SHIPPING_SCHEMA_VERSION,
        .prog = "shippingd"},
    .records = "shipments",
    .text_cols = {"customer", "sku"},
    .n_text = 2,
    .num_cols = {"qty"},
    .n_num = 1,
    .rows = NULL,
    .fast_op = SHIPPING_OP_SHIP,
    .decide = shipping_kit_decide,
    .status_name = shipping_kit_status_name,
    .status_parse = shipping_kit_status_parse,
    .methods = shipping_methods,
    .n_methods = sizeof shipping_methods / sizeof shipping_methods[0],
    .others = shipping_admin_methods,
    .n_others = SHIPPING_ADMIN_METHODS,
    .args_name = "customer, sku or qty",
    .sql = &shipping_sql,
};
