/* saga_def_flow: a parsed saga type as the flow the generic transition
 * runs (orchestrator/saga/saga_flow.h; docs/saga-definitions.md, section
 * 2): each step's kind, whether it has a compensation and a deadline, its
 * group's number, and its own deadline_ms and retry (0: the options'). */
#include "saga_def.h"

#include <string.h>

int saga_def_flow(const saga_def_type *t, saga_flow *out)
{
	memset(out, 0, sizeof *out);
	if (t->nsteps > SAGA_FLOW_MAX_STEPS)
		return -1;
	int32_t groups = 0;
	for (size_t i = 0; i < t->nsteps; i++) {
		const saga_def_step *s = &t->steps[i];
		saga_flow_step *f = &out->steps[i];
		f->name = s->name;
		switch (s->kind) {
		case SAGA_STEP_COMPENSABLE:
			f->kind = SAGA_FLOW_COMPENSABLE;
			break;
		case SAGA_STEP_PIVOT:
			f->kind = SAGA_FLOW_PIVOT;
			break;
		case SAGA_STEP_RETRIABLE:
			f->kind = SAGA_FLOW_RETRIABLE;
			break;
		default:
			return -1;
		}
		f->has_compensation = s->compensation != METHOD_NONE;
		/* every step but a retriable one has a deadline (its own
		 * deadline_ms or --step-timeout; the flow keeps only that it
		 * has one) */
		f->has_deadline = s->kind != SAGA_STEP_RETRIABLE;
		/* its own timing, or 0: the daemon's options */
		f->deadline_ms = s->deadline_ms != SAGA_DEF_DEFAULT ? s->deadline_ms : 0;
		f->backoff_base_ms = s->retry_base_ms != SAGA_DEF_DEFAULT ? s->retry_base_ms : 0;
		f->backoff_cap_ms = s->retry_cap_ms != SAGA_DEF_DEFAULT ? s->retry_cap_ms : 0;
		f->attention_after
		    = s->attention_after != SAGA_DEF_DEFAULT ? (int32_t)s->attention_after : 0;
		f->group = -1;
		if (s->group != NULL) {
			/* a group's members are consecutive: a new run is a new
			 * group */
			if (i > 0 && t->steps[i - 1].group != NULL
			    && strcmp(t->steps[i - 1].group, s->group) == 0)
				f->group = out->steps[i - 1].group;
			else
				f->group = groups++;
		}
	}
	out->nsteps = (int32_t)t->nsteps;
	return saga_flow_valid(out) ? 0 : -1;
}
