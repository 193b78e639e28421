/* saga_def_order: what this build's orchestratord runs of a definition
 * (saga_def.h, saga_def_runnable; docs/saga-definitions.md, section 2):
 * any flow of any type, of any input message (StartSaga's input), the
 * type named order being the order saga, of input sagas.v1.Order (the
 * API's sagas.v1.SagaState names its states); its participants on the links
 * orchestratord has, each serving the participant's service. */
#include "saga_def_int.h"

#include <stdio.h>
#include <string.h>

#include "saga.h"
#include "saga_flow.h"

const saga_def_link saga_def_order_links[SAGA_DEF_ORDER_NLINKS] = {
    {"stock", "sagas.v1.Stock"},
    {"payment", "sagas.v1.Payment"},
    {"shipping", "sagas.v1.Shipping"},
};

/* so_same_flow: type t's flow is saga_flow_order's: the same steps, kinds,
 * compensations, deadlines and groups. */
static bool so_same_flow(const saga_def_type *t)
{
	saga_flow f;
	if (saga_def_flow(t, &f) != 0 || f.nsteps != saga_flow_order.nsteps)
		return false;
	for (int32_t i = 0; i < f.nsteps; i++) {
		const saga_flow_step *a = &f.steps[i], *b = &saga_flow_order.steps[i];
		if (a->kind != b->kind || a->has_compensation != b->has_compensation
		    || a->has_deadline != b->has_deadline || a->group != b->group)
			return false;
	}
	return true;
}

/* so_name: the order saga's state name at (step, phase) */
static const char *so_name(int32_t step, saga_flow_phase phase)
{
	saga_flow_pos pos = {.step = step, .phase = phase, .members = 0};
	return saga_state_name(saga_flow_order_state(&pos));
}

int saga_def_link_of(const saga_def_participant *p, const saga_def_link *links, size_t nlinks)
{
	for (size_t i = 0; i < nlinks; i++)
		if (strncmp(p->urls, "--", 2) == 0 && strcmp(p->urls + 2, links[i].option) == 0)
			return (int)i;
	return -1;
}

/* so_order_type: type t, named order, is the order saga in all but its
 * commands' mappings and timing (the API's sagas.v1.SagaState names its
 * states, the refusal reasons its steps) */
static int so_order_type(const saga_defs *d, const saga_def_type *t, char *err, size_t errlen)
{
	if (!so_same_flow(t))
		return sd_refuse(err, errlen,
		    "%s: sagas.order: the type named order is the order saga (the API's "
		    "SagaState): reserve compensable, charge pivot, ship retriable, no group; the "
		    "file's steps differ in number, kind, compensation or group (name another "
		    "flow otherwise)",
		    d->file);
	const char *completed = so_name(t->nsteps > 0 ? (int32_t)t->nsteps : 0, SAGA_FLOW_FORWARD);
	const char *cancelled = so_name(-1, SAGA_FLOW_COMPENSATING);
	if (strcmp(t->completed, completed) != 0 || strcmp(t->cancelled, cancelled) != 0)
		return sd_refuse(err, errlen,
		    "%s: sagas.order: completed and cancelled must be %s and %s (the API's "
		    "SagaState for the type named order)",
		    d->file, completed, cancelled);
	for (size_t i = 0; i < t->nsteps; i++) {
		const saga_def_step *s = &t->steps[i];
		const char *state = so_name((int32_t)i, SAGA_FLOW_FORWARD);
		const char *comp = s->compensation != METHOD_NONE
		    ? so_name((int32_t)i, SAGA_FLOW_COMPENSATING)
		    : NULL;
		if (strcmp(s->name, saga_flow_order.steps[i].name) != 0
		    || strcmp(s->state, state) != 0
		    || (comp != NULL && strcmp(s->compensating, comp) != 0))
			return sd_refuse(err, errlen,
			    "%s: %s: the type named order names this step %s, state %s%s%s (the "
			    "API's SagaState and the refusal reasons; name another type otherwise)",
			    d->file, s->path, saga_flow_order.steps[i].name, state,
			    comp != NULL ? ", compensating " : "", comp != NULL ? comp : "");
	}
	return 0;
}

/* so_links: every step of type t has its participant on one of `links`,
 * which serves the participant's service (a link of no service, one of
 * --links, serves any) */
static int so_links(const saga_defs *d, const saga_def_type *t, const saga_def_link *links,
    size_t nlinks, char *err, size_t errlen)
{
	for (size_t i = 0; i < t->nsteps; i++) {
		const saga_def_step *s = &t->steps[i];
		const saga_def_participant *p = saga_def_find_participant(d, s->participant);
		int l = p != NULL ? saga_def_link_of(p, links, nlinks) : -1;
		if (l < 0) {
			char opts[200] = "";
			for (size_t k = 0; k < nlinks; k++)
				snprintf(opts + strlen(opts), sizeof opts - strlen(opts), "%s--%s",
				    k > 0 ? ", " : "", links[k].option);
			return sd_refuse(err, errlen,
			    "%s: participants.%s names %s: orchestratord has no such link (it has "
			    "%s; give it one with --links %s=URL[,URL...])",
			    d->file, s->participant, p != NULL ? p->urls : "?", opts,
			    p != NULL && strncmp(p->urls, "--", 2) == 0 ? p->urls + 2 : "NAME");
		}
		if (links[l].service != NULL && strcmp(p->service, links[l].service) != 0)
			return sd_refuse(err, errlen,
			    "%s: participants.%s: --%s is the link to %s, not %s", d->file, p->name,
			    links[l].option, links[l].service, p->service);
	}
	return 0;
}

int saga_def_runnable(
    const saga_defs *d, const saga_def_link *links, size_t nlinks, char *err, size_t errlen)
{
	if (d->ntypes == 0 || d->ntypes > SAGA_DEF_RUN_TYPES)
		return sd_refuse(err, errlen,
		    "%s: this orchestratord runs 1 to %d saga types from one file; the file has "
		    "%zu",
		    d->file, SAGA_DEF_RUN_TYPES, d->ntypes);
	for (size_t k = 0; k < d->ntypes; k++) {
		const saga_def_type *t = &d->types[k];
		/* any type's input is any message of the build (StartSaga's
		 * input); the order saga's is StartSaga's typed order */
		if (strcmp(t->name, "order") == 0 && strcmp(t->input, "sagas.v1.Order") != 0)
			return sd_refuse(err, errlen,
			    "%s: sagas.order.input: the type named order is the order saga, whose "
			    "input is sagas.v1.Order (StartSaga's order), not %s",
			    d->file, t->input);
		if (strcmp(t->name, "order") == 0 && so_order_type(d, t, err, errlen) != 0)
			return -1;
		if (so_links(d, t, links, nlinks, err, errlen) != 0)
			return -1;
	}
	return 0;
}
