/* sim: the command line of the deterministic saga simulation.
 *
 *   sim --seed N             replay one seed (prints its trace on failure)
 *   sim --seeds A..B         run every seed in [A, B]
 *   sim --exhaustive --sagas 1 --depth D
 *
 * Exit status: 0 when every invariant held, 1 on a violation, 2 on a usage
 * error; --expect-violation swaps 0 and 1 (for the broken variants).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sim.h"
#include "sim_explore.h"
#include "sim_rules.h"
#include "version.h"

#define SIM_MAX_STEPS    2000000
#define SIM_REPORT_MAX   5  /* failing seeds printed in a range run */
#define SIM_REPLAY_EVERY 50 /* every 50th seed is run twice and compared */

typedef struct sim_opts {
	uint64_t first, last;
	bool exhaustive;
	bool fixed_point;
	int fixed_depth; /* --depth with --fixed-point: a bound on paths */
	int net_max;     /* --net-max with --fixed-point */
	int nsagas;      /* 0 = random per seed */
	int depth;
	bool expect_violation;
	bool trace;
	bool quiet;
} sim_opts;

static const char *sim_prog = "sim"; /* argv[0] without its folder */

static void sim_usage(FILE *f)
{
	fprintf(f,
	    "usage: sim [--seed N | --seeds A..B] [--sagas N] [--trace] [--quiet]\n"
	    "       sim --exhaustive [--sagas 1|2] [--depth D]\n"
	    "       sim --fixed-point [--sagas 1|2]\n"
	    "\n"
	    "Deterministic simulation of the order saga: the production decisions\n"
	    "(saga_transition, stock_decide, payment_decide, shipping_decide) against a\n"
	    "simulated clock and a network that drops, duplicates, delays and reorders, with\n"
	    "crashes.\n"
	    "\n"
	    "  --seed N            run one seed (replays it exactly)\n"
	    "  --seeds A..B        run seeds A to B inclusive (default 1..1000)\n"
	    "  --sagas N           sagas per run (random mode: 1..%d, default random;\n"
	    "                      exhaustive: 1 or 2, default 1)\n"
	    "  --exhaustive        explore every interleaving up to --depth actions\n"
	    "  --depth D           exhaustive depth (1..%d, default 10)\n"
	    "  --fixed-point       exhaustive, breadth first, until no new state appears\n"
	    "                      (every reachable state of the bounded model:\n"
	    "                      docs/testing.md); with --depth D, stop after D levels\n"
	    "  --net-max N         with --fixed-point: at most N messages on the wire\n"
	    "                      (1..16, default %d)\n"
	    "  --trace             print the whole trace of a single seed\n"
	    "  --quiet             print only the summary\n"
	    "  --expect-violation  succeed only if a violation is found\n"
	    "  --break NAME        use a broken decision variant: tombstone, refund, lease,\n"
	    "                      fixed_timeout, local_clock, absolute_deadline, no_authz,\n"
	    "                      compensate_after_pivot\n"
	    "                      (only in the sim_broken build)\n"
	    "  --help              this text\n"
	    "  --version           the version and commit\n",
	    SIM_MAX_SAGAS, EXPLORE_MAX_DEPTH, EXPLORE_FIXED_NET_MAX);
}

static bool sim_parse_u64(const char *s, uint64_t *out)
{
	char *end;
	errno = 0;
	if (*s < '0' || *s > '9')
		return false;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno != 0 || *end != '\0')
		return false;
	*out = v;
	return true;
}

static bool sim_parse_range(const char *s, uint64_t *a, uint64_t *b)
{
	const char *dots = strstr(s, "..");
	if (dots == NULL)
		return false;
	char left[32];
	size_t n = (size_t)(dots - s);
	if (n == 0 || n >= sizeof left)
		return false;
	memcpy(left, s, n);
	left[n] = '\0';
	return sim_parse_u64(left, a) && sim_parse_u64(dots + 2, b) && *a <= *b;
}

static double sim_wall_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* sim_parse fills *o from argv; returns 0, 1 for --help, 3 after printing
 * the version (--version), or 2 on a usage error (after printing it). */
static int sim_parse(int argc, char **argv, sim_opts *o)
{
	memset(o, 0, sizeof *o);
	o->first = 1;
	o->last = 1000;
	o->depth = 10;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		uint64_t n;
		if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			return 1;
		} else if (version_is_flag(a)) {
			version_print(stdout, sim_prog);
			return 3;
		} else if (strcmp(a, "--seed") == 0 && v && sim_parse_u64(v, &n)) {
			o->first = o->last = n;
			i++;
		} else if (strcmp(a, "--seeds") == 0 && v
		    && sim_parse_range(v, &o->first, &o->last)) {
			i++;
		} else if (strcmp(a, "--sagas") == 0 && v && sim_parse_u64(v, &n) && n >= 1
		    && n <= SIM_MAX_SAGAS) {
			o->nsagas = (int)n;
			i++;
		} else if (strcmp(a, "--depth") == 0 && v && sim_parse_u64(v, &n) && n >= 1
		    && n <= EXPLORE_MAX_DEPTH) {
			o->depth = o->fixed_depth = (int)n;
			i++;
		} else if (strcmp(a, "--break") == 0 && v) {
			if (!sim_rules_set_break(v)) {
				fprintf(stderr,
				    "error: --break %s: no such variant in this build (use "
				    "sim_broken)\n",
				    v);
				return 2;
			}
			i++;
		} else if (strcmp(a, "--exhaustive") == 0) {
			o->exhaustive = true;
		} else if (strcmp(a, "--net-max") == 0 && v && sim_parse_u64(v, &n) && n >= 1
		    && n <= 16) {
			o->net_max = (int)n;
			i++;
		} else if (strcmp(a, "--fixed-point") == 0) {
			o->exhaustive = true;
			o->fixed_point = true;
		} else if (strcmp(a, "--expect-violation") == 0) {
			o->expect_violation = true;
		} else if (strcmp(a, "--trace") == 0) {
			o->trace = true;
		} else if (strcmp(a, "--quiet") == 0) {
			o->quiet = true;
		} else {
			fprintf(stderr, "error: bad argument \"%s\"%s\n", a,
			    v ? "" : " (or its value is missing)");
			sim_usage(stderr);
			return 2;
		}
	}
	if (o->exhaustive && o->nsagas > 2) {
		fprintf(stderr, "error: %s takes --sagas 1 or 2\n",
		    o->fixed_point ? "--fixed-point" : "--exhaustive");
		return 2;
	}
	return 0;
}

static int sim_run_random(const sim_opts *o)
{
	uint64_t violations = 0, steps = 0, sim_ms = 0, sagas = 0, completed = 0, cancelled = 0;
	uint64_t first_bad = 0, replays = 0, forged = 0, attacked = 0, fenced = 0, frozen = 0;
	int64_t worst_end_ms = 0; /* longest time from calm to every saga ended */
	bool single = o->first == o->last;
	sim_world *w = malloc(sizeof *w);
	sim_world *again = malloc(sizeof *again);
	if (w == NULL || again == NULL) {
		free(w);
		free(again);
		return 2;
	}
	double t0 = sim_wall_s();
	for (uint64_t seed = o->first;; seed++) {
		sim_trace_enable(true);
		sim_world_random(w, seed, o->nsagas);
		int rc = sim_run_to_end(w, SIM_MAX_STEPS);
		if (rc == 0 && (seed % SIM_REPLAY_EVERY == 0 || single)) {
			/* same seed, same run, bit for bit */
			replays++;
			sim_world_random(again, seed, o->nsagas);
			int rc2 = sim_run_to_end(again, SIM_MAX_STEPS);
			if (rc2 != rc || again->steps != w->steps || again->now != w->now
			    || sim_hash(again) != sim_hash(w) || again->rng != w->rng) {
				snprintf(w->violation, sizeof w->violation,
				    "determinism: a replay of seed %" PRIu64 " differs", seed);
				w->violated = true;
				rc = -1;
			}
		}
		if (w->ended_ms - w->calm_at_ms > worst_end_ms)
			worst_end_ms = w->ended_ms - w->calm_at_ms;
		steps += w->steps;
		sim_ms += (uint64_t)w->now;
		sagas += (uint64_t)w->nsagas;
		forged += w->forged_refused;
		attacked += w->forge_every_ms > 0;
		fenced += w->fenced;
		frozen += w->faults.stall > 0;
		for (int i = 0; i < w->nsagas; i++) {
			completed += w->rows[i].s.state == SAGA_STATE_COMPLETED;
			cancelled += w->rows[i].s.state == SAGA_STATE_CANCELLED;
		}
		if (single && o->trace)
			sim_trace_print(64);
		if (rc != 0) {
			if (violations == 0)
				first_bad = seed;
			violations++;
			if (violations <= SIM_REPORT_MAX && !o->quiet) {
				fprintf(stderr, "VIOLATION seed %" PRIu64 " (break=%s): %s\n", seed,
				    sim_rules_break_name(), w->violation);
				if (violations == 1 && !(single && o->trace))
					sim_trace_print(40);
				fprintf(stderr, "replay: %s --seed %" PRIu64 "%s%s\n", sim_prog,
				    seed, strcmp(sim_rules_break_name(), "none") ? " --break " : "",
				    strcmp(sim_rules_break_name(), "none") ? sim_rules_break_name()
				                                           : "");
			}
		}
		if (seed == o->last)
			break;
	}
	double wall = sim_wall_s() - t0;
	printf("sim: seeds %" PRIu64 "..%" PRIu64 " (%" PRIu64 "), break=%s: %" PRIu64
	       " violations; %" PRIu64 " steps, %" PRIu64 " sagas (%" PRIu64 " completed, %" PRIu64
	       " cancelled), %.1f simulated s, every saga ended within %.1f s of calm, %" PRIu64
	       " replays identical, %" PRIu64 " forged commands refused in %" PRIu64
	       " seeds with an attacker, %" PRIu64 " stale transitions fenced in %" PRIu64
	       " seeds with a frozen orchestrator, %.2f s wall\n",
	    o->first, o->last, o->last - o->first + 1, sim_rules_break_name(), violations, steps,
	    sagas, completed, cancelled, (double)sim_ms / 1000.0, (double)worst_end_ms / 1000.0,
	    replays, forged, attacked, fenced, frozen, wall);
	if (violations > 0)
		printf("sim: first failing seed %" PRIu64 "\n", first_bad);
	free(w);
	free(again);
	return violations > 0 ? 1 : 0;
}

static int sim_run_exhaustive(const sim_opts *o)
{
	explore_opts eo = {.nsagas = o->nsagas > 0 ? o->nsagas : 1,
	    .fixed_point = o->fixed_point,
	    .net_max = o->net_max,
	    .depth = o->fixed_point ? o->fixed_depth : o->depth,
	    .stop_at_first = true};
	explore_result r;
	double t0 = sim_wall_s();
	if (sim_explore(&eo, &r) != 0) {
		fprintf(stderr, "error: could not explore (options or memory)\n");
		return 2;
	}
	if (eo.fixed_point) {
		char how[96];
		if (r.violations > 0)
			snprintf(how, sizeof how, "stopped at the first violation, at depth %d",
			    r.max_depth);
		else if (r.truncated)
			snprintf(how, sizeof how, "cut short after depth %d", r.max_depth);
		else
			snprintf(how, sizeof how, "breadth first: no new state at depth %d",
			    r.fixed_depth);
		printf("sim: fixed point, %d saga%s, break=%s: %" PRIu64
		       " distinct states, %s, %" PRIu64 " transitions, %" PRIu64
		       " calm runs (%" PRIu64 " steps), %" PRIu64
		       " violations; bounds: %d messages on the wire, attempts saturate at %d%s; "
		       "%.2f s wall\n",
		    eo.nsagas, eo.nsagas > 1 ? "s" : "", sim_rules_break_name(), r.states, how,
		    r.transitions, r.calm_runs, r.calm_steps, r.violations, r.net_max,
		    (int)r.attempts_sat, r.truncated ? "; TRUNCATED (not a fixed point)" : "",
		    sim_wall_s() - t0);
		if (r.truncated && r.violations == 0) {
			fprintf(stderr, "error: the exploration was cut short: no fixed point\n");
			return 2;
		}
		return r.violations > 0 ? 1 : 0;
	}
	printf("sim: exhaustive, %d saga%s, depth %d, break=%s: %" PRIu64
	       " distinct states, %" PRIu64 " transitions, %" PRIu64 " calm runs (%" PRIu64
	       " steps), %" PRIu64 " violations%s, %.2f s wall\n",
	    eo.nsagas, eo.nsagas > 1 ? "s" : "", eo.depth, sim_rules_break_name(), r.states,
	    r.transitions, r.calm_runs, r.calm_steps, r.violations,
	    r.violations ? " (stopped at the first)" : "", sim_wall_s() - t0);
	return r.violations > 0 ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc > 0 && argv[0] != NULL) {
		const char *slash = strrchr(argv[0], '/');
		sim_prog = slash ? slash + 1 : argv[0];
	}
	sim_opts o;
	int rc = sim_parse(argc, argv, &o);
	if (rc == 1) {
		sim_usage(stdout);
		return 0;
	}
	if (rc == 3) /* --version */
		return 0;
	if (rc != 0)
		return rc;
	rc = o.exhaustive ? sim_run_exhaustive(&o) : sim_run_random(&o);
	if (rc == 2)
		return rc;
	if (o.expect_violation) {
		if (rc == 0)
			fprintf(stderr, "error: a violation was expected, none was found\n");
		else
			printf("sim: the expected violation was found\n");
		return rc == 0 ? 1 : 0;
	}
	return rc;
}
