/* store_feed: the history feed's read (store.h store_feed; feed_cursor.h
 * says what a cursor holds and docs/protocol.md why it never skips nor
 * repeats a transaction). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "feed_cursor.h"
#include "pg.h"
#include "store.h"

/* clang-format off */
/* $1 the seen snapshot, $2 the later one (NULL: the statement's own), $3
 * the limit, $4/$5/$6 the key to go on after (NULL: from the first row).
 * The snapshots are cast once (the CTE), not per row. A row comes when its
 * transaction is visible in the later snapshot and not in the seen one:
 * from seen's xmax on (none of those was visible to it), or one of seen's
 * xip (in progress then: a late commit with a lower id). Each is its own
 * index range on saga_history_xid, read in the feed's order up to the
 * limit, so that the rows read are the rows sent: a range over what seen
 * already saw (from its xmin) would let a forged cursor ("1:<xmax now>:")
 * make every call read the whole history and send nothing. The LEFT JOIN
 * returns the snapshot when no row does. */
#define STORE_FEED_KEY \
    "     AND h.xid < pg_snapshot_xmax(c.later)" \
    "     AND pg_visible_in_snapshot(h.xid, c.later)" \
    "     AND ($4::xid8 IS NULL OR (h.xid, h.saga_id, h.version) > ($4::xid8, $5::uuid, $6::bigint))" \
    "   ORDER BY h.xid, h.saga_id, h.version LIMIT $3)"
static const pg_stmt STORE_FEED = {"saga_feed",
    "WITH c AS MATERIALIZED ("
    "  SELECT $1::pg_snapshot AS seen,"
    "    coalesce($2::pg_snapshot, pg_current_snapshot()) AS later)"
    " SELECT c.later::text, h.xid::text, h.saga_id, h.version, coalesce(h.from_state, ''),"
    "   h.to_state, h.event, h.reason,"
    "   coalesce((extract(epoch from h.at) * 1000)::bigint, 0)"
    " FROM c LEFT JOIN LATERAL ("
    "  (SELECT * FROM saga_history h"
    "   WHERE h.xid >= greatest(pg_snapshot_xmax(c.seen), coalesce($4::xid8, '1'::xid8))"
    STORE_FEED_KEY
    "  UNION ALL"
    "  (SELECT * FROM saga_history h"
    "   WHERE h.xid = ANY (ARRAY(SELECT pg_snapshot_xip(c.seen)))"
    "     AND h.xid >= coalesce($4::xid8, '1'::xid8)"
    STORE_FEED_KEY
    "  ORDER BY xid, saga_id, version LIMIT $3) h ON true"
    " ORDER BY h.xid, h.saga_id, h.version", false};
/* clang-format on */

/* store_feed_row fills *e from row i of the feed's result. */
static void store_feed_row(const PGresult *r, int i, store_feed_entry *e)
{
	e->xid = strtoull(PQgetvalue(r, i, 1), NULL, 10);
	snprintf(e->saga_id, sizeof e->saga_id, "%s", PQgetvalue(r, i, 2));
	e->h.version = pg_get_i64(r, i, 3);
	snprintf(e->h.from, sizeof e->h.from, "%s", PQgetvalue(r, i, 4));
	snprintf(e->h.to, sizeof e->h.to, "%s", PQgetvalue(r, i, 5));
	e->h.from_state = saga_state_parse(e->h.from);
	e->h.to_state = saga_state_parse(e->h.to);
	snprintf(e->h.event, sizeof e->h.event, "%s", PQgetvalue(r, i, 6));
	snprintf(e->h.reason, sizeof e->h.reason, "%s", PQgetvalue(r, i, 7));
	e->h.at_ms = pg_get_i64(r, i, 8);
}

int store_feed(PGconn *conn, const feed_cursor *from, int limit, store_feed_entry **out, size_t *n,
    char *next_snap)
{
	char lim[16], xid[24], ver[24];
	snprintf(lim, sizeof lim, "%d", limit);
	snprintf(xid, sizeof xid, "%" PRIu64, from->xid);
	snprintf(ver, sizeof ver, "%" PRId64, from->version);
	const char *p[6]
	    = {from->seen, from->has_next ? from->next : NULL, lim, from->has_next ? xid : NULL,
	        from->has_next ? from->saga_id : NULL, from->has_next ? ver : NULL};
	*out = NULL;
	*n = 0;
	PGresult *r = NULL;
	int rc = pg_exec_stmt(conn, &STORE_FEED, 6, p, &r);
	if (rc != 0)
		return rc;
	int rows = PQntuples(r);
	const char *snap = rows > 0 ? PQgetvalue(r, 0, 0) : "";
	if (rows == 0 || strlen(snap) > FEED_SNAPSHOT_MAX) {
		PQclear(r);
		return rows == 0 ? -EIO : -E2BIG;
	}
	snprintf(next_snap, FEED_SNAPSHOT_MAX + 1, "%s", snap);
	bool none = PQgetisnull(r, 0, 1);
	if (!none) {
		*out = calloc((size_t)rows, sizeof **out);
		if (*out == NULL) {
			PQclear(r);
			return -ENOMEM;
		}
		for (int i = 0; i < rows; i++)
			store_feed_row(r, i, &(*out)[i]);
		*n = (size_t)rows;
	}
	PQclear(r);
	return 0;
}

int store_snapshot(PGconn *conn, char *out)
{
	PGresult *r = NULL;
	int rc = pg_exec(conn, "SELECT pg_current_snapshot()::text", 0, NULL, &r);
	if (rc != 0)
		return rc;
	const char *snap = PQntuples(r) == 1 ? PQgetvalue(r, 0, 0) : "";
	rc = strlen(snap) > FEED_SNAPSHOT_MAX || snap[0] == '\0' ? -E2BIG : 0;
	if (rc == 0)
		snprintf(out, FEED_SNAPSHOT_MAX + 1, "%s", snap);
	PQclear(r);
	return rc;
}

int store_feed_key(PGconn *conn, uint8_t *key)
{
	PGresult *r = NULL;
	int rc = pg_exec(conn, "SELECT key FROM feed_key", 0, NULL, &r);
	if (rc != 0)
		return rc;
	const char *hex = PQntuples(r) == 1 ? PQgetvalue(r, 0, 0) : "";
	rc = strlen(hex) == 2 * FEED_KEY_LEN ? 0 : -EIO;
	for (int i = 0; rc == 0 && i < FEED_KEY_LEN; i++) {
		unsigned v;
		if (sscanf(hex + 2 * i, "%2x", &v) != 1)
			rc = -EIO;
		key[i] = (uint8_t)v;
	}
	PQclear(r);
	return rc;
}
