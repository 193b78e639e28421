#include "stock_logic.h"

#include <stdio.h>
#include <string.h>

#include "status.h"

static const char *const stock_names[]
    = {"NONE", "RESERVED", "OUT_OF_STOCK", "UNKNOWN_SKU", "RELEASED", "TOMBSTONE"};

const char *stock_status_name(stock_status s)
{
	if ((unsigned)s > STOCK_TOMBSTONE)
		return "NONE";
	return stock_names[s];
}

stock_status stock_status_parse(const char *name)
{
	for (int i = 1; i <= STOCK_TOMBSTONE; i++)
		if (strcmp(name, stock_names[i]) == 0)
			return (stock_status)i;
	return STOCK_NONE;
}

static void stock_new_record(stock_outcome *out, const stock_cmd *cmd, stock_status st)
{
	out->write_record = true;
	out->record.status = st;
	snprintf(out->record.sku, sizeof out->record.sku, "%s", cmd->sku);
	out->record.qty = cmd->qty;
}

/* stock_reply_of answers a command from a record (rule 2: a duplicate gets
 * the recorded reply). */
static void stock_reply_of(const stock_record *rec, stock_op op, stock_outcome *out)
{
	out->reply_status = rec->status;
	out->code = 0;
	out->reason = "";
	if (op == STOCK_OP_RELEASE)
		return; /* a compensation always succeeds once recorded */
	switch (rec->status) {
	case STOCK_OUT_OF_STOCK:
		out->code = RPC_FAILED_PRECONDITION;
		out->reason = REASON_OUT_OF_STOCK;
		break;
	case STOCK_UNKNOWN_SKU:
		out->code = RPC_NOT_FOUND;
		out->reason = REASON_UNKNOWN_SKU;
		break;
	case STOCK_TOMBSTONE:
		/* rule 5: the release came first; the late step reserves nothing */
		out->code = RPC_ABORTED;
		out->reason = REASON_TOMBSTONE;
		break;
	case STOCK_RESERVED:
	case STOCK_RELEASED:
		/* the reservation was made (and maybe since released): the
		 * recorded reply of ReserveStock was OK */
		out->reply_status = STOCK_RESERVED;
		break;
	case STOCK_NONE:
		break;
	}
}

void stock_decide(
    const stock_record *rec, const stock_row *row, const stock_cmd *cmd, stock_outcome *out)
{
	memset(out, 0, sizeof *out);
	out->reason = "";
	if (rec->status != STOCK_NONE) {
		if (rec->status == STOCK_TOMBSTONE && cmd->op == STOCK_OP_RESERVE) {
			stock_reply_of(rec, cmd->op, out);
			return;
		}
		if (strcmp(rec->sku, cmd->sku) != 0 || rec->qty != cmd->qty) {
			/* rule 6: same idempotency key, other arguments */
			out->code = RPC_ALREADY_EXISTS;
			out->reason = REASON_KEY_MISMATCH;
			out->reply_status = rec->status;
			return;
		}
		if (cmd->op == STOCK_OP_RELEASE && rec->status == STOCK_RESERVED) {
			/* the compensation proper: give the units back */
			out->write_record = true;
			out->record = *rec;
			out->record.status = STOCK_RELEASED;
			out->write_row = true;
			out->on_hand = row->on_hand + rec->qty;
			out->reply_status = STOCK_RELEASED;
			return;
		}
		stock_reply_of(rec, cmd->op, out);
		return;
	}
	if (cmd->op == STOCK_OP_RELEASE) {
		/* rule 5: early compensation records a tombstone and succeeds */
		stock_new_record(out, cmd, STOCK_TOMBSTONE);
		out->reply_status = STOCK_TOMBSTONE;
		return;
	}
	if (!row->exists) {
		stock_new_record(out, cmd, STOCK_UNKNOWN_SKU);
		out->code = RPC_NOT_FOUND;
		out->reason = REASON_UNKNOWN_SKU;
		out->reply_status = STOCK_UNKNOWN_SKU;
		return;
	}
	if (row->on_hand < cmd->qty) {
		stock_new_record(out, cmd, STOCK_OUT_OF_STOCK);
		out->code = RPC_FAILED_PRECONDITION;
		out->reason = REASON_OUT_OF_STOCK;
		out->reply_status = STOCK_OUT_OF_STOCK;
		return;
	}
	stock_new_record(out, cmd, STOCK_RESERVED);
	out->write_row = true;
	out->on_hand = row->on_hand - cmd->qty;
	out->reply_status = STOCK_RESERVED;
}
