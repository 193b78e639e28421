/* shipping_logic: the shipping participant's pure decisions.
 *
 * (idempotency record, command) -> (new record, reply), with no I/O: the
 * daemon and the simulation call the same function. ShipOrder is the order
 * saga's retriable step (docs/saga-semantics.md, rule 3): it has no business
 * refusal and no compensation. Rules: saga-semantics.md rules 2 (duplicates
 * answered from the record) and 6 (same key, other arguments).
 */
#ifndef SAGA_SHIPPING_LOGIC_H
#define SAGA_SHIPPING_LOGIC_H

#include <stdbool.h>
#include <stdint.h>

#define SHIPPING_NAME_MAX 64

/* Values equal sagas.v1.ShipmentStatus; NONE means "no record". */
typedef enum shipping_status {
	SHIPPING_NONE = 0,
	SHIPPING_SHIPPED = 1,
} shipping_status;

/* The idempotency record of one saga id: its shipment (one row per saga). */
typedef struct shipping_record {
	shipping_status status; /* SHIPPING_NONE: no row yet */
	char customer[SHIPPING_NAME_MAX + 1];
	char sku[SHIPPING_NAME_MAX + 1];
	int32_t qty; /* units */
} shipping_record;

typedef enum shipping_op {
	SHIPPING_OP_SHIP = 1, /* the retriable step */
} shipping_op;

typedef struct shipping_cmd {
	shipping_op op;
	const char *customer; /* borrowed */
	const char *sku;      /* borrowed */
	int32_t qty;          /* units, > 0 */
} shipping_cmd;

typedef struct shipping_outcome {
	int code;           /* rpc status code (status.h) */
	const char *reason; /* stable reason, "" when OK; static storage */
	shipping_status reply_status;
	bool write_record; /* insert the record `record`: the shipment is created */
	shipping_record record;
} shipping_outcome;

/* shipping_decide decides one ShipOrder. `rec` is the saga's record (status
 * NONE when absent), read under lock. Fills *out; never fails. No record:
 * the shipment is created (SHIPPED, write_record). A record with the same
 * customer, sku and qty: answered from it (SHIPPED, nothing written, rule
 * 2). Other arguments: ALREADY_EXISTS "key_mismatch" (rule 6). The caller
 * writes what *out says in the same transaction that read `rec`, then
 * replies. */
void shipping_decide(const shipping_record *rec, const shipping_cmd *cmd, shipping_outcome *out);

/* shipping_status_name returns "SHIPPED" or "NONE" (static). */
const char *shipping_status_name(shipping_status s);

/* shipping_status_parse maps a name back; SHIPPING_NONE for unknown text. */
shipping_status shipping_status_parse(const char *name);

#endif
