/* store: the payment participant's database: its own statements (Deposit,
 * ListAccounts), and its saga commands through the participant kit's store
 * (services/kit/pkit.h), which holds the rest of its SQL. A payment_store is the
 * kit's pkit_store of payment_service: one per worker thread, each with its
 * own PGconn; nothing here is shared between threads. Money is int64 minor
 * units throughout.
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
 *                      anything else: a bug or bad data (INTERNAL),
 * plus -ENOMEM, and -EINVAL where a function says so. A database error is
 * never turned into a business refusal: refusals only come from
 * payment_decide().
 */
#ifndef SAGA_PAYMENT_STORE_H
#define SAGA_PAYMENT_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "payment_logic.h"
#include "pkit.h"
#include "valcache.h"
#include "valid.h"

typedef pkit_store payment_store;

/* One account as ListAccounts reports it. */
typedef struct payment_account_row {
	char customer[PAYMENT_CUSTOMER_MAX + 1];
	int64_t balance;        /* minor units */
	int32_t charged_count;  /* its records in CHARGED */
	int64_t charged_amount; /* their sum, minor units */
} payment_account_row;

/* One idempotency record as ListAccounts reports it. */
typedef struct payment_charge_row {
	char saga_id[VALID_UUID_LEN + 1];
	char customer[PAYMENT_CUSTOMER_MAX + 1];
	int64_t amount; /* minor units */
	payment_status status;
} payment_charge_row;

/* Charge rows returned by ListAccounts: the default and the largest page
 * (ListAccountsRequest.limit). */
#define PAYMENT_LIST_LIMIT_DEFAULT 1000
#define PAYMENT_LIST_LIMIT_MAX     10000

/* The state of the participant, read in one snapshot: every account with
 * its aggregates, totals over every record, and a bounded page of the
 * newest records. */
typedef struct payment_listing {
	payment_account_row *accounts; /* every account, by customer (byte order) */
	size_t n_accounts;
	payment_charge_row *charges; /* by created_at DESC, saga_id */
	size_t n_charges;
	bool charges_truncated;   /* more records exist than listed */
	int64_t total_charges;    /* every record, any status */
	int64_t refunded_charges; /* records in REFUNDED */
} payment_listing;

/* What payment_store_deposit did: a business outcome, or
 * PAYMENT_DEPOSIT_ERROR when the database failed (the error then in its
 * *err). */
typedef enum payment_deposit_result {
	PAYMENT_DEPOSIT_ADDED,        /* added: *balance is the balance right after */
	PAYMENT_DEPOSIT_DUPLICATE,    /* its key's deposit was made before: nothing
	                                 added, *balance is the balance recorded then */
	PAYMENT_DEPOSIT_KEY_MISMATCH, /* its key was used with another customer or
	                                 amount: nothing written, *balance is that
	                                 deposit's */
	PAYMENT_DEPOSIT_OVER_CAP,     /* the balance would exceed VALID_AMOUNT_MAX:
	                                 nothing written */
	PAYMENT_DEPOSIT_ERROR,        /* the database failed: *err says how */
} payment_deposit_result;

/* payment_store_deposit adds `amount` minor units (1..VALID_AMOUNT_MAX) to
 * `customer`'s account, creating it, outside any saga (admin).
 * `deposit_id` (a canonical UUID, borrowed) is its idempotency key, or NULL
 * or "" for none. With a key, the first call adds and records the balance
 * right after; a duplicate (also a concurrent one) adds nothing and gets that
 * recorded balance (PAYMENT_DEPOSIT_DUPLICATE), like the participants'
 * commands (saga-semantics.md rules 2 and 6), and a lost connection or a
 * lost race is re-run (at most twice); a re-run that finds the record its
 * own first run wrote (the connection was lost after the COMMIT) is not a
 * duplicate. Without a key it is never re-run after a lost connection (its
 * COMMIT may have gone through): PG_ERR_CONNECTION then means "unknown,
 * check the balance". Returns the outcome (payment_deposit_result, which
 * says what *balance then holds); PAYMENT_DEPOSIT_ERROR with *err a
 * negative enum pg_err or -ENOMEM. *err (never NULL) is 0 for every other
 * result. */
payment_deposit_result payment_store_deposit(payment_store *s, const char *customer, int64_t amount,
    const char *deposit_id, int64_t *balance, int *err) __attribute__((warn_unused_result));

/* payment_store_list reads, in one consistent snapshot, every account with
 * its balance and the count and sum of its CHARGED records, the number of
 * records in all and in REFUNDED (all aggregated by the database over every
 * record), and, when `include_charges`, the newest `limit` records
 * (1..PAYMENT_LIST_LIMIT_MAX; 0 lists none), setting charges_truncated when
 * there are more. Arrays are malloc'd; free with payment_listing_free.
 * Re-run once after a reconnect. Returns 0, -EINVAL (limit out of range),
 * -ENOMEM, or a negative enum pg_err; *out is empty on error. */
int payment_store_list(payment_store *s, bool include_charges, int32_t limit, payment_listing *out)
    __attribute__((warn_unused_result));

/* payment_listing_free frees the arrays of a listing and empties it. */
void payment_listing_free(payment_listing *l);

#endif
