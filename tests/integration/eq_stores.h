/* eq_stores: the stock and payment participants' saga commands through the
 * participant kit's store (services/kit/pkit.h), in each service's own types, for
 * test_batch_equivalence, which compares decisions by those types. Each
 * function is the kit's with the service's descriptor (stock_service,
 * payment_service) and the conversions of its service.h. */
#ifndef SAGA_EQ_STORES_H
#define SAGA_EQ_STORES_H

#include "../../services/payment/store.h"
#include "../../services/stock/store.h"
#include "pkit.h"

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

/* payment_store_migrate connects to `conninfo`, waiting up to `wait_ms` ms
 * for the database to accept connections, and applies the embedded schema
 * in one transaction under an advisory lock (so daemons starting together do
 * not race on the catalog). Idempotent. Returns 0 or a negative enum pg_err
 * (PG_ERR_CONNECTION when the database never came up), after logging. */
int payment_store_migrate(const char *conninfo, int64_t wait_ms)
    __attribute__((warn_unused_result));

/* payment_store_open makes a store for one worker thread. `conninfo` is
 * borrowed and must outlive the store. `cache` (borrowed, may be NULL) is
 * the daemon's value cache of each account's balance, shared by its
 * workers: with it, commands that are all ChargePayment of new saga ids take
 * one round trip when the cache knows their accounts (the one-round-trip
 * path of docs/architecture.md), and every commit teaches it the balances
 * it left. It tries to connect for up to
 * `wait_ms` ms, but a store without a connection is still returned: every
 * call reconnects first (pg_ensure), so a worker survives a database
 * restart. Returns 0 and *out, or -ENOMEM. */
int payment_store_open(payment_store **out, const char *conninfo, int64_t wait_ms, valcache *cache)
    __attribute__((warn_unused_result));

/* payment_store_fast_counts reports what the store's one-round-trip path did
 * since it was opened: *fast transactions it committed, *fast_failed it
 * tried that failed their check (a cached value gone stale, or a saga id
 * already recorded) and went on the locking path. */
void payment_store_fast_counts(const payment_store *s, uint64_t *fast, uint64_t *fast_failed);

/* payment_store_close closes the connection and frees the store. NULL is
 * ignored. */
void payment_store_close(payment_store *s);

/* payment_store_apply runs one ChargePayment or RefundPayment for `saga_id`
 * (canonical UUID text) as one local transaction: lock the saga's record and
 * the customer's account, call payment_decide(), write what it says, commit.
 * Concurrent duplicates serialise on the record's primary key: a lost race
 * rolls back and retries the whole transaction, which then answers from the
 * record. On 0, *out is the committed outcome and *balance the account's
 * balance in minor units after the command (0 when there is no account).
 * Nothing is written unless 0 is returned. Re-run once after a reconnect
 * (idempotent by saga id). Returns 0 or a negative enum pg_err. */
int payment_store_apply(payment_store *s, const char *saga_id, const payment_cmd *cmd,
    payment_outcome *out, int64_t *balance) __attribute__((warn_unused_result));

/* One command of a batch (payment_store_apply_batch). */
typedef struct payment_batch_cmd {
	const char *saga_id; /* canonical UUID text, borrowed */
	payment_cmd cmd;     /* customer borrowed */
	payment_outcome out; /* filled on success */
	int64_t balance;     /* filled on success: the account's balance after it,
	                        minor units */
} payment_batch_cmd;

/* payment_store_apply_batch applies `n` commands (1..RPC_BATCH_MAX, any mix of
 * ChargePayment and RefundPayment, saga ids and customers may repeat) in one local
 * transaction: lock every record and account they touch (records, then
 * accounts, each in key order, so batches and single commands cannot deadlock),
 * call payment_decide() for each command in the order given, as if each ran
 * alone in that order, write the results with one set-based statement per
 * table, commit. Fills each cmds[i].out and .balance on 0; nothing is
 * written unless 0 is returned, and then the caller may apply the commands
 * one by one instead (payment_store_apply). A lost race (a concurrent insert
 * of the same saga id, a deadlock) retries the whole batch; a lost
 * connection re-runs it once. Returns 0, -ENOMEM or a negative enum pg_err. */
int payment_store_apply_batch(payment_store *s, payment_batch_cmd *cmds, size_t n)
    __attribute__((warn_unused_result));

#endif
