/* sagactl definitions check FILE: loads and validates a saga definition
 * file (orchestrator/sagadef) with no server, prints each saga type with its
 * version, steps and their input mappings, and says whether this build's
 * orchestratord runs it (saga_def_runnable), and with which --links; with
 * --model, checks each
 * type's flow with the model (saga_model.h). sagactl definitions table FILE:
 * each type's state table (saga_def_table). */
#include "sagactl.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "saga_def.h"
#include "saga_model.h"

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
	if (s->retry_base_ms != SAGA_DEF_DEFAULT || s->retry_cap_ms != SAGA_DEF_DEFAULT
	    || s->attention_after != SAGA_DEF_DEFAULT) {
		char v[3][24];
		const int64_t x[3] = {s->retry_base_ms, s->retry_cap_ms, s->attention_after};
		for (int i = 0; i < 3; i++)
			if (x[i] == SAGA_DEF_DEFAULT)
				snprintf(v[i], sizeof v[i], "default");
			else
				snprintf(v[i], sizeof v[i], "%lld%s", (long long)x[i],
				    i < 2 ? "ms" : "");
		printf("  %-12s retry: base %s, cap %s, attention after %s tries\n", "", v[0], v[1],
		    v[2]);
	}
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
	/* each retry value: ms or tries, or "default" (the daemon's option) */
	const int64_t x[3] = {s->retry_base_ms, s->retry_cap_ms, s->attention_after};
	json_t *r[3];
	for (int i = 0; i < 3; i++)
		r[i] = x[i] == SAGA_DEF_DEFAULT ? json_string("default")
		                                : json_integer((json_int_t)x[i]);
	return json_pack(
	    "{s:s, s:s, s:s, s:s?, s:s, s:s, s:s?, s:o, s:{s:o, s:o, s:o}, s:s?, s:o?}", "name",
	    s->name, "kind", saga_def_kind_name(s->kind), "state", s->state, "compensating",
	    s->compensating, "participant", s->participant, "command",
	    method_table[s->command].name, "compensation",
	    s->compensation != METHOD_NONE ? method_table[s->compensation].name : NULL,
	    "deadline_ms", deadline, "retry", "base_ms", r[0], "cap_ms", r[1], "attention_after",
	    r[2], "group", s->group, "input", ctl_defs_input_json(s));
}

/* ctl_defs_model runs the model over type t's flow into *r (exploring at
 * most `max_states` for at most `max_seconds`); returns 0 or a negative
 * errno (saga_model_check's). */
static int ctl_defs_model(
    const saga_def_type *t, int64_t max_states, int64_t max_seconds, saga_model_result *r)
{
	static saga_flow flow; /* 64 steps: too large for the stack's taste */
	memset(r, 0, sizeof *r);
	if (saga_def_flow(t, &flow) != 0)
		return -EINVAL;
	saga_model_opts o = {.max_states = (size_t)max_states, .max_ms = max_seconds * 1000};
	return saga_model_check(&flow, &o, r);
}

/* ctl_defs_model_ok: the model ran to its fixed point without a violation */
static bool ctl_defs_model_ok(int rc, const saga_model_result *r)
{
	return rc == 0 && r->complete && !r->violation;
}

/* ctl_defs_model_json: a type's model result as --json prints it; NULL when
 * out of memory. */
static json_t *ctl_defs_model_json(int rc, const saga_model_result *r)
{
	json_t *path = json_array();
	for (size_t i = 0; path != NULL && i < r->npath; i++)
		if (!ctl_json_append(path, json_string(r->path[i]))) {
			json_decref(path);
			path = NULL;
		}
	if (path == NULL)
		return NULL;
	return json_pack("{s:b, s:b, s:s?, s:I, s:I, s:i, s:I, s:I, s:s?, s:s?, s:o}", "ok",
	    ctl_defs_model_ok(rc, r), "fixed_point", r->complete, "stopped_at",
	    r->complete || r->violation ? NULL
	        : r->timed_out          ? "max_seconds"
	                                : "max_states",
	    "states", (json_int_t)r->states, "transitions", (json_int_t)r->transitions, "depth",
	    (int)r->depth, "completed", (json_int_t)r->completed, "cancelled",
	    (json_int_t)r->cancelled, "violation", r->violation ? r->what : NULL, "error",
	    rc != 0 ? strerror(-rc) : NULL, "path", path);
}

/* ctl_defs_model_print prints a type's model result; returns whether it is
 * good (ctl_defs_model_ok). */
static bool ctl_defs_model_print(const char *type, int rc, const saga_model_result *r)
{
	if (rc != 0 && !r->violation) {
		fprintf(stderr, "sagactl: error: %s: model: %s\n", type, strerror(-rc));
		return false;
	}
	printf("%s: model: %s: %zu states, %zu transitions, depth %d; ends: %zu completed, %zu "
	       "cancelled\n",
	    type,
	    r->violation       ? "VIOLATION"
	        : r->complete  ? "fixed point reached, no violation"
	        : r->timed_out ? "stopped at --max-seconds before the fixed point"
	                       : "stopped at --max-states before the fixed point",
	    r->states, r->transitions, r->depth, r->completed, r->cancelled);
	if (r->violation) {
		printf(
		    "  %s\n  shortest path (%zu events):\n", r->what, r->npath ? r->npath - 1 : 0);
		for (size_t i = 0; i < r->npath; i++)
			printf("    %s\n", r->path[i]);
	}
	if (!r->violation && !r->complete)
		fprintf(stderr,
		    "sagactl: error: %s: the model stopped at %zu states, before its fixed point: "
		    "raise %s\n",
		    type, r->states, r->timed_out ? "--max-seconds" : "--max-states");
	return ctl_defs_model_ok(rc, r);
}

/* ctl_defs_runnable: whether this build's orchestratord runs `d`
 * (saga_def_runnable; why not in `why`), its participants on --stock,
 * --payment, --shipping and, for any other `urls: --NAME`, a link of
 * --links; the --links it needs then in `extra` ("hotel=URL[,URL...];..."
 * or ""). */
static bool ctl_defs_runnable(
    const saga_defs *d, char *why, size_t whylen, char *extra, size_t extralen)
{
	saga_def_link links[SAGA_DEF_ORDER_NLINKS + SAGA_DEF_MAX_NAMED];
	size_t n = 0;
	for (; n < SAGA_DEF_ORDER_NLINKS; n++)
		links[n] = saga_def_order_links[n];
	extra[0] = '\0';
	for (size_t i = 0; i < d->nparticipants; i++) {
		const char *u = d->participants[i].urls;
		if (strncmp(u, "--", 2) != 0 || saga_def_link_of(&d->participants[i], links, n) >= 0
		    || n >= sizeof links / sizeof links[0])
			continue;
		links[n++] = (saga_def_link) {.option = u + 2, .service = NULL};
		size_t at = strlen(extra);
		snprintf(extra + at, extralen - at, "%s%s=URL[,URL...]", at > 0 ? ";" : "", u + 2);
	}
	return saga_def_runnable(d, links, n, why, whylen) == 0;
}

/* ctl_defs_json prints the file's types, and whether this build's
 * orchestratord runs it (why not: `why`, NULL when it does; the --links it
 * needs: `extra`, NULL or "" for none), and with
 * --model each type's model result (`mrc` and `models`, one per type; NULL
 * without), as one JSON value. Returns an exit code. */
static int ctl_defs_json(const saga_defs *d, const char *why, const char *extra, const int *mrc,
    const saga_model_result *models)
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
		json_t *model = models != NULL ? ctl_defs_model_json(mrc[i], &models[i]) : NULL;
		if ((models != NULL && model == NULL)
		    || !ctl_json_append(types,
		        json_pack("{s:s, s:s, s:s, s:s, s:s, s:o, s:o*}", "name", t->name,
		            "version", hex, "input", t->input, "completed", t->completed,
		            "cancelled", t->cancelled, "steps", steps, "model", model))) {
			json_decref(types);
			types = NULL;
		}
	}
	return ctl_json_print(types != NULL
	        ? json_pack("{s:o, s:{s:b, s:s?, s:s?}}", "types", types, "orchestratord", "runs",
	            why == NULL, "why", why, "links", extra != NULL && extra[0] ? extra : NULL)
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
	char why[512], extra[CONFIG_STR_MAX];
	bool runs = ctl_defs_runnable(d, why, sizeof why, extra, sizeof extra);
	saga_model_result *models = NULL;
	int *mrc = NULL;
	bool models_ok = true;
	if (c->o.model) {
		models = calloc(d->ntypes ? d->ntypes : 1, sizeof *models);
		mrc = calloc(d->ntypes ? d->ntypes : 1, sizeof *mrc);
		if (models == NULL || mrc == NULL) {
			free(models);
			free(mrc);
			saga_defs_free(d);
			return ctl_error("out of memory");
		}
		for (size_t i = 0; i < d->ntypes; i++) {
			mrc[i] = ctl_defs_model(
			    &d->types[i], c->o.max_states, c->o.max_seconds, &models[i]);
			models_ok = models_ok && ctl_defs_model_ok(mrc[i], &models[i]);
		}
	}
	int rc = CTL_EXIT_OK;
	if (c->o.json) {
		rc = ctl_defs_json(d, runs ? NULL : why, runs ? extra : NULL, mrc, models);
		goto out;
	}
	for (size_t i = 0; i < d->ntypes; i++) {
		const saga_def_type *t = &d->types[i];
		unsigned char v[32];
		char hex[65];
		if (saga_def_version(d, t, v, hex) != 0) {
			rc = ctl_error("out of memory");
			goto out;
		}
		printf("%s version %s input %s (%zu step%s; %s, %s)\n", t->name, hex, t->input,
		    t->nsteps, t->nsteps == 1 ? "" : "s", t->completed, t->cancelled);
		for (size_t j = 0; j < t->nsteps; j++)
			ctl_defs_print_step(&t->steps[j]);
		if (models != NULL)
			ctl_defs_model_print(t->name, mrc[i], &models[i]);
	}
	if (runs && extra[0] != '\0')
		printf("orchestratord (this build) runs it, given --links %s\n", extra);
	else if (runs)
		printf("orchestratord (this build) runs it\n");
	else
		fprintf(stderr,
		    "sagactl: warning: valid, but orchestratord (this build) cannot run it: %s\n",
		    why);
out:
	for (size_t i = 0; models != NULL && i < d->ntypes; i++)
		saga_model_result_free(&models[i]);
	free(models);
	free(mrc);
	saga_defs_free(d);
	if (rc == CTL_EXIT_OK && !models_ok)
		rc = CTL_EXIT_ERROR;
	return rc;
}

int ctl_definitions_table(ctl_ctx *c, char **args)
{
	saga_defs *d = NULL;
	char err[512];
	if (saga_def_load(args[0], &d, err, sizeof err) != 0)
		return ctl_error("%s", err);
	const char *only = c->o.type[0] != '\0' ? c->o.type : NULL;
	size_t shown = 0;
	int rc = CTL_EXIT_OK;
	for (size_t i = 0; i < d->ntypes && rc == CTL_EXIT_OK; i++) {
		const saga_def_type *t = &d->types[i];
		if (only != NULL && strcmp(only, t->name) != 0)
			continue;
		char *table = NULL;
		if (saga_def_table(t, &table) != 0) {
			rc = ctl_error("%s: type %s: out of memory", args[0], t->name);
			break;
		}
		if (only == NULL && d->ntypes > 1)
			printf("%s### %s\n\n", shown > 0 ? "\n" : "", t->name);
		fputs(table, stdout);
		free(table);
		shown++;
	}
	if (rc == CTL_EXIT_OK && shown == 0) {
		char names[CONFIG_STR_MAX] = "";
		for (size_t i = 0; i < d->ntypes; i++)
			snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s",
			    i ? ", " : "", d->types[i].name);
		rc = ctl_error("%s has no saga type \"%s\" (its types: %s)", args[0], only, names);
	}
	saga_defs_free(d);
	return rc;
}
