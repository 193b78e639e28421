#include "saga.h"

#include <string.h>
#include <strings.h>

#include "methods.h"
#include "saga_flow.h"
#include "status.h"

static const char *const saga_state_names[] = {"UNSPECIFIED", "RESERVING", "CHARGING", "COMPLETED",
    "REFUNDING", "RELEASING", "CANCELLED", "SHIPPING"};

const char *saga_state_name(saga_state state)
{
	if ((unsigned)state > SAGA_STATE_LAST)
		return "UNSPECIFIED";
	return saga_state_names[state];
}

saga_state saga_state_parse(const char *name)
{
	for (int i = 1; i <= SAGA_STATE_LAST; i++)
		if (strcasecmp(name, saga_state_names[i]) == 0)
			return (saga_state)i;
	return SAGA_STATE_UNSPECIFIED;
}

const char *saga_command_name(saga_command cmd)
{
	switch (cmd) {
	case SAGA_CMD_RESERVE_STOCK:
		return "ReserveStock";
	case SAGA_CMD_CHARGE_PAYMENT:
		return "ChargePayment";
	case SAGA_CMD_REFUND_PAYMENT:
		return "RefundPayment";
	case SAGA_CMD_RELEASE_STOCK:
		return "ReleaseStock";
	case SAGA_CMD_SHIP_ORDER:
		return "ShipOrder";
	case SAGA_CMD_NONE:
		break;
	}
	return "none";
}

const char *saga_command_method(saga_command cmd)
{
	switch (cmd) {
	case SAGA_CMD_RESERVE_STOCK:
		return METHOD_PATH(METHOD_Stock_ReserveStock);
	case SAGA_CMD_RELEASE_STOCK:
		return METHOD_PATH(METHOD_Stock_ReleaseStock);
	case SAGA_CMD_CHARGE_PAYMENT:
		return METHOD_PATH(METHOD_Payment_ChargePayment);
	case SAGA_CMD_REFUND_PAYMENT:
		return METHOD_PATH(METHOD_Payment_RefundPayment);
	case SAGA_CMD_SHIP_ORDER:
		return METHOD_PATH(METHOD_Shipping_ShipOrder);
	case SAGA_CMD_NONE:
		break;
	}
	return NULL;
}

saga_command saga_command_of(saga_state state)
{
	switch (state) {
	case SAGA_STATE_RESERVING:
		return SAGA_CMD_RESERVE_STOCK;
	case SAGA_STATE_CHARGING:
		return SAGA_CMD_CHARGE_PAYMENT;
	case SAGA_STATE_REFUNDING:
		return SAGA_CMD_REFUND_PAYMENT;
	case SAGA_STATE_RELEASING:
		return SAGA_CMD_RELEASE_STOCK;
	case SAGA_STATE_SHIPPING:
		return SAGA_CMD_SHIP_ORDER;
	case SAGA_STATE_UNSPECIFIED:
	case SAGA_STATE_COMPLETED:
	case SAGA_STATE_CANCELLED:
		break;
	}
	return SAGA_CMD_NONE;
}

bool saga_is_terminal(saga_state state)
{
	return state == SAGA_STATE_COMPLETED || state == SAGA_STATE_CANCELLED;
}

bool saga_is_parked(const saga *s)
{
	return !saga_is_terminal(s->state) && s->next_attempt_ms == 0 && s->attention;
}

bool saga_wait_over(const saga *s)
{
	return saga_is_terminal(s->state) || saga_is_parked(s);
}

bool saga_is_compensating(saga_state state)
{
	return state == SAGA_STATE_REFUNDING || state == SAGA_STATE_RELEASING;
}

bool saga_is_retriable(saga_state state)
{
	return state == SAGA_STATE_SHIPPING;
}

bool saga_is_retried_forever(saga_state state)
{
	return saga_is_compensating(state) || saga_is_retriable(state);
}

int64_t saga_backoff_ms(int32_t attempts, uint64_t rand, const saga_policy *p)
{
	int64_t ceiling = p->backoff_base_ms > 0 ? p->backoff_base_ms : 1;
	for (int32_t i = 1; i < attempts && ceiling < p->backoff_cap_ms; i++)
		ceiling *= 2;
	if (ceiling > p->backoff_cap_ms)
		ceiling = p->backoff_cap_ms;
	if (ceiling < 1)
		ceiling = 1;
	return 1 + (int64_t)(rand % (uint64_t)ceiling);
}

/* saga_try_span_ms is a try's wait before the step deadline cuts it: the
 * request timeout doubled per failed try, at most request_timeout_max_ms
 * (the claim's lease in store.c computes the same in SQL). */
static int64_t saga_try_span_ms(const saga *s, const saga_policy *p)
{
	int64_t t = p->request_timeout_ms > 0 ? p->request_timeout_ms : 1;
	int64_t max = p->request_timeout_max_ms > t ? p->request_timeout_max_ms : t;
	for (int32_t i = 0; i < s->attempts && t < max; i++)
		t *= 2;
	return t > max ? max : t;
}

int64_t saga_try_timeout_ms(const saga *s, int64_t now_ms, const saga_policy *p)
{
	int64_t t = saga_try_span_ms(s, p);
	if (s->step_deadline_ms > 0) {
		int64_t left = s->step_deadline_ms - now_ms;
		/* cut at the deadline, rounded down to SAGA_TRY_GRAIN_MS: the
		 * tries of sagas due together then share a timeout, and so a
		 * frame (rpc_batch_add) */
		if (left < t)
			t = left >= SAGA_TRY_GRAIN_MS ? left - left % SAGA_TRY_GRAIN_MS
			                              : (left > 1 ? left : 1);
	}
	return t;
}

int64_t saga_lease_until_ms(const saga *s, int64_t now_ms, const saga_policy *p)
{
	int64_t until = now_ms + saga_try_span_ms(s, p) + p->lease_grace_ms;
	if (s->step_deadline_ms > 0 && until > s->step_deadline_ms)
		until = s->step_deadline_ms;
	return until;
}

int64_t saga_first_lease_ms(const saga_policy *p)
{
	saga first = saga_start(0, p);
	return saga_lease_until_ms(&first, 0, p);
}

saga saga_start(int64_t now_ms, const saga_policy *p)
{
	saga s;
	memset(&s, 0, sizeof s);
	s.state = SAGA_STATE_RESERVING;
	s.step_deadline_ms = now_ms + p->step_timeout_ms;
	s.next_attempt_ms = now_ms;
	return s;
}

saga_event saga_event_from_reply(saga_command cmd, int code, const char *reason, bool transport)
{
	saga_event ev = {.cmd = cmd, .reason = reason ? reason : ""};
	if (transport) {
		ev.kind = SAGA_EV_TRANSIENT;
		return ev;
	}
	switch (code) {
	case RPC_OK:
		ev.kind = SAGA_EV_SUCCESS;
		break;
	case RPC_FAILED_PRECONDITION:
	case RPC_NOT_FOUND:
	case RPC_ABORTED:
	case RPC_ALREADY_EXISTS:
	case RPC_INVALID_ARGUMENT:
		ev.kind = SAGA_EV_REFUSED;
		break;
	default:
		ev.kind = SAGA_EV_TRANSIENT;
		break;
	}
	return ev;
}

/* The order saga is saga_flow_order (saga_flow.c): its states and commands
 * map to positions and commands of the flow, and the generic transition
 * decides (docs/saga-definitions.md, section 2; test_saga_flow compares it
 * with the table this function held before). */
void saga_transition(const saga *s, const saga_event *ev, int64_t now_ms, uint64_t rand,
    const saga_policy *p, saga_decision *out)
{
	saga_flow_order_transition(&saga_flow_order, s, ev, now_ms, rand, p, out);
}

saga saga_flow_order_start(const saga_flow *f, int64_t now_ms, const saga_policy *p)
{
	saga s = saga_start(now_ms, p);
	saga_flow_pos first = {.step = 0, .phase = SAGA_FLOW_FORWARD, .members = 0};
	s.step_deadline_ms = now_ms + saga_flow_stage_policy(f, &first, p).step_timeout_ms;
	return s;
}

void saga_flow_order_transition(const saga_flow *f, const saga *s, const saga_event *ev,
    int64_t now_ms, uint64_t rand, const saga_policy *p, saga_decision *out)
{
	memset(out, 0, sizeof *out);
	saga_flow_row row;
	memset(&row, 0, sizeof row);
	if (!saga_flow_order_pos(s->state, &row.pos)) { /* not a state of the order */
		out->next = *s;
		out->ignored = true;
		out->event_name = "ignored";
		return;
	}
	memcpy(row.reason, s->reason, sizeof row.reason);
	row.attempts = s->attempts;
	row.attention = s->attention;
	row.step_deadline_ms = s->step_deadline_ms;
	row.next_attempt_ms = s->next_attempt_ms;
	saga_flow_event fev = {.kind = ev->kind, .reason = ev->reason};
	saga_flow_order_cmd(ev->cmd, &fev.cmd); /* SAGA_CMD_NONE matches nothing */
	saga_flow_decision d;
	saga_flow_transition(f, &row, &fev, now_ms, rand, p, &d);
	out->ignored = d.ignored;
	out->state_changed = d.state_changed;
	out->attention_raised = d.attention_raised;
	out->event_name = d.event_name;
	out->next.state = saga_flow_order_state(&d.next.pos);
	memcpy(out->next.reason, d.next.reason, sizeof out->next.reason);
	out->next.attempts = d.next.attempts;
	out->next.attention = d.next.attention;
	out->next.step_deadline_ms = d.next.step_deadline_ms;
	out->next.next_attempt_ms = d.next.next_attempt_ms;
	if (d.send != 0) { /* the order has no group: the step's one command */
		saga_flow_cmd c
		    = {.step = d.next.pos.step, .phase = d.next.pos.phase, .member = -1};
		out->send = saga_flow_order_command(&c);
	}
}
