/* pkit_decide: the participant kit's decision of one command (pkit.h), the
 * service's pure decide function behind the kit's own rule R5 (a saga is
 * its id and its start). Pure: no I/O, no allocation. */
#include <string.h>

#include "horizon.h"
#include "pkit.h"
#include "status.h"

/* pkit_other_saga is true when `rec` (a record) is another saga's than
 * the command's `a` (rule R5; pkit.h says how a record made before R5 is
 * judged). */
static bool pkit_other_saga(const pkit_record *rec, const pkit_args *a)
{
	if (rec->started != 0)
		return a->started != rec->started;
	return rec->made_ms > 0 && a->started > rec->made_ms + a->skew_ms + HORIZON_AHEAD_SLACK_MS;
}

void pkit_decide(const pkit_service *v, const pkit_record *rec, const pkit_row *row,
    const pkit_args *a, pkit_outcome *out)
{
	if (rec->status != 0 && pkit_other_saga(rec, a)) {
		/* another saga's record: neither answered from it nor changed
		 * by this command, whatever its arguments (rule R5) */
		memset(out, 0, sizeof *out);
		out->code = RPC_FAILED_PRECONDITION;
		out->reason = REASON_SAGA_ID_REUSED;
		out->reply_status = rec->status;
		out->record.started = rec->started;
		out->record.made_ms = rec->made_ms;
		return;
	}
	v->decide(rec, row, a, out);
	if (out->write_record)
		out->record.started = rec->status != 0 ? rec->started : a->started;
}
