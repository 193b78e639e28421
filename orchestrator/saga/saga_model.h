/* saga_model: the fixed point over one saga of a flow (docs/saga-definitions.md,
 * section 3, "What the model checks"; docs/testing.md, "The generic
 * model"). Every state one saga of the flow can reach is explored breadth
 * first, from its start, until no new state appears, with the production
 * saga_flow_transition deciding every event, against:
 *   - an orchestrator whose row is the only thing that survives a crash: it
 *     may (re-)send the commands its row says are due at any moment (a
 *     retry, a restart, another orchestrator taking the lease over), and a
 *     step's deadline may pass at any moment while its row has one, and
 *     an operator may cancel the saga at any moment (rule 11);
 *   - a participant per step, from its kind: a record per step that applies
 *     the command once and answers copies from it (rule 2), a tombstone
 *     when the compensation comes first, which refuses the late command
 *     (rule 5); compensable steps and the pivot may refuse definitively,
 *     a retriable step may refuse for now (it is retried), compensations
 *     succeed;
 *   - a network that loses, duplicates, delays and reorders: a message once
 *     sent stays deliverable any number of times, in any order, until it
 *     is lost.
 * Time, tries and backoff are abstracted away (a retry is a re-send, which
 * may happen at any moment), so the states are finite. Checked:
 *   1. effects (rules 1, 2, 4): once the saga has ended and nothing is in
 *      flight, completed means every step applied once and nothing
 *      compensated; cancelled means every compensable step and the pivot
 *      has no effect, or its effect and its compensation, and no step after
 *      the pivot acted;
 *   2. after the pivot only forward (rule 3): no compensation is sent once
 *      the pivot succeeded, no command of a step after the pivot before it,
 *      and the saga never ends cancelled after it (a retriable step is never
 *      given up);
 *   3. groups: every member of a group that acted is compensated in a
 *      cancelled saga (check 1 over each member);
 *   4. every saga can end: from every state reached, a state where the saga
 *      has ended and nothing is in flight can still be reached.
 * A violation comes with a shortest path to it (breadth first: none is
 * shorter). No I/O; pure but for malloc and the clock of max_ms. */
#ifndef SAGA_MODEL_H
#define SAGA_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "saga_flow.h"

/* The states explored at most by default (each takes about 100 bytes plus
 * 3 per step). */
#define SAGA_MODEL_MAX_STATES 2000000

/* saga_model_policy: the daemons' default options (orchestratord's
 * --step-timeout 5000, --backoff-base 50, --backoff-cap 5000,
 * --attention-after 10, --request-timeout 2000, --request-timeout-max
 * 30000), the policy the model decides with (and sim_flow's random runs). */
extern const saga_policy saga_model_policy;

/* saga_model_wrap_fn: called with every decision the transition made, before
 * the model acts on it, with the row, the event and the time (ms, the
 * model's) it was decided at; may change *d. A test's broken rule (sim_flow
 * --break); production code passes none. */
typedef void (*saga_model_wrap_fn)(void *ctx, const saga_flow *f, const saga_flow_row *row,
    const saga_flow_event *ev, int64_t now_ms, saga_flow_decision *d);

typedef struct saga_model_opts {
	size_t max_states; /* 0: SAGA_MODEL_MAX_STATES */
	int64_t max_ms;    /* the exploration's time, at most (ms, monotonic
	                      clock); 0: no limit */
	saga_model_wrap_fn wrap;
	void *wrap_ctx;
} saga_model_opts;

typedef struct saga_model_result {
	size_t states;      /* distinct states reached */
	size_t transitions; /* edges between them */
	size_t completed;   /* states where the saga completed, nothing in flight */
	size_t cancelled;   /* the same, cancelled */
	int32_t depth;      /* the longest of the shortest paths (events) */
	bool complete;      /* the fixed point was reached (false: max_states
	                       states were explored first, or max_ms passed, and
	                       no violation among them) */
	bool timed_out;     /* stopped by max_ms */
	bool violation;
	char what[200]; /* the check violated, in words */
	char **path;    /* the shortest path to the violation: npath lines,
	                   each an event and the state after it; malloc'd */
	size_t npath;
} saga_model_result;

/* saga_model_check explores flow `f` (which saga_flow_valid accepts) with
 * options `o` (NULL: the defaults) and fills *out (zeroed first; free its
 * path with saga_model_result_free). Returns 0 when the exploration ran
 * (out->violation says whether a check failed; out->complete whether every
 * state was reached), -EINVAL for an invalid flow, -ENOMEM when memory ran
 * out (out holds what was reached). The policy is the daemons' defaults;
 * only whether a step has a deadline matters to the model. */
int saga_model_check(const saga_flow *f, const saga_model_opts *o, saga_model_result *out);

/* saga_model_result_free frees r's path; r may be reused. */
void saga_model_result_free(saga_model_result *r);

#endif
