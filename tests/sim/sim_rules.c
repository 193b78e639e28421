#include "sim_rules.h"

#include <string.h>

static sim_break sim_rules_broken = SIM_BREAK_NONE;

bool sim_rules_set_break(const char *name)
{
#if defined(SAGA_SIM_BREAK) && SAGA_SIM_BREAK
	if (strcmp(name, "tombstone") == 0) {
		sim_rules_broken = SIM_BREAK_TOMBSTONE;
		return true;
	}
	if (strcmp(name, "refund") == 0) {
		sim_rules_broken = SIM_BREAK_REFUND;
		return true;
	}
	if (strcmp(name, "none") == 0) {
		sim_rules_broken = SIM_BREAK_NONE;
		return true;
	}
#else
	(void)name;
#endif
	return false;
}

const char *sim_rules_break_name(void)
{
	switch (sim_rules_broken) {
	case SIM_BREAK_TOMBSTONE:
		return "tombstone";
	case SIM_BREAK_REFUND:
		return "refund";
	case SIM_BREAK_NONE:
		break;
	}
	return "none";
}

void sim_rules_transition(const saga *s, const saga_event *ev, int64_t now_ms, uint64_t rand,
    const saga_policy *p, saga_decision *out)
{
	saga_transition(s, ev, now_ms, rand, p, out);
#if defined(SAGA_SIM_BREAK) && SAGA_SIM_BREAK
	if (sim_rules_broken == SIM_BREAK_REFUND && s->state == SAGA_STATE_CHARGING
	    && out->next.state == SAGA_STATE_REFUNDING) {
		/* broken on purpose: decide as if the reservation had timed
		 * out, which releases the stock and forgets the charge */
		saga as_reserving = *s;
		as_reserving.state = SAGA_STATE_RESERVING;
		saga_event dl = {.kind = SAGA_EV_DEADLINE};
		saga_transition(&as_reserving, &dl, now_ms, rand, p, out);
	}
#endif
}

void sim_rules_stock(
    const stock_record *rec, const stock_row *row, const stock_cmd *cmd, stock_outcome *out)
{
	stock_decide(rec, row, cmd, out);
#if defined(SAGA_SIM_BREAK) && SAGA_SIM_BREAK
	if (sim_rules_broken == SIM_BREAK_TOMBSTONE && cmd->op == STOCK_OP_RELEASE
	    && rec->status == STOCK_NONE)
		out->write_record = false; /* broken on purpose: no tombstone */
#endif
}

void sim_rules_payment(const payment_record *rec, const payment_account *acct,
    const payment_cmd *cmd, payment_outcome *out)
{
	payment_decide(rec, acct, cmd, out);
}
