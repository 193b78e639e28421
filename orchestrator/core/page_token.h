/* page_token: the opaque cursor of ListSagas' keyset paging
 * (docs/protocol.md, "Paging"). A token names the last saga of a page by
 * its listing key, (created_at, saga_id): the next page holds the sagas
 * before it in the order (created_at DESC, saga_id DESC), so each saga is
 * listed once, whatever is inserted meanwhile (new sagas are newer).
 *
 * The text is the standard base64 (mbedTLS) of 24 bytes: created_at in
 * microseconds since the Unix epoch (int64, big-endian), then the saga id's
 * 16 bytes (libuuid): 32 characters, no padding. Only that canonical text
 * is read back.
 */
#ifndef SAGA_PAGE_TOKEN_H
#define SAGA_PAGE_TOKEN_H

#include <stdint.h>

#include "valid.h"

/* The token's text length, without the NUL. */
#define PAGE_TOKEN_LEN 32

/* The latest created_at a token may carry: 9999-12-31T23:59:59.999999Z in
 * microseconds (PostgreSQL's timestamptz reaches further, to_char and the
 * clients' ISO output do not). */
#define PAGE_TOKEN_MAX_US INT64_C(253402300799999999)

/* One listing key. */
typedef struct page_key {
	int64_t created_us;               /* sagas.created_at, us since the epoch */
	char saga_id[VALID_UUID_LEN + 1]; /* canonical lowercase UUID text */
} page_key;

/* page_token_encode writes the token of `key` into out (PAGE_TOKEN_LEN + 1
 * bytes). Returns 0, or -EINVAL when the key is out of range (created_us
 * outside 0..PAGE_TOKEN_MAX_US, a saga id that is not a UUID). */
int page_token_encode(const page_key *key, char *out) __attribute__((warn_unused_result));

/* page_token_decode reads `text` (NUL-terminated) into *key. Returns 0, or
 * -EINVAL when it is not the canonical text of a token (wrong length or
 * alphabet, padding, bits that re-encode otherwise) or carries a created_at
 * outside 0..PAGE_TOKEN_MAX_US; *key is then unspecified. Pure: no I/O. */
int page_token_decode(const char *text, page_key *key) __attribute__((warn_unused_result));

#endif
