#include "decide.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

int decide_row(const orch_def_version *v, const saga_row *row, const saga_flow_event *ev,
    int64_t now_ms, uint64_t rand, const saga_policy *pol, saga_flow_decision *d, saga_row *after)
{
	saga_flow_pos pos;
	if (!orch_def_pos(v, row->state, row->members, &pos))
		return -EINVAL;
	saga_flow_row fr = {.pos = pos,
	    .attempts = row->s.attempts,
	    .attention = row->s.attention,
	    .step_deadline_ms = row->s.step_deadline_ms,
	    .next_attempt_ms = row->s.next_attempt_ms};
	memcpy(fr.reason, row->s.reason, sizeof fr.reason);
	saga_flow_transition(&v->flow, &fr, ev, now_ms, rand, pol, d);
	if (d->ignored)
		return 0;
	const char *name = orch_def_state(v, &d->next.pos);
	if (name == NULL)
		return -EINVAL;
	*after = *row;
	snprintf(after->state, sizeof after->state, "%s", name);
	after->members = d->next.pos.members;
	after->compensating = d->next.pos.phase == SAGA_FLOW_COMPENSATING;
	after->finished = saga_flow_is_terminal(&v->flow, &d->next.pos);
	memcpy(after->s.reason, d->next.reason, sizeof after->s.reason);
	after->s.attempts = d->next.attempts;
	after->s.attention = d->next.attention;
	after->s.step_deadline_ms = d->next.step_deadline_ms;
	after->s.next_attempt_ms = d->next.next_attempt_ms;
	after->s.state
	    = store_category(after->type, after->state, after->compensating, after->finished);
	after->version = row->version + 1;
	after->updated_ms = now_ms;
	return 0;
}
