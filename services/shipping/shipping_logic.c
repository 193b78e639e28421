#include "shipping_logic.h"

#include <stdio.h>
#include <string.h>

#include "status.h"

const char *shipping_status_name(shipping_status s)
{
	return s == SHIPPING_SHIPPED ? "SHIPPED" : "NONE";
}

shipping_status shipping_status_parse(const char *name)
{
	return strcmp(name, "SHIPPED") == 0 ? SHIPPING_SHIPPED : SHIPPING_NONE;
}

void shipping_decide(const shipping_record *rec, const shipping_cmd *cmd, shipping_outcome *out)
{
	memset(out, 0, sizeof *out);
	out->reason = "";
	if (rec->status != SHIPPING_NONE) {
		out->reply_status = rec->status;
		if (strcmp(rec->customer, cmd->customer) != 0 || strcmp(rec->sku, cmd->sku) != 0
		    || rec->qty != cmd->qty) {
			/* rule 6: same idempotency key, other arguments */
			out->code = RPC_ALREADY_EXISTS;
			out->reason = REASON_KEY_MISMATCH;
		}
		return; /* rule 2: a duplicate is answered from the record */
	}
	out->write_record = true;
	out->record.status = SHIPPING_SHIPPED;
	snprintf(out->record.customer, sizeof out->record.customer, "%s", cmd->customer);
	snprintf(out->record.sku, sizeof out->record.sku, "%s", cmd->sku);
	out->record.qty = cmd->qty;
	out->reply_status = SHIPPING_SHIPPED;
}
