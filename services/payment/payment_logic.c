#include "payment_logic.h"

#include <stdio.h>
#include <string.h>

#include "status.h"

static const char *const payment_names[]
    = {"NONE", "CHARGED", "DECLINED", "UNKNOWN_ACCOUNT", "REFUNDED", "TOMBSTONE"};

const char *payment_status_name(payment_status s)
{
	if ((unsigned)s > PAYMENT_TOMBSTONE)
		return "NONE";
	return payment_names[s];
}

payment_status payment_status_parse(const char *name)
{
	for (int i = 1; i <= PAYMENT_TOMBSTONE; i++)
		if (strcmp(name, payment_names[i]) == 0)
			return (payment_status)i;
	return PAYMENT_NONE;
}

static void payment_new_record(payment_outcome *out, const payment_cmd *cmd, payment_status st)
{
	out->write_record = true;
	out->record.status = st;
	snprintf(out->record.customer, sizeof out->record.customer, "%s", cmd->customer);
	out->record.amount = cmd->amount;
}

/* payment_reply_of answers a command from a record (rule 2). */
static void payment_reply_of(const payment_record *rec, payment_op op, payment_outcome *out)
{
	out->reply_status = rec->status;
	out->code = 0;
	out->reason = "";
	if (op == PAYMENT_OP_REFUND)
		return; /* a compensation always succeeds once recorded */
	switch (rec->status) {
	case PAYMENT_DECLINED:
		out->code = RPC_FAILED_PRECONDITION;
		out->reason = REASON_PAYMENT_DECLINED;
		break;
	case PAYMENT_UNKNOWN_ACCOUNT:
		out->code = RPC_NOT_FOUND;
		out->reason = REASON_UNKNOWN_ACCOUNT;
		break;
	case PAYMENT_TOMBSTONE:
		/* rule 5: the refund came first; the late charge charges nothing */
		out->code = RPC_ABORTED;
		out->reason = REASON_TOMBSTONE;
		break;
	case PAYMENT_CHARGED:
	case PAYMENT_REFUNDED:
		out->reply_status = PAYMENT_CHARGED;
		break;
	case PAYMENT_NONE:
		break;
	}
}

void payment_decide(const payment_record *rec, const payment_account *acct, const payment_cmd *cmd,
    payment_outcome *out)
{
	memset(out, 0, sizeof *out);
	out->reason = "";
	if (rec->status != PAYMENT_NONE) {
		if (rec->status == PAYMENT_TOMBSTONE && cmd->op == PAYMENT_OP_CHARGE) {
			payment_reply_of(rec, cmd->op, out);
			return;
		}
		if (strcmp(rec->customer, cmd->customer) != 0 || rec->amount != cmd->amount) {
			/* rule 6: same idempotency key, other arguments */
			out->code = RPC_ALREADY_EXISTS;
			out->reason = REASON_KEY_MISMATCH;
			out->reply_status = rec->status;
			return;
		}
		if (cmd->op == PAYMENT_OP_REFUND && rec->status == PAYMENT_CHARGED) {
			/* the compensation proper: give the money back */
			out->write_record = true;
			out->record = *rec;
			out->record.status = PAYMENT_REFUNDED;
			out->write_account = true;
			out->balance = acct->balance + rec->amount;
			out->reply_status = PAYMENT_REFUNDED;
			return;
		}
		payment_reply_of(rec, cmd->op, out);
		return;
	}
	if (cmd->op == PAYMENT_OP_REFUND) {
		/* rule 5: early compensation records a tombstone and succeeds */
		payment_new_record(out, cmd, PAYMENT_TOMBSTONE);
		out->reply_status = PAYMENT_TOMBSTONE;
		return;
	}
	if (!acct->exists) {
		payment_new_record(out, cmd, PAYMENT_UNKNOWN_ACCOUNT);
		out->code = RPC_NOT_FOUND;
		out->reason = REASON_UNKNOWN_ACCOUNT;
		out->reply_status = PAYMENT_UNKNOWN_ACCOUNT;
		return;
	}
	if (acct->balance < cmd->amount) {
		payment_new_record(out, cmd, PAYMENT_DECLINED);
		out->code = RPC_FAILED_PRECONDITION;
		out->reason = REASON_PAYMENT_DECLINED;
		out->reply_status = PAYMENT_DECLINED;
		return;
	}
	payment_new_record(out, cmd, PAYMENT_CHARGED);
	out->write_account = true;
	out->balance = acct->balance - cmd->amount;
	out->reply_status = PAYMENT_CHARGED;
}
