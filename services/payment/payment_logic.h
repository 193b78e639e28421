/* payment_logic: the payment participant's pure decisions.
 *
 * (idempotency record, account row, command) -> (new record, new balance,
 * reply), with no I/O: the daemon and the simulation call the same function.
 * Amounts are int64 minor units. Rules: saga-semantics.md rules 2, 5, 6.
 */
#ifndef SAGA_PAYMENT_LOGIC_H
#define SAGA_PAYMENT_LOGIC_H

#include <stdbool.h>
#include <stdint.h>

#define PAYMENT_CUSTOMER_MAX 64

/* Values equal sagas.v1.ChargeStatus; NONE means "no record". */
typedef enum payment_status {
	PAYMENT_NONE = 0,
	PAYMENT_CHARGED = 1,
	PAYMENT_DECLINED = 2,
	PAYMENT_UNKNOWN_ACCOUNT = 3,
	PAYMENT_REFUNDED = 4,
	PAYMENT_TOMBSTONE = 5,
} payment_status;

/* The idempotency record of one saga id (one row per saga). */
typedef struct payment_record {
	payment_status status; /* PAYMENT_NONE: no row yet */
	char customer[PAYMENT_CUSTOMER_MAX + 1];
	int64_t amount; /* minor units */
} payment_record;

/* The account row of the command's customer. */
typedef struct payment_account {
	bool exists;
	int64_t balance; /* minor units, >= 0 */
} payment_account;

typedef enum payment_op {
	PAYMENT_OP_CHARGE = 1, /* the pivot step */
	PAYMENT_OP_REFUND = 2, /* the compensation */
} payment_op;

typedef struct payment_cmd {
	payment_op op;
	const char *customer; /* borrowed */
	int64_t amount;       /* minor units, > 0 */
} payment_cmd;

typedef struct payment_outcome {
	int code;           /* rpc status code (status.h) */
	const char *reason; /* stable reason, "" when OK; static storage */
	payment_status reply_status;
	bool write_record; /* insert or update the record to `record` */
	payment_record record;
	bool write_account; /* set the customer's balance to `balance` */
	int64_t balance;
} payment_outcome;

/* payment_decide decides one command. `rec` is the saga's record (status
 * NONE when absent), `acct` the account of cmd->customer read under lock.
 * Fills *out; never fails. The caller writes what *out says in the same
 * transaction, then replies. */
void payment_decide(const payment_record *rec, const payment_account *acct, const payment_cmd *cmd,
    payment_outcome *out);

/* payment_status_name returns "CHARGED", "TOMBSTONE", ... (static). */
const char *payment_status_name(payment_status s);

/* payment_status_parse maps a name back; PAYMENT_NONE for unknown text. */
payment_status payment_status_parse(const char *name);

#endif
