#include "sim_rules.h"

#include <stdio.h>
#include <string.h>

static sim_break sim_rules_broken_v = SIM_BREAK_NONE;

static const char *const sim_break_names[]
    = {"none", "tombstone", "refund", "lease", "fixed_timeout", "local_clock", "absolute_deadline",
        "no_authz", "compensate_after_pivot", "no_fencing"};
#define SIM_BREAKS (sizeof sim_break_names / sizeof sim_break_names[0])

bool sim_rules_set_break(const char *name)
{
#if defined(SAGA_SIM_BREAK) && SAGA_SIM_BREAK
	for (size_t i = 0; i < SIM_BREAKS; i++)
		if (strcmp(name, sim_break_names[i]) == 0) {
			sim_rules_broken_v = (sim_break)i;
			return true;
		}
#else
	(void)name;
#endif
	return false;
}

const char *sim_rules_break_name(void)
{
	return (size_t)sim_rules_broken_v < SIM_BREAKS ? sim_break_names[sim_rules_broken_v]
	                                               : "none";
}

bool sim_rules_broken(sim_break b)
{
	return sim_rules_broken_v == b && b != SIM_BREAK_NONE;
}

int64_t sim_rules_try_timeout_ms(const saga *s, int64_t now_ms, const saga_policy *p)
{
#if defined(SAGA_SIM_BREAK) && SAGA_SIM_BREAK
	if (sim_rules_broken_v == SIM_BREAK_FIXED_TIMEOUT) {
		/* broken on purpose: no try waits longer than the first */
		saga first = *s;
		first.attempts = 0;
		return saga_try_timeout_ms(&first, now_ms, p);
	}
#endif
	return saga_try_timeout_ms(s, now_ms, p);
}

int64_t sim_rules_lease_until_ms(const saga *s, int64_t now_ms, const saga_policy *p)
{
#if defined(SAGA_SIM_BREAK) && SAGA_SIM_BREAK
	if (sim_rules_broken_v == SIM_BREAK_LEASE) /* broken on purpose: not cut
	                                              at the deadline */
		return now_ms + sim_rules_try_timeout_ms(s, now_ms, p) + p->lease_grace_ms;
#endif
	return saga_lease_until_ms(s, now_ms, p);
}

void sim_rules_transition(const saga *s, const saga_event *ev, int64_t now_ms, uint64_t rand,
    const saga_policy *p, saga_decision *out)
{
	saga_transition(s, ev, now_ms, rand, p, out);
#if defined(SAGA_SIM_BREAK) && SAGA_SIM_BREAK
	if (sim_rules_broken_v == SIM_BREAK_REFUND && s->state == SAGA_STATE_CHARGING
	    && out->next.state == SAGA_STATE_REFUNDING) {
		/* broken on purpose: decide as if the reservation had timed
		 * out, which releases the stock and forgets the charge */
		saga as_reserving = *s;
		as_reserving.state = SAGA_STATE_RESERVING;
		saga_event dl = {.kind = SAGA_EV_DEADLINE};
		saga_transition(&as_reserving, &dl, now_ms, rand, p, out);
	}
	if (sim_rules_broken_v == SIM_BREAK_COMPENSATE_AFTER_PIVOT
	    && s->state == SAGA_STATE_SHIPPING && !out->ignored
	    && out->next.state == SAGA_STATE_SHIPPING) {
		/* broken on purpose: a failed ShipOrder is taken for a charge
		 * whose outcome is unknown, which refunds, then releases */
		saga as_charging = *s;
		as_charging.state = SAGA_STATE_CHARGING;
		as_charging.step_deadline_ms = now_ms;
		saga_event dl = {.kind = SAGA_EV_DEADLINE};
		saga_transition(&as_charging, &dl, now_ms, rand, p, out);
		snprintf(out->next.reason, sizeof out->next.reason, "%s", "ship_failed");
	}
#endif
}

void sim_rules_stock(
    const stock_record *rec, const stock_row *row, const stock_cmd *cmd, stock_outcome *out)
{
	stock_decide(rec, row, cmd, out);
#if defined(SAGA_SIM_BREAK) && SAGA_SIM_BREAK
	if (sim_rules_broken_v == SIM_BREAK_TOMBSTONE && cmd->op == STOCK_OP_RELEASE
	    && rec->status == STOCK_NONE)
		out->write_record = false; /* broken on purpose: no tombstone */
#endif
}

void sim_rules_payment(const payment_record *rec, const payment_account *acct,
    const payment_cmd *cmd, payment_outcome *out)
{
	payment_decide(rec, acct, cmd, out);
}

void sim_rules_shipping(const shipping_record *rec, const shipping_cmd *cmd, shipping_outcome *out)
{
	shipping_decide(rec, cmd, out);
}

enum authz_verdict sim_rules_authz(const char *method, unsigned roles)
{
#if defined(SAGA_SIM_BREAK) && SAGA_SIM_BREAK
	if (sim_rules_broken_v == SIM_BREAK_NO_AUTHZ)
		return AUTHZ_ALLOWED; /* broken on purpose: anyone may call anything */
#endif
	return authz_decide(method, roles);
}
