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
#include "store_defs.h"

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

/* od_version parses `text` (len bytes, named `name` in errors) into *v and
 * checks that this orchestratord runs it. Returns 0, or -1 with err (v's
 * defs then still to free). */
static int od_version(const orch_defs *o, const char *text, size_t len, const char *name,
    orch_def_version *v, char *err, size_t errlen)
{
	if (saga_def_parse(text, len, name, &v->defs, err, errlen) != 0)
		return -1;
	const saga_defs *d = v->defs;
	if (saga_def_order_runnable(d, o->links, (size_t)o->nlinks, err, errlen) != 0)
		return -1;
	v->order = &d->types[0];
	if (saga_def_flow(v->order, &v->flow) != 0) /* saga_def_order_runnable checked it */
		return od_refuse(err, errlen, "%s: not a flow", d->file);
	for (int c = SAGA_CMD_NONE + 1; c <= SAGA_CMD_LAST; c++) {
		saga_flow_cmd fc;
		if (!saga_flow_order_cmd((saga_command)c, &fc))
			return od_refuse(err, errlen, "the order flow has no command %d", c);
		size_t step = (size_t)(fc.step + (fc.member > 0 ? fc.member : 0));
		char why[256];
		if (saga_def_cmd_make(d, v->order, step, fc.phase == SAGA_FLOW_COMPENSATING,
		        &v->cmds[c], why, sizeof why)
		    != 0)
			return od_refuse(err, errlen, "%s: %s", d->file, why);
		v->link[c] = saga_def_link_of(
		    &d->participants[v->cmds[c].participant], o->links, (size_t)o->nlinks);
		if (v->link[c] < 0) /* saga_def_order_runnable checked it */
			return od_refuse(err, errlen, "%s: %s: no link", d->file,
			    METHOD_PATH(v->cmds[c].method));
	}
	unsigned char bin[32];
	if (saga_def_version(d, v->order, bin, v->hex) != 0)
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
	if (nng_mtx_alloc(&o->mtx) != 0 || (o->v[0] = calloc(1, sizeof *o->v[0])) == NULL)
		return od_refuse(err, errlen, "out of memory");
	o->n = 1;
	if (file != NULL) {
		if (saga_def_read(file, &o->text, &o->text_len, err, errlen) != 0)
			return -1;
	} else {
		o->text_len = strlen(orch_order_yaml);
		o->text = strdup(orch_order_yaml);
		if (o->text == NULL)
			return od_refuse(err, errlen, "out of memory");
	}
	return od_version(o, o->text, o->text_len, file != NULL ? file : "order.yaml (built in)",
	    o->v[0], err, errlen);
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
		rc = od_version(o, orch_order_yaml, strlen(orch_order_yaml), name, v, err, errlen);
	} else {
		rc = store_def_get(conn, id, hex, &body);
		if (rc == -ENOENT)
			rc = od_refuse(err, errlen, "saga_definitions has no row id=%d", (int)id);
		snprintf(name, sizeof name, "saga_definitions(id=%d)", (int)id);
		if (rc == 0)
			rc = od_version(o, body, strlen(body), name, v, err, errlen);
		if (rc == 0 && strcmp(hex, v->hex) != 0)
			rc = od_refuse(err, errlen,
			    "%s: stored as version %.12s, this orchestratord reads it as %.12s",
			    name, hex, v->hex);
		free(body);
	}
	if (rc != 0) {
		saga_defs_free(v->defs);
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
	int rc = store_def_put(
	    conn, o->v[0]->hex, o->v[0]->order->name, o->text, o->source, &o->v[0]->id);
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

int32_t orch_defs_current(const orch_defs *o)
{
	return o->v[0]->id;
}

const orch_def_version *orch_defs_version(orch_defs *o, PGconn *conn, int32_t def_id)
{
	const orch_def_version *v0 = o->v[0];
	if (def_id == v0->id) /* new sagas: no lock (v[0] never changes) */
		return v0;
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

const saga_def_cmd *orch_defs_plan(
    orch_defs *o, PGconn *conn, int32_t def_id, saga_command cmd, int *link)
{
	if (cmd <= SAGA_CMD_NONE || cmd > SAGA_CMD_LAST)
		return NULL;
	const orch_def_version *v = orch_defs_version(o, conn, def_id);
	if (v == NULL)
		return NULL;
	*link = v->link[cmd];
	return &v->cmds[cmd];
}

void orch_defs_free(orch_defs *o)
{
	for (size_t i = 0; i < o->n && i < ORCH_DEFS_MAX; i++) {
		saga_defs_free(o->v[i]->defs);
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
