/* sagactl definitions check FILE: loads and validates a saga definition
 * file (orchestrator/sagadef) with no server, and prints each saga type with
 * its version and steps. */
#include "sagactl.h"

#include <stdio.h>

#include "saga_def.h"

/* ctl_defs_print_step prints one step on one line. */
static void ctl_defs_print_step(const saga_def_step *s)
{
	char deadline[32] = "default";
	if (s->deadline_ms != SAGA_DEF_DEFAULT)
		snprintf(deadline, sizeof deadline, "%lldms", (long long)s->deadline_ms);
	printf("  %-12s %-11s %-12s %-12s %s%s%s%s%s deadline=%s%s%s\n", s->name,
	    saga_def_kind_name(s->kind), s->state, s->compensating != NULL ? s->compensating : "-",
	    s->participant, ":", method_table[s->command].name,
	    s->compensation != METHOD_NONE ? "/" : "",
	    s->compensation != METHOD_NONE ? method_table[s->compensation].name : "",
	    s->kind == SAGA_STEP_RETRIABLE ? "none" : deadline, s->group != NULL ? " group=" : "",
	    s->group != NULL ? s->group : "");
}

int ctl_definitions_check(ctl_ctx *c, char **args)
{
	(void)c;
	saga_defs *d = NULL;
	char err[512];
	if (saga_def_load(args[0], &d, err, sizeof err) != 0)
		return ctl_error("%s", err);
	for (size_t i = 0; i < d->ntypes; i++) {
		const saga_def_type *t = &d->types[i];
		unsigned char v[32];
		char hex[65];
		if (saga_def_version(d, t, v, hex) != 0) {
			saga_defs_free(d);
			return ctl_error("out of memory");
		}
		printf("%s version %s input %s (%zu steps; %s, %s)\n", t->name, hex, t->input,
		    t->nsteps, t->completed, t->cancelled);
		for (size_t j = 0; j < t->nsteps; j++)
			ctl_defs_print_step(&t->steps[j]);
	}
	saga_defs_free(d);
	return CTL_EXIT_OK;
}
