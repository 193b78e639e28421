/* stock_logic: the stock participant's pure decisions.
 *
 * (idempotency record, stock row, command) -> (new record, new on-hand,
 * reply), with no I/O: the daemon and the simulation call the same function.
 * Rules: saga-semantics.md rules 2 (duplicates answered from the record),
 * 5 (early compensation leaves a tombstone), 6 (same key, other arguments).
 */
#ifndef SAGA_STOCK_LOGIC_H
#define SAGA_STOCK_LOGIC_H

#include <stdbool.h>
#include <stdint.h>

#define STOCK_SKU_MAX 64

/* Values equal sagas.v1.ReservationStatus; NONE means "no record". */
typedef enum stock_status {
	STOCK_NONE = 0,
	STOCK_RESERVED = 1,
	STOCK_OUT_OF_STOCK = 2,
	STOCK_UNKNOWN_SKU = 3,
	STOCK_RELEASED = 4,
	STOCK_TOMBSTONE = 5,
} stock_status;

/* The idempotency record of one saga id (one row per saga). */
typedef struct stock_record {
	stock_status status; /* STOCK_NONE: no row yet */
	char sku[STOCK_SKU_MAX + 1];
	int32_t qty;
} stock_record;

/* The stock row of the command's sku. */
typedef struct stock_row {
	bool exists;
	int64_t on_hand; /* units, >= 0 */
} stock_row;

typedef enum stock_op {
	STOCK_OP_RESERVE = 1, /* the step */
	STOCK_OP_RELEASE = 2, /* the compensation */
} stock_op;

typedef struct stock_cmd {
	stock_op op;
	const char *sku; /* borrowed */
	int32_t qty;     /* units, > 0 */
} stock_cmd;

typedef struct stock_outcome {
	int code;                  /* rpc status code (status.h) */
	const char *reason;        /* stable reason, "" when OK; static storage */
	stock_status reply_status; /* the status the reply reports */
	bool write_record;         /* insert or update the record to `record` */
	stock_record record;
	bool write_row; /* set the sku's on_hand to `on_hand` */
	int64_t on_hand;
} stock_outcome;

/* stock_decide decides one command. `rec` is the saga's record (status NONE
 * when absent), `row` the stock row of cmd->sku as read under lock. Fills
 * *out; never fails. The caller writes what *out says in the same
 * transaction that read `rec` and `row`, then replies. */
void stock_decide(
    const stock_record *rec, const stock_row *row, const stock_cmd *cmd, stock_outcome *out);

/* stock_status_name returns "RESERVED", "TOMBSTONE", ... (static). */
const char *stock_status_name(stock_status s);

/* stock_status_parse maps a name back; STOCK_NONE for unknown text. */
stock_status stock_status_parse(const char *name);

#endif
