/* waits: the calls of Orchestrator/WaitSaga that wait for a saga to finish.
 *
 * A WaitSaga for an unfinished saga is held (rpc_hold) and registered here
 * by saga id; the engine reports every saga that reaches COMPLETED or
 * CANCELLED, or is parked (saga_wait_over: rules R3 and R5; answered with
 * finished false) (waits_finished), and so does the listener (listen.h) for the
 * ones another orchestrator ended, which answers its waiting calls at once
 * with the terminal row (a second report of the same end finds none left), and a timer thread
 * answers the calls whose wait ran out with the row as read when they began (finished = false).
 * Each waiting call is answered exactly once. Thread-safe.
 */
#ifndef SAGA_WAITS_H
#define SAGA_WAITS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rpc.h"
#include "store.h"

typedef struct waits waits;

/* waits_open makes a registry holding at most `max` waiting calls (>= 1)
 * and starts its timer thread. Returns 0 and *out, or -ENOMEM. */
int waits_open(waits **out, size_t max) __attribute__((warn_unused_result));

/* How a held call is answered: a WaitSagaReply, or (start) the
 * StartSagaReply of a StartSaga with wait_ms, with its `created`. */
typedef struct waits_as {
	bool start;
	bool created;
} waits_as;

/* waits_add registers the held call `h` for `row` (the saga as just read,
 * not terminal), to be answered as `as` says by `deadline_ms` (this host's
 * monotonic clock, clock_mono_ms) at the latest; *ticket names it for waits_take. Returns 0, -EBUSY
 * when `max` calls wait already, or -ESHUTDOWN after waits_close; on an error `h` is not taken and
 * the caller answers it. A saga that finishes between the caller's read and this call is not seen:
 * the caller reads it again after adding, and takes the call back with
 * waits_take when it finished. */
int waits_add(waits *w, rpc_held *h, const saga_row *row, int64_t deadline_ms, const waits_as *as,
    uint64_t *ticket) __attribute__((warn_unused_result));

/* waits_take takes the call registered as `ticket` (waits_add) for
 * `saga_id` back when it is still waiting: true when the caller owns its
 * token again (it was not answered), false when it was answered already.
 * Tickets are never reused, unlike tokens: an answered call's context may
 * hold another call by then. */
bool waits_take(waits *w, uint64_t ticket, const char *saga_id);

/* waits_finished answers every call waiting for `row->saga_id` with `row`
 * (a terminal saga, as committed) and forgets them, so each is answered
 * once however often the end is reported. Called by the engine after the
 * commit, and by the listener (listen.h) for ends other orchestrators
 * wrote. */
void waits_finished(waits *w, const saga_row *row);

/* waits_has is true when a call waits for saga `saga_id` now (the
 * listener reads only those sagas whose end was NOTIFYed). */
bool waits_has(waits *w, const char *saga_id);

/* waits_ids copies the ids of every saga some call waits for now into a
 * malloc'd array of (VALID_UUID_LEN + 1)-byte strings, *ids (caller frees;
 * NULL when none), and their number into *n. Returns 0 or -ENOMEM. The
 * listener re-reads them after a reconnection, when NOTIFYs may have been
 * lost. */
int waits_ids(waits *w, char (**ids)[VALID_UUID_LEN + 1], size_t *n)
    __attribute__((warn_unused_result));

/* waits_pipe_closed notes that the client connection `pipe` closed: its
 * waiting calls are dropped by the timer thread soon after (their contexts
 * freed for other calls; nobody is left to answer). Only notes: safe to
 * call from rpc_server_ops.pipe_closed. */
void waits_pipe_closed(waits *w, uint32_t pipe);

/* waits_count is how many calls wait now. */
size_t waits_count(waits *w);

/* waits_close answers every waiting call with the row it holds (finished =
 * false), refuses new ones and stops the timer thread. Call before
 * rpc_server_stop. NULL is ignored. */
void waits_close(waits *w);

/* waits_free frees a closed registry (after the engine, which reports to
 * it, has stopped). NULL is ignored. */
void waits_free(waits *w);

/* waits_reply answers the held call `h` with `row` and `finished`, as `as`
 * says (also used by the API for calls it does not register). */
void waits_reply(rpc_held *h, const saga_row *row, bool finished, const waits_as *as);

/* The WaitSaga wait when the request gives none, and the longest, in ms. */
#define WAITS_DEFAULT_MS 10000
#define WAITS_MAX_MS     60000

#endif
