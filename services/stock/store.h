/* store: the stock participant's database: its own statements (SetStock,
 * ListStock), and its saga commands through the participant kit's store
 * (common/pkit.h), which holds the rest of its SQL. A stock_store is the
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

/* stock_store_migrate connects to `conninfo`, waiting up to `wait_ms` ms for
 * the database to accept connections, and applies the embedded schema in one
 * transaction under an advisory lock (so daemons starting together do not
 * race on the catalog). Idempotent. Returns 0 or a negative enum pg_err
 * (PG_ERR_CONNECTION when the database never came up), after logging. */
int stock_store_migrate(const char *conninfo, int64_t wait_ms) __attribute__((warn_unused_result));

/* stock_store_open makes a store for one worker thread. `conninfo` is
 * borrowed and must outlive the store. `cache` (borrowed, may be NULL) is
 * the daemon's value cache of each sku's on-hand units, shared by its
 * workers: with it, commands that are all ReserveStock of new saga ids take
 * one round trip when the cache knows their skus (the one-round-trip path
 * of docs/architecture.md), and every commit teaches it the units it left. It tries to connect for
 * up to `wait_ms` ms, but a store without a connection is still returned: every call reconnects
 * first (pg_ensure), so a worker survives a database restart. Returns 0 and *out, or -ENOMEM. */
int stock_store_open(stock_store **out, const char *conninfo, int64_t wait_ms, valcache *cache)
    __attribute__((warn_unused_result));

/* stock_store_fast_counts reports what the store's one-round-trip path did
 * since it was opened: *fast transactions it committed, *fast_failed it
 * tried that failed their check (a cached value gone stale, or a saga id
 * already recorded) and went on the locking path. */
void stock_store_fast_counts(const stock_store *s, uint64_t *fast, uint64_t *fast_failed);

/* stock_store_close closes the connection and frees the store. NULL is
 * ignored. */
void stock_store_close(stock_store *s);

/* stock_store_apply runs one ReserveStock or ReleaseStock for `saga_id`
 * (canonical UUID text) as one local transaction: lock the saga's record and
 * the sku's row, call stock_decide(), write what it says, commit. Concurrent
 * duplicates serialise on the record's primary key: a lost race rolls back
 * and retries the whole transaction, which then answers from the record.
 * On 0, *out is the committed outcome and *on_hand the sku's on-hand units
 * after the command (0 when the sku does not exist). Nothing is written
 * unless 0 is returned. Re-run once after a reconnect (idempotent by saga
 * id). Returns 0 or a negative enum pg_err. */
int stock_store_apply(stock_store *s, const char *saga_id, const stock_cmd *cmd, stock_outcome *out,
    int64_t *on_hand) __attribute__((warn_unused_result));

/* One command of a batch (stock_store_apply_batch). */
typedef struct stock_batch_cmd {
	const char *saga_id; /* canonical UUID text, borrowed */
	stock_cmd cmd;       /* sku borrowed */
	stock_outcome out;   /* filled on success */
	int64_t on_hand;     /* filled on success: the sku's units after it */
} stock_batch_cmd;

/* stock_store_apply_batch applies `n` commands (1..RPC_BATCH_MAX, any mix of
 * ReserveStock and ReleaseStock, saga ids and skus may repeat) in one local
 * transaction: lock every record and stock row they touch (records, then
 * rows, each in key order, so batches and single commands cannot deadlock),
 * call stock_decide() for each command in the order given, as if each ran
 * alone in that order, write the results with one set-based statement per
 * table, commit. Fills each cmds[i].out and .on_hand on 0; nothing is
 * written unless 0 is returned, and then the caller may apply the commands
 * one by one instead (stock_store_apply). A lost race (a concurrent insert
 * of the same saga id, a deadlock) retries the whole batch; a lost
 * connection re-runs it once. Returns 0, -ENOMEM or a negative enum pg_err. */
int stock_store_apply_batch(stock_store *s, stock_batch_cmd *cmds, size_t n)
    __attribute__((warn_unused_result));

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
