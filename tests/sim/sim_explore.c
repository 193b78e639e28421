/* sim_explore: bounded exhaustive exploration of one or two sagas.
 *
 * Depth-first over choice points: at each state every enabled action is
 * tried (deliver any message, lose it, duplicate it, a participant answering
 * UNAVAILABLE, the orchestrator crashing after a commit, a call timing out,
 * a sweep after the clock moves to the next due row, StartSaga, an
 * orchestrator crash). States are hashed (sim_hash) to prune revisits.
 * From every new state a calm run (no more faults) must end every saga:
 * that is the liveness check.
 */
#include "sim_explore.h"

#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"

/* The network holds at most this many messages in the explorer: it bounds
 * duplicates. */
#define EXPLORE_NET_MAX 5

typedef enum explore_kind {
	ACT_START,
	ACT_DELIVER,
	ACT_DELIVER_UNAVAILABLE,
	ACT_DELIVER_CRASH,
	ACT_DROP,
	ACT_DUP,
	ACT_TIMEOUT,
	ACT_SWEEP,
	ACT_SWEEP_CRASH,
	ACT_ORCH_CRASH,
} explore_kind;

typedef struct explore_action {
	explore_kind kind;
	int idx;
} explore_action;

#define EXPLORE_MAX_ACTIONS (SIM_MAX_MSGS * 5 + SIM_MAX_CALLS + SIM_MAX_SAGAS + 4)

/* Visited set: open addressing on the state hash, with the least depth at
 * which each state was reached (a state reached again higher up the tree
 * is explored again, since more depth remains below it). */
typedef struct explore_set {
	uint64_t *keys;
	uint16_t *depth;
	size_t cap;
	size_t count;
	bool oom; /* a state could not be recorded: it was pruned */
} explore_set;

typedef struct explorer {
	const explore_opts *opts;
	explore_set seen;
	sim_world root;
	sim_world *stack;     /* one world per depth (depth first only) */
	sim_world *calm;      /* where the calm checks run */
	explore_action *path; /* the action taken at each depth */
	int limit;            /* the deepest path: opts->depth, or
	                         EXPLORE_FIXED_MAX_DEPTH */
	explore_result *res;
} explorer;

/* explore_key is the visited-set key of `w`: its exact hash, or in the
 * fixed-point mode its abstraction (sim_hash_abstract). */
static uint64_t explore_key(const explorer *x, const sim_world *w)
{
	return x->opts->fixed_point ? sim_hash_abstract(w, x->res->attempts_sat) : sim_hash(w);
}

static int set_grow(explore_set *s);

/* set_visit records `key` reached at `depth`; returns true when it must be
 * explored (new, or reached at a lesser depth than before). *fresh is true
 * for a state never seen. */
static bool set_visit(explore_set *s, uint64_t key, int depth, bool *fresh, bool relabel)
{
	*fresh = false;
	if (key == 0)
		key = 1;
	if ((s->count + 1) * 2 > s->cap && set_grow(s) != 0) {
		s->oom = true;
		return false; /* out of memory: prune */
	}
	size_t i = (size_t)key & (s->cap - 1);
	while (s->keys[i] != 0) {
		if (s->keys[i] == key) {
			if (relabel && depth < s->depth[i]) {
				s->depth[i] = (uint16_t)depth;
				return true;
			}
			return false;
		}
		i = (i + 1) & (s->cap - 1);
	}
	s->keys[i] = key;
	s->depth[i] = (uint16_t)depth;
	s->count++;
	*fresh = true;
	return true;
}

static int set_grow(explore_set *s)
{
	size_t cap = s->cap ? s->cap * 2 : 1u << 16;
	uint64_t *keys = calloc(cap, sizeof *keys);
	uint16_t *depth = calloc(cap, sizeof *depth);
	if (keys == NULL || depth == NULL) {
		free(keys);
		free(depth);
		return -1;
	}
	for (size_t j = 0; j < s->cap; j++) {
		if (s->keys[j] == 0)
			continue;
		size_t i = (size_t)s->keys[j] & (cap - 1);
		while (keys[i] != 0)
			i = (i + 1) & (cap - 1);
		keys[i] = s->keys[j];
		depth[i] = s->depth[j];
	}
	free(s->keys);
	free(s->depth);
	s->keys = keys;
	s->depth = depth;
	s->cap = cap;
	return 0;
}

/* sweep_time is when the next sweep finds work: now, or the next due row. */
static int64_t sweep_time(const sim_world *w)
{
	int64_t due = sim_next_due_ms(w);
	return due > w->now ? due : w->now;
}

/* sweep_hits_deadline is true when a sweep at `t` turns a deadline into an
 * event (only then can a crash after its commit differ from a crash). */
static bool sweep_hits_deadline(const sim_world *w, int64_t t)
{
	for (int i = 0; i < w->nsagas; i++) {
		const sim_row *r = &w->rows[i];
		if (r->exists && !saga_is_terminal(r->s.state) && r->s.next_attempt_ms <= t
		    && r->s.step_deadline_ms > 0 && t >= r->s.step_deadline_ms)
			return true;
	}
	return false;
}

/* explore_actions lists the actions enabled in `w`. */
static int explore_actions(const sim_world *w, explore_action *acts)
{
	int n = 0;
	for (int i = 0; i < w->nsagas; i++)
		if (!w->started[i])
			acts[n++] = (explore_action) {ACT_START, i};
	int in_net = sim_net_count(w);
	int net_max = w->net_max > 0 ? w->net_max : EXPLORE_NET_MAX;
	for (int m = 0; m < SIM_MAX_MSGS; m++) {
		if (!w->msgs[m].used)
			continue;
		acts[n++] = (explore_action) {ACT_DELIVER, m};
		acts[n++] = (explore_action) {ACT_DROP, m};
		if (in_net < net_max)
			acts[n++] = (explore_action) {ACT_DUP, m};
		if (w->msgs[m].reply)
			acts[n++] = (explore_action) {ACT_DELIVER_CRASH, m};
		else
			acts[n++] = (explore_action) {ACT_DELIVER_UNAVAILABLE, m};
	}
	bool calls = false;
	for (int c = 0; c < SIM_MAX_CALLS; c++) {
		if (w->calls[c].used) {
			acts[n++] = (explore_action) {ACT_TIMEOUT, c};
			calls = true;
		}
	}
	if (sim_next_due_ms(w) != INT64_MAX) {
		acts[n++] = (explore_action) {ACT_SWEEP, 0};
		if (sweep_hits_deadline(w, sweep_time(w)))
			acts[n++] = (explore_action) {ACT_SWEEP_CRASH, 0};
	}
	if (calls)
		acts[n++] = (explore_action) {ACT_ORCH_CRASH, 0};
	return n;
}

static const char *explore_kind_name(explore_kind k)
{
	switch (k) {
	case ACT_START:
		return "start";
	case ACT_DELIVER:
		return "deliver";
	case ACT_DELIVER_UNAVAILABLE:
		return "deliver, participant unavailable";
	case ACT_DELIVER_CRASH:
		return "deliver, orchestrator crashes after commit";
	case ACT_DROP:
		return "drop";
	case ACT_DUP:
		return "duplicate";
	case ACT_TIMEOUT:
		return "timeout";
	case ACT_SWEEP:
		return "sweep";
	case ACT_SWEEP_CRASH:
		return "sweep, orchestrator crashes after commit";
	case ACT_ORCH_CRASH:
		return "orchestrator crash";
	}
	return "?";
}

/* explore_next_timer is the call that expires first before `until`, or -1.
 * explore_fire_timers times out, in order of expiry, every call that
 * expires before `until`: in the fixed-point mode the clock never passes a
 * call's timer without it firing, as the RPC client's timer does (the
 * depth-bounded mode leaves every timeout a choice). */
static int explore_next_timer(const sim_world *w, int64_t until)
{
	int first = -1;
	for (int c = 0; c < SIM_MAX_CALLS; c++)
		if (w->calls[c].used && w->calls[c].expire_ms < until
		    && (first < 0 || w->calls[c].expire_ms < w->calls[first].expire_ms))
			first = c;
	return first;
}

static void explore_fire_timers(sim_world *w, int64_t until)
{
	int c;
	while (!w->violated && (c = explore_next_timer(w, until)) >= 0)
		sim_timeout(w, c);
}

/* explore_apply performs `a` on `w` (one step; the invariants are checked
 * by the step itself); with `timers`, the clock moves only through the
 * timers that fire before it (explore_fire_timers). */
static void explore_apply(sim_world *w, const explore_action *a, bool timers)
{
	w->steps++;
	sim_trace(w, "explore: %s %d", explore_kind_name(a->kind), a->idx);
	switch (a->kind) {
	case ACT_START:
		sim_start_saga(w, a->idx);
		break;
	case ACT_DELIVER:
		sim_deliver(w, a->idx, 0);
		break;
	case ACT_DELIVER_UNAVAILABLE:
		sim_deliver(w, a->idx, 1);
		break;
	case ACT_DELIVER_CRASH:
		sim_deliver(w, a->idx, 2);
		break;
	case ACT_DROP:
		sim_drop(w, a->idx);
		break;
	case ACT_DUP:
		(void)sim_duplicate(w, a->idx, w->now);
		break;
	case ACT_TIMEOUT:
		if (timers) {
			uint32_t id = w->calls[a->idx].id;
			explore_fire_timers(w, w->calls[a->idx].expire_ms);
			if (!w->calls[a->idx].used || w->calls[a->idx].id != id || w->violated)
				break;
		}
		sim_timeout(w, a->idx);
		break;
	case ACT_SWEEP:
	case ACT_SWEEP_CRASH:
		if (timers) {
			/* the timers that fire before the sweep, one at a time:
			 * each may move the next due row */
			int c;
			while (!w->violated && (c = explore_next_timer(w, sweep_time(w))) >= 0)
				sim_timeout(w, c);
			if (w->violated || sim_next_due_ms(w) == INT64_MAX)
				break;
		}
		w->now = sweep_time(w);
		sim_sweep(w, a->kind == ACT_SWEEP_CRASH);
		break;
	case ACT_ORCH_CRASH:
		sim_crash(w, SIM_ORCH, w->now);
		break;
	}
}

/* calm_run checks liveness from `w`: with faults stopped and messages on
 * the wire arriving in order, every saga must end. Returns 0 or -1 with
 * the violation in *out. */
static int calm_run(const sim_world *w, sim_world *out)
{
	*out = *w;
	out->net_max = 0; /* calm: no message lost */
	sim_make_calm(out);
	int k = 0;
	for (int m = 0; m < SIM_MAX_MSGS; m++)
		if (out->msgs[m].used)
			out->msgs[m].at_ms = out->now + 1 + k++;
	out->next_sweep_ms = out->now;
	return sim_run_to_end(out, 100000);
}

static void explore_report(explorer *x, int depth, const sim_world *bad, bool in_calm)
{
	explore_result *res = x->res;
	res->violations++;
	if (res->violations > 1)
		return;
	fprintf(stderr, "VIOLATION (exhaustive, depth %d%s): %s\n", depth,
	    in_calm ? ", then calm" : "", bad->violation);
	fprintf(stderr, "path:");
	for (int d = 0; d < depth; d++)
		fprintf(stderr, " [%s %d]", explore_kind_name(x->path[d].kind), x->path[d].idx);
	fprintf(stderr, "\n");
	/* replay the path with the trace on */
	sim_trace_enable(true);
	sim_world *w = malloc(sizeof *w);
	sim_world *c = malloc(sizeof *c);
	if (w != NULL && c != NULL) {
		*w = x->root;
		for (int d = 0; d < depth && !w->violated; d++)
			explore_apply(w, &x->path[d], x->opts->fixed_point);
		if (!w->violated && in_calm)
			(void)calm_run(w, c);
		sim_trace_print(40);
	}
	free(w);
	free(c);
	sim_trace_enable(false);
}

/* explore_try takes action `a` from `w` at `depth` (both searches): applies
 * it to a copy in *child, reports a violation, records the state in the
 * visited set (with `relabel`, also when reached at a lesser depth than
 * before), and from a state never seen runs the calm check (liveness) in
 * *calm. Returns true when *child is to be explored further. */
static bool explore_try(explorer *x, const sim_world *w, const explore_action *a, int depth,
    sim_world *child, sim_world *calm, bool relabel)
{
	*child = *w;
	x->path[depth] = *a;
	explore_apply(child, a, x->opts->fixed_point);
	x->res->transitions++;
	if (child->violated) {
		explore_report(x, depth + 1, child, false);
		return false;
	}
	bool fresh;
	if (!set_visit(&x->seen, explore_key(x, child), depth + 1, &fresh, relabel))
		return false;
	if (depth + 1 > x->res->max_depth)
		x->res->max_depth = depth + 1;
	if (fresh) {
		x->res->calm_runs++;
		if (calm_run(child, calm) != 0)
			explore_report(x, depth + 1, calm, true);
		x->res->calm_steps += calm->steps - child->steps;
	}
	return true;
}

/* explore_dfs is the depth-bounded search: depth first, a state explored
 * again when reached higher up the tree (more depth remains below it). */
static void explore_dfs(explorer *x, int depth)
{
	const sim_world *w = &x->stack[depth];
	explore_action acts[EXPLORE_MAX_ACTIONS];
	int n = explore_actions(w, acts);
	for (int k = 0; k < n; k++) {
		if (x->opts->stop_at_first && x->res->violations > 0)
			return;
		if (explore_try(x, w, &acts[k], depth, &x->stack[depth + 1], x->calm, true)
		    && depth + 1 < x->limit)
			explore_dfs(x, depth + 1);
	}
}

/* The policy of the fixed-point mode: every rule of the daemons' policy
 * (step deadlines, capped backoff, doubling try timeouts, leases, the
 * attention flag) with numbers small enough for the counters to saturate
 * after 2 tries and the times to be a few multiples of the grain. */
static const saga_policy explore_fixed_policy = {
    .step_timeout_ms = 6 * SAGA_TRY_GRAIN_MS,
    .backoff_base_ms = SAGA_TRY_GRAIN_MS,
    .backoff_cap_ms = 2 * SAGA_TRY_GRAIN_MS,
    .attention_after = 2,
    .request_timeout_ms = 2 * SAGA_TRY_GRAIN_MS,
    .request_timeout_max_ms = 4 * SAGA_TRY_GRAIN_MS,
    .lease_grace_ms = SAGA_TRY_GRAIN_MS,
};

/* ---- the fixed point: breadth first, one level at a time ----
 *
 * A level's states are kept packed (explore_pack: the world without its
 * empty message and call slots, about 3.5 KB instead of 15.7, and the path
 * that reached it), so that the widest level of one saga fits in memory. */

typedef struct explore_arena {
	uint8_t *p;
	size_t len, cap;
	size_t *at; /* where each state starts */
	size_t n, ncap;
} explore_arena;

static bool arena_put(explore_arena *a, const void *src, size_t len)
{
	if (a->len + len > a->cap) {
		size_t cap = a->cap ? a->cap : 1u << 20;
		while (cap < a->len + len)
			cap *= 2;
		uint8_t *p = realloc(a->p, cap);
		if (p == NULL)
			return false;
		a->p = p;
		a->cap = cap;
	}
	memcpy(a->p + a->len, src, len);
	a->len += len;
	return true;
}

static void arena_clear(explore_arena *a)
{
	a->len = 0;
	a->n = 0;
}

static void arena_free(explore_arena *a)
{
	free(a->p);
	free(a->at);
	memset(a, 0, sizeof *a);
}

/* explore_pack appends `w` and the `depth` actions of `path` to `a` as one
 * state. Returns false when out of memory. */
static bool explore_pack(
    explore_arena *a, const sim_world *w, const explore_action *path, int depth)
{
	if (a->n == a->ncap) {
		size_t ncap = a->ncap ? a->ncap * 2 : 4096;
		size_t *at = realloc(a->at, ncap * sizeof *at);
		if (at == NULL)
			return false;
		a->at = at;
		a->ncap = ncap;
	}
	a->at[a->n] = a->len;
	const uint8_t *b = (const uint8_t *)w;
	size_t c0 = offsetof(sim_world, calls), c1 = c0 + sizeof w->calls;
	size_t m0 = offsetof(sim_world, msgs), m1 = m0 + sizeof w->msgs;
	uint8_t nc = 0, nm = 0;
	for (int c = 0; c < SIM_MAX_CALLS; c++)
		nc += w->calls[c].used;
	for (int m = 0; m < SIM_MAX_MSGS; m++)
		nm += w->msgs[m].used;
	uint16_t d = (uint16_t)depth;
	bool ok = arena_put(a, b, c0) && arena_put(a, b + c1, m0 - c1)
	    && arena_put(a, b + m1, sizeof *w - m1) && arena_put(a, &nc, 1) && arena_put(a, &nm, 1)
	    && arena_put(a, &d, sizeof d);
	for (int c = 0; ok && c < SIM_MAX_CALLS; c++)
		if (w->calls[c].used) {
			uint8_t slot = (uint8_t)c;
			ok = arena_put(a, &slot, 1)
			    && arena_put(a, &w->calls[c], sizeof w->calls[c]);
		}
	for (int m = 0; ok && m < SIM_MAX_MSGS; m++)
		if (w->msgs[m].used) {
			uint8_t slot = (uint8_t)m;
			ok = arena_put(a, &slot, 1) && arena_put(a, &w->msgs[m], sizeof w->msgs[m]);
		}
	ok = ok && arena_put(a, path, (size_t)depth * sizeof *path);
	if (ok)
		a->n++;
	return ok;
}

/* explore_unpack restores state `i` of `a` into *w and its path into
 * `path`; returns its depth. */
static int explore_unpack(const explore_arena *a, size_t i, sim_world *w, explore_action *path)
{
	const uint8_t *p = a->p + a->at[i];
	uint8_t *b = (uint8_t *)w;
	size_t c0 = offsetof(sim_world, calls), c1 = c0 + sizeof w->calls;
	size_t m0 = offsetof(sim_world, msgs), m1 = m0 + sizeof w->msgs;
	memcpy(b, p, c0);
	p += c0;
	memcpy(b + c1, p, m0 - c1);
	p += m0 - c1;
	memcpy(b + m1, p, sizeof *w - m1);
	p += sizeof *w - m1;
	memset(w->calls, 0, sizeof w->calls);
	memset(w->msgs, 0, sizeof w->msgs);
	uint8_t nc = *p++, nm = *p++;
	uint16_t d;
	memcpy(&d, p, sizeof d);
	p += sizeof d;
	for (int k = 0; k < nc; k++) {
		uint8_t slot = *p++;
		memcpy(&w->calls[slot], p, sizeof w->calls[slot]);
		p += sizeof w->calls[slot];
	}
	for (int k = 0; k < nm; k++) {
		uint8_t slot = *p++;
		memcpy(&w->msgs[slot], p, sizeof w->msgs[slot]);
		p += sizeof w->msgs[slot];
	}
	memcpy(path, p, (size_t)d * sizeof *path);
	return d;
}

/* explore_bfs explores level by level from the root until a level adds no
 * new state: every state reachable in the bounded model is then visited,
 * and res->fixed_depth is the depth of that empty level. */
static void explore_bfs(explorer *x)
{
	explore_arena levels[2] = {{0}};
	explore_arena *cur = &levels[0], *next = &levels[1];
	sim_world *w = malloc(sizeof *w), *child = malloc(sizeof *child);
	if (w == NULL || child == NULL || !explore_pack(cur, &x->root, x->path, 0)) {
		x->res->truncated = true;
		goto out;
	}
	for (int depth = 0; cur->n > 0; depth++) {
		if (depth >= x->limit) {
			x->res->truncated = true;
			break;
		}
		arena_clear(next);
		for (size_t i = 0; i < cur->n; i++) {
			explore_unpack(cur, i, w, x->path);
			explore_action acts[EXPLORE_MAX_ACTIONS];
			int n = explore_actions(w, acts);
			for (int k = 0; k < n; k++) {
				if (x->opts->stop_at_first && x->res->violations > 0)
					goto out;
				/* without relabelling, true means a state never seen */
				if (!explore_try(x, w, &acts[k], depth, child, x->calm, false))
					continue;
				if (!explore_pack(next, child, x->path, depth + 1)) {
					x->res->truncated = true;
					goto out;
				}
			}
		}
		explore_arena *t = cur;
		cur = next;
		next = t;
		x->res->fixed_depth = depth + 1;
	}
out:
	arena_free(&levels[0]);
	arena_free(&levels[1]);
	free(w);
	free(child);
}

/* explore_root builds the starting world: the seed lab's stock and
 * accounts, and `nsagas` orders chosen to reach every branch of the table
 * (a sale that completes, and with two sagas one whose charge is declined). */
static void explore_root(sim_world *w, int nsagas)
{
	sim_world_init(w, 1);
	w->explore = true;
	w->sku_exists[0] = w->sku_exists[1] = true;
	w->init_on_hand[0] = w->on_hand[0] = 5;
	w->init_on_hand[1] = w->on_hand[1] = 1;
	w->acct_exists[0] = w->acct_exists[1] = w->acct_exists[2] = true;
	w->init_balance[0] = w->balance[0] = 50000;
	w->init_balance[1] = w->balance[1] = 2000;
	w->init_balance[2] = w->balance[2] = 0;
	w->nsagas = nsagas;
	w->orders[0] = (sim_order) {.sku = 0, .customer = 0, .qty = 2, .amount = 20000};
	if (nsagas > 1)
		w->orders[1] = (sim_order) {.sku = 0, .customer = 1, .qty = 1, .amount = 10000};
	/* the first saga starts at once; later ones are a choice */
	sim_start_saga(w, 0);
}

int sim_explore(const explore_opts *opts, explore_result *res)
{
	memset(res, 0, sizeof *res);
	if (opts->nsagas < 1 || opts->nsagas > 2
	    || (!opts->fixed_point && (opts->depth < 1 || opts->depth > EXPLORE_MAX_DEPTH)))
		return -1;
	explorer x;
	memset(&x, 0, sizeof x);
	x.opts = opts;
	x.res = res;
	x.limit = !opts->fixed_point ? opts->depth
	    : opts->depth > 0        ? opts->depth
	                             : EXPLORE_FIXED_MAX_DEPTH;
	/* breadth first keeps its levels packed, and needs no stack */
	x.stack = calloc(opts->fixed_point ? 1 : (size_t)x.limit + 1, sizeof *x.stack);
	x.path = calloc((size_t)x.limit + 1, sizeof *x.path);
	x.calm = malloc(sizeof *x.calm);
	if (x.stack == NULL || x.path == NULL || x.calm == NULL) {
		free(x.stack);
		free(x.path);
		free(x.calm);
		return -1;
	}
	sim_trace_enable(false);
	explore_root(&x.root, opts->nsagas);
	if (opts->fixed_point) {
		/* the same rules with small numbers, so that the clock and the
		 * counters take few values (docs/testing.md) */
		x.root.timing.policy = explore_fixed_policy;
		x.root.net_max = opts->net_max > 0 ? opts->net_max : EXPLORE_FIXED_NET_MAX;
		res->net_max = x.root.net_max;
		res->attempts_sat = sim_attempts_saturation(&x.root);
	}
	x.stack[0] = x.root;
	bool fresh;
	(void)set_visit(&x.seen, explore_key(&x, &x.root), 0, &fresh, true);
	if (opts->fixed_point)
		explore_bfs(&x);
	else
		explore_dfs(&x, 0);
	res->states = x.seen.count;
	if (x.seen.oom)
		res->truncated = true;
	free(x.seen.keys);
	free(x.seen.depth);
	free(x.stack);
	free(x.path);
	free(x.calm);
	return 0;
}
