/* pbjson_parse: proto3's JSON mapping read back (pbjson.h pbjson_from_json,
 * pbjson_set_text): a JSON value checked and stored into a protobuf-c
 * message by its descriptor, with base64 decoding and the lookup of a field
 * by its proto or JSON name. pbjson.c writes the JSON. */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "pbjson.h"
#include "pbjson_internal.h"

/* b64_value is a base64 digit's value (either alphabet), or -1. */
static int b64_value(char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+' || c == '-')
		return 62;
	if (c == '/' || c == '_')
		return 63;
	return -1;
}

/* b64_decode decodes `text` (standard or URL-safe, padding optional) into a
 * malloc'd buffer (*out, *n; NULL for nothing). Returns 0, -EINVAL for a
 * text that is not base64, -ENOMEM. */
static int b64_decode(const char *text, uint8_t **out, size_t *n)
{
	size_t len = strlen(text);
	while (len > 0 && text[len - 1] == '=')
		len--;
	if (len % 4 == 1 || strlen(text) - len > 2)
		return -EINVAL;
	*out = NULL;
	*n = 0;
	if (len == 0)
		return 0;
	uint8_t *buf = malloc(len * 3 / 4 + 1);
	if (buf == NULL)
		return -ENOMEM;
	uint32_t acc = 0;
	int bits = 0;
	size_t at = 0;
	for (size_t i = 0; i < len; i++) {
		int v = b64_value(text[i]);
		if (v < 0) {
			free(buf);
			return -EINVAL;
		}
		acc = (acc << 6) | (uint32_t)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			buf[at++] = (uint8_t)(acc >> bits);
		}
	}
	*out = buf;
	*n = at;
	return 0;
}

/* field_find returns the field of `desc` whose proto or JSON name is `key`. */
static const ProtobufCFieldDescriptor *field_find(
    const ProtobufCMessageDescriptor *desc, const char *key)
{
	const ProtobufCFieldDescriptor *f
	    = protobuf_c_message_descriptor_get_field_by_name(desc, key);
	if (f != NULL)
		return f;
	char jn[PBJSON_PATH_MAX];
	for (unsigned i = 0; i < desc->n_fields; i++)
		if (strcmp(pbjson_json_name(desc->fields[i].name, jn, sizeof jn), key) == 0)
			return &desc->fields[i];
	return NULL;
}

/* ---- JSON -> message ---- */

/* int_text parses strict decimal text: an optional '-' (when `sign`) and
 * 1..20 digits. Returns 0 with *s or *u set, or -1. */
static int int_text(const char *t, bool sign, int64_t *s, uint64_t *u)
{
	const char *d = t[0] == '-' && sign ? t + 1 : t;
	size_t n = strlen(d);
	if (n == 0 || n > 20 || strspn(d, "0123456789") != n)
		return -1;
	errno = 0;
	char *end = NULL;
	if (sign)
		*s = strtoll(t, &end, 10);
	else
		*u = strtoull(t, &end, 10);
	return errno == 0 && end != NULL && *end == '\0' ? 0 : -1;
}

/* Integer bounds per type. */
static bool int_bounds(ProtobufCType t, bool *sign, int64_t *lo, int64_t *hi, uint64_t *uhi)
{
	*sign = true;
	*lo = 0;
	*hi = 0;
	*uhi = 0;
	switch (t) {
	case PROTOBUF_C_TYPE_INT32:
	case PROTOBUF_C_TYPE_SINT32:
	case PROTOBUF_C_TYPE_SFIXED32:
		*lo = INT32_MIN, *hi = INT32_MAX;
		return true;
	case PROTOBUF_C_TYPE_INT64:
	case PROTOBUF_C_TYPE_SINT64:
	case PROTOBUF_C_TYPE_SFIXED64:
		*lo = INT64_MIN, *hi = INT64_MAX;
		return true;
	case PROTOBUF_C_TYPE_UINT32:
	case PROTOBUF_C_TYPE_FIXED32:
		*sign = false, *uhi = UINT32_MAX;
		return true;
	case PROTOBUF_C_TYPE_UINT64:
	case PROTOBUF_C_TYPE_FIXED64:
		*sign = false, *uhi = UINT64_MAX;
		return true;
	default:
		return false;
	}
}

/* int_store writes a checked integer into the field storage at p. */
static void int_store(ProtobufCType t, void *p, int64_t s, uint64_t u)
{
	switch (pbjson_field_size(t)) {
	case 8:
		if (t == PROTOBUF_C_TYPE_UINT64 || t == PROTOBUF_C_TYPE_FIXED64)
			*(uint64_t *)p = u;
		else
			*(int64_t *)p = s;
		break;
	default:
		if (t == PROTOBUF_C_TYPE_UINT32 || t == PROTOBUF_C_TYPE_FIXED32)
			*(uint32_t *)p = (uint32_t)u;
		else
			*(int32_t *)p = (int32_t)s;
	}
}

/* int_from sets the integer at p from a JSON number or decimal string, or
 * from `text` (a query parameter) when v is NULL. */
static int int_from(ProtobufCType t, const json_t *v, const char *text, void *p, const char *path,
    char *err, size_t len)
{
	bool sign;
	int64_t lo, hi, s = 0;
	uint64_t uhi, u = 0;
	int_bounds(t, &sign, &lo, &hi, &uhi);
	char shown[64];
	if (v != NULL && json_is_integer(v)) {
		json_int_t i = json_integer_value(v);
		snprintf(shown, sizeof shown, "%lld", (long long)i);
		if (!sign && i < 0)
			goto range;
		s = i, u = (uint64_t)i;
	} else if (v != NULL && json_is_real(v)) {
		double d = json_real_value(v);
		snprintf(shown, sizeof shown, "%.17g", d);
		if (d != floor(d) || !isfinite(d)) {
			pbjson_err(err, len, path, "%s is not an integer", shown);
			return -1;
		}
		if (d < -9223372036854775808.0 || d >= 18446744073709551616.0 || (!sign && d < 0))
			goto range;
		if (sign && d >= 9223372036854775808.0)
			goto range;
		s = (int64_t)d, u = d >= 0 ? (uint64_t)d : 0;
	} else {
		const char *t2 = v != NULL ? json_string_value(v) : text;
		if (t2 == NULL) {
			pbjson_err(err, len, path, "expected an integer, got %s",
			    json_is_object(v)        ? "an object"
			        : json_is_array(v)   ? "an array"
			        : json_is_boolean(v) ? "a boolean"
			                             : "null");
			return -1;
		}
		snprintf(shown, sizeof shown, "\"%.40s\"", t2);
		const char *digits = t2[0] == '-' ? t2 + 1 : t2;
		bool decimal = digits[0] != '\0' && strspn(digits, "0123456789") == strlen(digits);
		if (!decimal) {
			pbjson_err(err, len, path, "%s is not an integer", shown);
			return -1;
		}
		if (!sign && t2[0] == '-')
			goto range;
		if (int_text(t2, sign, &s, &u) != 0)
			goto range; /* too many digits, or past int64/uint64 */
	}
	if (sign ? (s < lo || s > hi) : (u > uhi))
		goto range;
	int_store(t, p, s, u);
	return 0;
range:
	pbjson_err(err, len, path, "%s is out of range for %s", shown,
	    sign ? (hi == INT32_MAX ? "int32" : "int64")
	         : (uhi == UINT32_MAX ? "uint32" : "uint64"));
	return -1;
}

/* enum_prefix_len is the length of the prefix all values of `ed` share, up
 * to and with its last '_' ("SAGA_STATE_"). */
static size_t enum_prefix_len(const ProtobufCEnumDescriptor *ed)
{
	if (ed->n_values == 0)
		return 0;
	const char *first = ed->values[0].name;
	size_t n = strlen(first);
	for (unsigned i = 1; i < ed->n_values; i++) {
		size_t k = 0;
		while (k < n && ed->values[i].name[k] == first[k])
			k++;
		n = k;
	}
	while (n > 0 && first[n - 1] != '_')
		n--;
	return n;
}

/* enum_from sets the enum at p from a name or a number the enum defines;
 * `lenient` (query text) also takes the name without the enum's prefix and
 * any case. */
static int enum_from(const ProtobufCFieldDescriptor *f, const json_t *v, const char *text,
    bool lenient, void *p, const char *path, char *err, size_t len)
{
	const ProtobufCEnumDescriptor *ed = f->descriptor;
	const char *name = v != NULL ? json_string_value(v) : text;
	if (v != NULL && json_is_integer(v)) {
		json_int_t i = json_integer_value(v);
		if (i < INT32_MIN || i > INT32_MAX
		    || protobuf_c_enum_descriptor_get_value(ed, (int)i) == NULL) {
			pbjson_err(
			    err, len, path, "%lld is not a value of %s", (long long)i, ed->name);
			return -1;
		}
		*(int *)p = (int)i;
		return 0;
	}
	if (name == NULL) {
		pbjson_err(err, len, path, "expected a name of %s", ed->name);
		return -1;
	}
	size_t pre = enum_prefix_len(ed);
	for (unsigned i = 0; i < ed->n_values; i++) {
		const char *vn = ed->values[i].name;
		if (strcmp(vn, name) == 0
		    || (lenient
		        && (strcasecmp(vn, name) == 0 || strcasecmp(vn + pre, name) == 0))) {
			*(int *)p = ed->values[i].value;
			return 0;
		}
	}
	int64_t s;
	uint64_t u;
	if (lenient && int_text(name, true, &s, &u) == 0 && s >= INT32_MIN && s <= INT32_MAX
	    && protobuf_c_enum_descriptor_get_value(ed, (int)s) != NULL) {
		*(int *)p = (int)s;
		return 0;
	}
	pbjson_err(err, len, path, "\"%.64s\" is not a value of %s", name, ed->name);
	return -1;
}

static ProtobufCMessage *msg_from_json(const ProtobufCMessageDescriptor *desc, const json_t *json,
    const char *path, int depth, char *err, size_t len);

/* type_name describes a JSON value's type for errors. */
static const char *type_name(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		return "an object";
	case JSON_ARRAY:
		return "an array";
	case JSON_STRING:
		return "a string";
	case JSON_INTEGER:
	case JSON_REAL:
		return "a number";
	case JSON_TRUE:
	case JSON_FALSE:
		return "a boolean";
	default:
		return "null";
	}
}

/* value_from_json stores one JSON value into the (zeroed or default)
 * storage at p for field `f`. */
static int value_from_json(const ProtobufCFieldDescriptor *f, const json_t *v, void *p,
    const char *path, int depth, char *err, size_t len)
{
	switch (f->type) {
	case PROTOBUF_C_TYPE_FLOAT:
	case PROTOBUF_C_TYPE_DOUBLE: {
		if (!json_is_number(v)) {
			pbjson_err(err, len, path, "expected a number, got %s", type_name(v));
			return -1;
		}
		double d = json_number_value(v);
		if (f->type == PROTOBUF_C_TYPE_FLOAT)
			*(float *)p = (float)d;
		else
			*(double *)p = d;
		return 0;
	}
	case PROTOBUF_C_TYPE_BOOL:
		if (!json_is_boolean(v)) {
			pbjson_err(err, len, path, "expected true or false, got %s", type_name(v));
			return -1;
		}
		*(protobuf_c_boolean *)p = json_is_true(v);
		return 0;
	case PROTOBUF_C_TYPE_ENUM:
		return enum_from(f, v, NULL, false, p, path, err, len);
	case PROTOBUF_C_TYPE_STRING: {
		if (!json_is_string(v)) {
			pbjson_err(err, len, path, "expected a string, got %s", type_name(v));
			return -1;
		}
		char *s = strdup(json_string_value(v));
		if (s == NULL) {
			pbjson_err(err, len, NULL, "out of memory");
			return -1;
		}
		*(char **)p = s;
		return 0;
	}
	case PROTOBUF_C_TYPE_BYTES: {
		ProtobufCBinaryData *b = p;
		int rc = json_is_string(v) ? b64_decode(json_string_value(v), &b->data, &b->len)
		                           : -EINVAL;
		if (rc != 0)
			pbjson_err(
			    err, len, path, rc == -ENOMEM ? "out of memory" : "expected base64");
		return rc == 0 ? 0 : -1;
	}
	case PROTOBUF_C_TYPE_MESSAGE: {
		ProtobufCMessage *m = msg_from_json(f->descriptor, v, path, depth + 1, err, len);
		*(ProtobufCMessage **)p = m;
		return m != NULL ? 0 : -1;
	}
	default:
		if (json_is_integer(v) || json_is_real(v) || json_is_string(v))
			return int_from(f->type, v, NULL, p, path, err, len);
		pbjson_err(err, len, path, "expected an integer, got %s", type_name(v));
		return -1;
	}
}

/* repeated_from_json fills repeated field `f` of `m` from the array `v`. */
static int repeated_from_json(ProtobufCMessage *m, const ProtobufCFieldDescriptor *f,
    const json_t *v, const char *path, int depth, char *err, size_t len)
{
	if (!json_is_array(v)) {
		pbjson_err(err, len, path, "expected an array, got %s", type_name(v));
		return -1;
	}
	size_t n = json_array_size(v), sz = pbjson_field_size(f->type);
	if (n == 0)
		return 0;
	char *arr = calloc(n, sz);
	if (arr == NULL) {
		pbjson_err(err, len, NULL, "out of memory");
		return -1;
	}
	size_t *count = (size_t *)((char *)m + f->quantifier_offset);
	*(char **)pbjson_field_at(m, f) = arr;
	for (size_t i = 0; i < n; i++) {
		char el[PBJSON_PATH_MAX], ix[32];
		snprintf(ix, sizeof ix, "[%zu]", i);
		pbjson_path_join(el, path, ix, "");
		const json_t *e = json_array_get(v, i);
		if (json_is_null(e)) {
			pbjson_err(err, len, el, "null in an array");
			return -1;
		}
		if (value_from_json(f, e, arr + i * sz, el, depth, err, len) != 0)
			return -1; /* what was stored so far is counted: freed with m */
		(*count)++;
	}
	return 0;
}

/* field_from_json sets field `f` of `m` from `v` (not null). */
static int field_from_json(ProtobufCMessage *m, const ProtobufCFieldDescriptor *f, const json_t *v,
    const char *path, int depth, char *err, size_t len)
{
	if (f->label == PROTOBUF_C_LABEL_REPEATED)
		return repeated_from_json(m, f, v, path, depth, err, len);
	void *p = pbjson_field_at(m, f);
	char *m8 = (char *)m;
	if (f->type == PROTOBUF_C_TYPE_STRING || f->type == PROTOBUF_C_TYPE_BYTES
	    || f->type == PROTOBUF_C_TYPE_MESSAGE) {
		/* init left the default, which free_unpacked does not free */
		if (f->type == PROTOBUF_C_TYPE_STRING)
			*(char **)p = NULL;
		else if (f->type == PROTOBUF_C_TYPE_BYTES)
			memset(p, 0, sizeof(ProtobufCBinaryData));
	}
	int rc = value_from_json(f, v, p, path, depth, err, len);
	if (f->type == PROTOBUF_C_TYPE_STRING && *(char **)p == NULL)
		*(const char **)p = f->default_value != NULL ? f->default_value : NULL;
	if (rc != 0)
		return -1;
	if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF)
		*(uint32_t *)(m8 + f->quantifier_offset) = f->id;
	else if (f->label == PROTOBUF_C_LABEL_OPTIONAL && f->type != PROTOBUF_C_TYPE_STRING
	    && f->type != PROTOBUF_C_TYPE_MESSAGE)
		*(protobuf_c_boolean *)(m8 + f->quantifier_offset) = 1;
	return 0;
}

/* msg_fill sets the fields of `m` from the object's members. */
static int msg_fill(
    ProtobufCMessage *m, const json_t *json, const char *path, int depth, char *err, size_t len)
{
	const ProtobufCMessageDescriptor *desc = m->descriptor;
	bool seen[256] = {0};
	const char *key;
	json_t *v;
	json_object_foreach((json_t *)json, key, v)
	{
		char sub[PBJSON_PATH_MAX];
		char k64[65];
		snprintf(k64, sizeof k64, "%s", key);
		pbjson_path_join(sub, path, ".", k64);
		const ProtobufCFieldDescriptor *f = field_find(desc, key);
		if (f == NULL) {
			pbjson_err(err, len, sub, "unknown field (%s has no field \"%.64s\")",
			    desc->name, key);
			return -1;
		}
		size_t idx = (size_t)(f - desc->fields);
		if (idx < sizeof seen && seen[idx]) {
			pbjson_err(
			    err, len, sub, "given twice (as \"%s\" and its JSON name)", f->name);
			return -1;
		}
		if (idx < sizeof seen)
			seen[idx] = true;
		if (json_is_null(v))
			continue; /* proto3: null is the default */
		if (field_from_json(m, f, v, sub, depth, err, len) != 0)
			return -1;
	}
	return 0;
}

static ProtobufCMessage *msg_from_json(const ProtobufCMessageDescriptor *desc, const json_t *json,
    const char *path, int depth, char *err, size_t len)
{
	if (!json_is_object(json)) {
		pbjson_err(err, len, path[0] ? path : "the body", "expected an object, got %s",
		    json != NULL ? type_name(json) : "nothing");
		return NULL;
	}
	if (depth > PBJSON_DEPTH_MAX) {
		pbjson_err(err, len, path, "nested too deep");
		return NULL;
	}
	ProtobufCMessage *m = malloc(desc->sizeof_message);
	if (m == NULL) {
		pbjson_err(err, len, NULL, "out of memory");
		return NULL;
	}
	desc->message_init(m);
	if (msg_fill(m, json, path, depth, err, len) != 0) {
		protobuf_c_message_free_unpacked(m, NULL);
		return NULL;
	}
	return m;
}

ProtobufCMessage *pbjson_from_json(
    const ProtobufCMessageDescriptor *desc, const json_t *json, char *err, size_t len)
{
	return msg_from_json(desc, json, "", 0, err, len);
}

int pbjson_set_text(
    ProtobufCMessage *msg, const char *name, const char *text, char *err, size_t len)
{
	const ProtobufCFieldDescriptor *f = field_find(msg->descriptor, name);
	if (f == NULL) {
		pbjson_err(err, len, name, "unknown parameter (%s has no field \"%.64s\")",
		    msg->descriptor->name, name);
		return -1;
	}
	if (f->label == PROTOBUF_C_LABEL_REPEATED || f->type == PROTOBUF_C_TYPE_MESSAGE
	    || f->type == PROTOBUF_C_TYPE_BYTES || f->type == PROTOBUF_C_TYPE_FLOAT
	    || f->type == PROTOBUF_C_TYPE_DOUBLE) {
		pbjson_err(err, len, name, "cannot be given as a query parameter");
		return -1;
	}
	void *p = pbjson_field_at(msg, f);
	if (f->type == PROTOBUF_C_TYPE_BOOL) {
		bool t = strcmp(text, "true") == 0 || strcmp(text, "1") == 0;
		if (!t && strcmp(text, "false") != 0 && strcmp(text, "0") != 0) {
			pbjson_err(err, len, name, "\"%.64s\" is not true or false", text);
			return -1;
		}
		*(protobuf_c_boolean *)p = t;
	} else if (f->type == PROTOBUF_C_TYPE_ENUM) {
		if (enum_from(f, NULL, text, true, p, name, err, len) != 0)
			return -1;
	} else if (f->type == PROTOBUF_C_TYPE_STRING) {
		char *s = strdup(text);
		if (s == NULL) {
			pbjson_err(err, len, NULL, "out of memory");
			return -1;
		}
		char *old = *(char **)p;
		if (old != NULL && old != f->default_value)
			free(old);
		*(char **)p = s;
	} else if (int_from(f->type, NULL, text, p, name, err, len) != 0)
		return -1;
	if (f->label == PROTOBUF_C_LABEL_OPTIONAL && f->type != PROTOBUF_C_TYPE_STRING)
		*(protobuf_c_boolean *)((char *)msg + f->quantifier_offset) = 1;
	return 0;
}
