/* store: the hotel participant's own statements (store.h). House style:
 * SQL lives only here and in the kit's store. */
#include "store.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hotel_logic.h"
#include "pg.h"

int hotel_store_set(pkit_store *s, const char *room, int64_t free)
{
	int rc = pkit_store_ready(s);
	if (rc != 0)
		return rc;
	char val[24];
	snprintf(val, sizeof val, "%" PRId64, free);
	const char *p[] = {room, val};
	bool rerun_done = false;
	do {
		/* one statement, its own transaction; an absolute value, so
		 * running it twice is harmless */
		rc = pg_run(pkit_store_conn(s),
		    "INSERT INTO rooms (room, free) VALUES ($1, $2) "
		    "ON CONFLICT (room) DO UPDATE SET free = EXCLUDED.free",
		    2, p);
	} while (pkit_store_may_rerun(s, rc, &rerun_done));
	if (rc == 0)
		pkit_store_learn(s, room, free);
	return rc;
}

void hotel_listing_free(hotel_listing *l)
{
	free(l->rooms);
	free(l->holds);
	memset(l, 0, sizeof *l);
}

int hotel_store_list(pkit_store *s, bool include_holds, int32_t limit, hotel_listing *out)
{
	memset(out, 0, sizeof *out);
	if (limit < 0 || limit > HOTEL_LIST_LIMIT_MAX)
		return -EINVAL;
	const char *sql[] = {
	    "SELECT r.room, r.free, coalesce(h.n, 0) FROM rooms r LEFT JOIN "
	    "(SELECT room, count(*) AS n FROM holds WHERE status = 'HELD' GROUP BY room) h "
	    "ON h.room = r.room ORDER BY r.room COLLATE \"C\"",
	    include_holds ? "SELECT saga_id, room, nights, status FROM holds "
	                    "ORDER BY created_at DESC, saga_id LIMIT $1::int"
	                  : NULL,
	};
	PGresult *res[2];
	int rc = pkit_store_snapshot(s, sql, 2, limit, res);
	if (rc != 0)
		return rc;
	int nk = PQntuples(res[0]), nh = res[1] ? PQntuples(res[1]) : 0;
	if (nh > limit) {
		nh = limit;
		out->holds_truncated = true;
	}
	out->rooms = calloc(nk ? (size_t)nk : 1, sizeof *out->rooms);
	out->holds = calloc(nh ? (size_t)nh : 1, sizeof *out->holds);
	if (out->rooms == NULL || out->holds == NULL) {
		hotel_listing_free(out);
		rc = -ENOMEM;
		goto out_clear;
	}
	for (int i = 0; i < nk; i++) {
		hotel_room_row *k = &out->rooms[i];
		snprintf(k->room, sizeof k->room, "%s", PQgetvalue(res[0], i, 0));
		k->free = pg_get_i64(res[0], i, 1);
		k->live_holds = (int32_t)pg_get_i64(res[0], i, 2);
	}
	out->n_rooms = (size_t)nk;
	for (int i = 0; i < nh; i++) {
		hotel_hold_row *h = &out->holds[i];
		snprintf(h->saga_id, sizeof h->saga_id, "%s", PQgetvalue(res[1], i, 0));
		snprintf(h->room, sizeof h->room, "%s", PQgetvalue(res[1], i, 1));
		h->nights = (int32_t)pg_get_i64(res[1], i, 2);
		h->status = hotel_status_parse(PQgetvalue(res[1], i, 3));
	}
	out->n_holds = (size_t)nh;
out_clear:
	PQclear(res[0]);
	PQclear(res[1]);
	return rc;
}
