/* sim_explore: the bounded exhaustive mode of the simulator (sim.h). */
#ifndef SAGA_SIM_EXPLORE_H
#define SAGA_SIM_EXPLORE_H

#include <stdbool.h>
#include <stdint.h>

#define EXPLORE_MAX_DEPTH 40

typedef struct explore_opts {
	int nsagas; /* 1 or 2 */
	int depth;  /* actions along one path, 1..EXPLORE_MAX_DEPTH */
	bool stop_at_first;
} explore_opts;

typedef struct explore_result {
	uint64_t states;      /* distinct states visited */
	uint64_t transitions; /* actions applied */
	uint64_t calm_runs;   /* liveness runs (one per distinct state) */
	uint64_t calm_steps;
	int max_depth;
	uint64_t violations;
} explore_result;

/* sim_explore explores every interleaving of deliveries, drops, duplicates,
 * timeouts, sweeps and orchestrator crashes for opts->nsagas sagas up to
 * opts->depth actions, checking the invariants after every action and
 * liveness from every distinct state. Prints the first violation (path and
 * trace) to stderr. Returns 0 and fills *res, or -1 for bad options or no
 * memory. */
int sim_explore(const explore_opts *opts, explore_result *res);

#endif
