/* saga_def_check: the rules across steps and types of "Validation at
 * start" (docs/saga-definitions.md): kinds and the pivot, compensations,
 * groups, deadlines, names, and the input mappings walked through
 * protoc-c's descriptors. */
#include "saga_def_int.h"

#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "saga_proto_registry.h"

#define SD_N(a) (sizeof(a) / sizeof((a)[0]))

const ProtobufCMessageDescriptor *sd_message_find(const char *name)
{
	/* every message of proto/sagas/v1, generated at build time: a .proto
	 * built like the others is found with no change here */
	return saga_proto_message(name);
}

const ProtobufCMessageDescriptor *sd_request_of(enum method_id id)
{
	if (id < 0 || id >= METHOD_COUNT)
		return NULL;
	char svc[96];
	snprintf(svc, sizeof svc, "sagas.v1.%s", method_table[id].service);
	const ProtobufCServiceDescriptor *d = saga_proto_service(svc);
	for (unsigned j = 0; d != NULL && j < d->n_methods; j++)
		if (strcmp(d->methods[j].name, method_table[id].name) == 0)
			return d->methods[j].input;
	return NULL;
}

static const char *sd_type_name(const ProtobufCFieldDescriptor *f)
{
	static const char *const names[] = {"int32", "sint32", "sfixed32", "int64", "sint64",
	    "sfixed64", "uint32", "fixed32", "uint64", "fixed64", "float", "double", "bool", "enum",
	    "string", "bytes", "message"};
	if (f->type == PROTOBUF_C_TYPE_MESSAGE || f->type == PROTOBUF_C_TYPE_ENUM) {
		const char *n = f->type == PROTOBUF_C_TYPE_MESSAGE
		    ? ((const ProtobufCMessageDescriptor *)f->descriptor)->name
		    : ((const ProtobufCEnumDescriptor *)f->descriptor)->name;
		return n;
	}
	return (size_t)f->type < SD_N(names) ? names[f->type] : "?";
}

bool sd_engine_field(const char *name)
{
	return strcmp(name, "saga_id") == 0 || strcmp(name, "saga_started_unix_ms") == 0;
}

const saga_def_map *sd_map_of(const saga_def_step *s, const char *field)
{
	for (size_t j = 0; j < s->ninput; j++)
		if (strcmp(s->input[j].field, field) == 0)
			return &s->input[j];
	return NULL;
}

enum sd_fit sd_const_value(const ProtobufCFieldDescriptor *f, char *text, saga_def_value *out)
{
	saga_def_value v;
	memset(&v, 0, sizeof v);
	if (out == NULL)
		out = &v;
	if (f->label == PROTOBUF_C_LABEL_REPEATED)
		return SD_NOT_A;
	if (f->type == PROTOBUF_C_TYPE_STRING) {
		out->s = text;
		return SD_FITS;
	}
	if (f->type == PROTOBUF_C_TYPE_BYTES) {
		out->bin.data = (uint8_t *)text;
		out->bin.len = strlen(text);
		return SD_FITS;
	}
	if (f->type == PROTOBUF_C_TYPE_BOOL) {
		out->b = strcmp(text, "true") == 0;
		return out->b || strcmp(text, "false") == 0 ? SD_FITS : SD_NOT_A;
	}
	/* a whole decimal number, nothing around it (strtoll would skip white
	 * space before it) */
	if (isspace((unsigned char)text[0]))
		return SD_NOT_A;
	char *end = NULL;
	errno = 0;
	switch (f->type) {
	case PROTOBUF_C_TYPE_INT32:
	case PROTOBUF_C_TYPE_SINT32:
	case PROTOBUF_C_TYPE_SFIXED32:
	case PROTOBUF_C_TYPE_INT64:
	case PROTOBUF_C_TYPE_SINT64:
	case PROTOBUF_C_TYPE_SFIXED64: {
		long long n = strtoll(text, &end, 10);
		if (end == text || *end != '\0')
			return SD_NOT_A;
		bool wide = f->type == PROTOBUF_C_TYPE_INT64 || f->type == PROTOBUF_C_TYPE_SINT64
		    || f->type == PROTOBUF_C_TYPE_SFIXED64;
		if (errno == ERANGE || (!wide && (n < INT32_MIN || n > INT32_MAX)))
			return SD_RANGE;
		if (wide)
			out->i64 = (int64_t)n;
		else
			out->i32 = (int32_t)n;
		return SD_FITS;
	}
	case PROTOBUF_C_TYPE_UINT32:
	case PROTOBUF_C_TYPE_FIXED32:
	case PROTOBUF_C_TYPE_UINT64:
	case PROTOBUF_C_TYPE_FIXED64: {
		unsigned long long n = strtoull(text, &end, 10);
		if (end == text || *end != '\0')
			return SD_NOT_A;
		bool wide = f->type == PROTOBUF_C_TYPE_UINT64 || f->type == PROTOBUF_C_TYPE_FIXED64;
		/* strtoull takes "-1" as its negation: a sign is out of range */
		if (text[0] == '-' || errno == ERANGE || (!wide && n > UINT32_MAX))
			return SD_RANGE;
		if (wide)
			out->u64 = (uint64_t)n;
		else
			out->u32 = (uint32_t)n;
		return SD_FITS;
	}
	default: /* message, enum, float, double: no constants */
		return SD_NOT_A;
	}
}

bool sd_same_type(const ProtobufCFieldDescriptor *a, const ProtobufCFieldDescriptor *b)
{
	return a->type == b->type && a->label == b->label && a->descriptor == b->descriptor;
}

/* sd_article: "an" before a type name said with a vowel first, else "a". */
static const char *sd_article(const char *word)
{
	return strchr("aeioAEIO", word[0]) != NULL && word[0] != '\0' ? "an" : "a";
}

/* sd_fields writes the fields of m a mapping may name (all but the
 * engine's), comma-separated, into out (n bytes, cut, NUL-terminated). */
static void sd_fields(const ProtobufCMessageDescriptor *m, char *out, size_t n)
{
	out[0] = '\0';
	for (unsigned i = 0; i < m->n_fields; i++)
		if (!sd_engine_field(m->fields[i].name))
			snprintf(out + strlen(out), n - strlen(out), "%s%s", out[0] ? ", " : "",
			    m->fields[i].name);
}

/* sd_no_request refuses step s's method `id`, of the table of methods but
 * of a service whose .proto this build does not have (not in PROTO_NAMES:
 * its request has no descriptor). Returns -1. */
static int sd_no_request(
    const saga_defs *d, const saga_def_step *s, enum method_id id, char *err, size_t errlen)
{
	sd_err(err, errlen, d->file, s->at[SAGA_AT_COMMAND], s->path,
	    "%s: its service's .proto is not built into this program (proto/CMakeLists.txt, "
	    "PROTO_NAMES)",
	    method_table[id].path);
	return -1;
}

/* sd_check_map checks one mapping entry against the command's request. */
static int sd_check_map(const saga_defs *d, const saga_def_type *t, const saga_def_step *s,
    const saga_def_map *m, char *err, size_t errlen)
{
	const ProtobufCMessageDescriptor *req = sd_request_of(s->command);
	char p[200];
	snprintf(p, sizeof p, "%s.input.%s", s->path, m->field);
	if (req == NULL)
		return sd_no_request(d, s, s->command, err, errlen);
	if (sd_engine_field(m->field)) {
		sd_err(err, errlen, d->file, m->at, p, "%s is set by the engine", m->field);
		return -1;
	}
	const ProtobufCFieldDescriptor *rf
	    = protobuf_c_message_descriptor_get_field_by_name(req, m->field);
	if (rf == NULL) {
		char fields[256];
		sd_fields(req, fields, sizeof fields);
		sd_err(err, errlen, d->file, m->at, p, "not a field of %s (it has %s)", req->name,
		    fields);
		return -1;
	}
	if (m->constant != NULL) {
		enum sd_fit fit = sd_const_value(rf, m->constant, NULL);
		if (fit == SD_RANGE) {
			sd_err(err, errlen, d->file, m->vat, p, "the constant %s does not fit %s",
			    m->constant, sd_type_name(rf));
			return -1;
		}
		if (fit != SD_FITS) {
			sd_err(err, errlen, d->file, m->vat, p, "the constant %s is not %s %s",
			    m->constant, sd_article(sd_type_name(rf)), sd_type_name(rf));
			return -1;
		}
		return 0;
	}
	const ProtobufCFieldDescriptor *inf
	    = protobuf_c_message_descriptor_get_field_by_name(t->input_desc, m->from);
	if (inf == NULL) {
		char fields[256];
		sd_fields(t->input_desc, fields, sizeof fields);
		sd_err(err, errlen, d->file, m->vat, p, "%s is not a field of %s (it has %s)",
		    m->from, t->input_desc->name, fields);
		return -1;
	}
	if (!sd_same_type(inf, rf)) {
		sd_err(err, errlen, d->file, m->vat, p, "%s.%s is %s, %s.%s is %s",
		    t->input_desc->name, inf->name, sd_type_name(inf), req->name, rf->name,
		    sd_type_name(rf));
		return -1;
	}
	return 0;
}

/* sd_check_unmapped: every field of the request of `id` but the engine's
 * is mapped, and a mapped field the request shares has the same type. */
static int sd_check_unmapped(const saga_defs *d, const saga_def_type *t, const saga_def_step *s,
    enum method_id id, char *err, size_t errlen)
{
	const ProtobufCMessageDescriptor *req = sd_request_of(id);
	char p[200];
	snprintf(p, sizeof p, "%s.input", s->path);
	if (req == NULL)
		return sd_no_request(d, s, id, err, errlen);
	for (unsigned i = 0; i < req->n_fields; i++) {
		const ProtobufCFieldDescriptor *f = &req->fields[i];
		if (sd_engine_field(f->name))
			continue;
		const saga_def_map *m = sd_map_of(s, f->name);
		if (m == NULL) {
			sd_err(err, errlen, d->file, s->at[SAGA_AT_INPUT], p,
			    "the field %s of %s is not mapped", f->name, req->name);
			return -1;
		}
		const ProtobufCFieldDescriptor *inf = m->from != NULL
		    ? protobuf_c_message_descriptor_get_field_by_name(t->input_desc, m->from)
		    : NULL;
		if ((m->constant != NULL && sd_const_value(f, m->constant, NULL) != SD_FITS)
		    || (inf != NULL && !sd_same_type(inf, f))) {
			sd_err(err, errlen, d->file, m->vat, p,
			    "%s: the value does not fit %s.%s (%s)", m->field, req->name, f->name,
			    sd_type_name(f));
			return -1;
		}
	}
	return 0;
}

static int sd_check_input(
    const saga_defs *d, const saga_def_type *t, const saga_def_step *s, char *err, size_t errlen)
{
	for (size_t j = 0; j < s->ninput; j++) {
		if (j > 0 && strcmp(s->input[j].field, s->input[j - 1].field) == 0) {
			char p[200];
			snprintf(p, sizeof p, "%s.input.%s", s->path, s->input[j].field);
			sd_err(err, errlen, d->file, s->input[j].at, p, "mapped twice");
			return -1;
		}
		if (sd_check_map(d, t, s, &s->input[j], err, errlen) != 0)
			return -1;
	}
	if (sd_check_unmapped(d, t, s, s->command, err, errlen) != 0)
		return -1;
	if (s->compensation != METHOD_NONE
	    && sd_check_unmapped(d, t, s, s->compensation, err, errlen) != 0)
		return -1;
	return 0;
}

/* sd_check_kind: one step's kind against the pivot (at index pivot, or
 * -1), its compensation, its group and its deadline. */
static int sd_check_kind(
    const saga_defs *d, const saga_def_step *s, long i, long pivot, char *err, size_t errlen)
{
	char p[200];
	snprintf(p, sizeof p, "%s.kind", s->path);
	saga_def_pos at = s->at[SAGA_AT_KIND];
	const char *why = NULL;
	if (s->group != NULL && s->kind != SAGA_STEP_COMPENSABLE)
		why = "a group holds compensable steps only";
	else if (s->group != NULL && pivot >= 0 && i > pivot)
		why = "a group after the pivot";
	else if (s->kind == SAGA_STEP_COMPENSABLE && pivot >= 0 && i > pivot)
		why = "a compensable step after the pivot";
	else if (s->kind == SAGA_STEP_RETRIABLE && pivot < 0)
		why = "a retriable step needs the pivot before it (this type has none)";
	else if (s->kind == SAGA_STEP_RETRIABLE && i < pivot)
		why = "a retriable step before the pivot";
	else if (s->kind != SAGA_STEP_RETRIABLE && s->compensation == METHOD_NONE)
		why = s->kind == SAGA_STEP_PIVOT ? "a pivot without a compensation"
		                                 : "a compensable step without a compensation";
	if (why != NULL) {
		sd_err(err, errlen, d->file, at, p, "%s", why);
		return -1;
	}
	if (s->kind == SAGA_STEP_RETRIABLE && s->compensation != METHOD_NONE) {
		snprintf(p, sizeof p, "%s.compensation", s->path);
		sd_err(err, errlen, d->file, s->at[SAGA_AT_COMPENSATION], p,
		    "a retriable step has no compensation");
		return -1;
	}
	if (s->kind == SAGA_STEP_RETRIABLE && s->at[SAGA_AT_DEADLINE].line != 0) {
		snprintf(p, sizeof p, "%s.deadline_ms", s->path);
		sd_err(err, errlen, d->file, s->at[SAGA_AT_DEADLINE], p,
		    "a retriable step has no deadline (it is retried until it succeeds)");
		return -1;
	}
	return 0;
}

/* sd_same_key refuses step i of t when an earlier step of t sends the same
 * command, or the same compensation, to the same daemon (a participant of
 * the same `urls` option): a participant applies each (saga id, method)
 * once (rule 2), so the second would be answered with the first's record
 * and never applied. Returns 0, or -1 with the refusal in err. */
static int sd_same_key(
    const saga_defs *d, const saga_def_type *t, size_t i, char *err, size_t errlen)
{
	const saga_def_step *s = &t->steps[i];
	const saga_def_participant *ps = saga_def_find_participant(d, s->participant);
	for (size_t j = 0; ps != NULL && j < i; j++) {
		const saga_def_step *o = &t->steps[j];
		const saga_def_participant *po = saga_def_find_participant(d, o->participant);
		if (po == NULL || strcmp(po->urls, ps->urls) != 0)
			continue;
		bool cmd = o->command == s->command;
		if (!cmd && !(s->compensation != METHOD_NONE && o->compensation == s->compensation))
			continue;
		char p[200];
		snprintf(p, sizeof p, "%s.%s", s->path, cmd ? "command" : "compensation");
		sd_err(err, errlen, d->file, s->at[cmd ? SAGA_AT_COMMAND : SAGA_AT_COMPENSATION], p,
		    "%s sends %s to %s as %s does: a participant applies each (saga id, "
		    "method) once, so one would be answered with the other's record; give "
		    "one of them a participant of its own (another urls option)",
		    s->name, method_table[cmd ? s->command : s->compensation].name, ps->urls,
		    o->path);
		return -1;
	}
	return 0;
}

static int sd_check_steps(const saga_defs *d, const saga_def_type *t, char *err, size_t errlen)
{
	long pivot = -1;
	for (size_t i = 0; i < t->nsteps; i++) {
		const saga_def_step *s = &t->steps[i];
		if (s->kind != SAGA_STEP_PIVOT)
			continue;
		if (pivot >= 0) {
			char p[200];
			snprintf(p, sizeof p, "%s.kind", s->path);
			sd_err(err, errlen, d->file, s->at[SAGA_AT_KIND], p,
			    "a second pivot (the first is %s)", t->steps[pivot].path);
			return -1;
		}
		pivot = (long)i;
	}
	for (size_t i = 0; i < t->nsteps; i++) {
		const saga_def_step *s = &t->steps[i];
		for (size_t j = 0; j < i; j++) {
			if (strcmp(t->steps[j].name, s->name) == 0) {
				char p[200];
				snprintf(p, sizeof p, "%s.name", s->path);
				sd_err(err, errlen, d->file, s->at[SAGA_AT_NAME], p,
				    "a second step named %s (the first is %s)", s->name,
				    t->steps[j].path);
				return -1;
			}
		}
		if (sd_same_key(d, t, i, err, errlen) != 0)
			return -1;
		if (sd_check_kind(d, s, (long)i, pivot, err, errlen) != 0)
			return -1;
		if (sd_check_input(d, t, s, err, errlen) != 0)
			return -1;
	}
	return 0;
}

/* One state name of the file and where it is, for the duplicates' check. */
typedef struct sd_state {
	const char *name;
	saga_def_pos at;
	char path[120];
} sd_state;

static size_t sd_collect_states(const saga_defs *d, sd_state *st)
{
	size_t n = 0;
	for (size_t i = 0; i < d->ntypes; i++) {
		const saga_def_type *t = &d->types[i];
		for (size_t j = 0; j < t->nsteps; j++) {
			const saga_def_step *s = &t->steps[j];
			st[n] = (sd_state) {s->state, s->at[SAGA_AT_STATE], ""};
			snprintf(st[n++].path, sizeof st->path, "%s.state", s->path);
			if (s->compensating != NULL) {
				st[n]
				    = (sd_state) {s->compensating, s->at[SAGA_AT_COMPENSATING], ""};
				snprintf(st[n++].path, sizeof st->path, "%s.compensating", s->path);
			}
		}
		st[n] = (sd_state) {t->completed, t->completed_at, ""};
		snprintf(st[n++].path, sizeof st->path, "sagas.%s.completed", t->name);
		st[n] = (sd_state) {t->cancelled, t->cancelled_at, ""};
		snprintf(st[n++].path, sizeof st->path, "sagas.%s.cancelled", t->name);
	}
	return n;
}

/* sd_check_states: no state name twice in the file (in a type or across
 * types). */
static int sd_check_states(const saga_defs *d, char *err, size_t errlen)
{
	size_t cap = 0;
	for (size_t i = 0; i < d->ntypes; i++)
		cap += 2 * d->types[i].nsteps + 2;
	sd_state *st = calloc(cap, sizeof *st);
	if (st == NULL) {
		sd_err(err, errlen, d->file, (saga_def_pos) {1, 1}, NULL, "out of memory");
		return -1;
	}
	size_t n = sd_collect_states(d, st);
	int rc = 0;
	for (size_t i = 1; i < n && rc == 0; i++) {
		for (size_t j = 0; j < i && rc == 0; j++) {
			if (strcmp(st[i].name, st[j].name) != 0)
				continue;
			sd_err(err, errlen, d->file, st[i].at, st[i].path,
			    "the state %s is also %s", st[i].name, st[j].path);
			rc = -1;
		}
	}
	free(st);
	return rc;
}

int saga_def_validate(saga_defs *d, char *err, size_t errlen)
{
	for (size_t i = 0; i < d->ntypes; i++) {
		saga_def_type *t = &d->types[i];
		t->input_desc = sd_message_find(t->input);
		if (t->input_desc == NULL) {
			char p[200];
			snprintf(p, sizeof p, "sagas.%s.input", t->name);
			sd_err(err, errlen, d->file, t->input_at, p,
			    "%s is not a message of this build", t->input);
			return -1;
		}
		if (sd_check_steps(d, t, err, errlen) != 0)
			return -1;
	}
	return sd_check_states(d, err, errlen);
}

const saga_def_participant *saga_def_find_participant(const saga_defs *d, const char *name)
{
	for (size_t i = 0; d != NULL && i < d->nparticipants; i++)
		if (strcmp(d->participants[i].name, name) == 0)
			return &d->participants[i];
	return NULL;
}

const char *saga_def_kind_name(enum saga_step_kind kind)
{
	switch (kind) {
	case SAGA_STEP_COMPENSABLE:
		return "compensable";
	case SAGA_STEP_PIVOT:
		return "pivot";
	case SAGA_STEP_RETRIABLE:
		return "retriable";
	}
	return "?";
}

void saga_defs_free(saga_defs *d)
{
	if (d == NULL)
		return;
	for (size_t i = 0; i < d->nparticipants; i++) {
		free(d->participants[i].name);
		free(d->participants[i].service);
		free(d->participants[i].urls);
	}
	free(d->participants);
	for (size_t i = 0; i < d->ntypes; i++) {
		saga_def_type *t = &d->types[i];
		for (size_t j = 0; j < t->nsteps; j++) {
			saga_def_step *s = &t->steps[j];
			for (size_t k = 0; k < s->ninput; k++) {
				free(s->input[k].field);
				free(s->input[k].from);
				free(s->input[k].constant);
			}
			free(s->input);
			free(s->name);
			free(s->group);
			free(s->state);
			free(s->compensating);
			free(s->participant);
		}
		free(t->steps);
		free(t->name);
		free(t->input);
		free(t->completed);
		free(t->cancelled);
	}
	free(d->types);
	free(d->file);
	free(d);
}
