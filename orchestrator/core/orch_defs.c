/* orch_defs: the definitions an orchestratord runs (orch_defs.h). */
#include "orch_defs.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "order_yaml.h" /* orch_order_yaml: orchestrator/definitions/order.yaml */
#include "saga_flow.h"

const char *orch_defs_builtin(void)
{
	return orch_order_yaml;
}

static int od_refuse(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int od_refuse(char *err, size_t errlen, const char *fmt, ...)
{
	if (errlen > 0) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return -1;
}

/* od_same_flow: type t's flow is the one the engine's transition runs
 * (saga_flow_order): the same steps, kinds, compensations, deadlines and
 * groups. */
static bool od_same_flow(const saga_def_type *t)
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

int orch_defs_load(orch_defs *o, const char *file, char *err, size_t errlen)
{
	memset(o, 0, sizeof *o);
	snprintf(o->source, sizeof o->source, "%s", file != NULL ? file : "built in");
	int rc = file != NULL
	    ? saga_def_load(file, &o->defs, err, errlen)
	    : saga_def_parse(orch_order_yaml, strlen(orch_order_yaml), "order.yaml (built in)",
	          &o->defs, err, errlen);
	if (rc != 0)
		return -1;
	const saga_defs *d = o->defs;
	if (d->ntypes != 1 || strcmp(d->types[0].name, "order") != 0)
		return od_refuse(err, errlen,
		    "%s: this orchestratord runs one saga type, order (other types are the next "
		    "landing of docs/saga-definitions.md); the file has %zu type(s), the first %s",
		    d->file, d->ntypes, d->ntypes > 0 ? d->types[0].name : "none");
	o->order = &d->types[0];
	if (strcmp(o->order->input, "sagas.v1.Order") != 0)
		return od_refuse(err, errlen,
		    "%s: sagas.order.input: this orchestratord stores an order's input as "
		    "sagas.v1.Order, not %s",
		    d->file, o->order->input);
	if (!od_same_flow(o->order))
		return od_refuse(err, errlen,
		    "%s: sagas.order: this orchestratord runs the order saga's flow (reserve "
		    "compensable, charge pivot, ship retriable, no group): the file's steps differ "
		    "in number, kind, compensation or group",
		    d->file);
	for (size_t i = 0; i < o->order->nsteps; i++) {
		const saga_def_step *s = &o->order->steps[i];
		if (s->deadline_ms != SAGA_DEF_DEFAULT || s->retry_base_ms != SAGA_DEF_DEFAULT
		    || s->retry_cap_ms != SAGA_DEF_DEFAULT || s->attention_after != SAGA_DEF_DEFAULT)
			return od_refuse(err, errlen,
			    "%s: %s: a step's own deadline_ms and retry are not applied yet: leave "
			    "them out (--step-timeout, --backoff-base, --backoff-cap and "
			    "--attention-after apply)",
			    d->file, s->path);
	}
	for (int c = SAGA_CMD_NONE + 1; c <= SAGA_CMD_LAST; c++) {
		saga_flow_cmd fc;
		if (!saga_flow_order_cmd((saga_command)c, &fc))
			return od_refuse(err, errlen, "the order flow has no command %d", c);
		size_t step = (size_t)(fc.step + (fc.member > 0 ? fc.member : 0));
		char why[256];
		if (saga_def_cmd_make(d, o->order, step, fc.phase == SAGA_FLOW_COMPENSATING,
		        &o->cmds[c], why, sizeof why)
		    != 0)
			return od_refuse(err, errlen, "%s: %s", d->file, why);
	}
	unsigned char bin[32];
	if (saga_def_version(d, o->order, bin, o->version) != 0)
		return od_refuse(err, errlen, "out of memory");
	return 0;
}

void orch_defs_free(orch_defs *o)
{
	saga_defs_free(o->defs);
	o->defs = NULL;
	o->order = NULL;
}
