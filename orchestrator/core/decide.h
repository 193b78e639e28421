/* decide: a saga row through the generic transition (docs/saga-definitions.md,
 * section 2), shared by the engine (replies, deadlines, horizons) and the
 * API (an operator's cancel, rule 11), so that both write a decision the
 * same way. Pure: no I/O, no locks.
 */
#ifndef SAGA_DECIDE_H
#define SAGA_DECIDE_H

#include <stdint.h>

#include "orch_defs.h"
#include "saga_flow.h"
#include "store.h"

/* decide_row applies event `ev` to `row`, a saga of version `v` (the one
 * its def_id names; the caller finds it: orch_defs_version), at `now_ms`
 * (unix ms, the database's clock), `rand` the backoff's jitter, `pol` the
 * daemon's policy. Fills *d with saga_flow_transition's decision and, when
 * it is not ignored, *after with the row it writes: its state's name, the
 * group's members, compensating, finished, reason, attempts, attention,
 * deadline and next attempt (ms), the category (store_category), version
 * + 1 and updated_ms = now_ms; the rest copied from `row`. Returns 0;
 * -EINVAL when row->state is not a position of v's flow (*d and *after
 * untouched) or the next position has no name (cannot happen: the
 * transition returns positions of its flow). Leases and commands are the
 * caller's. */
int decide_row(const orch_def_version *v, const saga_row *row, const saga_flow_event *ev,
    int64_t now_ms, uint64_t rand, const saga_policy *pol, saga_flow_decision *d, saga_row *after);

#endif
