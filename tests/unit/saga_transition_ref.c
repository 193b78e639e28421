/* The order saga's transition as it was written before the generic one
 * (orchestrator/saga/saga.c at issue 34's second landing, its static
 * helpers and saga_transition, renamed saga_ref_*): test_saga_flow's
 * reference, so that saga_transition, now a wrapper over
 * saga_flow_transition, is still compared with the table written by hand.
 * A test file: never linked into a daemon. */
#include "saga_transition_ref.h"

#include <stdio.h>
#include <string.h>

#include "status.h"

/* saga_ref_enter moves `next` into `state`, due now, with a fresh attempt count;
 * the steps before the pivot and the pivot get a deadline, other states
 * none (rule 3: compensations and the retriable step after the pivot have
 * no deadline). */
static void saga_ref_enter(saga *next, saga_state state, int64_t now_ms, const saga_policy *p)
{
	next->state = state;
	next->attempts = 0;
	next->attention = false;
	next->step_deadline_ms = (state == SAGA_STATE_RESERVING || state == SAGA_STATE_CHARGING)
	    ? now_ms + p->step_timeout_ms
	    : 0;
	next->next_attempt_ms = saga_is_terminal(state) ? 0 : now_ms;
}

static void saga_ref_set_reason(saga *next, const char *reason)
{
	snprintf(next->reason, sizeof next->reason, "%s", reason);
}

/* A refused step keeps a stable reason; anything unexpected is "rejected". */
static const char *saga_ref_refusal_reason(const char *reason, const char *fallback)
{
	if (!strcmp(reason, REASON_OUT_OF_STOCK) || !strcmp(reason, REASON_UNKNOWN_SKU)
	    || !strcmp(reason, REASON_PAYMENT_DECLINED) || !strcmp(reason, REASON_UNKNOWN_ACCOUNT)
	    || !strcmp(reason, REASON_TOMBSTONE) || !strcmp(reason, REASON_KEY_MISMATCH)
	    || !strcmp(reason, REASON_SAGA_ID_REUSED))
		return reason;
	return fallback;
}

/* saga_ref_park leaves `s` in its state, flagged for attention with `reason`
 * (static; also the event's name), never due again and without a deadline:
 * nothing is sent until an operator acts (rules R3 and R5). */
static void saga_ref_park(const saga *s, const char *reason, saga_decision *out)
{
	out->event_name = reason;
	saga_ref_set_reason(&out->next, reason);
	out->attention_raised = !s->attention;
	out->next.attention = true;
	out->next.step_deadline_ms = 0;
	out->next.next_attempt_ms = 0;
}

/* saga_ref_retry schedules another try of the current command. Steps never wait
 * past their deadline, so the sweep finds the deadline on time; compensations
 * and the retriable step after the pivot raise the attention flag after
 * attention_after tries and go on at the capped cadence (rule 3). */
static void saga_ref_retry(
    const saga *s, int64_t now_ms, uint64_t rand, const saga_policy *p, saga_decision *out)
{
	out->next.attempts = s->attempts + 1;
	int64_t delay = saga_backoff_ms(out->next.attempts, rand, p);
	if (saga_is_retried_forever(s->state) && p->attention_after > 0
	    && out->next.attempts >= p->attention_after) {
		if (!s->attention)
			out->attention_raised = true;
		out->next.attention = true;
		delay = p->backoff_cap_ms;
	}
	out->next.next_attempt_ms = now_ms + delay;
	/* no try of a step starts with less than SAGA_TRY_GRAIN_MS of it
	 * left (its wait would be cut to nothing): it waits for the deadline,
	 * which the sweep then finds on time. So a try cut at the deadline,
	 * rounded down to the grain, is the last one, as if it had run to
	 * the deadline (rule T4). */
	if (s->step_deadline_ms > 0
	    && out->next.next_attempt_ms > s->step_deadline_ms - SAGA_TRY_GRAIN_MS)
		out->next.next_attempt_ms = s->step_deadline_ms;
	out->event_name = "transient";
}

/* One function on purpose (issue 33): its checks run in the order of
 * precedence of the rules (docs/saga-semantics.md), which reads top to
 * bottom here; the steps it takes (saga_ref_park, saga_ref_retry, saga_ref_enter) are
 * apart already. */
void saga_ref_transition(const saga *s, const saga_event *ev, int64_t now_ms, uint64_t rand,
    const saga_policy *p, saga_decision *out)
{
	memset(out, 0, sizeof *out);
	out->next = *s;
	saga_command in_flight = saga_command_of(s->state);

	if (saga_is_terminal(s->state) || in_flight == SAGA_CMD_NONE) {
		out->ignored = true;
		out->event_name = "ignored";
		return;
	}
	/* a command refused past_horizon (rule R1: the clocks disagree by
	 * more than --max-clock-skew, or the saga crossed the horizon while
	 * its command was on the way) is parked like rule R3's: a refused
	 * retry may follow a try that was applied, so neither cancelling nor
	 * compensating on it would be safe */
	bool refused_old = ev->kind == SAGA_EV_REFUSED && ev->cmd == in_flight && ev->reason != NULL
	    && strcmp(ev->reason, REASON_PAST_HORIZON) == 0;
	/* a step refused saga_id_reused (rule R5: the participant keeps the
	 * record of another saga with this id) is parked too: the step did
	 * not apply, but a copy of it still on the way applies once that
	 * record is deleted, so cancelling would lose it, and a compensation
	 * would be refused the same; an operator retries the saga once the
	 * participant forgot the other one (docs/operations.md, "Retention").
	 * A compensation or the retriable step so refused is retried (rule
	 * 3): it succeeds by itself once the other record is gone. */
	bool reused = ev->kind == SAGA_EV_REFUSED && ev->cmd == in_flight && ev->reason != NULL
	    && strcmp(ev->reason, REASON_SAGA_ID_REUSED) == 0 && !saga_is_retried_forever(s->state);
	if (reused) {
		saga_ref_park(s, REASON_SAGA_ID_REUSED, out);
		return;
	}
	if (ev->kind == SAGA_EV_PAST_HORIZON || refused_old) {
		/* rule R3: no participant takes a command of this saga any more
		 * (or will not before it arrives): nothing is sent, the saga
		 * stays in its state, flagged, never due again (an operator
		 * settles it by hand: docs/operations.md, "Retention") */
		saga_ref_park(s, REASON_PAST_HORIZON, out);
		return;
	}
	if (ev->kind == SAGA_EV_DEADLINE) {
		/* rule 4: a step whose outcome is unknown is compensated; a
		 * state without a deadline (compensations, and SHIPPING: after
		 * the pivot, only forward) ignores it */
		if (s->step_deadline_ms == 0 || now_ms < s->step_deadline_ms
		    || saga_is_retried_forever(s->state)) {
			out->ignored = true;
			out->event_name = "ignored";
			return;
		}
		out->state_changed = true;
		out->event_name = "deadline";
		saga_ref_set_reason(&out->next, REASON_TIMEOUT);
		if (s->state == SAGA_STATE_RESERVING) {
			saga_ref_enter(&out->next, SAGA_STATE_RELEASING, now_ms, p);
			out->send = SAGA_CMD_RELEASE_STOCK;
		} else {
			saga_ref_enter(&out->next, SAGA_STATE_REFUNDING, now_ms, p);
			out->send = SAGA_CMD_REFUND_PAYMENT;
		}
		return;
	}
	if (ev->cmd != in_flight) {
		/* a late or duplicated reply to an earlier command: no transition */
		out->ignored = true;
		out->event_name = "ignored";
		return;
	}
	/* a transient failure of a step past its deadline is the deadline
	 * (not in a state retried for ever, which ignores deadlines: the
	 * failure is retried) */
	if (ev->kind == SAGA_EV_TRANSIENT && s->step_deadline_ms > 0
	    && now_ms >= s->step_deadline_ms && !saga_is_retried_forever(s->state)) {
		saga_event dl = {.kind = SAGA_EV_DEADLINE};
		saga_ref_transition(s, &dl, now_ms, rand, p, out);
		return;
	}
	/* compensations and the retriable step after the pivot are never
	 * refused: a refusal is retried like a transient failure, never a
	 * reason to compensate (rule 3) */
	if (ev->kind == SAGA_EV_TRANSIENT
	    || (ev->kind == SAGA_EV_REFUSED && saga_is_retried_forever(s->state))) {
		saga_ref_retry(s, now_ms, rand, p, out);
		/* a refused retriable step shows why on its row (sagactl get,
		 * list --attention) until a try succeeds: a refusal is not
		 * healed by waiting, an operator has to act (docs/operations.md);
		 * a compensation's row keeps the reason it cancels for */
		if (ev->kind == SAGA_EV_REFUSED && saga_is_retriable(s->state))
			saga_ref_set_reason(
			    &out->next, saga_ref_refusal_reason(ev->reason, "ship_refused"));
		return;
	}
	out->state_changed = true;
	out->event_name = ev->kind == SAGA_EV_SUCCESS ? "reply_ok" : "refused";
	switch (s->state) {
	case SAGA_STATE_RESERVING:
		if (ev->kind == SAGA_EV_SUCCESS) {
			saga_ref_enter(&out->next, SAGA_STATE_CHARGING, now_ms, p);
			out->send = SAGA_CMD_CHARGE_PAYMENT;
		} else {
			/* nothing was reserved: cancel without compensation */
			saga_ref_set_reason(
			    &out->next, saga_ref_refusal_reason(ev->reason, "reserve_refused"));
			saga_ref_enter(&out->next, SAGA_STATE_CANCELLED, now_ms, p);
		}
		break;
	case SAGA_STATE_CHARGING:
		if (ev->kind == SAGA_EV_SUCCESS) {
			/* past the pivot: ship, only forward from here */
			saga_ref_enter(&out->next, SAGA_STATE_SHIPPING, now_ms, p);
			out->send = SAGA_CMD_SHIP_ORDER;
		} else {
			/* nothing was charged: release the stock */
			saga_ref_set_reason(
			    &out->next, saga_ref_refusal_reason(ev->reason, "charge_refused"));
			saga_ref_enter(&out->next, SAGA_STATE_RELEASING, now_ms, p);
			out->send = SAGA_CMD_RELEASE_STOCK;
		}
		break;
	case SAGA_STATE_REFUNDING:
		saga_ref_enter(&out->next, SAGA_STATE_RELEASING, now_ms, p);
		out->send = SAGA_CMD_RELEASE_STOCK;
		break;
	case SAGA_STATE_RELEASING:
		saga_ref_enter(&out->next, SAGA_STATE_CANCELLED, now_ms, p);
		break;
	case SAGA_STATE_SHIPPING:                    /* only a success gets here */
		saga_ref_set_reason(&out->next, ""); /* a refusal seen before is over */
		saga_ref_enter(&out->next, SAGA_STATE_COMPLETED, now_ms, p);
		break;
	case SAGA_STATE_UNSPECIFIED:
	case SAGA_STATE_COMPLETED:
	case SAGA_STATE_CANCELLED:
		break; /* handled above */
	}
}
