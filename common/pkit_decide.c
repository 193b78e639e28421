/* pkit_decide: the participant kit's decision of one command (pkit.h), the
 * service's pure decide function behind the kit's own rule R5 (a saga is
 * its id and its start). Pure: no I/O, no allocation. */
#include <string.h>

#include "pkit.h"
#include "status.h"

void pkit_decide(const pkit_service *v, const pkit_record *rec, const pkit_row *row,
    const pkit_args *a, pkit_outcome *out)
{
	if (rec->status != 0 && rec->started != 0 && a->started != rec->started) {
		/* another saga's record: neither answered from it nor changed
		 * by this command, whatever its arguments (rule R5) */
		memset(out, 0, sizeof *out);
		out->code = RPC_FAILED_PRECONDITION;
		out->reason = REASON_SAGA_ID_REUSED;
		out->reply_status = rec->status;
		out->record.started = rec->started;
		return;
	}
	v->decide(rec, row, a, out);
	if (out->write_record)
		out->record.started = rec->status != 0 ? rec->started : a->started;
}
