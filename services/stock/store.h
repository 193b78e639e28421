/* store: the stock participant's database: its own statements (SetStock,
 * ListStock), and its saga commands through the participant kit's store
 * (services/kit/pkit.h), which holds the rest of its SQL. A stock_store is the
 * kit's pkit_store of stock_service: one per worker thread, each with its
 * own PGconn; nothing here is shared between threads.
 *
 * Errors are the negative enum pg_err values of pg.h:
 *   PG_ERR_CONNECTION  the database is unreachable (transient; the caller
 *                      answers UNAVAILABLE, the next call reconnects). A
 *                      connection found dead mid-call is reconnected and
 *                      the call run once more where that is safe to repeat
 *                      (said per function), so a server restart does not
 *                      fail the first call of every worker,
 *   PG_ERR_RETRY       a command kept losing races (serialization failure,
 *                      deadlock or a concurrent duplicate) past its retries,
 *   PG_ERR_OTHER, PG_ERR_CHECK, PG_ERR_UNIQUE
 *                      anything else: a bug or bad data (INTERNAL).
 * A database error is never turned into a business refusal: refusals only
 * come from stock_decide().
 */
#ifndef SAGA_STOCK_STORE_H
#define SAGA_STOCK_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pkit.h"
#include "stock_logic.h"
#include "valcache.h"
#include "valid.h"

typedef pkit_store stock_store;

/* One sku as ListStock reports it. */
typedef struct stock_item_row {
	char sku[STOCK_SKU_MAX + 1];
	int64_t on_hand;           /* units */
	int32_t live_reservations; /* rows in RESERVED */
	int64_t reserved_qty;      /* units held by RESERVED rows */
} stock_item_row;

/* One idempotency record as ListStock reports it. */
typedef struct stock_reservation_row {
	char saga_id[VALID_UUID_LEN + 1];
	char sku[STOCK_SKU_MAX + 1];
	int32_t qty; /* units */
	stock_status status;
} stock_reservation_row;

/* Reservation rows returned by ListStock: the default and the largest
 * page (ListStockRequest.limit). */
#define STOCK_LIST_LIMIT_DEFAULT 1000
#define STOCK_LIST_LIMIT_MAX     10000

/* The state of the participant, read in one snapshot: every sku with its
 * aggregates, and a bounded page of the newest records. */
typedef struct stock_listing {
	stock_item_row *items; /* every sku, ordered by sku (byte order) */
	size_t n_items;
	stock_reservation_row *reservations; /* by created_at DESC, saga_id */
	size_t n_reservations;
	bool reservations_truncated; /* more records exist than listed */
} stock_listing;

/* stock_store_set creates `sku` or sets its on-hand quantity to `on_hand`
 * units (>= 0), outside any saga (admin). Re-run once after a reconnect
 * (an absolute value). Returns 0 or a negative enum pg_err. */
int stock_store_set(stock_store *s, const char *sku, int64_t on_hand)
    __attribute__((warn_unused_result));

/* stock_store_list reads, in one consistent snapshot, every sku with its
 * on-hand units and the count and units of its RESERVED records (summed by
 * the database over every record), and, when `include_reservations`, the
 * newest `limit` records (1..STOCK_LIST_LIMIT_MAX; 0 lists none), setting
 * reservations_truncated when there are more. Arrays are malloc'd; free
 * with stock_listing_free. Re-run once after a reconnect. Returns 0,
 * -EINVAL (limit out of range), -ENOMEM, or a negative enum pg_err; *out is
 * empty on error. */
int stock_store_list(stock_store *s, bool include_reservations, int32_t limit, stock_listing *out)
    __attribute__((warn_unused_result));

/* stock_listing_free frees the arrays of a listing and empties it. */
void stock_listing_free(stock_listing *l);

#endif
