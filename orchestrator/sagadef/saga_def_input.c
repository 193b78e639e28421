/* saga_def_input: a saga's input checked against its type's definition at
 * StartSaga (saga_def.h, saga_def_input_check; docs/saga-definitions.md,
 * "A saga's input"): the message decodes as the type's input, every field
 * a step maps is set and in range, and what is stored is its canonical
 * encoding, so the same input given twice compares equal (rule 6). */
#include "saga_def_int.h"

#include <stdio.h>
#include <string.h>

#include "valid.h"

/* si_at: the value of field f of message m */
static const void *si_at(const ProtobufCMessage *m, const ProtobufCFieldDescriptor *f)
{
	return (const char *)m + f->offset;
}

/* si_mapped: some step of t maps input field `name` */
static bool si_mapped(const saga_def_type *t, const char *name)
{
	for (size_t i = 0; i < t->nsteps; i++)
		for (size_t k = 0; k < t->steps[i].ninput; k++)
			if (t->steps[i].input[k].from != NULL
			    && strcmp(t->steps[i].input[k].from, name) == 0)
				return true;
	return false;
}

/* si_integer reads an integer field's value as int64 (a uint64 past
 * INT64_MAX as INT64_MAX); false for a field of another type */
static bool si_integer(const ProtobufCMessage *m, const ProtobufCFieldDescriptor *f, int64_t *v)
{
	const void *p = si_at(m, f);
	switch (f->type) {
	case PROTOBUF_C_TYPE_INT32:
	case PROTOBUF_C_TYPE_SINT32:
	case PROTOBUF_C_TYPE_SFIXED32:
		*v = *(const int32_t *)p;
		return true;
	case PROTOBUF_C_TYPE_UINT32:
	case PROTOBUF_C_TYPE_FIXED32:
		*v = *(const uint32_t *)p;
		return true;
	case PROTOBUF_C_TYPE_INT64:
	case PROTOBUF_C_TYPE_SINT64:
	case PROTOBUF_C_TYPE_SFIXED64:
		*v = *(const int64_t *)p;
		return true;
	case PROTOBUF_C_TYPE_UINT64:
	case PROTOBUF_C_TYPE_FIXED64: {
		uint64_t u = *(const uint64_t *)p;
		*v = u > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)u;
		return true;
	}
	default:
		return false;
	}
}

/* si_32bit: an integer field of 32 bits */
static bool si_32bit(const ProtobufCFieldDescriptor *f)
{
	return f->type == PROTOBUF_C_TYPE_INT32 || f->type == PROTOBUF_C_TYPE_SINT32
	    || f->type == PROTOBUF_C_TYPE_SFIXED32 || f->type == PROTOBUF_C_TYPE_UINT32
	    || f->type == PROTOBUF_C_TYPE_FIXED32;
}

/* si_field checks field f of the input m: a string valid UTF-8 (every
 * one); a mapped one set: a string 1..VALID_NAME_MAX bytes without control
 * characters (valid_name), an integer of 32 bits 1..VALID_QTY_MAX and of
 * 64 bits 1..VALID_AMOUNT_MAX, bytes not empty, a message present. Returns 0, or -1 with the
 * refusal in err. */
static int si_field(const saga_def_type *t, const ProtobufCMessage *m,
    const ProtobufCFieldDescriptor *f, char *err, size_t errlen)
{
	bool mapped = si_mapped(t, f->name);
	if (f->label == PROTOBUF_C_LABEL_REPEATED) {
		size_t n = *(const size_t *)((const char *)m + f->quantifier_offset);
		if (mapped && n == 0)
			return sd_refuse(err, errlen, "invalid input.%s: missing", f->name);
		char *const *strs = *(char *const *const *)si_at(m, f);
		if (f->type == PROTOBUF_C_TYPE_STRING)
			for (size_t i = 0; i < n; i++) {
				const char *s = strs[i] != NULL ? strs[i] : "";
				if (!valid_utf8(s, strlen(s)))
					return sd_refuse(err, errlen,
					    "invalid input.%s[%zu]: not valid UTF-8", f->name, i);
			}
		return 0;
	}
	int64_t v = 0;
	if (f->type == PROTOBUF_C_TYPE_STRING) {
		const char *s = *(char *const *)si_at(m, f);
		if (s == NULL)
			s = "";
		if (!valid_utf8(s, strlen(s)))
			return sd_refuse(err, errlen, "invalid input.%s: not valid UTF-8", f->name);
		if (mapped && s[0] == '\0')
			return sd_refuse(err, errlen, "invalid input.%s: missing", f->name);
		if (mapped && !valid_name(s))
			return sd_refuse(
			    err, errlen, "invalid input.%s: must be " VALID_NAME_RULE, f->name);
	} else if (si_integer(m, f, &v)) {
		/* the protocol's ranges (valid.h): a count in 32 bits (qty,
		 * nights, seats) 1..VALID_QTY_MAX, an amount in 64 bits
		 * 1..VALID_AMOUNT_MAX: what the participants take (a retriable
		 * step after the pivot is never compensated: a value its
		 * participant refused would be tried for ever) */
		long long max = si_32bit(f) ? VALID_QTY_MAX : VALID_AMOUNT_MAX;
		if (mapped && v == 0)
			return sd_refuse(err, errlen, "invalid input.%s: missing", f->name);
		if (mapped && (v < 1 || v > max))
			return sd_refuse(
			    err, errlen, "invalid input.%s: must be 1..%lld", f->name, max);
	} else if (f->type == PROTOBUF_C_TYPE_BYTES) {
		if (mapped && ((const ProtobufCBinaryData *)si_at(m, f))->len == 0)
			return sd_refuse(err, errlen, "invalid input.%s: missing", f->name);
	} else if (f->type == PROTOBUF_C_TYPE_MESSAGE) {
		if (mapped && *(const ProtobufCMessage *const *)si_at(m, f) == NULL)
			return sd_refuse(err, errlen, "invalid input.%s: missing", f->name);
	}
	return 0;
}

int saga_def_input_msg(const saga_def_type *t, const ProtobufCMessage *m, uint8_t *out,
    size_t outlen, size_t *nout, char *err, size_t errlen)
{
	if (m == NULL || t->input_desc == NULL || m->descriptor != t->input_desc)
		return sd_refuse(err, errlen, "invalid input: not a %s", t->input);
	if (m->n_unknown_fields > 0) /* as the JSON form refuses an unknown key */
		return sd_refuse(err, errlen, "invalid input: field %u is not a field of %s",
		    (unsigned)m->unknown_fields[0].tag, t->input);
	for (unsigned i = 0; i < t->input_desc->n_fields; i++)
		if (si_field(t, m, &t->input_desc->fields[i], err, errlen) != 0)
			return -1;
	size_t n = protobuf_c_message_get_packed_size(m);
	if (n > outlen)
		return sd_refuse(
		    err, errlen, "invalid input: %zu bytes encoded, at most %zu", n, outlen);
	*nout = protobuf_c_message_pack(m, out);
	return 0;
}

int saga_def_input_check(const saga_def_type *t, const uint8_t *in, size_t n, uint8_t *out,
    size_t outlen, size_t *nout, char *err, size_t errlen)
{
	if (t->input_desc == NULL)
		return sd_refuse(
		    err, errlen, "invalid input: type %s has no input message", t->name);
	ProtobufCMessage *m = protobuf_c_message_unpack(t->input_desc, NULL, n, in);
	if (m == NULL)
		return sd_refuse(
		    err, errlen, "invalid input: not a %s (it does not decode)", t->input);
	/* as every request (rpc_unpack): a string with a NUL inside is cut
	 * short by the unpacking and an overlong varint shrinks, so the input
	 * would be stored as something the client did not write */
	if (!valid_pb_exact(m, n)) {
		protobuf_c_message_free_unpacked(m, NULL);
		return sd_refuse(err, errlen,
		    "invalid input: not exactly a %s (a string with a NUL byte inside, an "
		    "overlong varint or a field given twice)",
		    t->input);
	}
	int rc = saga_def_input_msg(t, m, out, outlen, nout, err, errlen);
	protobuf_c_message_free_unpacked(m, NULL);
	return rc;
}
