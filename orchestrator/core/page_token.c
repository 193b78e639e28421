#include "page_token.h"

#include <endian.h>
#include <errno.h>
#include <mbedtls/base64.h>
#include <string.h>
#include <uuid/uuid.h>

#define PAGE_TOKEN_BYTES 24

int page_token_encode(const page_key *key, char *out)
{
	if (key->created_us < 0 || key->created_us > PAGE_TOKEN_MAX_US)
		return -EINVAL;
	unsigned char raw[PAGE_TOKEN_BYTES];
	uint64_t be = htobe64((uint64_t)key->created_us);
	memcpy(raw, &be, sizeof be);
	uuid_t u;
	if (uuid_parse(key->saga_id, u) != 0)
		return -EINVAL;
	memcpy(raw + 8, u, sizeof u);
	size_t olen = 0;
	if (mbedtls_base64_encode((unsigned char *)out, PAGE_TOKEN_LEN + 1, &olen, raw, sizeof raw)
	        != 0
	    || olen != PAGE_TOKEN_LEN)
		return -EINVAL;
	out[PAGE_TOKEN_LEN] = '\0';
	return 0;
}

int page_token_decode(const char *text, page_key *key)
{
	if (strlen(text) != PAGE_TOKEN_LEN)
		return -EINVAL;
	unsigned char raw[PAGE_TOKEN_BYTES + 3];
	size_t olen = 0;
	if (mbedtls_base64_decode(
	        raw, sizeof raw, &olen, (const unsigned char *)text, PAGE_TOKEN_LEN)
	        != 0
	    || olen != PAGE_TOKEN_BYTES)
		return -EINVAL;
	uint64_t be;
	memcpy(&be, raw, sizeof be);
	uint64_t us = be64toh(be);
	if (us > (uint64_t)PAGE_TOKEN_MAX_US)
		return -EINVAL;
	key->created_us = (int64_t)us;
	uuid_t u;
	memcpy(u, raw + 8, sizeof u);
	uuid_unparse_lower(u, key->saga_id);
	/* only the canonical text: mbedTLS skips line breaks and spaces, and
	 * 32 characters leave no bits unused, but re-encoding is the rule that
	 * stays true whatever the decoder accepts */
	char again[PAGE_TOKEN_LEN + 1];
	if (page_token_encode(key, again) != 0 || strcmp(again, text) != 0)
		return -EINVAL;
	return 0;
}
