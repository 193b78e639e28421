/* pbjson: proto3's JSON mapping on protobuf-c descriptors (pbjson.h): a
 * message written as JSON; pbjson_parse.c reads JSON back. */
#include "pbjson.h"
#include "pbjson_internal.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

void pbjson_err(char *err, size_t len, const char *path, const char *fmt, ...)
{
	if (err == NULL || len == 0)
		return;
	char why[PBJSON_ERR_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, sizeof why, fmt, ap);
	va_end(ap);
	if (path != NULL && path[0] != '\0')
		snprintf(err, len, "%s: %s", path, why);
	else
		snprintf(err, len, "%s", why);
}

const char *pbjson_json_name(const char *name, char *buf, size_t len)
{
	size_t at = 0;
	bool up = false;
	for (const char *p = name; *p != '\0' && at + 1 < len; p++) {
		if (*p == '_') {
			up = true;
			continue;
		}
		buf[at++] = up ? (char)toupper((unsigned char)*p) : *p;
		up = false;
	}
	if (len > 0)
		buf[at] = '\0';
	return buf;
}

/* pbjson_path_join writes a + sep + b into dst (PBJSON_PATH_MAX bytes, cut when
 * long); sep is left out when a is empty and sep is ".". */
void pbjson_path_join(char *dst, const char *a, const char *sep, const char *b)
{
	size_t at = 0;
	const char *parts[3] = {a, (a[0] == '\0' && strcmp(sep, ".") == 0) ? "" : sep, b};
	for (int i = 0; i < 3; i++)
		for (const char *p = parts[i]; *p != '\0' && at + 1 < PBJSON_PATH_MAX; p++)
			dst[at++] = *p;
	dst[at] = '\0';
}

/* ---- base64 ---- */

static const char b64_chars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* b64_encode returns a malloc'd NUL-terminated base64 text of data[0..n). */
static char *b64_encode(const uint8_t *data, size_t n)
{
	char *out = malloc((n + 2) / 3 * 4 + 1), *o = out;
	if (out == NULL)
		return NULL;
	for (size_t i = 0; i < n; i += 3) {
		uint32_t v = (uint32_t)data[i] << 16;
		if (i + 1 < n)
			v |= (uint32_t)data[i + 1] << 8;
		if (i + 2 < n)
			v |= data[i + 2];
		*o++ = b64_chars[(v >> 18) & 63];
		*o++ = b64_chars[(v >> 12) & 63];
		*o++ = i + 1 < n ? b64_chars[(v >> 6) & 63] : '=';
		*o++ = i + 2 < n ? b64_chars[v & 63] : '=';
	}
	*o = '\0';
	return out;
}

/* ---- fields ---- */

/* pbjson_field_size is the bytes one value of type `t` takes in a message. */
size_t pbjson_field_size(ProtobufCType t)
{
	switch (t) {
	case PROTOBUF_C_TYPE_INT64:
	case PROTOBUF_C_TYPE_SINT64:
	case PROTOBUF_C_TYPE_SFIXED64:
	case PROTOBUF_C_TYPE_UINT64:
	case PROTOBUF_C_TYPE_FIXED64:
	case PROTOBUF_C_TYPE_DOUBLE:
		return 8;
	case PROTOBUF_C_TYPE_STRING:
		return sizeof(char *);
	case PROTOBUF_C_TYPE_MESSAGE:
		return sizeof(ProtobufCMessage *);
	case PROTOBUF_C_TYPE_BYTES:
		return sizeof(ProtobufCBinaryData);
	case PROTOBUF_C_TYPE_BOOL:
		return sizeof(protobuf_c_boolean);
	default:
		return 4;
	}
}

/* pbjson_field_at is the address of field `f`'s storage in `msg`. */
void *pbjson_field_at(const ProtobufCMessage *msg, const ProtobufCFieldDescriptor *f)
{
	return (char *)msg + f->offset;
}

/* ---- message -> JSON ---- */

static json_t *msg_to_json(
    const ProtobufCMessage *msg, const char *path, int depth, char *err, size_t len);

/* value_to_json converts the value at `p` of field `f` (path for errors). */
static json_t *value_to_json(const ProtobufCFieldDescriptor *f, const void *p, const char *path,
    int depth, char *err, size_t len)
{
	char num[32];
	switch (f->type) {
	case PROTOBUF_C_TYPE_INT32:
	case PROTOBUF_C_TYPE_SINT32:
	case PROTOBUF_C_TYPE_SFIXED32:
		return json_integer(*(const int32_t *)p);
	case PROTOBUF_C_TYPE_UINT32:
	case PROTOBUF_C_TYPE_FIXED32:
		return json_integer(*(const uint32_t *)p);
	case PROTOBUF_C_TYPE_INT64:
	case PROTOBUF_C_TYPE_SINT64:
	case PROTOBUF_C_TYPE_SFIXED64:
		snprintf(num, sizeof num, "%" PRId64, *(const int64_t *)p);
		return json_string(num);
	case PROTOBUF_C_TYPE_UINT64:
	case PROTOBUF_C_TYPE_FIXED64:
		snprintf(num, sizeof num, "%" PRIu64, *(const uint64_t *)p);
		return json_string(num);
	case PROTOBUF_C_TYPE_FLOAT:
	case PROTOBUF_C_TYPE_DOUBLE: {
		double d
		    = f->type == PROTOBUF_C_TYPE_FLOAT ? *(const float *)p : *(const double *)p;
		if (isnan(d))
			return json_string("NaN");
		if (isinf(d))
			return json_string(d > 0 ? "Infinity" : "-Infinity");
		return json_real(d);
	}
	case PROTOBUF_C_TYPE_BOOL:
		return json_boolean(*(const protobuf_c_boolean *)p);
	case PROTOBUF_C_TYPE_ENUM: {
		int v = *(const int *)p;
		const ProtobufCEnumValue *ev
		    = protobuf_c_enum_descriptor_get_value(f->descriptor, v);
		return ev != NULL ? json_string(ev->name) : json_integer(v);
	}
	case PROTOBUF_C_TYPE_STRING: {
		const char *s = *(char *const *)p;
		json_t *j = json_string(s != NULL ? s : "");
		if (j == NULL)
			pbjson_err(err, len, path, "not valid UTF-8");
		return j;
	}
	case PROTOBUF_C_TYPE_BYTES: {
		const ProtobufCBinaryData *b = p;
		char *t = b64_encode(b->data, b->len);
		json_t *j = t != NULL ? json_string(t) : NULL;
		free(t);
		return j;
	}
	case PROTOBUF_C_TYPE_MESSAGE:
		return msg_to_json(*(ProtobufCMessage *const *)p, path, depth + 1, err, len);
	}
	return NULL;
}

/* value_is_default is true for a singular proto3 field at its default. */
static bool value_is_default(const ProtobufCFieldDescriptor *f, const void *p)
{
	switch (f->type) {
	case PROTOBUF_C_TYPE_STRING: {
		const char *s = *(char *const *)p;
		return s == NULL || s[0] == '\0';
	}
	case PROTOBUF_C_TYPE_BYTES:
		return ((const ProtobufCBinaryData *)p)->len == 0;
	case PROTOBUF_C_TYPE_MESSAGE:
		return *(ProtobufCMessage *const *)p == NULL;
	case PROTOBUF_C_TYPE_FLOAT:
		return *(const float *)p == 0;
	case PROTOBUF_C_TYPE_DOUBLE:
		return *(const double *)p == 0;
	default: {
		static const uint8_t zero[8];
		return memcmp(p, zero, pbjson_field_size(f->type)) == 0;
	}
	}
}

/* field_present is whether field `f` of `msg` is written out. */
static bool field_present(const ProtobufCMessage *msg, const ProtobufCFieldDescriptor *f)
{
	const void *p = pbjson_field_at(msg, f);
	const char *m = (const char *)msg;
	if (f->label == PROTOBUF_C_LABEL_REPEATED)
		return *(const size_t *)(m + f->quantifier_offset) > 0;
	if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF)
		return *(const uint32_t *)(m + f->quantifier_offset) == f->id;
	if (f->label == PROTOBUF_C_LABEL_OPTIONAL && f->type != PROTOBUF_C_TYPE_STRING
	    && f->type != PROTOBUF_C_TYPE_MESSAGE)
		return *(const protobuf_c_boolean *)(m + f->quantifier_offset);
	if (f->label == PROTOBUF_C_LABEL_NONE)
		return !value_is_default(f, p);
	/* proto2 optional string or message, required */
	return f->type == PROTOBUF_C_TYPE_STRING || f->type == PROTOBUF_C_TYPE_MESSAGE
	    ? *(void *const *)p != NULL
	    : true;
}

/* field_to_json adds field `f` of `msg` to the object `obj`. Returns 0 or -1. */
static int field_to_json(json_t *obj, const ProtobufCMessage *msg,
    const ProtobufCFieldDescriptor *f, const char *path, int depth, char *err, size_t len)
{
	char jn[PBJSON_PATH_MAX], sub[PBJSON_PATH_MAX];
	pbjson_json_name(f->name, jn, sizeof jn);
	pbjson_path_join(sub, path, ".", jn);
	const void *p = pbjson_field_at(msg, f);
	json_t *v;
	if (f->label == PROTOBUF_C_LABEL_REPEATED) {
		size_t n = *(const size_t *)((const char *)msg + f->quantifier_offset);
		const char *arr = *(char *const *)p;
		if ((v = json_array()) == NULL)
			return -1;
		for (size_t i = 0; i < n; i++) {
			char el[PBJSON_PATH_MAX], ix[32];
			snprintf(ix, sizeof ix, "[%zu]", i);
			pbjson_path_join(el, sub, ix, "");
			json_t *e = value_to_json(
			    f, arr + i * pbjson_field_size(f->type), el, depth, err, len);
			if (e == NULL || json_array_append_new(v, e) != 0) {
				json_decref(v);
				return -1;
			}
		}
	} else if ((v = value_to_json(f, p, sub, depth, err, len)) == NULL)
		return -1;
	return json_object_set_new(obj, jn, v) == 0 ? 0 : -1;
}

static json_t *msg_to_json(
    const ProtobufCMessage *msg, const char *path, int depth, char *err, size_t len)
{
	if (depth > PBJSON_DEPTH_MAX) {
		pbjson_err(err, len, path, "nested too deep");
		return NULL;
	}
	json_t *obj = json_object();
	if (obj == NULL)
		return NULL;
	const ProtobufCMessageDescriptor *d = msg->descriptor;
	for (unsigned i = 0; i < d->n_fields; i++) {
		if (!field_present(msg, &d->fields[i]))
			continue;
		if (field_to_json(obj, msg, &d->fields[i], path, depth, err, len) != 0) {
			json_decref(obj);
			return NULL;
		}
	}
	return obj;
}

json_t *pbjson_to_json(const ProtobufCMessage *msg, char *err, size_t len)
{
	if (err != NULL && len > 0)
		snprintf(err, len, "out of memory");
	return msg_to_json(msg, "", 0, err, len);
}
