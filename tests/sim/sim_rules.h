/* sim_rules: the decisions the simulator drives, as one seam.
 *
 * In a normal build every function here calls the production decision
 * (saga_transition, stock_decide, payment_decide) and returns its outcome
 * untouched: the simulator has no rules of its own. Only a build with
 * -DSAGA_SIM_BREAK=1 (the sim_broken target, never the daemons) compiles in
 * the deliberately broken variants below, so that a test can show the
 * simulator reports their violations.
 */
#ifndef SAGA_SIM_RULES_H
#define SAGA_SIM_RULES_H

#include <stdbool.h>
#include <stdint.h>

#include "payment_logic.h"
#include "saga.h"
#include "stock_logic.h"

typedef enum sim_break {
	SIM_BREAK_NONE = 0,
	SIM_BREAK_TOMBSTONE = 1, /* ReleaseStock on an unknown saga writes no tombstone */
	SIM_BREAK_REFUND = 2,    /* a timed-out charge releases without refunding */
} sim_break;

/* sim_rules_set_break selects a broken variant by name ("tombstone",
 * "refund"); returns false for an unknown name, and for every name in a
 * build without SAGA_SIM_BREAK. Not thread-safe (the simulator has one
 * thread). */
bool sim_rules_set_break(const char *name);

/* sim_rules_break_name returns the name of the selected variant, "none"
 * when the decisions are the production ones. Static storage. */
const char *sim_rules_break_name(void);

/* sim_rules_transition is saga_transition (saga.h), same contract. */
void sim_rules_transition(const saga *s, const saga_event *ev, int64_t now_ms, uint64_t rand,
    const saga_policy *p, saga_decision *out);

/* sim_rules_stock is stock_decide (stock_logic.h), same contract. */
void sim_rules_stock(
    const stock_record *rec, const stock_row *row, const stock_cmd *cmd, stock_outcome *out);

/* sim_rules_payment is payment_decide (payment_logic.h), same contract. */
void sim_rules_payment(const payment_record *rec, const payment_account *acct,
    const payment_cmd *cmd, payment_outcome *out);

#endif
