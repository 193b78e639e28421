#include "service.h"

#include <stdio.h>
#include <string.h>

#include "handlers.h"
#include "sagas/v1/payment.pb-c.h"
#include "schema_sql.h"
#include "status.h"
#include "valid.h"

/* The advisory lock key that serialises schema application ("paymntschm"),
 * distinct from stockd's so sharing one database is harmless. */
#define PAYMENT_SCHEMA_LOCK_KEY "7310587035298048110"
/* The version of sql/schema.sql (docs/operations.md, "Upgrading"): raise it
 * with every change of the schema; a database that records a newer one is
 * refused at start. */
#define PAYMENT_SCHEMA_VERSION 3

/* ---- the kit's terms: text[0] = customer (the row's key), num[0] =
 * amount in minor units ---- */

void payment_args_of(const payment_cmd *cmd, pkit_args *a)
{
	*a = (pkit_args) {.op = cmd->op, .text = {cmd->customer}, .num = {cmd->amount}};
}

static void payment_record_of(const pkit_record *r, payment_record *out)
{
	out->status = (payment_status)r->status;
	snprintf(out->customer, sizeof out->customer, "%s", r->text[0]);
	out->amount = r->num[0];
}

void payment_outcome_of(const pkit_outcome *o, payment_outcome *out)
{
	*out = (payment_outcome) {.code = o->code,
	    .reason = o->reason,
	    .reply_status = (payment_status)o->reply_status,
	    .write_record = o->write_record,
	    .write_account = o->write_row,
	    .balance = o->value};
	payment_record_of(&o->record, &out->record);
}

/* payment_kit_decide is payment_decide (rules 2, 5, 6) in the kit's terms. */
static void payment_kit_decide(
    const pkit_record *rec, const pkit_row *row, const pkit_args *a, pkit_outcome *out)
{
	payment_record r;
	payment_record_of(rec, &r);
	const payment_account acct = {.exists = row->exists, .balance = row->value};
	const payment_cmd cmd
	    = {.op = (payment_op)a->op, .customer = a->text[0], .amount = a->num[0]};
	payment_outcome o;
	payment_decide(&r, &acct, &cmd, &o);
	*out = (pkit_outcome) {.code = o.code,
	    .reason = o.reason,
	    .reply_status = o.reply_status,
	    .write_record = o.write_record,
	    .record = {.status = o.record.status, .num = {o.record.amount}},
	    .write_row = o.write_account,
	    .value = o.balance};
	snprintf(out->record.text[0], sizeof out->record.text[0], "%s", o.record.customer);
}

static const char *payment_kit_status_name(int s)
{
	return payment_status_name((payment_status)s);
}

static int payment_kit_status_parse(const char *name)
{
	return payment_status_parse(name);
}

/* ---- the saga commands: ChargePayment and RefundPayment carry the same
 * fields (saga_id, customer, amount) ---- */

#define PAYMENT_FIELDS                                                                             \
	{{"customer", true, 0, 0, NULL}, {"amount", false, 1, VALID_AMOUNT_MAX, "minor units"}}, 2

static const pkit_method payment_methods[] = {
    {METHOD_Payment_ChargePayment, PAYMENT_OP_CHARGE, "charge payment", "charge",
        &sagas__v1__charge_payment_request__descriptor, PAYMENT_FIELDS,
        &sagas__v1__charge_payment_reply__descriptor, "balance", NULL},
    {METHOD_Payment_RefundPayment, PAYMENT_OP_REFUND, "refund payment", "refund",
        &sagas__v1__refund_payment_request__descriptor, PAYMENT_FIELDS,
        &sagas__v1__refund_payment_reply__descriptor, NULL, NULL},
};

static const pkit_refusal payment_refusals[] = {
    {REASON_PAYMENT_DECLINED, "insufficient funds", false},
    {REASON_UNKNOWN_ACCOUNT, "unknown account", true},
};

static pkit_sql payment_sql;

const pkit_service payment_service = {
    .name = "payment",
    .schema = {.what = "payment",
        .sql = payment_schema_sql,
        .lock_key = PAYMENT_SCHEMA_LOCK_KEY,
        .version = PAYMENT_SCHEMA_VERSION,
        .prog = "paymentd"},
    .records = "charges",
    .text_cols = {"customer"},
    .n_text = 1,
    .num_cols = {"amount"},
    .n_num = 1,
    .rows = "accounts",
    .row_key = "customer",
    .row_value = "balance",
    .fast_op = PAYMENT_OP_CHARGE,
    .decide = payment_kit_decide,
    .status_name = payment_kit_status_name,
    .status_parse = payment_kit_status_parse,
    .methods = payment_methods,
    .n_methods = sizeof payment_methods / sizeof payment_methods[0],
    .others = payment_admin_methods,
    .n_others = PAYMENT_ADMIN_METHODS,
    .refusals = payment_refusals,
    .n_refusals = sizeof payment_refusals / sizeof payment_refusals[0],
    .args_name = "customer or amount",
    .value_name = "balance",
    .sql = &payment_sql,
};
