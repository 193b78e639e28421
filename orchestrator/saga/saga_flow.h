/* saga_flow: the generic, pure transition of a saga over a flow of steps
 * (docs/saga-definitions.md, section 2, "The state of a saga").
 *
 * A flow is a line of steps, each compensable, the pivot or retriable
 * (docs/saga-semantics.md, "Terms"); consecutive compensable steps of one
 * group are sent at once and the saga moves on when all have succeeded. A
 * saga's place in its flow is a position (step, phase, members); the
 * transition maps (position, row, event) to (position, row, commands due),
 * with the rules of saga.h's saga_transition (rules 3, 4, R3, R5; backoff,
 * attempts, attention), which is this function applied to saga_flow_order.
 * No I/O; saga_logic links only saga_base, so a flow is built from a parsed
 * definition by orchestrator/sagadef (saga_def_flow), not here.
 */
#ifndef SAGA_FLOW_H
#define SAGA_FLOW_H

#include <stdbool.h>
#include <stdint.h>

#include "saga.h"

/* SAGA_FLOW_MAX_STEPS: the steps of one flow, at most (a group's members
 * are bits of a uint64_t). */
#define SAGA_FLOW_MAX_STEPS 64

typedef enum saga_flow_kind {
	SAGA_FLOW_COMPENSABLE = 0,
	SAGA_FLOW_PIVOT = 1,
	SAGA_FLOW_RETRIABLE = 2,
} saga_flow_kind;

typedef struct saga_flow_step {
	const char *name; /* the refusal reason's fallback is NAME_refused;
	                     borrowed */
	saga_flow_kind kind;
	bool has_compensation;
	bool has_deadline; /* the policy's step_timeout_ms from entry, forward
	                      only; never for a retriable step */
	int32_t group;     /* the group's number, or -1 for a step alone; a
	                      group's members are consecutive */
	/* the step's own timing (a definition's deadline_ms and retry); 0:
	 * the policy's (the daemon's options) */
	int64_t deadline_ms;     /* its deadline from entry, forward */
	int64_t backoff_base_ms; /* its retries' first delay ceiling */
	int64_t backoff_cap_ms;  /* its retries' largest delay */
	int32_t attention_after; /* tries of its compensation, or of it when
	                            retriable, before the attention flag */
} saga_flow_step;

typedef struct saga_flow {
	int32_t nsteps; /* 0..SAGA_FLOW_MAX_STEPS */
	saga_flow_step steps[SAGA_FLOW_MAX_STEPS];
} saga_flow;

typedef enum saga_flow_phase {
	SAGA_FLOW_FORWARD = 0,
	SAGA_FLOW_COMPENSATING = 1,
} saga_flow_phase;

/* A saga's position. `step` is the index in flow->steps of the current step
 * or of its group's first member; completed is (nsteps, FORWARD), cancelled
 * (-1, COMPENSATING). `members` has bit i set when member i of the group
 * (steps[step + i]; bit 0 for a step alone) has succeeded its command
 * (forward) or its compensation, or needs none (compensating). */
typedef struct saga_flow_pos {
	int32_t step;
	saga_flow_phase phase;
	uint64_t members;
} saga_flow_pos;

/* A command: of the position's step `step` (a step alone or a group's first
 * member), forward (its command) or compensating (its compensation), and
 * `member`: -1 for a step alone, the member's index in its group otherwise
 * (so the step sent is steps[step + max(member, 0)]). */
typedef struct saga_flow_cmd {
	int32_t step;
	saga_flow_phase phase;
	int32_t member;
} saga_flow_cmd;

/* The decision-relevant part of a saga row, over a flow (saga's fields but
 * the state). */
typedef struct saga_flow_row {
	saga_flow_pos pos;
	char reason[SAGA_REASON_MAX];
	int32_t attempts;
	bool attention;
	int64_t step_deadline_ms;
	int64_t next_attempt_ms;
} saga_flow_row;

typedef struct saga_flow_event {
	saga_event_kind kind;
	saga_flow_cmd cmd;  /* the command a reply answers; ignored for DEADLINE
	                       and PAST_HORIZON */
	const char *reason; /* for REFUSED; borrowed */
} saga_flow_event;

typedef struct saga_flow_decision {
	bool ignored;       /* as saga_decision's */
	bool state_changed; /* the position changed (a member's success too) */
	bool attention_raised;
	saga_flow_row next;
	uint64_t send;          /* the members of next.pos whose command is due
	                           now (bit 0 for a step alone); 0: none */
	const char *event_name; /* as saga_decision's */
	const char *refused;    /* SAGA_EV_CANCEL only: NULL when the cancel
	                           was taken; else why not (static storage,
	                           status.h): REASON_PAST_PIVOT,
	                           REASON_COMPENSATING, REASON_CANCELLED
	                           (then `ignored` too) */
} saga_flow_decision;

/* saga_flow_order is the order saga as a flow: reserve (compensable, with
 * its compensation and deadline), charge (the pivot, the same), ship
 * (retriable). Static storage. */
extern const saga_flow saga_flow_order;

/* saga_flow_valid is true when `f` is a flow the transition handles: 0 to
 * SAGA_FLOW_MAX_STEPS steps with names, at most one pivot, no compensable
 * step after the pivot or a retriable one, no retriable step before the
 * pivot, compensable and pivot steps with a compensation, retriable steps
 * with neither a compensation nor a deadline, groups of consecutive
 * compensable steps. */
bool saga_flow_valid(const saga_flow *f);

/* saga_flow_stage_len returns how many steps the position's step `step`
 * spans: its group's size, or 1 for a step alone (0 for an index out of
 * range). */
int32_t saga_flow_stage_len(const saga_flow *f, int32_t step);

/* saga_flow_is_terminal is true for completed and cancelled positions. */
bool saga_flow_is_terminal(const saga_flow *f, const saga_flow_pos *pos);

/* saga_flow_due returns the members whose command is due at `pos` (every
 * member whose bit is clear); 0 for a terminal or invalid position. */
uint64_t saga_flow_due(const saga_flow *f, const saga_flow_pos *pos);

/* saga_flow_stage_policy returns policy `p` with the timing of the stage
 * at `pos` (a step alone, or a group: each value the largest of its
 * members', a member without one of its own counting the policy's):
 * step_timeout_ms, backoff_base_ms, backoff_cap_ms, attention_after. `p`
 * unchanged for a terminal or invalid position. The rule: a step's own
 * deadline_ms and retry (docs/saga-definitions.md, section 1) replace the
 * daemon's options for that step, its command and its compensation. */
saga_policy saga_flow_stage_policy(
    const saga_flow *f, const saga_flow_pos *pos, const saga_policy *p);

/* saga_flow_start returns the row of a new saga: at the first step (or
 * completed for a flow without steps), due now, with its deadline. */
saga_flow_row saga_flow_start(const saga_flow *f, int64_t now_ms, const saga_policy *p);

/* saga_flow_transition applies `ev` to `s` (a row of flow `f`, which
 * saga_flow_valid accepts) at `now_ms`, `rand` the backoff's jitter as for
 * saga_transition. Fills *out; never fails. The table of
 * docs/saga-definitions.md, section 2: forward, a step's success moves to
 * the next step (a group's when every member has succeeded); a definitive
 * refusal of a compensable step or the pivot compensates from the step
 * before (a group's refused member: its other members, then the steps
 * before), of a retriable one is retried; a deadline compensates from the
 * step (every member of a group); compensating, a success moves to the
 * step before that has a compensation, anything else is retried. Rule R3
 * (past_horizon) and R5 (saga_id_reused) park the saga as saga.h says.
 * Rule 11, SAGA_EV_CANCEL (an operator's): a forward stage that is not past
 * the pivot (a compensable stage, or the pivot itself) is compensated from
 * that stage, every member, as its deadline would (reason
 * cancel_requested), at any time and whatever its deadline; anywhere else it
 * is ignored with out->refused saying why: past_pivot (a retriable stage, or
 * completed), compensating, or cancelled. */
void saga_flow_transition(const saga_flow *f, const saga_flow_row *s, const saga_flow_event *ev,
    int64_t now_ms, uint64_t rand, const saga_policy *p, saga_flow_decision *out);

/* saga_flow_order_transition is saga_transition (saga.h) over `f`, a flow
 * of the order saga's shape (saga_flow_order's steps, kinds, compensations
 * and groups: saga_def_order_runnable checks a definition's) with timing of
 * its own (a step's deadline_ms and retry, saga_flow_stage_policy);
 * saga_transition is it over saga_flow_order. Same states, events,
 * decisions and failures as saga_transition. */
void saga_flow_order_transition(const saga_flow *f, const saga *s, const saga_event *ev,
    int64_t now_ms, uint64_t rand, const saga_policy *p, saga_decision *out);

/* saga_flow_order_start is saga_start (saga.h) over `f` (as above): the
 * deadline is the first step's own, or the policy's. */
saga saga_flow_order_start(const saga_flow *f, int64_t now_ms, const saga_policy *p);

/* saga_flow_order_pos maps an order saga's state to its position in
 * saga_flow_order (RESERVING (0, forward), CHARGING (1, forward), SHIPPING
 * (2, forward), REFUNDING (1, compensating), RELEASING (0, compensating),
 * COMPLETED (3, forward), CANCELLED (-1, compensating); members 0). Returns
 * false for SAGA_STATE_UNSPECIFIED or a value out of range. */
bool saga_flow_order_pos(saga_state state, saga_flow_pos *out);

/* saga_flow_order_state maps a position of saga_flow_order back to its
 * state; SAGA_STATE_UNSPECIFIED for a position that is not one. */
saga_state saga_flow_order_state(const saga_flow_pos *pos);

/* saga_flow_order_cmd maps an order command to (step, phase, member -1);
 * returns false for SAGA_CMD_NONE or a value out of range (then *out is a
 * command no position matches). */
bool saga_flow_order_cmd(saga_command cmd, saga_flow_cmd *out);

/* saga_flow_order_command maps a command of saga_flow_order back;
 * SAGA_CMD_NONE for one that is not an order command. */
saga_command saga_flow_order_command(const saga_flow_cmd *cmd);

#endif
