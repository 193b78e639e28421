/* orch_defs: the definitions an orchestratord runs, by version (orch_defs.h). */
#include "orch_defs.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "log.h"
#include "order_yaml.h" /* orch_order_yaml: orchestrator/definitions/order.yaml */
#include "pg.h"
#include "saga_flow.h"
#include "store.h"
#include "store_defs.h"

/* a definition's names fit the rows' (saga_row.type, .state) */
_Static_assert(SAGA_NAME_MAX > SAGA_DEF_NAME_MAX, "SAGA_NAME_MAX holds a definition's name");

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

/* od_version parses `text` (len bytes, named `name` in errors) into *v as
 * its type number `k` (k >= 0) or, with k < 0, its type whose version is
 * `want_hex`, and checks that this orchestratord runs the file. Returns 0,
 * or -1 with err (v's defs then still to free). */
static int od_version(const orch_defs *o, const char *text, size_t len, const char *name, long k,
    const char *want_hex, orch_def_version *v, char *err, size_t errlen)
{
	if (saga_def_parse(text, len, name, &v->defs, err, errlen) != 0)
		return -1;
	const saga_defs *d = v->defs;
	if (saga_def_runnable(d, o->links, (size_t)o->nlinks, err, errlen) != 0)
		return -1;
	v->type = NULL;
	for (size_t i = 0; i < d->ntypes && v->type == NULL; i++) {
		unsigned char bin[32];
		char hex[65];
		if (k >= 0 ? (size_t)k == i
		           : saga_def_version(d, &d->types[i], bin, hex) == 0
		            && strcmp(hex, want_hex) == 0)
			v->type = &d->types[i];
	}
	if (v->type == NULL)
		return od_refuse(err, errlen, "%s: no type of version %.12s", name,
		    want_hex != NULL ? want_hex : "?");
	if (saga_def_flow(v->type, &v->flow) != 0) /* saga_def_order_runnable checked it */
		return od_refuse(err, errlen, "%s: not a flow", d->file);
	/* a plan per step and phase: its command, and its compensation if any */
	size_t n = v->type->nsteps;
	v->plans = calloc(n ? n : 1, sizeof *v->plans);
	v->links = calloc(n ? n : 1, sizeof *v->links);
	if (v->plans == NULL || v->links == NULL)
		return od_refuse(err, errlen, "out of memory");
	for (size_t step = 0; step < n; step++)
		for (int phase = 0; phase < 2; phase++) {
			bool comp = phase == SAGA_FLOW_COMPENSATING;
			v->links[step][phase] = -1;
			if (comp && v->type->steps[step].compensation == METHOD_NONE)
				continue;
			char why[256];
			saga_def_cmd *c = &v->plans[step][phase];
			if (saga_def_cmd_make(d, v->type, step, comp, c, why, sizeof why) != 0)
				return od_refuse(err, errlen, "%s: %s", d->file, why);
			v->links[step][phase] = saga_def_link_of(
			    &d->participants[c->participant], o->links, (size_t)o->nlinks);
			if (v->links[step][phase] < 0) /* saga_def_order_runnable checked it */
				return od_refuse(err, errlen, "%s: %s: no link", d->file,
				    METHOD_PATH(c->method));
		}
	unsigned char bin[32];
	if (saga_def_version(d, v->type, bin, v->hex) != 0)
		return od_refuse(err, errlen, "out of memory");
	return 0;
}

int orch_defs_load(orch_defs *o, const char *file, const saga_def_link *links, int nlinks,
    char *err, size_t errlen)
{
	memset(o, 0, sizeof *o);
	o->links = links;
	o->nlinks = nlinks;
	/* the absolute path, as saga_definitions.source keeps it */
	char abs[PATH_MAX];
	snprintf(o->source, sizeof o->source, "%s",
	    file == NULL                      ? "built in"
	        : realpath(file, abs) != NULL ? abs
	                                      : file);
	if (nng_mtx_alloc(&o->mtx) != 0)
		return od_refuse(err, errlen, "out of memory");
	if (file != NULL) {
		if (saga_def_read(file, &o->text, &o->text_len, err, errlen) != 0)
			return -1;
	} else {
		o->text_len = strlen(orch_order_yaml);
		o->text = strdup(orch_order_yaml);
		if (o->text == NULL)
			return od_refuse(err, errlen, "out of memory");
	}
	/* a version per type of the file, v[0 .. nfile-1]: new sagas of a type
	 * start under its */
	const char *name = file != NULL ? file : "order.yaml (built in)";
	for (long k = 0;; k++) {
		orch_def_version *v = calloc(1, sizeof *v);
		if (v == NULL)
			return od_refuse(err, errlen, "out of memory");
		o->v[o->n++] = v; /* freed by orch_defs_free, whatever happens */
		if (od_version(o, o->text, o->text_len, name, k, NULL, v, err, errlen) != 0)
			return -1;
		if ((size_t)k + 1 >= v->defs->ntypes)
			break;
	}
	o->nfile = o->n;
	return 0;
}

/* od_find is the loaded version `id`, or NULL (o->mtx held or not running). */
static const orch_def_version *od_find(const orch_defs *o, int32_t id)
{
	for (size_t i = 0; i < o->n; i++)
		if (o->v[i]->id == id)
			return o->v[i];
	return NULL;
}

/* od_add loads version `id` into the next slot, from the built-in text (id
 * 0) or from saga_definitions on conn, checking that the text read is the
 * version stored. o->mtx held while running. Returns 0, a negative enum
 * pg_err, -ENOENT, or -1 with err. */
static int od_add(orch_defs *o, PGconn *conn, int32_t id, char *err, size_t errlen)
{
	if (o->n >= ORCH_DEFS_MAX)
		return od_refuse(err, errlen,
		    "more than %d versions of the definitions are needed at once (a restart "
		    "loads only those unfinished sagas need)",
		    ORCH_DEFS_MAX);
	orch_def_version *v = calloc(1, sizeof *v);
	if (v == NULL)
		return od_refuse(err, errlen, "out of memory");
	char hex[65] = "", name[64];
	char *body = NULL;
	int rc;
	if (id == 0) {
		snprintf(name, sizeof name, "order.yaml (built in)");
		rc = od_version(
		    o, orch_order_yaml, strlen(orch_order_yaml), name, 0, NULL, v, err, errlen);
	} else {
		rc = store_def_get(conn, id, hex, &body);
		if (rc == -ENOENT)
			rc = od_refuse(err, errlen, "saga_definitions has no row id=%d", (int)id);
		snprintf(name, sizeof name, "saga_definitions(id=%d)", (int)id);
		if (rc == 0)
			rc = od_version(o, body, strlen(body), name, -1, hex, v, err, errlen);
		if (rc == 0 && strcmp(hex, v->hex) != 0)
			rc = od_refuse(err, errlen,
			    "%s: stored as version %.12s, this orchestratord reads it as %.12s",
			    name, hex, v->hex);
		free(body);
	}
	if (rc != 0) {
		saga_defs_free(v->defs);
		free(v->plans);
		free(v->links);
		free(v);
		return rc;
	}
	v->id = id;
	o->v[o->n] = v;
	o->n++; /* published: entries below n never change */
	return 0;
}

/* od_failed_slot is the slot of failed[] that remembers version id: its
 * own, or (not there) the least recently tried, taken for it. */
static size_t od_failed_slot(orch_defs *o, int32_t id, bool *found)
{
	size_t oldest = 0;
	for (size_t i = 0; i < ORCH_DEFS_FAILED; i++) {
		if (o->failed[i].at_ms != 0 && o->failed[i].id == id) {
			*found = true;
			return i;
		}
		if (o->failed[i].at_ms < o->failed[oldest].at_ms)
			oldest = i;
	}
	*found = false;
	return oldest;
}

int orch_defs_sync(orch_defs *o, PGconn *conn)
{
	int rc = 0;
	for (size_t k = 0; k < o->nfile && rc == 0; k++)
		rc = store_def_put(
		    conn, o->v[k]->hex, o->v[k]->type->name, o->text, o->source, &o->v[k]->id);
	if (rc != 0)
		return rc;
	store_def_need need[ORCH_DEFS_MAX];
	size_t n = 0;
	rc = store_defs_needed(conn, need, ORCH_DEFS_MAX, &n);
	if (rc != 0)
		return rc;
	if (n > ORCH_DEFS_MAX)
		log_error(NULL,
		    "unfinished sagas name %zu versions of the definitions: the first %d are "
		    "served, the others' sagas wait (met later, each is tried as room allows)",
		    n, ORCH_DEFS_MAX);
	for (size_t i = 0; i < n && i < ORCH_DEFS_MAX; i++) {
		if (od_find(o, need[i].def_id) != NULL)
			continue;
		char why[512] = "";
		rc = od_add(o, conn, need[i].def_id, why, sizeof why);
		if (rc != 0 && rc != -1 && rc != -ENOENT)
			return rc; /* the database: the start tries again */
		if (rc != 0) {
			/* those sagas wait; the start goes on */
			bool found;
			size_t k = od_failed_slot(o, need[i].def_id, &found);
			o->failed[k].id = need[i].def_id;
			o->failed[k].at_ms = clock_mono_ms();
			log_error(NULL,
			    "%lld unfinished saga%s (saga=%s%s) started under a version this "
			    "orchestratord cannot run, and wait%s: %s; run the orchestratord that "
			    "stored it until they are done (docs/operations.md, \"Changing a saga "
			    "definition\")",
			    (long long)need[i].sagas, need[i].sagas == 1 ? "" : "s",
			    need[i].saga_id, need[i].sagas == 1 ? "" : ", ...",
			    need[i].sagas == 1 ? "s" : "", why);
			continue;
		}
		log_info(NULL,
		    "serving definition version %.12s (id %d) for %lld unfinished saga%s",
		    o->v[o->n - 1]->hex, (int)need[i].def_id, (long long)need[i].sagas,
		    need[i].sagas == 1 ? "" : "s");
	}
	return 0;
}

const orch_def_version *orch_defs_start(const orch_defs *o, const char *type)
{
	for (size_t k = 0; k < o->nfile; k++)
		if (strcmp(o->v[k]->type->name, type) == 0)
			return o->v[k];
	return NULL;
}

const orch_def_version *orch_defs_version(orch_defs *o, PGconn *conn, int32_t def_id)
{
	for (size_t k = 0; k < o->nfile; k++) /* new sagas: no lock (never changed) */
		if (def_id == o->v[k]->id)
			return o->v[k];
	nng_mtx_lock(o->mtx);
	const orch_def_version *v = od_find(o, def_id);
	if (v == NULL && conn != NULL) {
		bool found;
		size_t k = od_failed_slot(o, def_id, &found);
		int64_t now = clock_mono_ms();
		if (!found || now - o->failed[k].at_ms >= ORCH_DEFS_RETRY_MS) {
			char why[512] = "";
			int rc = od_add(o, conn, def_id, why, sizeof why);
			if (rc == 0) {
				v = o->v[o->n - 1];
				if (found)
					o->failed[k].at_ms = 0; /* forgotten */
				log_info(NULL,
				    "serving definition version %.12s (id %d), met in a saga",
				    v->hex, (int)def_id);
			} else {
				o->failed[k].id = def_id;
				o->failed[k].at_ms = now;
				log_error(NULL,
				    "sagas of definition version id %d wait: %s (tried again in %d "
				    "s)",
				    (int)def_id, rc == -1 || rc == -ENOENT ? why : pg_err_name(rc),
				    ORCH_DEFS_RETRY_MS / 1000);
			}
		}
	}
	nng_mtx_unlock(o->mtx);
	return v;
}

int64_t orch_defs_first_deadline_ms(orch_defs *o, const saga_policy *p)
{
	saga_flow_pos first = {.step = 0, .phase = SAGA_FLOW_FORWARD, .members = 0};
	nng_mtx_lock(o->mtx);
	int64_t min = INT64_MAX;
	for (size_t i = 0; i < o->n; i++) {
		int64_t d = saga_flow_stage_policy(&o->v[i]->flow, &first, p).step_timeout_ms;
		if (d < min)
			min = d;
	}
	nng_mtx_unlock(o->mtx);
	return min;
}

const saga_def_cmd *orch_def_plan(
    const orch_def_version *v, int32_t step, saga_flow_phase phase, int *link)
{
	if (step < 0 || step >= v->flow.nsteps
	    || (phase != SAGA_FLOW_FORWARD && phase != SAGA_FLOW_COMPENSATING)
	    || v->links[step][phase] < 0)
		return NULL;
	*link = v->links[step][phase];
	return &v->plans[step][phase];
}

bool orch_def_pos(
    const orch_def_version *v, const char *state, uint64_t members, saga_flow_pos *out)
{
	const saga_def_type *t = v->type;
	if (strcmp(state, t->completed) == 0) {
		*out = (saga_flow_pos) {.step = v->flow.nsteps, .phase = SAGA_FLOW_FORWARD};
		return true;
	}
	if (strcmp(state, t->cancelled) == 0) {
		*out = (saga_flow_pos) {.step = -1, .phase = SAGA_FLOW_COMPENSATING};
		return true;
	}
	for (int32_t i = 0; i < v->flow.nsteps; i += saga_flow_stage_len(&v->flow, i)) {
		const saga_def_step *st = &t->steps[i];
		saga_flow_phase ph;
		if (strcmp(state, st->state) == 0)
			ph = SAGA_FLOW_FORWARD;
		else if (st->compensating != NULL && strcmp(state, st->compensating) == 0)
			ph = SAGA_FLOW_COMPENSATING;
		else
			continue;
		*out = (saga_flow_pos) {.step = i, .phase = ph, .members = members};
		return true;
	}
	return false;
}

const char *orch_def_state(const orch_def_version *v, const saga_flow_pos *pos)
{
	return saga_def_state_name(v->type, &v->flow, pos);
}

const char *orch_def_method(const orch_def_version *v, const saga_flow_pos *pos)
{
	int link;
	const saga_def_cmd *c = saga_flow_is_terminal(&v->flow, pos)
	    ? NULL
	    : orch_def_plan(v, pos->step, pos->phase, &link);
	return c != NULL ? method_table[c->method].name : "none";
}

void orch_defs_free(orch_defs *o)
{
	for (size_t i = 0; i < o->n && i < ORCH_DEFS_MAX; i++) {
		saga_defs_free(o->v[i]->defs);
		free(o->v[i]->plans);
		free(o->v[i]->links);
		free(o->v[i]);
		o->v[i] = NULL;
	}
	o->n = 0;
	free(o->text);
	o->text = NULL;
	if (o->mtx != NULL)
		nng_mtx_free(o->mtx);
	o->mtx = NULL;
}
