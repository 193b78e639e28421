/* saga_def_cmd: plans of commands and compensations, and requests built
 * from them (saga_def_cmd.h). */
#include "saga_def_cmd.h"

#include <string.h>

#include "saga_def_int.h"

/* dc_value_size: the bytes of one value of field f's type in a message
 * struct (a repeated field's value is its array's pointer). */
static size_t dc_value_size(const ProtobufCFieldDescriptor *f)
{
	if (f->label == PROTOBUF_C_LABEL_REPEATED)
		return sizeof(void *);
	switch (f->type) {
	case PROTOBUF_C_TYPE_INT32:
	case PROTOBUF_C_TYPE_SINT32:
	case PROTOBUF_C_TYPE_SFIXED32:
	case PROTOBUF_C_TYPE_UINT32:
	case PROTOBUF_C_TYPE_FIXED32:
	case PROTOBUF_C_TYPE_ENUM:
		return 4;
	case PROTOBUF_C_TYPE_INT64:
	case PROTOBUF_C_TYPE_SINT64:
	case PROTOBUF_C_TYPE_SFIXED64:
	case PROTOBUF_C_TYPE_UINT64:
	case PROTOBUF_C_TYPE_FIXED64:
		return 8;
	case PROTOBUF_C_TYPE_FLOAT:
		return sizeof(float);
	case PROTOBUF_C_TYPE_DOUBLE:
		return sizeof(double);
	case PROTOBUF_C_TYPE_BOOL:
		return sizeof(protobuf_c_boolean);
	case PROTOBUF_C_TYPE_STRING:
	case PROTOBUF_C_TYPE_MESSAGE:
		return sizeof(void *);
	case PROTOBUF_C_TYPE_BYTES:
		return sizeof(ProtobufCBinaryData);
	}
	return 0;
}

static bool dc_oneof(const ProtobufCFieldDescriptor *f)
{
	return (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) != 0;
}

int saga_def_cmd_make(const saga_defs *d, const saga_def_type *t, size_t step, bool compensation,
    saga_def_cmd *out, char *err, size_t errlen)
{
	memset(out, 0, sizeof *out);
	if (step >= t->nsteps) {
		sd_refuse(err, errlen, "sagas.%s has no step %zu", t->name, step);
		return -1;
	}
	const saga_def_step *s = &t->steps[step];
	enum method_id id = compensation ? s->compensation : s->command;
	if (id == METHOD_NONE) {
		sd_refuse(err, errlen, "%s has no compensation", s->path);
		return -1;
	}
	const ProtobufCMessageDescriptor *req = sd_request_of(id);
	if (req == NULL || t->input_desc == NULL) {
		sd_refuse(err, errlen, "%s: %s has no request message in this build", s->path,
		    METHOD_PATH(id));
		return -1;
	}
	if (req->sizeof_message > SAGA_DEF_REQ_SIZE || req->n_fields > SAGA_DEF_CMD_MAX_FIELDS) {
		sd_refuse(err, errlen, "%s: %s is larger than a plan holds (%zu bytes, %u fields)",
		    s->path, req->name, req->sizeof_message, req->n_fields);
		return -1;
	}
	const saga_def_participant *part = saga_def_find_participant(d, s->participant);
	if (part == NULL)
		return sd_refuse(err, errlen, "%s: no participant %s", s->path, s->participant);
	out->method = id;
	out->path = METHOD_PATH(id);
	out->request = req;
	out->input = t->input_desc;
	out->participant = (size_t)(part - d->participants);
	out->saga_id = protobuf_c_message_descriptor_get_field_by_name(req, "saga_id");
	out->started = protobuf_c_message_descriptor_get_field_by_name(req, "saga_started_unix_ms");
	if ((out->saga_id != NULL
	        && (out->saga_id->type != PROTOBUF_C_TYPE_STRING
	            || out->saga_id->label == PROTOBUF_C_LABEL_REPEATED || dc_oneof(out->saga_id)))
	    || (out->started != NULL
	        && (out->started->type != PROTOBUF_C_TYPE_INT64
	            || out->started->label == PROTOBUF_C_LABEL_REPEATED
	            || dc_oneof(out->started)))) {
		sd_refuse(err, errlen,
		    "%s: %s's saga_id or saga_started_unix_ms is not the engine's", s->path,
		    req->name);
		return -1;
	}
	/* every field of the request but the engine's, in the request's order */
	for (unsigned i = 0; i < req->n_fields; i++) {
		const ProtobufCFieldDescriptor *f = &req->fields[i];
		if (sd_engine_field(f->name))
			continue;
		const saga_def_map *m = sd_map_of(s, f->name);
		if (m == NULL) {
			sd_refuse(err, errlen, "%s.input: the field %s of %s is not mapped",
			    s->path, f->name, req->name);
			return -1;
		}
		saga_def_fill *fill = &out->fill[out->nfill];
		fill->to = f;
		if (m->constant != NULL) {
			if (sd_const_value(f, m->constant, &fill->k) != SD_FITS) {
				sd_refuse(err, errlen, "%s.input.%s: the constant %s does not fit",
				    s->path, f->name, m->constant);
				return -1;
			}
		} else {
			fill->from = protobuf_c_message_descriptor_get_field_by_name(
			    t->input_desc, m->from);
			if (fill->from == NULL || !sd_same_type(fill->from, f)) {
				sd_refuse(err, errlen, "%s.input.%s: %s does not fit", s->path,
				    f->name, m->from);
				return -1;
			}
		}
		out->nfill++;
	}
	return 0;
}

/* dc_present: whether message m has field f set (a field without presence
 * always is: its default is its value). */
static bool dc_present(const ProtobufCMessage *m, const ProtobufCFieldDescriptor *f)
{
	const char *base = (const char *)m;
	if (f->quantifier_offset == 0 || f->label == PROTOBUF_C_LABEL_REPEATED)
		return true;
	if (dc_oneof(f)) {
		uint32_t which;
		memcpy(&which, base + f->quantifier_offset, sizeof which);
		return which == f->id;
	}
	protobuf_c_boolean has;
	memcpy(&has, base + f->quantifier_offset, sizeof has);
	return has != 0;
}

/* dc_mark: marks field f of message m set (its presence, when it has one). */
static void dc_mark(unsigned char *base, const ProtobufCFieldDescriptor *f)
{
	if (f->quantifier_offset == 0 || f->label == PROTOBUF_C_LABEL_REPEATED)
		return;
	if (dc_oneof(f)) {
		uint32_t which = f->id;
		memcpy(base + f->quantifier_offset, &which, sizeof which);
		return;
	}
	protobuf_c_boolean has = 1;
	memcpy(base + f->quantifier_offset, &has, sizeof has);
}

void saga_def_cmd_build(const saga_def_cmd *c, const ProtobufCMessage *input, const char *saga_id,
    int64_t started_ms, saga_def_req *out)
{
	protobuf_c_message_init(c->request, out->bytes);
	unsigned char *to = out->bytes;
	const unsigned char *from = (const unsigned char *)input;
	if (c->saga_id != NULL) {
		char *id
		    = (char *)saga_id; /* the generated structs take char *; packing only reads */
		memcpy(to + c->saga_id->offset, &id, sizeof id);
		dc_mark(to, c->saga_id);
	}
	if (c->started != NULL) {
		memcpy(to + c->started->offset, &started_ms, sizeof started_ms);
		dc_mark(to, c->started);
	}
	for (size_t i = 0; i < c->nfill; i++) {
		const saga_def_fill *f = &c->fill[i];
		if (f->from == NULL) {
			memcpy(to + f->to->offset, &f->k, dc_value_size(f->to));
			dc_mark(to, f->to);
			continue;
		}
		if (!dc_present(input, f->from))
			continue; /* the request's default, as the input's */
		memcpy(to + f->to->offset, from + f->from->offset, dc_value_size(f->to));
		if (f->to->label == PROTOBUF_C_LABEL_REPEATED)
			memcpy(to + f->to->quantifier_offset, from + f->from->quantifier_offset,
			    sizeof(size_t));
		else
			dc_mark(to, f->to);
	}
}
