/* sim_explore: the bounded exhaustive mode of the simulator (sim.h). */
#ifndef SAGA_SIM_EXPLORE_H
#define SAGA_SIM_EXPLORE_H

#include <stdbool.h>
#include <stdint.h>

#define EXPLORE_MAX_DEPTH 40

/* The fixed-point mode's bounds (docs/testing.md, "Simulation"): messages
 * on the wire at once (a send past it is lost), and the longest path it
 * follows (a safety net: the abstraction makes every path revisit a state
 * long before). */
#define EXPLORE_FIXED_NET_MAX   4
#define EXPLORE_FIXED_MAX_DEPTH 1500

typedef struct explore_opts {
	int nsagas;       /* 1 or 2 */
	int depth;        /* actions along one path, 1..EXPLORE_MAX_DEPTH; with
	                     fixed_point, 0 (EXPLORE_FIXED_MAX_DEPTH) or a smaller
	                     bound for a look at how the space grows */
	bool fixed_point; /* explore until no new state appears: every
	                     reachable state of the abstraction
	                     (sim_hash_abstract), each at its least depth */
	int net_max;      /* fixed point: messages on the wire at once (0 =
	                     EXPLORE_FIXED_NET_MAX) */
	bool stop_at_first;
} explore_opts;

typedef struct explore_result {
	uint64_t states;      /* distinct states visited */
	uint64_t transitions; /* actions applied */
	uint64_t calm_runs;   /* liveness runs (one per distinct state) */
	uint64_t calm_steps;
	int max_depth;        /* the longest path followed */
	int fixed_depth;      /* fixed point: the depth of the first level that
	                         added no new state */
	bool truncated;       /* fixed point: a path reached
	                         EXPLORE_FIXED_MAX_DEPTH, or memory ran out: not
	                         a fixed point */
	int32_t attempts_sat; /* fixed point: the saturation of attempts */
	int net_max;          /* fixed point: the bound on messages on the wire */
	uint64_t violations;
} explore_result;

/* sim_explore explores every interleaving of deliveries, drops, duplicates,
 * timeouts, sweeps and orchestrator crashes for opts->nsagas sagas up to
 * opts->depth actions (or, with fixed_point, until no new state appears),
 * checking the invariants after every action and liveness from every
 * distinct state. Prints the first violation (path and trace) to stderr.
 * Returns 0 and fills *res, or -1 for bad options or no memory. */
int sim_explore(const explore_opts *opts, explore_result *res);

#endif
