/* sim_rules: the decisions the simulator drives, as one seam.
 *
 * In a normal build every function here calls the production decision
 * (saga_transition, stock_decide, payment_decide, shipping_decide) and returns its outcome
 * untouched: the simulator has no rules of its own. Only a build with
 * -DSAGA_SIM_BREAK=1 (the sim_broken target, never the daemons) compiles in
 * the deliberately broken variants below, so that a test can show the
 * simulator reports their violations.
 */
#ifndef SAGA_SIM_RULES_H
#define SAGA_SIM_RULES_H

#include <stdbool.h>
#include <stdint.h>

#include "authz.h"
#include "payment_logic.h"
#include "saga.h"
#include "shipping_logic.h"
#include "stock_logic.h"

typedef enum sim_break {
	SIM_BREAK_NONE = 0,
	SIM_BREAK_TOMBSTONE = 1,         /* ReleaseStock on an unknown saga writes no tombstone */
	SIM_BREAK_REFUND = 2,            /* a timed-out charge releases without refunding */
	SIM_BREAK_LEASE = 3,             /* a lease runs its whole length past the step
	                                    deadline (what rule T5 forbids) */
	SIM_BREAK_FIXED_TIMEOUT = 4,     /* every try waits the first try's timeout
	                                    (what rule T4 changed) */
	SIM_BREAK_LOCAL_CLOCK = 5,       /* the orchestrator keeps time by its own wall
	                                    clock, not the database's (rule T1) */
	SIM_BREAK_ABSOLUTE_DEADLINE = 6, /* commands carry the sender's absolute
	                                    deadline, which participants compare
	                                    with their own clocks (rule T3) */
	SIM_BREAK_NO_AUTHZ = 7,          /* participants serve a command whatever the
	                                    caller's role (docs/security.md) */
	SIM_BREAK_COMPENSATE_AFTER_PIVOT = 8, /* a failed ShipOrder (refused or
	                                         transient) refunds and releases,
	                                         as a timed-out charge does (what
	                                         rule 3 forbids after the pivot) */
	SIM_BREAK_NO_FENCING = 9,             /* transitions are checked by version
	                                         only, not by the claim's epoch
	                                         (what rule 10 adds) */
} sim_break;

/* sim_rules_set_break selects a broken variant by name ("tombstone",
 * "refund", "lease", "fixed_timeout", "local_clock", "absolute_deadline",
 * "no_authz", "compensate_after_pivot", "no_fencing");
 * returns false for an unknown name, and for every name in a
 * build without SAGA_SIM_BREAK. Not thread-safe (the simulator has one
 * thread). */
bool sim_rules_set_break(const char *name);

/* sim_rules_break_name returns the name of the selected variant, "none"
 * when the decisions are the production ones. Static storage. */
const char *sim_rules_break_name(void);

/* sim_rules_transition is saga_transition (saga.h), same contract. */
void sim_rules_transition(const saga *s, const saga_event *ev, int64_t now_ms, uint64_t rand,
    const saga_policy *p, saga_decision *out);

/* sim_rules_try_timeout_ms is saga_try_timeout_ms (saga.h), same contract. */
int64_t sim_rules_try_timeout_ms(const saga *s, int64_t now_ms, const saga_policy *p);

/* sim_rules_lease_until_ms is saga_lease_until_ms (saga.h), same contract. */
int64_t sim_rules_lease_until_ms(const saga *s, int64_t now_ms, const saga_policy *p);

/* sim_rules_broken is true when variant `b` is selected: for the variants
 * that change what the daemons do around the decisions (which clock the
 * orchestrator reads, what a command carries), which sim_world asks. */
bool sim_rules_broken(sim_break b);

/* sim_rules_authz is authz_decide (authz.h), same contract. */
enum authz_verdict sim_rules_authz(const char *method, unsigned roles);

/* sim_rules_stock is stock_decide (stock_logic.h), same contract. */
void sim_rules_stock(
    const stock_record *rec, const stock_row *row, const stock_cmd *cmd, stock_outcome *out);

/* sim_rules_payment is payment_decide (payment_logic.h), same contract. */
void sim_rules_payment(const payment_record *rec, const payment_account *acct,
    const payment_cmd *cmd, payment_outcome *out);

/* sim_rules_shipping is shipping_decide (shipping_logic.h), same contract. */
void sim_rules_shipping(const shipping_record *rec, const shipping_cmd *cmd, shipping_outcome *out);

#endif
