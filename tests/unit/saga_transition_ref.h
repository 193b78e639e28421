/* saga_ref_transition: the order saga's transition written by hand, as
 * saga_transition was before it became a wrapper over saga_flow_transition
 * (saga_transition_ref.c); test_saga_flow's reference. Same contract as
 * saga_transition (saga.h). */
#ifndef SAGA_TRANSITION_REF_H
#define SAGA_TRANSITION_REF_H

#include <stdint.h>

#include "saga.h"

/* saga_ref_transition: as saga_transition (saga.h): applies `ev` to `s` at
 * `now_ms` with jitter `rand` under `p`; fills *out; never fails. */
void saga_ref_transition(const saga *s, const saga_event *ev, int64_t now_ms, uint64_t rand,
    const saga_policy *p, saga_decision *out);

#endif
