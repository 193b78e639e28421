/* store: the hotel participant's own statements (SetRooms, ListRooms); its
 * saga commands go through the participant kit's store (services/kit/pkit.h),
 * which holds the rest of its SQL. A hotel store is the kit's pkit_store of
 * hotel_service, one per worker thread with its own PGconn.
 *
 * Errors are the negative enum pg_err values of pg.h (PG_ERR_CONNECTION:
 * transient, answered UNAVAILABLE; others INTERNAL), as in
 * services/stock/store.h. A database error is never a business refusal. */
#ifndef SAGA_HOTEL_STORE_H
#define SAGA_HOTEL_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pkit.h"
#include "valid.h"

/* One kind of room as ListRooms reports it. */
typedef struct hotel_room_row {
	char room[VALID_NAME_MAX + 1];
	int64_t free;       /* rooms free */
	int32_t live_holds; /* records in HELD */
} hotel_room_row;

/* One idempotency record as ListRooms reports it. */
typedef struct hotel_hold_row {
	char saga_id[VALID_UUID_LEN + 1];
	char room[VALID_NAME_MAX + 1];
	int32_t nights;
	int status; /* a hotel_status */
} hotel_hold_row;

/* Hold rows returned by ListRooms: the default and the largest page. */
#define HOTEL_LIST_LIMIT_DEFAULT 1000
#define HOTEL_LIST_LIMIT_MAX     10000

/* What ListRooms reads, in one snapshot. */
typedef struct hotel_listing {
	hotel_room_row *rooms; /* every kind, by room (byte order) */
	size_t n_rooms;
	hotel_hold_row *holds; /* by created_at DESC, saga_id */
	size_t n_holds;
	bool holds_truncated; /* more records exist than listed */
} hotel_listing;

/* hotel_store_set creates the kind `room` or sets its free rooms to `free`
 * (>= 0), outside any saga (admin). Re-run once after a reconnect (an
 * absolute value). Returns 0 or a negative enum pg_err. */
int hotel_store_set(pkit_store *s, const char *room, int64_t free)
    __attribute__((warn_unused_result));

/* hotel_store_list reads every kind with its free rooms and live holds
 * (counted by the database over every record) and, when `include_holds`,
 * the newest `limit` records (0..HOTEL_LIST_LIMIT_MAX), in one snapshot.
 * Arrays are malloc'd (free with hotel_listing_free). Re-run once after a
 * reconnect. Returns 0, -EINVAL (limit out of range), -ENOMEM or a negative
 * enum pg_err; *out is empty on error. */
int hotel_store_list(pkit_store *s, bool include_holds, int32_t limit, hotel_listing *out)
    __attribute__((warn_unused_result));

/* hotel_listing_free frees the arrays of a listing and empties it. */
void hotel_listing_free(hotel_listing *l);

#endif
