/* sagactl definitions check FILE: loads and validates a saga definition
 * file (orchestrator/sagadef) with no server, prints each saga type with its
 * version, steps and their input mappings, and says whether this build's
 * orchestratord runs it (saga_def_order_runnable). */
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
	printf("  %-12s input:", "");
	for (size_t i = 0; i < s->ninput; i++)
		printf("%s %s <- %s%s", i > 0 ? "," : "", s->input[i].field,
		    s->input[i].constant != NULL ? "const " : "",
		    s->input[i].constant != NULL ? s->input[i].constant : s->input[i].from);
	printf("\n");
}

/* ctl_defs_input_json: a step's mappings, {field: input field or
 * {"const": text}}; NULL when out of memory. */
static json_t *ctl_defs_input_json(const saga_def_step *s)
{
	json_t *o = json_object();
	for (size_t i = 0; o != NULL && i < s->ninput; i++) {
		const saga_def_map *m = &s->input[i];
		json_t *v = m->constant != NULL ? json_pack("{s:s}", "const", m->constant)
		                                : json_string(m->from);
		if (v == NULL || json_object_set_new(o, m->field, v) != 0) {
			json_decref(o);
			o = NULL;
		}
	}
	return o;
}

/* ctl_defs_step_json: one step as --json prints it; NULL when out of
 * memory. */
static json_t *ctl_defs_step_json(const saga_def_step *s)
{
	json_t *deadline = s->kind == SAGA_STEP_RETRIABLE ? json_null()
	    : s->deadline_ms == SAGA_DEF_DEFAULT          ? json_string("default")
	                                         : json_integer((json_int_t)s->deadline_ms);
	return json_pack("{s:s, s:s, s:s, s:s?, s:s, s:s, s:s?, s:o, s:s?, s:o?}", "name", s->name,
	    "kind", saga_def_kind_name(s->kind), "state", s->state, "compensating", s->compensating,
	    "participant", s->participant, "command", method_table[s->command].name, "compensation",
	    s->compensation != METHOD_NONE ? method_table[s->compensation].name : NULL,
	    "deadline_ms", deadline, "group", s->group, "input", ctl_defs_input_json(s));
}

/* ctl_defs_json prints the file's types, and whether this build's
 * orchestratord runs it (why not: `why`, NULL when it does), as one JSON
 * value. Returns an exit code. */
static int ctl_defs_json(const saga_defs *d, const char *why)
{
	json_t *types = json_array();
	for (size_t i = 0; types != NULL && i < d->ntypes; i++) {
		const saga_def_type *t = &d->types[i];
		unsigned char v[32];
		char hex[65];
		json_t *steps = json_array();
		for (size_t j = 0; steps != NULL && j < t->nsteps; j++)
			if (!ctl_json_append(steps, ctl_defs_step_json(&t->steps[j]))) {
				json_decref(steps);
				steps = NULL;
			}
		if (steps == NULL || saga_def_version(d, t, v, hex) != 0) {
			json_decref(steps);
			json_decref(types);
			types = NULL;
			break;
		}
		if (!ctl_json_append(types,
		        json_pack("{s:s, s:s, s:s, s:s, s:s, s:o}", "name", t->name, "version", hex,
		            "input", t->input, "completed", t->completed, "cancelled", t->cancelled,
		            "steps", steps))) {
			json_decref(types);
			types = NULL;
		}
	}
	return ctl_json_print(types != NULL ? json_pack("{s:o, s:{s:b, s:s?}}", "types", types,
	                          "orchestratord", "runs", why == NULL, "why", why)
	                                    : NULL);
}

int ctl_definitions_check(ctl_ctx *c, char **args)
{
	saga_defs *d = NULL;
	char err[512];
	if (saga_def_load(args[0], &d, err, sizeof err) != 0)
		return ctl_error("%s", err);
	/* valid; whether this build's orchestratord runs it is said apart (the
	 * model, sim_flow, takes any valid file) */
	char why[512];
	bool runs = saga_def_order_runnable(
	                d, saga_def_order_links, SAGA_DEF_ORDER_NLINKS, why, sizeof why)
	    == 0;
	if (c->o.json) {
		int rc = ctl_defs_json(d, runs ? NULL : why);
		saga_defs_free(d);
		return rc;
	}
	for (size_t i = 0; i < d->ntypes; i++) {
		const saga_def_type *t = &d->types[i];
		unsigned char v[32];
		char hex[65];
		if (saga_def_version(d, t, v, hex) != 0) {
			saga_defs_free(d);
			return ctl_error("out of memory");
		}
		printf("%s version %s input %s (%zu step%s; %s, %s)\n", t->name, hex, t->input,
		    t->nsteps, t->nsteps == 1 ? "" : "s", t->completed, t->cancelled);
		for (size_t j = 0; j < t->nsteps; j++)
			ctl_defs_print_step(&t->steps[j]);
	}
	if (runs)
		printf("orchestratord (this build) runs it\n");
	else
		fprintf(stderr,
		    "sagactl: warning: valid, but orchestratord (this build) cannot run it: %s\n",
		    why);
	saga_defs_free(d);
	return CTL_EXIT_OK;
}
