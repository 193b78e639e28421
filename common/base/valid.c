#include "valid.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <unictype.h>
#include <uninorm.h>
#include <unistr.h>
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

_Static_assert(VALID_NAME_MAX == 64, "VALID_NAME_RULE says 64 bytes");

bool valid_visible(uint32_t uc)
{
	return !uc_is_property_white_space(uc) && !uc_is_property_default_ignorable_code_point(uc)
	    && !uc_is_general_category(uc, UC_CATEGORY_M) && uc != 0x2800;
}

/* valid_line scans `s` (1..max bytes): true when it is UTF-8 with a
 * visible character (valid_visible) and none of C0 (a tab too), DEL, C1,
 * a bidirectional control or a line or paragraph separator (nothing that
 * moves a terminal's cursor, reorders the text or starts a line in a log),
 * nor, with `no_ignorable`, a default-ignorable one (what shows as
 * nothing: "ali" + U+200B would show as "ali"; PRECIS's IdentifierClass
 * refuses them too, RFC 8264). */
static bool valid_line(const char *s, size_t max, bool no_ignorable)
{
	if (s == NULL)
		return false;
	size_t len = strlen(s);
	if (len == 0 || len > max || !valid_utf8(s, len))
		return false;
	bool visible = false;
	for (size_t i = 0; i < len;) {
		ucs4_t uc;
		int n = u8_mbtouc(&uc, (const uint8_t *)s + i, len - i);
		if (n <= 0)
			return false;
		i += (size_t)n;
		if (uc < 0x20 || (uc >= 0x7f && uc <= 0x9f) || uc_is_property_bidi_control(uc)
		    || uc_is_general_category(uc, UC_CATEGORY_Zl)
		    || uc_is_general_category(uc, UC_CATEGORY_Zp)
		    || (no_ignorable && uc_is_property_default_ignorable_code_point(uc)))
			return false;
		visible = visible || valid_visible(uc);
	}
	return visible;
}

bool valid_name(const char *s)
{
	if (!valid_line(s, VALID_NAME_MAX, true))
		return false;
	/* one spelling per name: "e" + U+0301 and U+00E9 show alike, so only
	 * the composed form (NFC) is taken */
	size_t len = strlen(s), nlen = 0;
	uint8_t *nfc = u8_normalize(UNINORM_NFC, (const uint8_t *)s, len, NULL, &nlen);
	bool same = nfc != NULL && nlen == len && memcmp(nfc, s, len) == 0;
	free(nfc);
	return same;
}

bool valid_note(const char *s, size_t max)
{
	return valid_line(s, max, false);
}

/* valid_escape_one writes the escape of `uc` (a code point, or with
 * `byte` one byte that is no character) into buf (>= 8 bytes); returns its
 * length, or 0 when it is shown as it is. */
static size_t valid_escape_one(uint32_t uc, bool byte, char *buf)
{
	static const char hex[] = "0123456789ABCDEF";
	if (byte || uc < 0x20 || uc == 0x7f) {
		const char *named = uc == '\t' ? "\\t"
		    : uc == '\n'               ? "\\n"
		    : uc == '\r'               ? "\\r"
		                               : NULL;
		if (!byte && named != NULL) {
			memcpy(buf, named, 3);
			return 2;
		}
		buf[0] = '\\', buf[1] = 'x', buf[2] = hex[(uc >> 4) & 0xf], buf[3] = hex[uc & 0xf];
		return 4;
	}
	if (uc == '\\') {
		buf[0] = buf[1] = '\\';
		return 2;
	}
	if ((uc >= 0x80 && uc <= 0x9f) || uc == 0x2028 || uc == 0x2029
	    || uc_is_property_bidi_control(uc)) {
		buf[0] = '\\', buf[1] = 'u';
		for (int i = 0; i < 4; i++)
			buf[2 + i] = hex[(uc >> (12 - 4 * i)) & 0xf];
		return 6;
	}
	return 0;
}

size_t valid_escape(char *dst, size_t size, const char *src)
{
	const uint8_t *s = (const uint8_t *)src;
	size_t len = strlen(src), out = 0;
	bool cut = size == 0;
	for (size_t i = 0; i < len;) {
		ucs4_t uc;
		int n = u8_mbtoucr(&uc, s + i, len - i);
		bool byte = n <= 0;
		if (byte) {
			uc = s[i];
			n = 1;
		}
		char esc[8];
		size_t k = valid_escape_one(uc, byte, esc);
		const char *piece = k > 0 ? esc : (const char *)s + i;
		size_t m = k > 0 ? k : (size_t)n;
		if (!cut && out + m < size)
			memcpy(dst + out, piece, m);
		else if (!cut) {
			dst[out] = '\0';
			cut = true;
		}
		out += m;
		i += (size_t)n;
	}
	if (!cut)
		dst[out] = '\0';
	return out;
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
