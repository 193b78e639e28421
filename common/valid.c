#include "valid.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <uuid/uuid.h>

bool valid_uuid(const char *s)
{
	if (s == NULL || strlen(s) != VALID_UUID_LEN)
		return false;
	for (int i = 0; i < VALID_UUID_LEN; i++) {
		char c = s[i];
		if (i == 8 || i == 13 || i == 18 || i == 23) {
			if (c != '-')
				return false;
		} else if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) {
			return false;
		}
	}
	uuid_t u;
	return uuid_parse(s, u) == 0;
}

bool valid_utf8(const char *str, size_t len)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t i = 0;
	while (i < len) {
		unsigned c = s[i];
		size_t n;
		uint32_t cp;
		if (c < 0x80) {
			i++;
			continue;
		} else if ((c & 0xe0) == 0xc0) {
			n = 1;
			cp = c & 0x1f;
		} else if ((c & 0xf0) == 0xe0) {
			n = 2;
			cp = c & 0x0f;
		} else if ((c & 0xf8) == 0xf0) {
			n = 3;
			cp = c & 0x07;
		} else {
			return false;
		}
		if (i + n >= len) /* truncated sequence */
			return false;
		for (size_t k = 1; k <= n; k++) {
			if ((s[i + k] & 0xc0) != 0x80)
				return false;
			cp = (cp << 6) | (s[i + k] & 0x3f);
		}
		if ((n == 1 && cp < 0x80) || (n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000))
			return false; /* overlong */
		if (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return false;
		i += n + 1;
	}
	return true;
}

size_t valid_utf8_copy(char *dst, size_t size, const char *src)
{
	size_t n = strnlen(src, size);
	if (n >= size) {
		/* too long: cut before the character that starts at or before
		 * byte size - 1 (continuation bytes are 10xxxxxx) */
		n = size - 1;
		while (n > 0 && ((unsigned char)src[n] & 0xc0) == 0x80)
			n--;
	}
	memcpy(dst, src, n);
	dst[n] = '\0';
	/* a text that is not UTF-8 (a peer's: protobuf-c does not check;
	 * fuzz_reply found one reaching sagactl's output) keeps its ASCII */
	if (!valid_utf8(dst, n))
		for (size_t i = 0; i < n; i++)
			if ((unsigned char)dst[i] >= 0x80)
				dst[i] = '?';
	return n;
}

bool valid_name(const char *s)
{
	if (s == NULL)
		return false;
	size_t len = strlen(s);
	if (len == 0 || len > VALID_NAME_MAX)
		return false;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c < 0x20 || c == 0x7f)
			return false;
		/* C1 controls U+0080..U+009F are encoded as C2 80..C2 9F */
		if (c == 0xc2 && i + 1 < len && (unsigned char)s[i + 1] <= 0x9f)
			return false;
	}
	return valid_utf8(s, len);
}

int money_parse(const char *text, bool allow_zero, int64_t *out)
{
	if (text == NULL || *text == '\0')
		return -EINVAL;
	const char *p = text;
	int64_t major = 0;
	int digits = 0;
	while (*p >= '0' && *p <= '9') {
		if (major > VALID_AMOUNT_MAX / 100)
			return -ERANGE;
		major = major * 10 + (*p - '0');
		digits++;
		p++;
	}
	if (digits == 0)
		return -EINVAL;
	int64_t minor = 0;
	if (*p == '.') {
		p++;
		int frac = 0;
		while (*p >= '0' && *p <= '9') {
			if (frac == 2)
				return -EINVAL; /* a third decimal: 12.005 */
			minor = minor * 10 + (*p - '0');
			frac++;
			p++;
		}
		if (frac == 0)
			return -EINVAL; /* "12." */
		if (frac == 1)
			minor *= 10;
	}
	if (*p != '\0')
		return -EINVAL;
	int64_t total = major * 100 + minor;
	if (total > VALID_AMOUNT_MAX)
		return -ERANGE;
	if (total == 0 && !allow_zero)
		return -ERANGE;
	*out = total;
	return 0;
}

char *money_format(int64_t minor, char *buf, size_t len)
{
	const char *sign = "";
	uint64_t v = (uint64_t)minor;
	if (minor < 0) {
		sign = "-";
		v = (uint64_t)0 - v;
	}
	snprintf(buf, len, "%s%" PRIu64 ".%02" PRIu64, sign, v / 100, v % 100);
	return buf;
}

void saga_id_new(char out[VALID_UUID_LEN + 1])
{
	uuid_t u;
	uuid_generate_random(u);
	uuid_unparse_lower(u, out);
}

bool valid_pb_exact(const ProtobufCMessage *msg, size_t wire_len)
{
	return protobuf_c_message_get_packed_size(msg) == wire_len;
}

/* valid_pb_varint reads a varint at p[*i] (len bytes in all), advancing
 * *i. False when it is cut short or longer than 10 bytes. */
static bool valid_pb_varint(const uint8_t *p, size_t len, size_t *i, uint64_t *out)
{
	uint64_t v = 0;
	for (int shift = 0; shift < 70 && *i < len; shift += 7) {
		uint8_t b = p[(*i)++];
		v |= (uint64_t)(b & 0x7f) << (shift < 64 ? shift : 63);
		if ((b & 0x80) == 0) {
			*out = v;
			return true;
		}
	}
	return false;
}

static bool valid_pb_nest(const uint8_t *p, size_t len, uint32_t field, int depth, int max_depth)
{
	size_t i = 0;
	while (i < len) {
		uint64_t key, n;
		if (!valid_pb_varint(p, len, &i, &key))
			return true; /* malformed here: the unpacker refuses it */
		switch (key & 7) {
		case 0:
			if (!valid_pb_varint(p, len, &i, &n))
				return true;
			break;
		case 1:
			if (len - i < 8)
				return true;
			i += 8;
			break;
		case 5:
			if (len - i < 4)
				return true;
			i += 4;
			break;
		case 2:
			if (!valid_pb_varint(p, len, &i, &n) || n > len - i)
				return true;
			if ((key >> 3) == field
			    && (depth + 1 > max_depth
			        || !valid_pb_nest(p + i, (size_t)n, field, depth + 1, max_depth)))
				return false;
			i += (size_t)n;
			break;
		default:
			return true; /* groups, bad wire types: refused by the unpacker */
		}
	}
	return true;
}

bool valid_pb_nesting(const uint8_t *buf, size_t len, uint32_t field, int max_depth)
{
	return valid_pb_nest(buf, len, field, 0, max_depth);
}
