/* store: the shipping participant's database: its own statement
 * (ListShipments), and its saga command through the participant kit's
 * store (services/kit/pkit.h), which holds the rest of its SQL. A shipping_store
 * is the kit's pkit_store of shipping_service: one per worker thread.
 * Errors are the negative enum pg_err values of pg.h (see pkit.h). */
#ifndef SAGA_SHIPPING_STORE_H
#define SAGA_SHIPPING_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pkit.h"
#include "shipping_logic.h"
#include "valid.h"

typedef pkit_store shipping_store;

/* One shipment as ListShipments reports it. */
typedef struct shipping_row {
	char saga_id[VALID_UUID_LEN + 1];
	char customer[SHIPPING_NAME_MAX + 1];
	char sku[SHIPPING_NAME_MAX + 1];
	int32_t qty; /* units */
	shipping_status status;
	int64_t created_ms; /* ms since the Unix epoch, the database's clock */
} shipping_row;

/* Shipment rows returned by ListShipments: the default and the largest
 * page (ListShipmentsRequest.limit). */
#define SHIPPING_LIST_LIMIT_DEFAULT 1000
#define SHIPPING_LIST_LIMIT_MAX     10000

/* The shipments, read in one snapshot: the count of every one and a bounded
 * page of the newest. */
typedef struct shipping_listing {
	int64_t total;
	shipping_row *rows; /* by created_at DESC, saga_id; malloc'd */
	size_t n_rows;
	bool truncated; /* more rows exist than listed */
} shipping_listing;

/* shipping_store_list reads, in one consistent snapshot, the number of
 * shipments and, when `include_rows`, the newest `limit` (1..
 * SHIPPING_LIST_LIMIT_MAX), setting truncated when there are more. Free
 * with shipping_listing_free. Re-run once after a reconnect. Returns 0,
 * -EINVAL (limit out of range), -ENOMEM or a negative enum pg_err; *out is
 * empty on error. */
int shipping_store_list(shipping_store *s, bool include_rows, int32_t limit, shipping_listing *out)
    __attribute__((warn_unused_result));

/* shipping_listing_free frees the rows of a listing and empties it. */
void shipping_listing_free(shipping_listing *l);

#endif
