#include "hotel_logic.h"

#include <stdio.h>
#include <string.h>

#include "status.h"

static const char *const hotel_names[]
    = {"NONE", "HELD", "NO_VACANCY", "UNKNOWN_ROOM", "FREED", "TOMBSTONE"};

const char *hotel_status_name(int s)
{
	if (s < 0 || s > HOTEL_TOMBSTONE)
		return "NONE";
	return hotel_names[s];
}

int hotel_status_parse(const char *name)
{
	for (int i = 1; i <= HOTEL_TOMBSTONE; i++)
		if (strcmp(name, hotel_names[i]) == 0)
			return i;
	return HOTEL_NONE;
}

static void hotel_new_record(pkit_outcome *out, const pkit_args *a, hotel_status st)
{
	out->write_record = true;
	out->record.status = st;
	snprintf(out->record.text[0], sizeof out->record.text[0], "%s", a->text[0]);
	out->record.num[0] = a->num[0];
	out->reply_status = st;
}

/* hotel_refuse sets the reply of a recorded refusal of HoldRoom. */
static void hotel_refuse(pkit_outcome *out, hotel_status st)
{
	if (st == HOTEL_NO_VACANCY) {
		out->code = RPC_FAILED_PRECONDITION;
		out->reason = REASON_NO_VACANCY;
	} else if (st == HOTEL_UNKNOWN_ROOM) {
		out->code = RPC_NOT_FOUND;
		out->reason = REASON_UNKNOWN_ROOM;
	} else if (st == HOTEL_TOMBSTONE) {
		/* rule 5: the free came first; the late hold holds nothing */
		out->code = RPC_ABORTED;
		out->reason = REASON_TOMBSTONE;
	}
}

void hotel_decide(
    const pkit_record *rec, const pkit_row *row, const pkit_args *a, pkit_outcome *out)
{
	memset(out, 0, sizeof *out);
	out->reason = "";
	if (rec->status != HOTEL_NONE) {
		out->reply_status = rec->status;
		if (rec->status == HOTEL_TOMBSTONE && a->op == HOTEL_OP_HOLD) {
			hotel_refuse(out, HOTEL_TOMBSTONE);
			return;
		}
		if (strcmp(rec->text[0], a->text[0]) != 0 || rec->num[0] != a->num[0]) {
			/* rule 6: same idempotency key, other arguments */
			out->code = RPC_ALREADY_EXISTS;
			out->reason = REASON_KEY_MISMATCH;
			return;
		}
		if (a->op == HOTEL_OP_FREE && rec->status == HOTEL_HELD) {
			/* the compensation proper: the room is free again */
			out->write_record = true;
			out->record = *rec;
			out->record.status = HOTEL_FREED;
			out->write_row = true;
			out->value = row->value + 1;
			out->reply_status = HOTEL_FREED;
			return;
		}
		/* a duplicate (rule 2): a compensation answers the record as it
		 * is; a hold answers what it answered first */
		if (a->op == HOTEL_OP_HOLD) {
			if (rec->status == HOTEL_HELD || rec->status == HOTEL_FREED)
				out->reply_status = HOTEL_HELD;
			else
				hotel_refuse(out, (hotel_status)rec->status);
		}
		return;
	}
	if (a->op == HOTEL_OP_FREE) {
		/* rule 5: an early compensation records a tombstone and succeeds */
		hotel_new_record(out, a, HOTEL_TOMBSTONE);
		return;
	}
	if (row == NULL || !row->exists) {
		hotel_new_record(out, a, HOTEL_UNKNOWN_ROOM);
		hotel_refuse(out, HOTEL_UNKNOWN_ROOM);
		return;
	}
	if (row->value < 1) {
		hotel_new_record(out, a, HOTEL_NO_VACANCY);
		hotel_refuse(out, HOTEL_NO_VACANCY);
		return;
	}
	hotel_new_record(out, a, HOTEL_HELD);
	out->write_row = true;
	out->value = row->value - 1;
}
