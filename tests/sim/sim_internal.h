/* sim_internal: what sim_world.c and sim_check.c share and sim_main.c and
 * sim_explore.c do not use. */
#ifndef SAGA_SIM_INTERNAL_H
#define SAGA_SIM_INTERNAL_H

#include <stdint.h>

#include "sim.h"

/* orch_now is the clock the orchestrator of `w` decides by, in simulated
 * ms: its estimate of the database's clock (w->now + db_err_ms, rule T1),
 * or its own wall clock in the broken variant local_clock. */
int64_t orch_now(const sim_world *w);

/* sim_violation records the first violation of `w` (printf format) in
 * w->violation, sets w->violated and traces it; later ones are ignored. */
void sim_violation(sim_world *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* sim_end_check verifies what must hold once a run is over (sim_check.c):
 * the invariants, rule T4 on runs without faults, every saga ended, and
 * each effect applied as the final state says. */
void sim_end_check(sim_world *w);

#endif
