/* feed_cursor: the cursor of the history feed, WatchHistory
 * (docs/protocol.md, "The history feed").
 *
 * A follower has seen every history row whose writing transaction is
 * visible in a snapshot `seen` (PostgreSQL's pg_snapshot: xmin, xmax and
 * the ids in progress). The next rows are those visible in a later
 * snapshot and not in `seen`: a transaction that commits late with a lower
 * id is in `seen`'s in-progress list, so it is delivered when it commits,
 * never skipped, and a row is never delivered twice. When a reply cannot
 * hold all of them, the cursor also names the later snapshot (`next`) and
 * the key (xid, saga_id, version) of the last row delivered from it; the
 * next page goes on after that key under the same two snapshots.
 *
 * The text is "v1;SEEN;MAC" or "v1;SEEN;NEXT;XID;SAGA_ID;VERSION;MAC" in
 * base64url without padding (URL-safe, opaque), MAC being the first 16
 * bytes of HMAC-SHA256 under the database's feed key (feed_key in
 * sql/schema.sql, shared by every orchestrator on it), in hex, over the
 * text before it: a cursor is read back only when this database made it,
 * so a caller cannot forge one that names committed transactions as in
 * progress and makes each call read rows it will not send. Only the
 * canonical text is read back. Pure: no I/O.
 */
#ifndef SAGA_FEED_CURSOR_H
#define SAGA_FEED_CURSOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "valid.h"

/* The longest snapshot text kept (bytes, without the NUL): an xmin, an
 * xmax and the transactions in progress, ~21 bytes each at most; 8 KiB
 * holds ~390 of them (max_connections is far lower in our deployments). */
#define FEED_SNAPSHOT_MAX 8192
/* The longest cursor text (without the NUL): two snapshots and a key,
 * base64url (4 characters per 3 bytes). */
#define FEED_CURSOR_MAX (((2 * FEED_SNAPSHOT_MAX + 160) + 2) / 3 * 4)

/* The feed key's length (bytes): the cursors' HMAC-SHA256 key. */
#define FEED_KEY_LEN 32

/* A snapshot of "nothing committed": where a feed from the start begins. */
#define FEED_SNAPSHOT_EMPTY "1:1:"

/* One position in the feed. */
typedef struct feed_cursor {
	char seen[FEED_SNAPSHOT_MAX + 1]; /* pg_snapshot text, e.g. "750:760:752,755" */
	bool has_next;                    /* a page of `next` is under way */
	char next[FEED_SNAPSHOT_MAX + 1]; /* the later snapshot (when has_next) */
	uint64_t xid;                     /* key of the last row delivered of it */
	char saga_id[VALID_UUID_LEN + 1];
	int64_t version;
} feed_cursor;

/* feed_snapshot_valid is true when `text` is a pg_snapshot text as
 * PostgreSQL writes it: "XMIN:XMAX:XIP,XIP,..." with 1 <= XMIN <= XMAX <
 * 2^63, every XIP in [XMIN, XMAX) and strictly ascending, decimal without
 * leading zeros, at most FEED_SNAPSHOT_MAX bytes. Such a text is always
 * accepted by PostgreSQL's pg_snapshot input. */
bool feed_snapshot_valid(const char *text);

/* feed_cursor_encode writes c's text, authenticated under `key`
 * (FEED_KEY_LEN bytes, borrowed), into out (`len` bytes, at least
 * FEED_CURSOR_MAX + 1). Returns 0, or -EINVAL when c holds an invalid
 * snapshot or key, -ENOSPC when out is too small, -EIO when the HMAC
 * fails. */
int feed_cursor_encode(const feed_cursor *c, const uint8_t *key, char *out, size_t len)
    __attribute__((warn_unused_result));

/* feed_cursor_decode reads the cursor text `text` (NUL-terminated) into
 * *c, checking its MAC under `key` (FEED_KEY_LEN bytes, borrowed). Returns
 * 0, or -EINVAL when it is not the canonical text of a cursor made under
 * that key (alphabet, padding, fields, the MAC, a snapshot
 * feed_snapshot_valid refuses, a saga id that is not a canonical UUID, a
 * version < 1); *c is then unspecified. */
int feed_cursor_decode(const char *text, const uint8_t *key, feed_cursor *c)
    __attribute__((warn_unused_result));

/* feed_page_more is the WatchHistory reply's `more` (docs/protocol.md,
 * "The history feed"): true when the caller should call again at once
 * rather than wait. `cut`: rows read under this page's snapshots were left
 * unsent (the limit or the frame's budget); `from_has_next`: the page went
 * on with a run begun under an earlier snapshot (the request's cursor had
 * a `next`), so rows committed since that snapshot are not in it even when
 * the run is done. A client that stops at more = false (sagactl watch
 * without --follow, the clients in clients/) thus always reads up to a
 * snapshot taken during its last call. Pure. */
static inline bool feed_page_more(bool cut, bool from_has_next)
{
	return cut || from_has_next;
}

/* feed_cursor_after_page fills *next with the cursor a WatchHistory reply
 * hands back after a page read under (from->seen, later): when `cut` and
 * sent > 0, after the last entry sent, whose key is (last_xid, last_saga,
 * last_version), under the same two snapshots; when not cut, `later` alone
 * (every row of it was sent); when cut with nothing sent, *from again.
 * `later` (a snapshot text, borrowed) and `last_saga` (a canonical UUID,
 * borrowed; may be NULL when sent == 0) are copied. Returns `more`,
 * feed_page_more(cut, from->has_next). Pure. */
bool feed_cursor_after_page(const feed_cursor *from, const char *later, bool cut, size_t sent,
    uint64_t last_xid, const char *last_saga, int64_t last_version, feed_cursor *next);

#endif
