#include "feed_cursor.h"

#include <errno.h>
#include <inttypes.h>
#include <mbedtls/base64.h>
#include <mbedtls/md.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* feed_u64 reads a decimal without sign or leading zeros (but "0") from
 * *s up to the first character not a digit, below 2^63. Returns false on
 * none, a leading zero or overflow. */
static bool feed_u64(const char **s, uint64_t *out)
{
	const char *p = *s;
	if (*p < '0' || *p > '9' || (p[0] == '0' && p[1] >= '0' && p[1] <= '9'))
		return false;
	uint64_t v = 0;
	for (; *p >= '0' && *p <= '9'; p++) {
		if (v > (UINT64_C(1) << 63) / 10)
			return false;
		v = v * 10 + (uint64_t)(*p - '0');
		if (v >= UINT64_C(1) << 63)
			return false;
	}
	*s = p;
	*out = v;
	return true;
}

bool feed_snapshot_valid(const char *text)
{
	if (strlen(text) > FEED_SNAPSHOT_MAX)
		return false;
	const char *p = text;
	uint64_t xmin, xmax;
	if (!feed_u64(&p, &xmin) || *p++ != ':' || !feed_u64(&p, &xmax) || *p++ != ':')
		return false;
	if (xmin < 1 || xmin > xmax)
		return false;
	uint64_t last = 0;
	bool first = true;
	while (*p != '\0') {
		uint64_t x;
		if (!first && *p++ != ',')
			return false;
		if (!feed_u64(&p, &x) || x < xmin || x >= xmax || (!first && x <= last))
			return false;
		last = x;
		first = false;
	}
	return true;
}

/* feed_b64url turns standard base64 into base64url without padding, in
 * place. */
static void feed_b64url(char *s)
{
	size_t n = strlen(s);
	while (n > 0 && s[n - 1] == '=')
		s[--n] = '\0';
	for (char *p = s; *p; p++)
		*p = *p == '+' ? '-' : *p == '/' ? '_' : *p;
}

/* The MAC's length in bytes (hex: twice that). */
#define FEED_MAC_LEN 16

/* feed_mac writes the hex of the first FEED_MAC_LEN bytes of
 * HMAC-SHA256(key, text[0..n)) into hex (2 * FEED_MAC_LEN + 1 bytes).
 * Returns 0 or -EIO. */
static int feed_mac(const uint8_t *key, const char *text, size_t n, char *hex)
{
	unsigned char mac[32];
	const mbedtls_md_info_t *md = mbedtls_md_info_from_type(MBEDTLS_MD_SHA256);
	if (md == NULL
	    || mbedtls_md_hmac(md, key, FEED_KEY_LEN, (const unsigned char *)text, n, mac) != 0)
		return -EIO;
	for (int i = 0; i < FEED_MAC_LEN; i++)
		snprintf(hex + 2 * i, 3, "%02x", mac[i]);
	return 0;
}

int feed_cursor_encode(const feed_cursor *c, const uint8_t *key, char *out, size_t len)
{
	if (!feed_snapshot_valid(c->seen) || (c->has_next && !feed_snapshot_valid(c->next)))
		return -EINVAL;
	if (c->has_next && (!valid_uuid(c->saga_id) || c->version < 1 || c->xid < 1))
		return -EINVAL;
	size_t cap = 2 * FEED_SNAPSHOT_MAX + 160;
	char *raw = malloc(cap);
	if (raw == NULL)
		return -ENOMEM;
	int n = c->has_next ? snprintf(raw, cap, "v1;%s;%s;%" PRIu64 ";%s;%" PRId64, c->seen,
	            c->next, c->xid, c->saga_id, c->version)
	                    : snprintf(raw, cap, "v1;%s", c->seen);
	char hex[2 * FEED_MAC_LEN + 1];
	if (n > 0 && (size_t)n + sizeof hex + 1 < cap) {
		if (feed_mac(key, raw, (size_t)n, hex) != 0) {
			free(raw);
			return -EIO;
		}
		n += snprintf(raw + n, cap - (size_t)n, ";%s", hex);
	}
	size_t olen = 0;
	int rc = n > 0 && (size_t)n < cap
	        && mbedtls_base64_encode(
	               (unsigned char *)out, len, &olen, (const unsigned char *)raw, (size_t)n)
	            == 0
	    ? 0
	    : -ENOSPC;
	free(raw);
	if (rc == 0)
		feed_b64url(out);
	return rc;
}

/* feed_field copies the text of *s up to ';' or the end into out (size
 * len); false when it does not fit. */
static bool feed_field(const char **s, char *out, size_t len)
{
	size_t n = strcspn(*s, ";");
	if (n >= len)
		return false;
	memcpy(out, *s, n);
	out[n] = '\0';
	*s += n;
	return true;
}

/* feed_cursor_verify checks the MAC at the end of `raw` (";" and 2 *
 * FEED_MAC_LEN hex digits) under key, in constant time, and cuts it off.
 * Returns 0 or -EINVAL. */
static int feed_cursor_verify(char *raw, const uint8_t *key)
{
	size_t n = strlen(raw), hl = 2 * FEED_MAC_LEN;
	if (n < hl + 1 || raw[n - hl - 1] != ';')
		return -EINVAL;
	char want[2 * FEED_MAC_LEN + 1];
	if (feed_mac(key, raw, n - hl - 1, want) != 0)
		return -EINVAL;
	unsigned diff = 0;
	for (size_t i = 0; i < hl; i++)
		diff |= (unsigned char)want[i] ^ (unsigned char)raw[n - hl + i];
	if (diff != 0)
		return -EINVAL;
	raw[n - hl - 1] = 0;
	return 0;
}

/* feed_cursor_parse reads the decoded text `raw` into *c. */
static int feed_cursor_parse(const char *raw, feed_cursor *c)
{
	memset(c, 0, sizeof *c);
	if (strncmp(raw, "v1;", 3) != 0)
		return -EINVAL;
	const char *p = raw + 3;
	if (!feed_field(&p, c->seen, sizeof c->seen) || !feed_snapshot_valid(c->seen))
		return -EINVAL;
	if (*p == '\0')
		return 0;
	c->has_next = true;
	char num[24];
	int64_t v = 0;
	if (*p++ != ';' || !feed_field(&p, c->next, sizeof c->next) || !feed_snapshot_valid(c->next)
	    || *p++ != ';' || !feed_field(&p, num, sizeof num))
		return -EINVAL;
	const char *q = num;
	if (!feed_u64(&q, &c->xid) || *q != '\0' || c->xid < 1)
		return -EINVAL;
	if (*p++ != ';' || !feed_field(&p, c->saga_id, sizeof c->saga_id) || !valid_uuid(c->saga_id)
	    || *p++ != ';' || !feed_field(&p, num, sizeof num) || *p != '\0')
		return -EINVAL;
	q = num;
	uint64_t uv;
	if (!feed_u64(&q, &uv) || *q != '\0' || uv < 1)
		return -EINVAL;
	v = (int64_t)uv;
	c->version = v;
	return 0;
}

int feed_cursor_decode(const char *text, const uint8_t *key, feed_cursor *c)
{
	size_t n = strlen(text);
	if (n == 0 || n > FEED_CURSOR_MAX
	    || strspn(text,
	           "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	           "0123456789-_")
	        != n)
		return -EINVAL;
	/* back to standard base64 with its padding */
	char *b = malloc(n + 3);
	unsigned char *raw = malloc(n + 1);
	if (b == NULL || raw == NULL) {
		free(b);
		free(raw);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++)
		b[i] = text[i] == '-' ? '+' : text[i] == '_' ? '/' : text[i];
	size_t m = n;
	while (m % 4 != 0)
		b[m++] = '=';
	size_t olen = 0;
	int rc = -EINVAL;
	if (mbedtls_base64_decode(raw, n, &olen, (const unsigned char *)b, m) == 0
	    && memchr(raw, '\0', olen) == NULL) {
		raw[olen] = '\0';
		rc = feed_cursor_verify((char *)raw, key);
		if (rc == 0)
			rc = feed_cursor_parse((const char *)raw, c);
	}
	free(b);
	free(raw);
	if (rc != 0)
		return rc;
	/* only the canonical text (the rule page_token.c follows too) */
	char *again = malloc(FEED_CURSOR_MAX + 1);
	if (again == NULL)
		return -ENOMEM;
	rc = feed_cursor_encode(c, key, again, FEED_CURSOR_MAX + 1) == 0 && strcmp(again, text) == 0
	    ? 0
	    : -EINVAL;
	free(again);
	return rc;
}

bool feed_cursor_after_page(const feed_cursor *from, const char *later, bool cut, size_t sent,
    uint64_t last_xid, const char *last_saga, int64_t last_version, feed_cursor *next)
{
	if (cut && sent == 0) {
		*next = *from; /* not one entry fits (cannot happen): as asked */
		return feed_page_more(cut, from->has_next);
	}
	memset(next, 0, sizeof *next);
	if (cut) {
		snprintf(next->seen, sizeof next->seen, "%s", from->seen);
		next->has_next = true;
		snprintf(next->next, sizeof next->next, "%s", later);
		next->xid = last_xid;
		snprintf(next->saga_id, sizeof next->saga_id, "%s", last_saga);
		next->version = last_version;
	} else {
		snprintf(next->seen, sizeof next->seen, "%s", later);
	}
	return feed_page_more(cut, from->has_next);
}
