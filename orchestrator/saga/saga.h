/* saga: the pure state machine of the order saga.
 *
 * (state, event) -> (new state, command due), with no I/O: the daemon, the
 * unit tests and the simulation call these same functions. The table and the
 * rules are ../shared/design/saga-semantics.md ("The order saga"); comments
 * cite its rule numbers. Times are ms since the Unix epoch; randomness is
 * passed in so that decisions are reproducible.
 */
#ifndef SAGA_SAGA_H
#define SAGA_SAGA_H

#include <stdbool.h>
#include <stdint.h>

/* Values equal sagas.v1.SagaState. */
typedef enum saga_state {
	SAGA_STATE_UNSPECIFIED = 0,
	SAGA_STATE_RESERVING = 1,
	SAGA_STATE_CHARGING = 2, /* the pivot */
	SAGA_STATE_COMPLETED = 3,
	SAGA_STATE_REFUNDING = 4,
	SAGA_STATE_RELEASING = 5,
	SAGA_STATE_CANCELLED = 6,
	SAGA_STATE_SHIPPING = 7, /* the retriable step after the pivot */
} saga_state;

/* The largest saga_state value (states are 1..SAGA_STATE_LAST). */
#define SAGA_STATE_LAST SAGA_STATE_SHIPPING

typedef enum saga_command {
	SAGA_CMD_NONE = 0,
	SAGA_CMD_RESERVE_STOCK = 1,
	SAGA_CMD_CHARGE_PAYMENT = 2,
	SAGA_CMD_REFUND_PAYMENT = 3,
	SAGA_CMD_RELEASE_STOCK = 4,
	SAGA_CMD_SHIP_ORDER = 5,
} saga_command;

/* The largest saga_command value. */
#define SAGA_CMD_LAST SAGA_CMD_SHIP_ORDER

typedef enum saga_event_kind {
	SAGA_EV_SUCCESS = 1,      /* the participant applied the command (OK) */
	SAGA_EV_REFUSED = 2,      /* a definitive refusal (rule 3) */
	SAGA_EV_TRANSIENT = 3,    /* transport error, UNAVAILABLE, no reply (rule 3) */
	SAGA_EV_DEADLINE = 4,     /* the step deadline passed (the sweep found it) */
	SAGA_EV_PAST_HORIZON = 5, /* the saga started too long ago for any
	                             participant to take its commands (rule R3,
	                             common/base/horizon.h): parked, flagged */
	SAGA_EV_CANCEL = 6,       /* an operator asked to cancel the saga (rule
	                             11): before the pivot has succeeded it is
	                             compensated as a deadline would; past it,
	                             refused (saga_flow_decision.refused) */
} saga_event_kind;

typedef struct saga_event {
	saga_event_kind kind;
	saga_command cmd;   /* the command a reply answers; ignored for DEADLINE */
	const char *reason; /* for REFUSED: a stable reason (status.h); borrowed */
} saga_event;

/* Tunables of the decisions, all in ms (or counts). Every time they are
 * compared with is the database's clock (docs/saga-semantics.md, rule T1). */
typedef struct saga_policy {
	int64_t step_timeout_ms;        /* deadline of RESERVING and CHARGING, from entry
	                                   (SHIPPING has none) */
	int64_t backoff_base_ms;        /* first retry delay ceiling */
	int64_t backoff_cap_ms;         /* largest retry delay */
	int32_t attention_after;        /* tries of a compensation or of the retriable
	                                   step (ShipOrder) before the attention flag */
	int64_t request_timeout_ms;     /* the first try's wait for its reply */
	int64_t request_timeout_max_ms; /* the longest wait of any try (>= the
	                                   first; 0: the first's) */
	int64_t lease_grace_ms;         /* a lease's time past its try's timeout,
	                                   to write the reply (SAGA_LEASE_GRACE_MS) */
} saga_policy;

/* The lease's room to write a reply that came at the end of its timeout. */
#define SAGA_LEASE_GRACE_MS 1000
/* A try cut at its step deadline waits a multiple of this (ms), when at
 * least this much is left; and no retry of a step starts with less than
 * this left (it waits for the deadline instead). */
#define SAGA_TRY_GRAIN_MS 100

#define SAGA_REASON_MAX 32

/* The decision-relevant part of a saga row. */
typedef struct saga {
	saga_state state;
	char reason[SAGA_REASON_MAX]; /* "" or a stable reason */
	int32_t attempts;             /* failed tries of the current command */
	bool attention;
	int64_t step_deadline_ms; /* 0 when the state has none */
	int64_t next_attempt_ms;  /* when the current command is due; 0 = never */
} saga;

typedef struct saga_decision {
	bool ignored;           /* the event does not apply (stale or terminal):
	                           nothing to write */
	bool state_changed;     /* a transition (history row) rather than a retry */
	bool attention_raised;  /* the attention flag was set by this event */
	saga next;              /* the row after the event */
	saga_command send;      /* command due now (0 when waiting or terminal) */
	const char *event_name; /* stable history name: "reply_ok", "refused",
	                           "deadline", "transient" */
} saga_decision;

/* saga_start returns the row of a new saga: RESERVING, due now, deadline
 * now + step_timeout_ms. */
saga saga_start(int64_t now_ms, const saga_policy *p);

/* saga_transition applies `ev` to `s` at `now_ms`. `rand` is a uniform random
 * 64-bit number used for backoff jitter (full jitter: the delay is uniform in
 * [1, min(cap, base * 2^attempts)] ms). Fills *out; never fails.
 * Rules: table "The order saga", rules 3 (transient vs definitive,
 * compensations and the retriable step after the pivot retried with
 * attention after N: after the pivot, only forward), 4 (unknown outcome is
 * compensated). It is saga_flow_transition (saga_flow.h) over
 * saga_flow_order, through the maps of states and commands. */
void saga_transition(const saga *s, const saga_event *ev, int64_t now_ms, uint64_t rand,
    const saga_policy *p, saga_decision *out);

/* saga_event_from_reply classifies a participant's reply to `cmd`: code is an
 * rpc status code (status.h), reason the reply's reason, transport true when
 * no reply came. Returns the event (its reason borrowed from `reason`).
 * OK -> SUCCESS; FAILED_PRECONDITION, NOT_FOUND, ABORTED, ALREADY_EXISTS,
 * INVALID_ARGUMENT -> REFUSED; everything else -> TRANSIENT (rule 3). */
saga_event saga_event_from_reply(saga_command cmd, int code, const char *reason, bool transport);

/* saga_command_of returns the command in flight in `state` (table column 2). */
saga_command saga_command_of(saga_state state);

/* saga_is_terminal is true for COMPLETED and CANCELLED. */
bool saga_is_terminal(saga_state state);

/* saga_is_parked is true for a saga that is not terminal and is never due
 * again (next_attempt_ms 0) and flagged: parked by rule R3 (past_horizon)
 * or R5 (saga_id_reused) until an operator acts. */
bool saga_is_parked(const saga *s);

/* saga_wait_over is true when a wait for `s`'s end is over: it is
 * terminal, or parked (nothing happens to it without an operator). */
bool saga_wait_over(const saga *s);

/* saga_is_compensating is true for REFUNDING and RELEASING. */
bool saga_is_compensating(saga_state state);

/* saga_is_retriable is true for SHIPPING, the retriable step after the
 * pivot: it has no step deadline, every failure of it (a refusal too) is
 * retried, and it is never compensated (rule 3). */
bool saga_is_retriable(saga_state state);

/* saga_is_retried_forever is true for the states whose command is retried
 * until it succeeds, flagged for attention after attention_after tries:
 * the compensations and the retriable step (saga_is_compensating or
 * saga_is_retriable). */
bool saga_is_retried_forever(saga_state state);

/* Names: "RESERVING", ... ; "ReserveStock", ...; static storage. */
const char *saga_state_name(saga_state state);
const char *saga_command_name(saga_command cmd);

/* saga_command_method returns the full RPC method of `cmd`
 * ("/sagas.v1.Stock/ReserveStock", docs/protocol.md), its row's path in the
 * table of methods (methods.h, METHOD_PATH), or NULL for SAGA_CMD_NONE.
 * Static storage. */
const char *saga_command_method(saga_command cmd);

/* saga_state_parse maps a name (case-insensitive) to a state; returns
 * SAGA_STATE_UNSPECIFIED for unknown text. */
saga_state saga_state_parse(const char *name);

/* saga_try_timeout_ms returns how long a try of `s`'s command sent at
 * `now_ms` waits for its reply, in ms (>= 1): request_timeout_ms doubled for
 * each failed try before it (s->attempts), at most request_timeout_max_ms,
 * and for a step never past its deadline, so that the last try of a step
 * waits for all that is left of it (rounded down to SAGA_TRY_GRAIN_MS, so
 * that tries due together share a timeout and a frame). A participant slower than the first
 * try's timeout is answered by a later try from its record inside the step
 * deadline (docs/saga-semantics.md, rule T4). */
int64_t saga_try_timeout_ms(const saga *s, int64_t now_ms, const saga_policy *p);

/* saga_lease_until_ms returns until when (ms, the database's clock) the row
 * of `s` is leased, that is its next_attempt_ms, while a try sent at
 * `now_ms` waits: the try's timeout plus lease_grace_ms, never past a step's
 * deadline, so that the sweep finds every passed deadline whoever holds the
 * lease (rule T5). */
int64_t saga_lease_until_ms(const saga *s, int64_t now_ms, const saga_policy *p);

/* saga_first_lease_ms returns how long after its start a new saga's first
 * try holds its row (ms): saga_lease_until_ms of the row saga_start makes,
 * min(request timeout + grace, step timeout). No saga on its first try is
 * due again sooner, which the sweep uses to skip young sagas. */
int64_t saga_first_lease_ms(const saga_policy *p);

/* saga_backoff_ms returns the full-jitter delay for the given number of
 * failed attempts (>= 1): uniform in [1, min(cap, base * 2^(attempts-1))]. */
int64_t saga_backoff_ms(int32_t attempts, uint64_t rand, const saga_policy *p);

#endif
