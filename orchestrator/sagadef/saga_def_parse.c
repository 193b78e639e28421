/* saga_def_parse: a definition file's tree (libfyaml's document API) into
 * the structs of saga_def.h, with the position of every value kept for the
 * errors. Shape errors (unknown or missing keys, wrong types, bad names)
 * are found here; the rules across steps in saga_def_check.c; the node
 * helpers in saga_def_node.c; reading a file and libfyaml's parser in
 * saga_def_load.c. */
#include "saga_def_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "authz.h"

/* by field, then by position (so that of equal fields the first in the
 * file comes first) */
static int sd_map_cmp(const void *a, const void *b)
{
	const saga_def_map *x = a, *y = b;
	int r = strcmp(x->field, y->field);
	if (r != 0)
		return r;
	if (x->at.line != y->at.line)
		return x->at.line < y->at.line ? -1 : 1;
	return (x->at.column > y->at.column) - (x->at.column < y->at.column);
}

/* sd_input reads a step's `input` mapping (request field: input field, or
 * {const: VALUE}), sorted by request field. */
static int sd_input(sd_ctx *c, struct fy_node *n, const char *path, saga_def_step *s)
{
	if (!fy_node_is_mapping(n))
		return sd_fail(c, n, path, "a mapping expected");
	int cnt = fy_node_mapping_item_count(n);
	s->input = calloc(cnt > 0 ? (size_t)cnt : 1, sizeof *s->input);
	if (s->input == NULL)
		return sd_oom(c);
	void *it = NULL;
	struct fy_node_pair *pr;
	while ((pr = fy_node_mapping_iterate(n, &it)) != NULL) {
		saga_def_map *m = &s->input[s->ninput++];
		struct fy_node *k = fy_node_pair_key(pr), *v = fy_node_pair_value(pr);
		char p[256];
		const char *ks = fy_node_is_scalar(k) ? fy_node_get_scalar0(k) : "?";
		snprintf(p, sizeof p, "%s.%s", path, ks);
		if (sd_str(c, k, n, p, true, &m->field) != 0)
			return -1;
		m->at = sd_pos(k);
		m->vat = sd_pos(v);
		if (v != NULL && fy_node_is_mapping(v)) {
			static const char *const ck[] = {"const", NULL};
			struct fy_node *cv[1];
			if (sd_keys(c, v, p, ck, cv) != 0)
				return -1;
			char pc[280];
			snprintf(pc, sizeof pc, "%s.const", p);
			if (sd_str(c, cv[0], v, pc, true, &m->constant) != 0)
				return -1;
		} else if (sd_str(c, v, k, p, true, &m->from) != 0) {
			return -1;
		}
	}
	qsort(s->input, s->ninput, sizeof *s->input, sd_map_cmp);
	/* a field twice: the error at its first repetition in the file */
	const saga_def_map *dup = NULL;
	for (size_t i = 1; i < s->ninput; i++) {
		const saga_def_map *m = &s->input[i];
		if (strcmp(m->field, s->input[i - 1].field) == 0
		    && (i < 2 || strcmp(m->field, s->input[i - 2].field) != 0)
		    && (dup == NULL || m->at.line < dup->at.line
		        || (m->at.line == dup->at.line && m->at.column < dup->at.column)))
			dup = m;
	}
	if (dup != NULL) {
		sd_err(c->err, c->errlen, c->file, dup->at, NULL, "duplicate key");
		return -1;
	}
	return 0;
}

static int sd_kind(
    sd_ctx *c, struct fy_node *n, struct fy_node *parent, const char *path, saga_def_step *s)
{
	char *k = NULL;
	if (sd_str(c, n, parent, path, true, &k) != 0)
		return -1;
	int rc = 0;
	if (strcmp(k, "compensable") == 0)
		s->kind = SAGA_STEP_COMPENSABLE;
	else if (strcmp(k, "pivot") == 0)
		s->kind = SAGA_STEP_PIVOT;
	else if (strcmp(k, "retriable") == 0)
		s->kind = SAGA_STEP_RETRIABLE;
	else {
		char msg[160];
		snprintf(msg, sizeof msg,
		    "%.64s is not a kind (kinds: compensable, pivot, retriable)", k);
		rc = sd_fail(c, n, path, msg);
	}
	free(k);
	return rc;
}

/* sd_saga_command: method i is one a participant takes from the
 * orchestrator (its role, AUTHZ_ORCHESTRATOR: a saga's command or
 * compensation), not an operator's (SetStock, Deposit, ...) */
static bool sd_saga_command(int i)
{
	return (method_table[i].roles & AUTHZ_ORCHESTRATOR) != 0;
}

/* sd_method resolves `name` (a saga command of the participant's service:
 * sd_saga_command) into *id; METHOD_NONE with an error when the table has
 * no such method, or it is not one the orchestrator may send. */
static int sd_method(
    sd_ctx *c, struct fy_node *n, const char *path, const char *participant, enum method_id *id)
{
	const saga_def_participant *p = saga_def_find_participant(c->d, participant);
	const char *name = fy_node_get_scalar0(n);
	char full[256];
	snprintf(full, sizeof full, "/%s/%s", p->service, name);
	*id = method_find(full);
	if (*id != METHOD_NONE && sd_saga_command(*id))
		return 0;
	if (*id != METHOD_NONE) {
		*id = METHOD_NONE;
		char msg[300];
		snprintf(msg, sizeof msg,
		    "%s is an operator's method of %s, not a saga command (the orchestrator may "
		    "not call it)",
		    name, p->service);
		return sd_fail(c, n, path, msg);
	}
	for (int i = 0; i < METHOD_COUNT; i++) {
		if (strcmp(method_table[i].name, name) == 0) {
			char msg[300];
			snprintf(msg, sizeof msg,
			    "%s is a method of sagas.v1.%s, not of %s (participant %s)", name,
			    method_table[i].service, p->service, participant);
			return sd_fail(c, n, path, msg);
		}
	}
	char msg[512];
	int len
	    = snprintf(msg, sizeof msg, "%s is not a method of %s (its methods:", full, p->service);
	const char *sep = " ";
	for (int i = 0; i < METHOD_COUNT && len > 0 && (size_t)len < sizeof msg; i++) {
		if (strcmp(method_table[i].service, p->service + 9) != 0 || !sd_saga_command(i))
			continue;
		len += snprintf(
		    msg + len, sizeof msg - (size_t)len, "%s%s", sep, method_table[i].name);
		sep = ", ";
	}
	if (len > 0 && (size_t)len < sizeof msg)
		snprintf(msg + len, sizeof msg - (size_t)len, ")");
	return sd_fail(c, n, path, msg);
}

enum { K_NAME, K_STATE, K_COMP_STATE, K_PART, K_CMD, K_COMP, K_KIND, K_DEADLINE, K_RETRY, K_INPUT };

static int sd_step_names(sd_ctx *c, struct fy_node *n, struct fy_node **v, saga_def_step *s)
{
	char p[200];
	snprintf(p, sizeof p, "%s.name", s->path);
	if (sd_str(c, v[K_NAME], n, p, true, &s->name) != 0)
		return -1;
	if (!sd_lower_name(s->name))
		return sd_fail(c, v[K_NAME], p, "a name is [a-z][a-z0-9_]*, at most 64 bytes");
	s->at[SAGA_AT_NAME] = sd_pos(v[K_NAME]);
	snprintf(p, sizeof p, "%s.state", s->path);
	if (sd_str(c, v[K_STATE], n, p, false, &s->state) != 0)
		return -1;
	if (s->state != NULL && !sd_upper_name(s->state))
		return sd_fail(c, v[K_STATE], p, "a state is [A-Z][A-Z0-9_]*, at most 64 bytes");
	s->at[SAGA_AT_STATE] = v[K_STATE] != NULL ? sd_pos(v[K_STATE]) : s->at[SAGA_AT_NAME];
	if (s->state == NULL && (s->state = sd_upper(s->name, "")) == NULL)
		return sd_oom(c);
	snprintf(p, sizeof p, "%s.compensating", s->path);
	if (sd_str(c, v[K_COMP_STATE], n, p, false, &s->compensating) != 0)
		return -1;
	if (s->compensating != NULL && !sd_upper_name(s->compensating))
		return sd_fail(
		    c, v[K_COMP_STATE], p, "a state is [A-Z][A-Z0-9_]*, at most 64 bytes");
	if (s->compensating != NULL && v[K_COMP] == NULL)
		return sd_fail(
		    c, v[K_COMP_STATE], p, "a compensating state without a compensation");
	s->at[SAGA_AT_COMPENSATING]
	    = v[K_COMP_STATE] != NULL ? sd_pos(v[K_COMP_STATE]) : s->at[SAGA_AT_NAME];
	if (s->compensating == NULL && v[K_COMP] != NULL
	    && (s->compensating = sd_upper(s->name, "_UNDO")) == NULL)
		return sd_oom(c);
	return 0;
}

static int sd_step_methods(sd_ctx *c, struct fy_node *n, struct fy_node **v, saga_def_step *s)
{
	char p[200];
	snprintf(p, sizeof p, "%s.participant", s->path);
	if (sd_str(c, v[K_PART], n, p, true, &s->participant) != 0)
		return -1;
	s->at[SAGA_AT_PARTICIPANT] = sd_pos(v[K_PART]);
	if (saga_def_find_participant(c->d, s->participant) == NULL) {
		char msg[512];
		int len = snprintf(msg, sizeof msg,
		    "participant %.64s is not declared (declared:", s->participant);
		for (size_t i = 0; i < c->d->nparticipants && (size_t)len < sizeof msg; i++)
			len += snprintf(msg + len, sizeof msg - (size_t)len, "%s%s",
			    i > 0 ? ", " : " ", c->d->participants[i].name);
		if ((size_t)len < sizeof msg)
			snprintf(msg + len, sizeof msg - (size_t)len, ")");
		return sd_fail(c, v[K_PART], p, msg);
	}
	char *tmp = NULL;
	snprintf(p, sizeof p, "%s.command", s->path);
	if (sd_str(c, v[K_CMD], n, p, true, &tmp) != 0)
		return -1;
	free(tmp);
	s->at[SAGA_AT_COMMAND] = sd_pos(v[K_CMD]);
	if (sd_method(c, v[K_CMD], p, s->participant, &s->command) != 0)
		return -1;
	s->compensation = METHOD_NONE;
	if (v[K_COMP] != NULL) {
		snprintf(p, sizeof p, "%s.compensation", s->path);
		if (sd_str(c, v[K_COMP], n, p, true, &tmp) != 0)
			return -1;
		free(tmp);
		s->at[SAGA_AT_COMPENSATION] = sd_pos(v[K_COMP]);
		if (sd_method(c, v[K_COMP], p, s->participant, &s->compensation) != 0)
			return -1;
	}
	return 0;
}

/* sd_range: value *v of node n (at path p) within [lo, hi], the range of
 * the daemon option it replaces (orchestratord --step-timeout,
 * --backoff-base, --backoff-cap, --attention-after) */
static int sd_range(sd_ctx *c, struct fy_node *n, const char *p, int64_t v, int64_t lo, int64_t hi)
{
	if (v >= lo && v <= hi)
		return 0;
	char why[96];
	snprintf(why, sizeof why, "%lld is out of range (%lld to %lld)", (long long)v,
	    (long long)lo, (long long)hi);
	return sd_fail(c, n, p, why);
}

static int sd_step_retry(sd_ctx *c, struct fy_node *n, saga_def_step *s)
{
	static const char *const keys[] = {"base_ms", "cap_ms", "attention_after", NULL};
	struct fy_node *v[3];
	char p[200];
	snprintf(p, sizeof p, "%s.retry", s->path);
	if (sd_keys(c, n, p, keys, v) != 0)
		return -1;
	int64_t *dst[3] = {&s->retry_base_ms, &s->retry_cap_ms, &s->attention_after};
	for (int i = 0; i < 3; i++) {
		char pk[220];
		snprintf(pk, sizeof pk, "%s.%s", p, keys[i]);
		static const int64_t hi[3] = {600000, 3600000, 1000000};
		if (v[i] != NULL
		    && (sd_int(c, v[i], pk, dst[i]) != 0
		        || sd_range(c, v[i], pk, *dst[i], 1, hi[i]) != 0))
			return -1;
	}
	if (v[0] != NULL && v[1] != NULL && s->retry_cap_ms < s->retry_base_ms) {
		char pk[220];
		snprintf(pk, sizeof pk, "%s.cap_ms", p);
		return sd_fail(c, v[1], pk, "cap_ms is less than base_ms");
	}
	return 0;
}

/* sd_step reads one step (a mapping) into s, whose path is set. */
static int sd_step(sd_ctx *c, struct fy_node *n, saga_def_step *s)
{
	static const char *const keys[] = {"name", "state", "compensating", "participant",
	    "command", "compensation", "kind", "deadline_ms", "retry", "input", NULL};
	struct fy_node *v[10];
	if (sd_keys(c, n, s->path, keys, v) != 0)
		return -1;
	s->at[SAGA_AT_STEP] = sd_pos(n);
	s->deadline_ms = s->retry_base_ms = s->retry_cap_ms = s->attention_after = SAGA_DEF_DEFAULT;
	if (sd_step_names(c, n, v, s) != 0 || sd_step_methods(c, n, v, s) != 0)
		return -1;
	char p[200];
	snprintf(p, sizeof p, "%s.kind", s->path);
	s->at[SAGA_AT_KIND] = sd_pos(v[K_KIND]);
	if (sd_kind(c, v[K_KIND], n, p, s) != 0)
		return -1;
	if (v[K_DEADLINE] != NULL) {
		snprintf(p, sizeof p, "%s.deadline_ms", s->path);
		s->at[SAGA_AT_DEADLINE] = sd_pos(v[K_DEADLINE]);
		const char *dv
		    = fy_node_is_scalar(v[K_DEADLINE]) ? fy_node_get_scalar0(v[K_DEADLINE]) : NULL;
		if ((dv == NULL || strcmp(dv, "default") != 0)
		    && (sd_int_or(c, v[K_DEADLINE], p, &s->deadline_ms,
		            "a positive integer or default expected")
		            != 0
		        || sd_range(c, v[K_DEADLINE], p, s->deadline_ms, 10, 86400000) != 0))
			return -1;
	}
	if (v[K_RETRY] != NULL && sd_step_retry(c, v[K_RETRY], s) != 0)
		return -1;
	snprintf(p, sizeof p, "%s.input", s->path);
	if (v[K_INPUT] == NULL)
		return sd_fail(c, n, p, "missing");
	s->at[SAGA_AT_INPUT] = sd_pos(v[K_INPUT]);
	return sd_input(c, v[K_INPUT], p, s);
}

/* sd_group reads a group (`group: NAME`, `steps: [...]`) at steps[*at]. */
static int sd_group(sd_ctx *c, struct fy_node *n, const char *path, saga_def_type *t)
{
	static const char *const keys[] = {"group", "steps", NULL};
	struct fy_node *v[2];
	if (sd_keys(c, n, path, keys, v) != 0)
		return -1;
	char p[200], *gname = NULL;
	snprintf(p, sizeof p, "%s.group", path);
	if (sd_str(c, v[0], n, p, true, &gname) != 0)
		return -1;
	bool ok = sd_lower_name(gname);
	/* a group is one node: two of one name in a type would be numbered
	 * one group (saga_def_flow) when consecutive */
	const saga_def_step *first = NULL;
	for (size_t i = 0; ok && first == NULL && i < t->nsteps; i++)
		if (t->steps[i].group != NULL && strcmp(t->steps[i].group, gname) == 0)
			first = &t->steps[i];
	free(gname);
	if (!ok)
		return sd_fail(c, v[0], p, "a name is [a-z][a-z0-9_]*, at most 64 bytes");
	if (first != NULL) {
		char was[120];
		snprintf(was, sizeof was, "%s", first->path);
		char *dot = strrchr(was, '.'); /* "...steps[0].steps[1]" -> the group's path */
		if (dot != NULL)
			*dot = '\0';
		char msg[300];
		snprintf(msg, sizeof msg, "a second group named %s (the first is %s)",
		    fy_node_get_scalar0(v[0]), was);
		return sd_fail(c, v[0], p, msg);
	}
	snprintf(p, sizeof p, "%s.steps", path);
	if (v[1] == NULL)
		return sd_fail(c, n, p, "missing");
	if (!fy_node_is_sequence(v[1]))
		return sd_fail(c, v[1], p, "a sequence of steps expected");
	if (fy_node_sequence_item_count(v[1]) < 1)
		return sd_fail(c, v[1], p, "at least one step");
	void *it = NULL;
	struct fy_node *m;
	for (int j = 0; (m = fy_node_sequence_iterate(v[1], &it)) != NULL; j++) {
		saga_def_step *s = &t->steps[t->nsteps++];
		if (snprintf(s->path, sizeof s->path, "%s.steps[%d]", path, j)
		    >= (int)sizeof s->path)
			return sd_fail(c, m, path, "path too long");
		if ((s->group = strdup(fy_node_get_scalar0(v[0]))) == NULL)
			return sd_oom(c);
		if (sd_step(c, m, s) != 0)
			return -1;
	}
	return 0;
}

/* sd_count_steps counts the steps of a `steps` sequence, groups' members
 * included (for the allocation and the limit). */
static size_t sd_count_steps(struct fy_node *seq)
{
	size_t k = 0;
	void *it = NULL;
	struct fy_node *m;
	while ((m = fy_node_sequence_iterate(seq, &it)) != NULL) {
		struct fy_node *g = fy_node_is_mapping(m)
		    ? fy_node_mapping_lookup_by_string(m, "steps", 5)
		    : NULL;
		k += (g != NULL && fy_node_is_sequence(g)) ? (size_t)fy_node_sequence_item_count(g)
		                                           : 1;
	}
	return k;
}

static int sd_type_steps(
    sd_ctx *c, struct fy_node *seq, struct fy_node *parent, saga_def_type *t, size_t *total)
{
	char p[200];
	snprintf(p, sizeof p, "sagas.%s.steps", t->name);
	if (seq == NULL)
		return sd_fail(c, parent, p, "missing");
	if (!fy_node_is_sequence(seq))
		return sd_fail(c, seq, p, "a sequence of steps expected");
	if (fy_node_sequence_item_count(seq) < 1)
		return sd_fail(c, seq, p, "at least one step");
	size_t k = sd_count_steps(seq);
	*total += k;
	if (*total > SAGA_DEF_MAX_STEPS)
		return sd_fail(c, seq, p, "more than 64 steps in the file's types");
	if ((t->steps = calloc(k, sizeof *t->steps)) == NULL)
		return sd_oom(c);
	void *it = NULL;
	struct fy_node *m;
	for (int i = 0; (m = fy_node_sequence_iterate(seq, &it)) != NULL; i++) {
		char sp[96];
		if (snprintf(sp, sizeof sp, "%s[%d]", p, i) >= (int)sizeof sp)
			return sd_fail(c, m, p, "path too long");
		if (fy_node_is_mapping(m)
		    && fy_node_mapping_lookup_by_string(m, "group", 5) != NULL) {
			if (sd_group(c, m, sp, t) != 0)
				return -1;
			continue;
		}
		saga_def_step *s = &t->steps[t->nsteps++];
		memcpy(s->path, sp, sizeof sp);
		if (sd_step(c, m, s) != 0)
			return -1;
	}
	return 0;
}

static int sd_type(sd_ctx *c, struct fy_node *k, struct fy_node *n, saga_def_type *t, size_t *total)
{
	static const char *const keys[] = {"input", "completed", "cancelled", "steps", NULL};
	struct fy_node *v[4];
	if (sd_str(c, k, NULL, "sagas", true, &t->name) != 0)
		return -1;
	char p[200];
	snprintf(p, sizeof p, "sagas.%s", t->name);
	t->at = sd_pos(k);
	if (!sd_lower_name(t->name))
		return sd_fail(c, k, p, "a name is [a-z][a-z0-9_]*, at most 64 bytes");
	if (sd_keys(c, n, p, keys, v) != 0)
		return -1;
	char **dst[3] = {&t->input, &t->completed, &t->cancelled};
	saga_def_pos *at[3] = {&t->input_at, &t->completed_at, &t->cancelled_at};
	for (int i = 0; i < 3; i++) {
		snprintf(p, sizeof p, "sagas.%s.%s", t->name, keys[i]);
		if (sd_str(c, v[i], n, p, true, dst[i]) != 0)
			return -1;
		*at[i] = sd_pos(v[i]);
		if (i > 0 && !sd_upper_name(*dst[i]))
			return sd_fail(c, v[i], p, "a state is [A-Z][A-Z0-9_]*, at most 64 bytes");
	}
	return sd_type_steps(c, v[3], n, t, total);
}

/* sd_service_known: "sagas.v1.X" where X is a service of the table. */
static bool sd_service_known(const char *service)
{
	if (strncmp(service, "sagas.v1.", 9) != 0)
		return false;
	for (int i = 0; i < METHOD_COUNT; i++)
		if (strcmp(method_table[i].service, service + 9) == 0)
			return true;
	return false;
}

/* sd_unknown_service: the error for a service not in the table, listing
 * the table's. */
static int sd_unknown_service(sd_ctx *c, struct fy_node *n, const char *path, const char *service)
{
	char msg[512];
	int len = snprintf(
	    msg, sizeof msg, "%.64s is not a service of the table of methods (services:", service);
	for (int i = 0; i < METHOD_COUNT && (size_t)len < sizeof msg; i++) {
		bool seen = false;
		for (int j = 0; j < i && !seen; j++)
			seen = strcmp(method_table[j].service, method_table[i].service) == 0;
		if (!seen)
			len += snprintf(msg + len, sizeof msg - (size_t)len, "%ssagas.v1.%s",
			    i > 0 ? ", " : " ", method_table[i].service);
	}
	if ((size_t)len < sizeof msg)
		snprintf(msg + len, sizeof msg - (size_t)len, ")");
	return sd_fail(c, n, path, msg);
}

/* sd_option_name: s has the form of a long option, --[a-z][a-z0-9-]*. */
static bool sd_option_name(const char *s)
{
	if (strncmp(s, "--", 2) != 0 || s[2] < 'a' || s[2] > 'z')
		return false;
	for (s += 3; *s != '\0'; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '-'))
			return false;
	return true;
}

static int sd_participants(sd_ctx *c, struct fy_node *n, struct fy_node *root)
{
	if (n == NULL)
		return sd_fail(c, root, "participants", "missing");
	if (!fy_node_is_mapping(n))
		return sd_fail(c, n, "participants", "a mapping expected");
	if (fy_node_mapping_item_count(n) < 1)
		return sd_fail(c, n, "participants", "at least one participant");
	int cnt = fy_node_mapping_item_count(n);
	if (cnt > SAGA_DEF_MAX_NAMED)
		return sd_fail(c, n, "participants", "more than 64 participants");
	if ((c->d->participants = calloc((size_t)cnt, sizeof *c->d->participants)) == NULL)
		return sd_oom(c);
	void *it = NULL;
	struct fy_node_pair *pr;
	while ((pr = fy_node_mapping_iterate(n, &it)) != NULL) {
		static const char *const keys[] = {"service", "urls", NULL};
		struct fy_node *v[2], *k = fy_node_pair_key(pr);
		saga_def_participant *p = &c->d->participants[c->d->nparticipants++];
		if (sd_str(c, k, n, "participants", true, &p->name) != 0)
			return -1;
		for (size_t i = 0; i + 1 < c->d->nparticipants; i++)
			if (strcmp(c->d->participants[i].name, p->name) == 0)
				return sd_dup(c, k);
		char path[200];
		snprintf(path, sizeof path, "participants.%s", p->name);
		p->at = sd_pos(k);
		if (!sd_lower_name(p->name))
			return sd_fail(c, k, path, "a name is [a-z][a-z0-9_]*, at most 64 bytes");
		if (sd_keys(c, fy_node_pair_value(pr), path, keys, v) != 0)
			return -1;
		snprintf(path, sizeof path, "participants.%s.service", p->name);
		if (sd_str(c, v[0], fy_node_pair_value(pr), path, true, &p->service) != 0)
			return -1;
		p->service_at = sd_pos(v[0]);
		if (!sd_service_known(p->service))
			return sd_unknown_service(c, v[0], path, p->service);
		snprintf(path, sizeof path, "participants.%s.urls", p->name);
		if (sd_str(c, v[1], fy_node_pair_value(pr), path, true, &p->urls) != 0)
			return -1;
		if (!sd_option_name(p->urls))
			return sd_fail(c, v[1], path, "an option name --[a-z][a-z0-9-]* expected");
	}
	return 0;
}

static int sd_format(sd_ctx *c, struct fy_node *n, struct fy_node *root)
{
	if (n == NULL)
		return sd_fail(c, root, "format", "missing");
	const char *s = fy_node_is_scalar(n) ? fy_node_get_scalar0(n) : NULL;
	if (s == NULL || strcmp(s, "1") != 0) {
		char msg[160];
		snprintf(msg, sizeof msg, "format %.40s is not supported (this build reads %d)",
		    s != NULL ? s : "?", SAGA_DEF_FORMAT);
		return sd_fail(c, n, "format", msg);
	}
	c->d->format = SAGA_DEF_FORMAT;
	return 0;
}

/* sd_root reads the document's root mapping. */
int sd_root(sd_ctx *c, struct fy_node *root)
{
	static const char *const keys[] = {"format", "participants", "sagas", NULL};
	struct fy_node *v[3];
	if (sd_keys(c, root, NULL, keys, v) != 0)
		return -1;
	if (sd_format(c, v[0], root) != 0 || sd_participants(c, v[1], root) != 0)
		return -1;
	if (v[2] == NULL)
		return sd_fail(c, root, "sagas", "missing");
	if (!fy_node_is_mapping(v[2]))
		return sd_fail(c, v[2], "sagas", "a mapping expected");
	if (fy_node_mapping_item_count(v[2]) < 1)
		return sd_fail(c, v[2], "sagas", "at least one saga type");
	int cnt = fy_node_mapping_item_count(v[2]);
	if (cnt > SAGA_DEF_MAX_NAMED)
		return sd_fail(c, v[2], "sagas", "more than 64 saga types");
	if ((c->d->types = calloc((size_t)cnt, sizeof *c->d->types)) == NULL)
		return sd_oom(c);
	size_t total = 0;
	void *it = NULL;
	struct fy_node_pair *pr;
	while ((pr = fy_node_mapping_iterate(v[2], &it)) != NULL) {
		saga_def_type *t = &c->d->types[c->d->ntypes++];
		const char *ks = fy_node_is_scalar(fy_node_pair_key(pr))
		    ? fy_node_get_scalar0(fy_node_pair_key(pr))
		    : NULL;
		for (size_t i = 0; ks != NULL && i + 1 < c->d->ntypes; i++)
			if (strcmp(c->d->types[i].name, ks) == 0)
				return sd_dup(c, fy_node_pair_key(pr));
		if (sd_type(c, fy_node_pair_key(pr), fy_node_pair_value(pr), t, &total) != 0)
			return -1;
	}
	return 0;
}
