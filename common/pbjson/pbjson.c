/* pbjson: proto3's JSON mapping on protobuf-c descriptors (pbjson.h). */
#include "pbjson.h"

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

/* the deepest nesting of messages followed (the orchestrator's is 3) */
#define PBJSON_DEPTH_MAX 32
/* the longest path kept for an error */
#define PBJSON_PATH_MAX 256

/* pbjson_err writes "path: reason" (or just the reason with no path). */
static void pbjson_err(char *err, size_t len, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void pbjson_err(char *err, size_t len, const char *path, const char *fmt, ...)
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
static void pbjson_path_join(char *dst, const char *a, const char *sep, const char *b)
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

/* ---- fields ---- */

/* pbjson_field_size is the bytes one value of type `t` takes in a message. */
static size_t pbjson_field_size(ProtobufCType t)
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
static void *pbjson_field_at(const ProtobufCMessage *msg, const ProtobufCFieldDescriptor *f)
{
	return (char *)msg + f->offset;
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
