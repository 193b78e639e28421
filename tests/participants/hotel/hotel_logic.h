/* hotel_logic: the hotel participant's pure decision (hoteld,
 * tests/participants/hotel), in the participant kit's terms (pkit.h):
 * (idempotency record, the room kind's row, command) -> (new record, new
 * free count, reply), with no I/O. A hold takes one room of its kind;
 * `nights` is recorded with it. Rules: saga-semantics.md rules 2 (duplicates
 * answered from the record), 5 (an early compensation leaves a tombstone),
 * 6 (same key, other arguments); the kit adds R5 (pkit_decide).
 */
#ifndef SAGA_HOTEL_LOGIC_H
#define SAGA_HOTEL_LOGIC_H

#include "pkit.h"

/* The business refusals' reasons (stable: tests and clients match them). */
#define REASON_NO_VACANCY   "no_vacancy"
#define REASON_UNKNOWN_ROOM "unknown_room"

/* HoldRoomRequest.nights: 1..HOTEL_NIGHTS_MAX. */
#define HOTEL_NIGHTS_MAX 365

/* Values equal sagas.v1.HoldStatus; NONE means "no record". */
typedef enum hotel_status {
	HOTEL_NONE = 0,
	HOTEL_HELD = 1,
	HOTEL_NO_VACANCY = 2,
	HOTEL_UNKNOWN_ROOM = 3,
	HOTEL_FREED = 4,
	HOTEL_TOMBSTONE = 5,
} hotel_status;

/* The kit's args.op of each saga command. */
typedef enum hotel_op {
	HOTEL_OP_HOLD = 1, /* HoldRoom, the step */
	HOTEL_OP_FREE = 2, /* FreeRoom, the compensation */
} hotel_op;

/* hotel_decide decides one command `a` (text[0] the room, num[0] the
 * nights) on its saga's record `rec` (status HOTEL_NONE when absent) and the
 * row of its room kind `row` (value: rooms free), as read under lock. Fills
 * *out (its reason static); never fails, allocates nothing. The caller (the
 * kit) writes what *out says in the same transaction, then replies. */
void hotel_decide(
    const pkit_record *rec, const pkit_row *row, const pkit_args *a, pkit_outcome *out);

/* hotel_status_name returns "HELD", "TOMBSTONE", ... for a hotel_status
 * (static; "NONE" for anything else). */
const char *hotel_status_name(int s);

/* hotel_status_parse maps a name back; HOTEL_NONE for unknown text. */
int hotel_status_parse(const char *name);

#endif
