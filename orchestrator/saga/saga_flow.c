#include "saga_flow.h"

#include <stdio.h>
#include <string.h>

#include "status.h"

const saga_flow saga_flow_order = {
    .nsteps = 3,
    .steps = {
        {.name = "reserve", .kind = SAGA_FLOW_COMPENSABLE, .has_compensation = true,
            .has_deadline = true, .group = -1},
        {.name = "charge", .kind = SAGA_FLOW_PIVOT, .has_compensation = true,
            .has_deadline = true, .group = -1},
        {.name = "ship", .kind = SAGA_FLOW_RETRIABLE, .has_compensation = false,
            .has_deadline = false, .group = -1},
    },
};

bool saga_flow_valid(const saga_flow *f)
{
	if (f->nsteps < 0 || f->nsteps > SAGA_FLOW_MAX_STEPS)
		return false;
	bool pivot = false, retriable = false;
	for (int32_t i = 0; i < f->nsteps; i++) {
		const saga_flow_step *st = &f->steps[i];
		if (st->name == NULL)
			return false;
		switch (st->kind) {
		case SAGA_FLOW_COMPENSABLE:
			if (pivot || retriable || !st->has_compensation)
				return false;
			break;
		case SAGA_FLOW_PIVOT:
			if (pivot || retriable || !st->has_compensation)
				return false;
			pivot = true;
			break;
		case SAGA_FLOW_RETRIABLE:
			if (!pivot || st->has_compensation || st->has_deadline)
				return false;
			retriable = true;
			break;
		default:
			return false;
		}
		if (st->group >= 0) {
			if (st->kind != SAGA_FLOW_COMPENSABLE)
				return false;
			/* a group's members are consecutive: a run of a
			 * group's number is its only one */
			if (i == 0 || f->steps[i - 1].group != st->group)
				for (int32_t j = 0; j < i; j++)
					if (f->steps[j].group == st->group)
						return false;
		}
	}
	return true;
}

/* saga_flow_first returns the index of the first member of the group of
 * steps[i] (i itself for a step alone). */
static int32_t saga_flow_first(const saga_flow *f, int32_t i)
{
	int32_t g = f->steps[i].group;
	if (g < 0)
		return i;
	while (i > 0 && f->steps[i - 1].group == g)
		i--;
	return i;
}

int32_t saga_flow_stage_len(const saga_flow *f, int32_t step)
{
	if (step < 0 || step >= f->nsteps)
		return 0;
	int32_t g = f->steps[step].group;
	if (g < 0)
		return 1;
	int32_t n = 1;
	while (step + n < f->nsteps && f->steps[step + n].group == g)
		n++;
	return n;
}

/* saga_flow_all returns the mask of a stage of n members. */
static uint64_t saga_flow_all(int32_t n)
{
	return n >= 64 ? ~(uint64_t)0 : (((uint64_t)1 << n) - 1);
}

bool saga_flow_is_terminal(const saga_flow *f, const saga_flow_pos *pos)
{
	return (pos->step == f->nsteps && pos->phase == SAGA_FLOW_FORWARD)
	    || (pos->step == -1 && pos->phase == SAGA_FLOW_COMPENSATING);
}

/* saga_flow_live is true for a position where a command is in flight: a
 * step alone or a group's first member. */
static bool saga_flow_live(const saga_flow *f, const saga_flow_pos *pos)
{
	return pos->step >= 0 && pos->step < f->nsteps
	    && saga_flow_first(f, pos->step) == pos->step;
}

uint64_t saga_flow_due(const saga_flow *f, const saga_flow_pos *pos)
{
	if (!saga_flow_live(f, pos))
		return 0;
	return saga_flow_all(saga_flow_stage_len(f, pos->step)) & ~pos->members;
}

/* saga_flow_retried_forever: compensations and the retriable step are
 * retried until they succeed, with attention after N (rule 3). */
static bool saga_flow_retried_forever(const saga_flow *f, const saga_flow_pos *pos)
{
	return pos->phase == SAGA_FLOW_COMPENSATING
	    || f->steps[pos->step].kind == SAGA_FLOW_RETRIABLE;
}

/* saga_flow_has_deadline: a forward stage of which a member has one. */
static bool saga_flow_has_deadline(const saga_flow *f, const saga_flow_pos *pos)
{
	if (pos->phase != SAGA_FLOW_FORWARD || !saga_flow_live(f, pos))
		return false;
	int32_t n = saga_flow_stage_len(f, pos->step);
	for (int32_t i = 0; i < n; i++)
		if (f->steps[pos->step + i].has_deadline
		    && f->steps[pos->step + i].kind != SAGA_FLOW_RETRIABLE)
			return true;
	return false;
}

/* saga_flow_max: the larger of a member's own value (0: none) or the
 * policy's, and `cur` */
static int64_t saga_flow_max(int64_t cur, int64_t own, int64_t policy)
{
	int64_t v = own > 0 ? own : policy;
	return v > cur ? v : cur;
}

saga_policy saga_flow_stage_policy(
    const saga_flow *f, const saga_flow_pos *pos, const saga_policy *p)
{
	saga_policy out = *p;
	if (!saga_flow_live(f, pos))
		return out;
	int32_t n = saga_flow_stage_len(f, pos->step);
	int64_t deadline = 0, base = 0, cap = 0, attention = 0;
	for (int32_t i = 0; i < n; i++) {
		const saga_flow_step *st = &f->steps[pos->step + i];
		deadline = saga_flow_max(deadline, st->deadline_ms, p->step_timeout_ms);
		base = saga_flow_max(base, st->backoff_base_ms, p->backoff_base_ms);
		cap = saga_flow_max(cap, st->backoff_cap_ms, p->backoff_cap_ms);
		attention = saga_flow_max(attention, st->attention_after, p->attention_after);
	}
	out.step_timeout_ms = deadline;
	out.backoff_base_ms = base;
	out.backoff_cap_ms = cap;
	out.attention_after = (int32_t)attention;
	return out;
}

/* saga_flow_enter moves `next` to `pos`, due now, with a fresh attempt
 * count; forward stages with a deadline get one, other positions none
 * (rule 3), terminal ones are never due. Sets *send to the members due. */
static void saga_flow_enter(const saga_flow *f, saga_flow_row *next, saga_flow_pos pos,
    int64_t now_ms, const saga_policy *p, uint64_t *send)
{
	next->pos = pos;
	next->attempts = 0;
	next->attention = false;
	next->step_deadline_ms = saga_flow_has_deadline(f, &pos)
	    ? now_ms + saga_flow_stage_policy(f, &pos, p).step_timeout_ms
	    : 0;
	next->next_attempt_ms = saga_flow_is_terminal(f, &pos) ? 0 : now_ms;
	*send = saga_flow_due(f, &pos);
}

/* saga_flow_forward enters the stage at `step` forward (completed past the
 * last). */
static void saga_flow_forward(const saga_flow *f, saga_flow_row *next, int32_t step, int64_t now_ms,
    const saga_policy *p, uint64_t *send)
{
	saga_flow_pos pos = {.step = step, .phase = SAGA_FLOW_FORWARD, .members = 0};
	saga_flow_enter(f, next, pos, now_ms, p, send);
}

/* saga_flow_before is the stage before the one at `step` (-1: none). */
static int32_t saga_flow_before(const saga_flow *f, int32_t step)
{
	return step > 0 ? saga_flow_first(f, step - 1) : -1;
}

/* saga_flow_compensate enters compensating at the stage at `step` with the
 * members in `done` needing no compensation, going back over stages with
 * nothing to compensate (they did not act, or have no compensation) to
 * cancelled (-1). */
static void saga_flow_compensate(const saga_flow *f, saga_flow_row *next, int32_t step,
    uint64_t done, int64_t now_ms, const saga_policy *p, uint64_t *send)
{
	while (step >= 0) {
		int32_t n = saga_flow_stage_len(f, step);
		uint64_t members = done;
		for (int32_t i = 0; i < n; i++)
			if (!f->steps[step + i].has_compensation)
				members |= (uint64_t)1 << i;
		if ((members & saga_flow_all(n)) != saga_flow_all(n)) {
			saga_flow_pos pos
			    = {.step = step, .phase = SAGA_FLOW_COMPENSATING, .members = members};
			saga_flow_enter(f, next, pos, now_ms, p, send);
			return;
		}
		step = saga_flow_before(f, step);
		done = 0;
	}
	saga_flow_pos cancelled = {.step = -1, .phase = SAGA_FLOW_COMPENSATING, .members = 0};
	saga_flow_enter(f, next, cancelled, now_ms, p, send);
}

static void saga_flow_set_reason(saga_flow_row *next, const char *reason)
{
	snprintf(next->reason, sizeof next->reason, "%s", reason);
}

/* A refused step keeps a stable reason; anything unexpected is
 * "NAME_refused" (the step's name). */
static void saga_flow_refusal_reason(saga_flow_row *next, const char *reason, const char *name)
{
	if (!strcmp(reason, REASON_OUT_OF_STOCK) || !strcmp(reason, REASON_UNKNOWN_SKU)
	    || !strcmp(reason, REASON_PAYMENT_DECLINED) || !strcmp(reason, REASON_UNKNOWN_ACCOUNT)
	    || !strcmp(reason, REASON_TOMBSTONE) || !strcmp(reason, REASON_KEY_MISMATCH)
	    || !strcmp(reason, REASON_SAGA_ID_REUSED))
		saga_flow_set_reason(next, reason);
	else
		snprintf(next->reason, sizeof next->reason, "%s_refused", name);
}

/* saga_flow_park: as saga.c's saga_park (rules R3 and R5). */
static void saga_flow_park(const saga_flow_row *s, const char *reason, saga_flow_decision *out)
{
	out->event_name = reason;
	saga_flow_set_reason(&out->next, reason);
	out->attention_raised = !s->attention;
	out->next.attention = true;
	out->next.step_deadline_ms = 0;
	out->next.next_attempt_ms = 0;
}

/* saga_flow_retry: as saga.c's saga_retry (rule 3, rule T4). */
static void saga_flow_retry(const saga_flow *f, const saga_flow_row *s, int64_t now_ms,
    uint64_t rand, const saga_policy *policy, saga_flow_decision *out)
{
	saga_policy stage = saga_flow_stage_policy(f, &s->pos, policy);
	const saga_policy *p = &stage;
	out->next.attempts = s->attempts + 1;
	int64_t delay = saga_backoff_ms(out->next.attempts, rand, p);
	if (saga_flow_retried_forever(f, &s->pos) && p->attention_after > 0
	    && out->next.attempts >= p->attention_after) {
		if (!s->attention)
			out->attention_raised = true;
		out->next.attention = true;
		delay = p->backoff_cap_ms;
	}
	out->next.next_attempt_ms = now_ms + delay;
	if (s->step_deadline_ms > 0
	    && out->next.next_attempt_ms > s->step_deadline_ms - SAGA_TRY_GRAIN_MS)
		out->next.next_attempt_ms = s->step_deadline_ms;
	out->event_name = "transient";
}

/* saga_flow_matches is true when `cmd` is a command in flight at `pos`: of
 * its step and phase, a member of it (-1 for a step alone) whose bit is
 * clear. */
static bool saga_flow_matches(
    const saga_flow *f, const saga_flow_pos *pos, const saga_flow_cmd *cmd)
{
	if (cmd->step != pos->step || cmd->phase != pos->phase)
		return false;
	int32_t n = saga_flow_stage_len(f, pos->step);
	if (f->steps[pos->step].group < 0)
		return cmd->member == -1;
	return cmd->member >= 0 && cmd->member < n
	    && !(pos->members & ((uint64_t)1 << cmd->member));
}

static void saga_flow_ignore(saga_flow_decision *out)
{
	out->ignored = true;
	out->event_name = "ignored";
}

/* saga_flow_cancel: rule 11 (docs/saga-semantics.md), an operator's cancel.
 * Before the pivot has succeeded, the stage the saga is at may have acted
 * (its commands may be out): it is compensated from that stage, every
 * member, exactly as rule 4 does for a deadline; the pivot's success, once
 * recorded, makes the saga go forward only (rule 3), so a cancel after it
 * is refused and changes nothing. Which of the pivot's reply and a cancel
 * wins is which the row records first (rule 7). */
static void saga_flow_cancel(const saga_flow *f, const saga_flow_row *s, int64_t now_ms,
    const saga_policy *p, saga_flow_decision *out)
{
	if (s->pos.step == -1 && s->pos.phase == SAGA_FLOW_COMPENSATING) {
		saga_flow_ignore(out);
		out->refused = REASON_CANCELLED;
		return;
	}
	if (!saga_flow_live(f, &s->pos)) { /* completed, or not a position */
		saga_flow_ignore(out);
		out->refused = REASON_PAST_PIVOT;
		return;
	}
	if (s->pos.phase == SAGA_FLOW_COMPENSATING) {
		saga_flow_ignore(out);
		out->refused = REASON_COMPENSATING;
		return;
	}
	if (f->steps[s->pos.step].kind == SAGA_FLOW_RETRIABLE) {
		saga_flow_ignore(out);
		out->refused = REASON_PAST_PIVOT;
		return;
	}
	out->state_changed = true;
	out->event_name = "cancel";
	saga_flow_set_reason(&out->next, REASON_CANCEL_REQUESTED);
	saga_flow_compensate(f, &out->next, s->pos.step, 0, now_ms, p, &out->send);
}

/* One function on purpose, as saga_transition was (issue 33): its checks
 * run in the order of precedence of the rules (docs/saga-semantics.md). */
void saga_flow_transition(const saga_flow *f, const saga_flow_row *s, const saga_flow_event *ev,
    int64_t now_ms, uint64_t rand, const saga_policy *p, saga_flow_decision *out)
{
	memset(out, 0, sizeof *out);
	out->next = *s;

	if (ev->kind == SAGA_EV_CANCEL) {
		saga_flow_cancel(f, s, now_ms, p, out);
		return;
	}
	if (!saga_flow_live(f, &s->pos)) { /* terminal, or not a position */
		saga_flow_ignore(out);
		return;
	}
	bool forever = saga_flow_retried_forever(f, &s->pos);
	bool in_flight = saga_flow_matches(f, &s->pos, &ev->cmd);
	/* rule R1/R3: a command refused past_horizon parks (saga.c) */
	bool refused_old = ev->kind == SAGA_EV_REFUSED && in_flight && ev->reason != NULL
	    && strcmp(ev->reason, REASON_PAST_HORIZON) == 0;
	/* rule R5: a step refused saga_id_reused parks; a compensation or
	 * the retriable step so refused is retried (saga.c) */
	bool reused = ev->kind == SAGA_EV_REFUSED && in_flight && ev->reason != NULL
	    && strcmp(ev->reason, REASON_SAGA_ID_REUSED) == 0 && !forever;
	if (reused) {
		saga_flow_park(s, REASON_SAGA_ID_REUSED, out);
		return;
	}
	if (ev->kind == SAGA_EV_PAST_HORIZON || refused_old) {
		saga_flow_park(s, REASON_PAST_HORIZON, out);
		return;
	}
	if (ev->kind == SAGA_EV_DEADLINE) {
		/* rule 4: a step (every member of a group) whose outcome is
		 * unknown is compensated; positions without a deadline
		 * (compensations, a retriable step: after the pivot, only
		 * forward) ignore it */
		if (s->step_deadline_ms == 0 || now_ms < s->step_deadline_ms || forever) {
			saga_flow_ignore(out);
			return;
		}
		out->state_changed = true;
		out->event_name = "deadline";
		saga_flow_set_reason(&out->next, REASON_TIMEOUT);
		saga_flow_compensate(f, &out->next, s->pos.step, 0, now_ms, p, &out->send);
		return;
	}
	if (!in_flight) {
		/* a late or duplicated reply to an earlier command */
		saga_flow_ignore(out);
		return;
	}
	/* a transient failure of a step past its deadline is the deadline */
	if (ev->kind == SAGA_EV_TRANSIENT && s->step_deadline_ms > 0
	    && now_ms >= s->step_deadline_ms && !forever) {
		saga_flow_event dl = {.kind = SAGA_EV_DEADLINE};
		saga_flow_transition(f, s, &dl, now_ms, rand, p, out);
		return;
	}
	int32_t member = ev->cmd.member < 0 ? 0 : ev->cmd.member;
	const saga_flow_step *st = &f->steps[s->pos.step + member];
	/* compensations and the retriable step are never refused: a refusal
	 * is retried like a transient failure (rule 3) */
	if (ev->kind == SAGA_EV_TRANSIENT || (ev->kind == SAGA_EV_REFUSED && forever)) {
		saga_flow_retry(f, s, now_ms, rand, p, out);
		/* a refused retriable step shows why on its row until a try
		 * succeeds; a compensation's row keeps the reason it cancels for */
		if (ev->kind == SAGA_EV_REFUSED && s->pos.phase == SAGA_FLOW_FORWARD
		    && st->kind == SAGA_FLOW_RETRIABLE)
			saga_flow_refusal_reason(&out->next, ev->reason, st->name);
		return;
	}
	out->state_changed = true;
	out->event_name = ev->kind == SAGA_EV_SUCCESS ? "reply_ok" : "refused";
	int32_t n = saga_flow_stage_len(f, s->pos.step);
	uint64_t bit = (uint64_t)1 << member;
	if (s->pos.phase == SAGA_FLOW_COMPENSATING) { /* only a success gets here */
		out->next.pos.members |= bit;
		if ((out->next.pos.members & saga_flow_all(n)) == saga_flow_all(n))
			saga_flow_compensate(f, &out->next, saga_flow_before(f, s->pos.step), 0,
			    now_ms, p, &out->send);
		return;
	}
	if (ev->kind == SAGA_EV_SUCCESS) {
		out->next.pos.members |= bit;
		if ((out->next.pos.members & saga_flow_all(n)) != saga_flow_all(n))
			return;                      /* the group waits for its other members */
		if (st->kind == SAGA_FLOW_RETRIABLE) /* a refusal seen before is over */
			saga_flow_set_reason(&out->next, "");
		saga_flow_forward(f, &out->next, s->pos.step + n, now_ms, p, &out->send);
		return;
	}
	/* a definitive refusal of a compensable step or the pivot: it did not
	 * act. A step alone: compensate from the step before; a group's
	 * member: the other members (they may have acted), then the steps
	 * before */
	saga_flow_refusal_reason(&out->next, ev->reason, st->name);
	if (f->steps[s->pos.step].group < 0)
		saga_flow_compensate(
		    f, &out->next, saga_flow_before(f, s->pos.step), 0, now_ms, p, &out->send);
	else
		saga_flow_compensate(f, &out->next, s->pos.step, bit, now_ms, p, &out->send);
}

saga_flow_row saga_flow_start(const saga_flow *f, int64_t now_ms, const saga_policy *p)
{
	saga_flow_row r;
	memset(&r, 0, sizeof r);
	uint64_t send;
	saga_flow_forward(f, &r, 0, now_ms, p, &send);
	return r;
}

/* The order saga's states and commands as positions of saga_flow_order. */
static const struct {
	saga_state state;
	int32_t step;
	saga_flow_phase phase;
} saga_flow_order_states[] = {
    {SAGA_STATE_RESERVING, 0, SAGA_FLOW_FORWARD},
    {SAGA_STATE_CHARGING, 1, SAGA_FLOW_FORWARD},
    {SAGA_STATE_SHIPPING, 2, SAGA_FLOW_FORWARD},
    {SAGA_STATE_REFUNDING, 1, SAGA_FLOW_COMPENSATING},
    {SAGA_STATE_RELEASING, 0, SAGA_FLOW_COMPENSATING},
    {SAGA_STATE_COMPLETED, 3, SAGA_FLOW_FORWARD},
    {SAGA_STATE_CANCELLED, -1, SAGA_FLOW_COMPENSATING},
};

static const struct {
	saga_command cmd;
	int32_t step;
	saga_flow_phase phase;
} saga_flow_order_cmds[] = {
    {SAGA_CMD_RESERVE_STOCK, 0, SAGA_FLOW_FORWARD},
    {SAGA_CMD_CHARGE_PAYMENT, 1, SAGA_FLOW_FORWARD},
    {SAGA_CMD_SHIP_ORDER, 2, SAGA_FLOW_FORWARD},
    {SAGA_CMD_REFUND_PAYMENT, 1, SAGA_FLOW_COMPENSATING},
    {SAGA_CMD_RELEASE_STOCK, 0, SAGA_FLOW_COMPENSATING},
};

#define SAGA_FLOW_N(a) (sizeof(a) / sizeof((a)[0]))

bool saga_flow_order_pos(saga_state state, saga_flow_pos *out)
{
	for (size_t i = 0; i < SAGA_FLOW_N(saga_flow_order_states); i++)
		if (saga_flow_order_states[i].state == state) {
			out->step = saga_flow_order_states[i].step;
			out->phase = saga_flow_order_states[i].phase;
			out->members = 0;
			return true;
		}
	return false;
}

saga_state saga_flow_order_state(const saga_flow_pos *pos)
{
	for (size_t i = 0; i < SAGA_FLOW_N(saga_flow_order_states); i++)
		if (saga_flow_order_states[i].step == pos->step
		    && saga_flow_order_states[i].phase == pos->phase)
			return saga_flow_order_states[i].state;
	return SAGA_STATE_UNSPECIFIED;
}

bool saga_flow_order_cmd(saga_command cmd, saga_flow_cmd *out)
{
	for (size_t i = 0; i < SAGA_FLOW_N(saga_flow_order_cmds); i++)
		if (saga_flow_order_cmds[i].cmd == cmd) {
			out->step = saga_flow_order_cmds[i].step;
			out->phase = saga_flow_order_cmds[i].phase;
			out->member = -1;
			return true;
		}
	/* no position of the order is (-2, forward) */
	out->step = -2;
	out->phase = SAGA_FLOW_FORWARD;
	out->member = -1;
	return false;
}

saga_command saga_flow_order_command(const saga_flow_cmd *cmd)
{
	if (cmd->member != -1)
		return SAGA_CMD_NONE;
	for (size_t i = 0; i < SAGA_FLOW_N(saga_flow_order_cmds); i++)
		if (saga_flow_order_cmds[i].step == cmd->step
		    && saga_flow_order_cmds[i].phase == cmd->phase)
			return saga_flow_order_cmds[i].cmd;
	return SAGA_CMD_NONE;
}
