#include "service.h"

#include <inttypes.h>
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
#define PAYMENT_SCHEMA_VERSION 1

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

static bool payment_fields(
    const char *saga_id, const char *customer, int64_t amount, pkit_cmd *c, rpc_reply *r)
{
	if (!pkit_check_saga_id(r, saga_id) || !pkit_check_name(r, "customer", customer)
	    || !payment_check_amount(r, amount))
		return false;
	c->saga_id = saga_id;
	c->args.text[0] = customer;
	c->args.num[0] = amount;
	return true;
}

static bool payment_charge_args(const ProtobufCMessage *msg, pkit_cmd *c, rpc_reply *r)
{
	const Sagas__V1__ChargePaymentRequest *q = (const Sagas__V1__ChargePaymentRequest *)msg;
	return payment_fields(q->saga_id, q->customer, q->amount, c, r);
}

static bool payment_refund_args(const ProtobufCMessage *msg, pkit_cmd *c, rpc_reply *r)
{
	const Sagas__V1__RefundPaymentRequest *q = (const Sagas__V1__RefundPaymentRequest *)msg;
	return payment_fields(q->saga_id, q->customer, q->amount, c, r);
}

static void payment_charge_reply(const pkit_cmd *c, rpc_reply *r)
{
	Sagas__V1__ChargePaymentReply rep = SAGAS__V1__CHARGE_PAYMENT_REPLY__INIT;
	rep.status = (Sagas__V1__ChargeStatus)c->out.reply_status;
	rep.balance = c->value;
	rpc_reply_ok(r, &rep.base);
}

static void payment_refund_reply(const pkit_cmd *c, rpc_reply *r)
{
	Sagas__V1__RefundPaymentReply rep = SAGAS__V1__REFUND_PAYMENT_REPLY__INIT;
	rep.status = (Sagas__V1__ChargeStatus)c->out.reply_status;
	rpc_reply_ok(r, &rep.base);
}

/* payment_refusal answers a refusal decided by payment_decide(). */
static void payment_refusal(rpc_reply *r, const pkit_cmd *c, const char *what)
{
	const pkit_outcome *o = &c->out;
	if (strcmp(o->reason, REASON_PAYMENT_DECLINED) == 0)
		rpc_reply_error(r, o->code, o->reason, "could not %s: insufficient funds", what);
	else if (strcmp(o->reason, REASON_UNKNOWN_ACCOUNT) == 0)
		rpc_reply_error(r, o->code, o->reason, "could not %s: unknown account \"%s\"", what,
		    c->args.text[0]);
	else if (strcmp(o->reason, REASON_TOMBSTONE) == 0)
		rpc_reply_error(
		    r, o->code, o->reason, "could not %s: the saga was already compensated", what);
	else if (strcmp(o->reason, REASON_KEY_MISMATCH) == 0)
		rpc_reply_error(r, o->code, o->reason,
		    "could not %s: saga id already used with another customer or amount", what);
	else
		rpc_reply_error(r, o->code, o->reason, "could not %s: %s", what, o->reason);
}

static void payment_describe(const pkit_cmd *c, char *buf, size_t len)
{
	snprintf(buf, len, "customer=%s amount=%" PRId64, c->args.text[0], c->args.num[0]);
}

static const pkit_method payment_methods[] = {
    {PAYMENT_CHARGE_METHOD, PAYMENT_OP_CHARGE, "charge payment", "charge",
        &sagas__v1__charge_payment_request__descriptor, payment_charge_args, payment_charge_reply},
    {PAYMENT_REFUND_METHOD, PAYMENT_OP_REFUND, "refund payment", "refund",
        &sagas__v1__refund_payment_request__descriptor, payment_refund_args, payment_refund_reply},
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
    .refusal = payment_refusal,
    .describe = payment_describe,
    .value_name = "balance",
    .sql = &payment_sql,
};
