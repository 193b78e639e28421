/* sim_world: the simulated daemons around the production decisions.
 *
 * What each function mirrors in the real daemons:
 *   orch_decide/orch_commit  engine_decide/engine_commit + store_apply
 *                            (version-checked writes, send after commit)
 *   orch_dispatch            engine_dispatch (a call with a timeout capped by
 *                            the step deadline; the row was leased first)
 *   sim_sweep                engine_sweep + store_claim_due
 *   sim_start_saga           api.c StartSaga (row written leased, submitted)
 *   part_stock/part_payment/ services/ * /store.c (decide and write in one
 *   part_shipping            transaction, then reply)
 */
#include "sim.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "sim_internal.h"
#include "sim_rules.h"
#include "status.h"

const sim_timing sim_default_timing = {
    .policy = {.step_timeout_ms = 5000,
        .backoff_base_ms = 50,
        .backoff_cap_ms = 5000,
        .attention_after = 10,
        .request_timeout_ms = 2000,
        .request_timeout_max_ms = 30000,
        .lease_grace_ms = SAGA_LEASE_GRACE_MS},
    .sweep_ms = 100,
};

const char *const sim_sku_names[SIM_NSKU] = {"A1", "B2", "ZZ"};
const char *const sim_customer_names[SIM_NACCT] = {"ali", "sara", "bob", "ghost"};

static const char *const sim_node_names[SIM_NODES]
    = {"orchestrator", "stock", "payment", "shipping"};

/* --- trace ring --- */

#define SIM_TRACE_LINES 64
#define SIM_TRACE_LEN   160

static bool sim_trace_on;
static char sim_trace_ring[SIM_TRACE_LINES][SIM_TRACE_LEN];
static uint64_t sim_trace_count;

void sim_trace_enable(bool on)
{
	sim_trace_on = on;
	sim_trace_count = 0;
}

void sim_trace(const sim_world *w, const char *fmt, ...)
{
	if (!sim_trace_on)
		return;
	char *line = sim_trace_ring[sim_trace_count % SIM_TRACE_LINES];
	int n = snprintf(line, SIM_TRACE_LEN, "t=%-7" PRId64 " ", w->now);
	if (n < 0 || n >= SIM_TRACE_LEN)
		n = 0;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line + n, (size_t)(SIM_TRACE_LEN - n), fmt, ap);
	va_end(ap);
	sim_trace_count++;
}

void sim_trace_print(int n)
{
	if (n > SIM_TRACE_LINES)
		n = SIM_TRACE_LINES;
	uint64_t from = sim_trace_count > (uint64_t)n ? sim_trace_count - (uint64_t)n : 0;
	fprintf(stderr, "trace (last %d of %" PRIu64 " events):\n", (int)(sim_trace_count - from),
	    sim_trace_count);
	for (uint64_t i = from; i < sim_trace_count; i++)
		fprintf(stderr, "  %s\n", sim_trace_ring[i % SIM_TRACE_LINES]);
}

/* --- randomness --- */

uint64_t sim_rand(sim_world *w)
{
	/* splitmix64 */
	uint64_t z = (w->rng += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* sim_chance is true with probability p. */
static bool sim_chance(sim_world *w, double p)
{
	if (p <= 0)
		return false;
	return (double)(sim_rand(w) >> 11) * 0x1.0p-53 < p;
}

/* forge_rand is the attacker's own PRNG (splitmix64 on w->forge_rng), so
 * that turning it on changes no other draw of a seed. */
static uint64_t forge_rand(sim_world *w)
{
	uint64_t z = (w->forge_rng += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static int64_t forge_range(sim_world *w, int64_t lo, int64_t hi)
{
	return lo + (int64_t)(forge_rand(w) % (uint64_t)(hi - lo + 1));
}

/* sim_range returns a uniform number in [lo, hi]. */
static int64_t sim_range(sim_world *w, int64_t lo, int64_t hi)
{
	return lo + (int64_t)(sim_rand(w) % (uint64_t)(hi - lo + 1));
}

/* orch_now is the clock the orchestrator decides by: its estimate of the
 * database's clock (dbclock.h, rule T1), off by db_err_ms; in the broken
 * variant local_clock, its own wall clock. The database's clock is w->now
 * (created_at). */
int64_t orch_now(const sim_world *w)
{
	return w->now
	    + (sim_rules_broken(SIM_BREAK_LOCAL_CLOCK) ? w->clock_off_ms[SIM_ORCH] : w->db_err_ms);
}

/* orch_young is how long after its insert a saga on its first try is not
 * looked for by the sweep (engine.c: half its first lease). */
static int64_t orch_young(const sim_world *w)
{
	return saga_first_lease_ms(&w->timing.policy) / 2;
}

/* orch_rand is the jitter the orchestrator passes to saga_transition. */
static uint64_t orch_rand(sim_world *w)
{
	return w->explore ? 0x5bd1e995u : sim_rand(w);
}

/* --- setup --- */

void sim_world_init(sim_world *w, uint64_t seed)
{
	memset(w, 0, sizeof *w);
	w->rng = seed;
	w->timing = sim_default_timing;
	for (int n = 0; n < SIM_NODES; n++)
		w->up[n] = true;
	w->calm = true;
	w->calm_at_ms = 0;
	w->next_fault_ms = INT64_MAX;
}

void sim_world_random(sim_world *w, uint64_t seed, int nsagas)
{
	sim_world_init(w, seed * 0x2545f4914f6cdd1dULL + 1);
	w->sku_exists[0] = w->sku_exists[1] = true;
	w->init_on_hand[0] = w->on_hand[0] = sim_range(w, 0, 6);
	w->init_on_hand[1] = w->on_hand[1] = sim_range(w, 0, 3);
	w->acct_exists[0] = w->acct_exists[1] = w->acct_exists[2] = true;
	w->init_balance[0] = w->balance[0] = sim_range(w, 50000, 150000);
	w->init_balance[1] = w->balance[1] = sim_range(w, 0, 5000);
	w->init_balance[2] = w->balance[2] = sim_range(w, 0, 30000);
	w->nsagas = nsagas > 0 ? nsagas : (int)sim_range(w, 1, SIM_MAX_SAGAS);
	for (int i = 0; i < w->nsagas; i++) {
		sim_order *o = &w->orders[i];
		o->sku = sim_chance(w, 0.05) ? 2 : (int)sim_range(w, 0, 1);
		o->customer = sim_chance(w, 0.05) ? 3 : (int)sim_range(w, 0, 2);
		o->qty = (int32_t)sim_range(w, 1, 3);
		o->amount = o->qty * sim_range(w, 500, 3500);
		o->start_ms = sim_range(w, 0, 4000);
	}
	if (sim_chance(w, 0.5)) {
		/* other timings than the defaults: deadlines shorter than a
		 * request, long backoff, early attention, slow sweeps */
		sim_timing *t = &w->timing;
		t->policy.step_timeout_ms = sim_range(w, 100, 8000);
		t->policy.backoff_base_ms = sim_range(w, 1, 300);
		t->policy.backoff_cap_ms = sim_range(w, t->policy.backoff_base_ms, 5000);
		t->policy.attention_after = (int32_t)sim_range(w, 1, 10);
		t->policy.request_timeout_ms = sim_range(w, 20, 4000);
		t->policy.request_timeout_max_ms
		    = t->policy.request_timeout_ms * sim_range(w, 1, 16);
		t->sweep_ms = sim_range(w, 5, 500);
	}
	/* clocks: any node's wall clock may be off by up to an hour (rules
	 * T1, T3); the orchestrator's estimate of the database's by a few ms */
	for (int n = 0; n < SIM_NODES; n++)
		if (sim_chance(w, 0.5))
			w->clock_off_ms[n] = sim_chance(w, 0.5) ? (sim_chance(w, 0.5) ? 1 : -1)
			        * (sim_chance(w, 0.5) ? 600000 : 3600000)
			                                        : sim_range(w, -3600000, 3600000);
	w->db_err_ms = sim_range(w, -5, 5);
	/* slow participants (rule T4): each try of the first request timeout
	 * ends before the answer comes */
	saga_policy *pol = &w->timing.policy;
	int64_t rt = pol->request_timeout_ms;
	/* slower than the first try's timeout, but within the longest one (a
	 * participant slower than --request-timeout-max is never answered in
	 * time: docs/operations.md) */
	if (pol->request_timeout_max_ms < 4 * rt)
		pol->request_timeout_max_ms = 4 * rt;
	int64_t slowest = 3 * rt;
	if (sim_chance(w, 0.3)) {
		for (int n = SIM_STOCK; n <= SIM_SHIPPING; n++)
			if (sim_chance(w, 0.7))
				w->serve_ms[n] = sim_range(w, rt / 2 + 1, slowest);
	}
	/* a run without faults but slow participants: every step must complete
	 * when its deadline leaves room for the tries (sim_end_check) */
	if (sim_chance(w, 0.15)) {
		w->slow_only = true;
		w->serve_ms[SIM_PAYMENT] = sim_range(w, rt + 1, slowest);
		w->serve_ms[SIM_STOCK] = sim_chance(w, 0.5) ? sim_range(w, rt + 1, slowest) : 0;
		w->serve_ms[SIM_SHIPPING] = sim_chance(w, 0.5) ? sim_range(w, rt + 1, slowest) : 0;
		w->calm = true;
		w->calm_at_ms = 0;
		w->next_fault_ms = INT64_MAX;
		return;
	}
	/* swarm testing: every seed turns on its own mix of faults */
	sim_faults *f = &w->faults;
	f->drop = sim_chance(w, 0.7) ? 0.25 * (double)sim_range(w, 0, 100) / 100 : 0;
	f->dup = sim_chance(w, 0.7) ? 0.30 * (double)sim_range(w, 0, 100) / 100 : 0;
	f->slow = sim_chance(w, 0.7) ? 0.10 * (double)sim_range(w, 0, 100) / 100 : 0;
	f->unavailable = sim_chance(w, 0.5) ? 0.10 * (double)sim_range(w, 0, 100) / 100 : 0;
	f->crash_commit = sim_chance(w, 0.5) ? 0.08 * (double)sim_range(w, 0, 100) / 100 : 0;
	f->crash_before = sim_chance(w, 0.5) ? 0.04 * (double)sim_range(w, 0, 100) / 100 : 0;
	f->orch_crash_send = sim_chance(w, 0.5) ? 0.05 * (double)sim_range(w, 0, 100) / 100 : 0;
	f->db_fail = sim_chance(w, 0.5) ? 0.05 * (double)sim_range(w, 0, 100) / 100 : 0;
	f->dup_reply = sim_chance(w, 0.3) ? 0.10 * (double)sim_range(w, 0, 100) / 100 : 0;
	f->crash_every_ms = sim_chance(w, 0.6) ? sim_range(w, 500, 8000) : 0;
	/* a frozen orchestrator in a third of the seeds, drawn from the seed
	 * apart from the stream above, so the other faults of a seed are as
	 * they were before this one existed */
	uint64_t st = (seed ^ 0x57a115ULL) * 0x9e3779b97f4a7c15ULL;
	f->stall = (st >> 33) % 3 == 0 ? 0.02 + 0.10 * (double)((st >> 13) % 101) / 100 : 0;
	w->calm = false;
	w->calm_at_ms = 20000;
	w->next_fault_ms = f->crash_every_ms ? sim_range(w, 0, f->crash_every_ms) : INT64_MAX;
	/* an attacker in a third of the seeds, from a PRNG of its own */
	w->forge_rng = w->rng ^ 0x5ec0e5ec0e5ec0e5ULL;
	w->forge_every_ms = forge_range(w, 0, 2) == 0 ? forge_range(w, 100, 2000) : 0;
	w->next_forge_ms = w->forge_every_ms ? forge_range(w, 0, w->forge_every_ms) : INT64_MAX;
}

/* --- the network --- */

int sim_net_count(const sim_world *w)
{
	int n = 0;
	for (int m = 0; m < SIM_MAX_MSGS; m++)
		n += w->msgs[m].used;
	return n;
}

/* net_free_slot is a free message slot, or -1 when the network is full:
 * every slot used, or w->net_max messages on the wire (the fixed-point
 * mode's bound; sends and duplicates past it are lost). */
static int net_free_slot(const sim_world *w)
{
	if (w->net_max > 0 && sim_net_count(w) >= w->net_max)
		return -1;
	for (int m = 0; m < SIM_MAX_MSGS; m++)
		if (!w->msgs[m].used)
			return m;
	return -1;
}

/* net_delay is how long one copy of a message travels. */
static int64_t net_delay(sim_world *w)
{
	if (w->explore)
		return 1;
	if (!w->calm && sim_chance(w, w->faults.slow))
		return sim_range(w, 500, 12000); /* past a step deadline */
	return sim_range(w, 1, 20);
}

/* net_send puts `tmpl` on the wire, leaving after `wait_ms` (a slow
 * participant's serving time): dropped, duplicated or delayed by the
 * faults of the run (random mode); exactly once in exhaustive mode, where
 * the explorer chooses drops and duplicates itself. */
static void net_send(sim_world *w, const sim_msg *tmpl, int64_t wait_ms)
{
	int copies = 1;
	if (!w->explore && !w->calm) {
		if (sim_chance(w, w->faults.drop)) {
			sim_trace(w, "net: drop %s%s saga %d", saga_command_name(tmpl->cmd),
			    tmpl->reply ? " reply" : "", tmpl->saga);
			return;
		}
		while (copies < 4 && sim_chance(w, w->faults.dup))
			copies++;
	}
	for (int k = 0; k < copies; k++) {
		int m = net_free_slot(w);
		if (m < 0) {
			sim_trace(w, "net: full, drop %s", saga_command_name(tmpl->cmd));
			return;
		}
		w->msgs[m] = *tmpl;
		w->msgs[m].used = true;
		w->msgs[m].at_ms = w->now + wait_ms + net_delay(w);
		w->msgs[m].seq = ++w->seq;
	}
	if (copies > 1)
		sim_trace(w, "net: %s%s saga %d sent %d times", saga_command_name(tmpl->cmd),
		    tmpl->reply ? " reply" : "", tmpl->saga, copies);
}

void sim_drop(sim_world *w, int m)
{
	sim_trace(w, "net: drop %s%s saga %d", saga_command_name(w->msgs[m].cmd),
	    w->msgs[m].reply ? " reply" : "", w->msgs[m].saga);
	w->msgs[m].used = false;
	sim_check(w);
}

bool sim_duplicate(sim_world *w, int m, int64_t at_ms)
{
	int d = net_free_slot(w);
	if (d < 0)
		return false;
	w->msgs[d] = w->msgs[m];
	w->msgs[d].at_ms = at_ms;
	w->msgs[d].seq = ++w->seq;
	sim_trace(w, "net: duplicate %s%s saga %d", saga_command_name(w->msgs[m].cmd),
	    w->msgs[m].reply ? " reply" : "", w->msgs[m].saga);
	return true;
}

bool sim_net_empty(const sim_world *w)
{
	for (int m = 0; m < SIM_MAX_MSGS; m++)
		if (w->msgs[m].used)
			return false;
	return true;
}

/* --- crashes --- */

void sim_restart(sim_world *w, sim_node node)
{
	w->up[node] = true;
	w->restart_ms[node] = 0;
	if (node == SIM_ORCH)
		w->next_sweep_ms = w->now; /* resume: sweep at once (rule 9) */
	sim_trace(w, "%s: restart", sim_node_names[node]);
}

void sim_crash(sim_world *w, sim_node node, int64_t restart_ms)
{
	w->up[node] = false;
	w->restart_ms[node] = restart_ms;
	sim_trace(w, "%s: CRASH (back at %" PRId64 ")", sim_node_names[node], restart_ms);
	if (node == SIM_ORCH) {
		/* commands in flight are volatile; their replies go nowhere */
		memset(w->calls, 0, sizeof w->calls);
		for (int m = 0; m < SIM_MAX_MSGS; m++)
			if (w->msgs[m].used && w->msgs[m].reply)
				w->msgs[m].used = false;
	}
	if (restart_ms <= w->now)
		sim_restart(w, node);
}

/* sim_downtime is how long a crashed node stays down. */
static int64_t sim_downtime(sim_world *w)
{
	return w->explore ? 0 : sim_range(w, 50, 3000);
}

/* --- the orchestrator --- */

/* orch_dispatch sends the command `row` makes due (engine_dispatch): the
 * row must already be leased in the store. */
static void orch_dispatch(sim_world *w, int i, const sim_row *row)
{
	saga_command cmd = saga_command_of(row->s.state);
	if (cmd == SAGA_CMD_NONE)
		return;
	int c = 0;
	while (c < SIM_MAX_CALLS && w->calls[c].used)
		c++;
	if (c == SIM_MAX_CALLS) {
		sim_trace(w, "orch: no room to send %s saga %d", saga_command_name(cmd), i);
		return; /* the sweep sends it when the lease ends */
	}
	/* after the pivot, only forward (rule 3) */
	sim_check_send(w, i, cmd);
	/* each try waits longer, never past the step deadline (rule T4) */
	int64_t timeout = sim_rules_try_timeout_ms(&row->s, orch_now(w), &w->timing.policy);
	sim_call *call = &w->calls[c];
	call->used = true;
	call->id = ++w->next_call;
	call->saga = i;
	call->cmd = cmd;
	call->row = *row;
	call->expire_ms = w->now + timeout;
	sim_trace(w, "orch: send %s saga %d (v%" PRId64 ", attempt %d)", saga_command_name(cmd), i,
	    row->version, row->s.attempts + 1);
	/* a duration on the wire (rule T3); the absolute deadline only for the
	 * broken variant that reads it */
	sim_msg msg = {.saga = i,
	    .cmd = cmd,
	    .call = call->id,
	    .timeout_ms = timeout,
	    .deadline_wall_ms = w->now + w->clock_off_ms[SIM_ORCH] + timeout};
	net_send(w, &msg, 0);
}

/* A decision waiting to be committed (engine_pending). */
typedef struct orch_pending {
	int saga;
	sim_row before;
	sim_row after;
	saga_command send;
	bool applied;
} orch_pending;

/* orch_decide runs the state machine on one event for the row `before`
 * and, unless the event is ignored, appends the write it needs. */
static void orch_decide(sim_world *w, int i, const sim_row *before, const saga_event *ev,
    orch_pending *pend, int *npend)
{
	saga_decision d;
	int64_t now = orch_now(w);
	sim_rules_transition(&before->s, ev, now, orch_rand(w), &w->timing.policy, &d);
	if (d.ignored) {
		sim_trace(w, "orch: saga %d %s event ignored in %s", i,
		    ev->kind == SAGA_EV_DEADLINE ? "deadline" : saga_command_name(ev->cmd),
		    saga_state_name(before->s.state));
		return;
	}
	orch_pending *p = &pend[(*npend)++];
	memset(p, 0, sizeof *p);
	p->saga = i;
	p->before = *before;
	p->after = *before;
	p->after.s = d.next;
	p->after.version = before->version + 1;
	p->send = d.send;
	if (d.send != SAGA_CMD_NONE) /* hold the row while the command is sent,
	                                never past its deadline (rule T5) */
		p->after.s.next_attempt_ms
		    = sim_rules_lease_until_ms(&d.next, now, &w->timing.policy);
}

/* orch_commit writes the pending decisions in one transaction, each
 * conditional on the version it read (rule 7), then sends the commands they
 * made due, only after the commit (rule 1). */
static void orch_commit(sim_world *w, orch_pending *pend, int n, bool crash_after_commit)
{
	if (n == 0)
		return;
	if (!w->explore && !w->calm && sim_chance(w, w->faults.db_fail)) {
		sim_trace(w, "orch: commit of %d transitions failed, nothing written", n);
		return;
	}
	for (int k = 0; k < n; k++) {
		orch_pending *p = &pend[k];
		sim_row *row = &w->rows[p->saga];
		if (row->version != p->before.version) {
			sim_trace(w, "orch: saga %d lost a race at v%" PRId64 " (now v%" PRId64 ")",
			    p->saga, p->before.version, row->version);
			continue;
		}
		/* rule 10: only the holder of the saga's current claim writes
		 * (store.c: WHERE epoch = the writer's) */
		if (row->epoch != p->before.epoch) {
			if (!sim_rules_broken(SIM_BREAK_NO_FENCING)) {
				sim_trace(w,
				    "orch: saga %d transition fenced: decided under epoch %" PRId64
				    ", claimed since (epoch %" PRId64 ")",
				    p->saga, p->before.epoch, row->epoch);
				w->fenced++;
				continue;
			}
			sim_violation(w,
			    "saga %d: a transition decided under claim epoch %" PRId64
			    " was written while epoch %" PRId64 " holds the saga (rule 10)",
			    p->saga, p->before.epoch, row->epoch);
		}
		*row = p->after;
		p->applied = true;
		if (p->after.s.state == SAGA_STATE_SHIPPING)
			w->past_pivot[p->saga] = true;
		if (p->after.s.state != p->before.s.state)
			sim_trace(w, "orch: saga %d %s -> %s%s%s (v%" PRId64 ")", p->saga,
			    saga_state_name(p->before.s.state), saga_state_name(p->after.s.state),
			    p->after.s.reason[0] ? " " : "", p->after.s.reason, p->after.version);
		else
			sim_trace(w, "orch: saga %d retry %s in %" PRId64 " ms (attempts %d%s)",
			    p->saga, saga_command_name(saga_command_of(p->after.s.state)),
			    p->after.s.next_attempt_ms - w->now, p->after.s.attempts,
			    p->after.s.attention ? ", attention" : "");
	}
	if (crash_after_commit) {
		sim_crash(w, SIM_ORCH, w->now + sim_downtime(w));
		return;
	}
	for (int k = 0; k < n; k++)
		if (pend[k].applied && pend[k].send != SAGA_CMD_NONE)
			orch_dispatch(w, pend[k].saga, &pend[k].after);
}

void sim_start_saga(sim_world *w, int i)
{
	if (!w->up[SIM_ORCH] || w->started[i])
		return;
	w->started[i] = true;
	sim_row *row = &w->rows[i];
	row->exists = true;
	int64_t now = orch_now(w);
	row->s = saga_start(now, &w->timing.policy);
	/* written leased */
	row->s.next_attempt_ms = sim_rules_lease_until_ms(&row->s, now, &w->timing.policy);
	row->version = 1;
	row->epoch = 1;           /* its orchestrator holds it (rule 10) */
	row->created_ms = w->now; /* created_at: the database's clock */
	const sim_order *o = &w->orders[i];
	sim_trace(w, "orch: start saga %d: %s %d x %s, %" PRId64, i,
	    sim_customer_names[o->customer], o->qty, sim_sku_names[o->sku], o->amount);
	if (!w->explore && !w->calm && sim_chance(w, w->faults.orch_crash_send)) {
		sim_crash(w, SIM_ORCH, w->now + sim_downtime(w));
	} else {
		sim_row copy = *row;
		orch_dispatch(w, i, &copy);
	}
	sim_check(w);
}

void sim_sweep(sim_world *w, bool crash_after_commit)
{
	if (!w->up[SIM_ORCH])
		return;
	/* claim every due row, oldest due first (store_claim_due); a saga on
	 * its first try only once it is older than orch_young, by created_at
	 * (the database's clock) against the orchestrator's "now" */
	int64_t now = orch_now(w);
	int order[SIM_MAX_SAGAS];
	int n = 0;
	for (int i = 0; i < w->nsagas; i++) {
		const sim_row *r = &w->rows[i];
		if (r->exists && !saga_is_terminal(r->s.state) && r->s.next_attempt_ms <= now
		    && (r->s.attempts > 0 || r->created_ms <= now - orch_young(w))) {
			int k = n++;
			while (k > 0
			    && w->rows[order[k - 1]].s.next_attempt_ms > r->s.next_attempt_ms) {
				order[k] = order[k - 1];
				k--;
			}
			order[k] = i;
		}
	}
	sim_row claimed[SIM_MAX_SAGAS];
	for (int k = 0; k < n; k++) {
		/* the claim moves next_attempt only (the lease of the try it
		 * sends, never past the deadline: rule T5); the version stays */
		sim_row *r = &w->rows[order[k]];
		r->s.next_attempt_ms = sim_rules_lease_until_ms(&r->s, now, &w->timing.policy);
		r->epoch++; /* a claim fences out the writes of earlier ones (rule 10) */
		claimed[k] = w->rows[order[k]];
	}
	orch_pending pend[SIM_MAX_SAGAS];
	int npend = 0;
	for (int k = 0; k < n; k++) {
		const sim_row *r = &claimed[k];
		if (r->s.step_deadline_ms > 0 && now >= r->s.step_deadline_ms) {
			saga_event ev = {.kind = SAGA_EV_DEADLINE};
			sim_trace(w, "orch: sweep: saga %d deadline in %s", order[k],
			    saga_state_name(r->s.state));
			orch_decide(w, order[k], r, &ev, pend, &npend);
		} else {
			orch_dispatch(w, order[k], r);
		}
	}
	orch_commit(w, pend, npend, crash_after_commit);
	sim_check(w);
}

int64_t sim_next_due_ms(const sim_world *w)
{
	int64_t due = INT64_MAX;
	for (int i = 0; i < w->nsagas; i++) {
		const sim_row *r = &w->rows[i];
		if (!r->exists || saga_is_terminal(r->s.state))
			continue;
		int64_t t = r->s.next_attempt_ms;
		if (r->s.attempts == 0 && r->created_ms + orch_young(w) > t)
			t = r->created_ms + orch_young(w);
		if (t < due)
			due = t;
	}
	/* from the orchestrator's clock to the simulation's */
	return due == INT64_MAX ? due : due - (orch_now(w) - w->now);
}

/* orch_complete ends call `c` with a reply (or none: transport) and decides
 * on it; crash_after_commit crashes the orchestrator before it sends; twice
 * queues the reply twice (the engine's duplicate-reply fault point), the
 * second decision made on the same row as the first. */
static void orch_complete(sim_world *w, int c, int code, const char *reason, bool transport,
    bool crash_after_commit, bool twice)
{
	sim_call call = w->calls[c];
	w->calls[c].used = false;
	saga_event ev = saga_event_from_reply(call.cmd, code, reason, transport);
	orch_pending pend[1];
	int npend = 0;
	orch_decide(w, call.saga, &call.row, &ev, pend, &npend);
	orch_commit(w, pend, npend, crash_after_commit && !twice);
	if (twice && w->up[SIM_ORCH]) {
		sim_trace(w, "orch: %s saga %d reply queued twice", saga_command_name(call.cmd),
		    call.saga);
		npend = 0;
		orch_decide(w, call.saga, &call.row, &ev, pend, &npend);
		orch_commit(w, pend, npend, crash_after_commit);
	}
}

void sim_timeout(sim_world *w, int c)
{
	if (w->calls[c].expire_ms > w->now)
		w->now = w->calls[c].expire_ms;
	sim_trace(w, "orch: %s saga %d: no reply (timeout)", saga_command_name(w->calls[c].cmd),
	    w->calls[c].saga);
	orch_complete(w, c, RPC_DEADLINE_EXCEEDED, "", true, false, false);
	sim_check(w);
}

/* --- the participants --- */

void sim_violation(sim_world *w, const char *fmt, ...)
{
	if (w->violated)
		return;
	w->violated = true;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(w->violation, sizeof w->violation, fmt, ap);
	va_end(ap);
	sim_trace(w, "VIOLATION: %s", w->violation);
}

/* sim_effect counts an effect of (saga, command): at most one each. */
static void sim_effect(sim_world *w, int i, saga_command cmd)
{
	if (++w->effects[i][cmd] > 1)
		sim_violation(w, "saga %d: %s applied %d times", i, saga_command_name(cmd),
		    w->effects[i][cmd]);
}

/* part_stock applies one stock command in one transaction (stock_store)
 * and fills the reply. */
static void part_stock(sim_world *w, int i, saga_command c, int *code, const char **reason)
{
	const sim_order *o = &w->orders[i];
	stock_cmd cmd = {.op = c == SAGA_CMD_RESERVE_STOCK ? STOCK_OP_RESERVE : STOCK_OP_RELEASE,
	    .sku = sim_sku_names[o->sku],
	    .qty = o->qty};
	stock_row row = {.exists = w->sku_exists[o->sku], .on_hand = w->on_hand[o->sku]};
	stock_outcome out;
	sim_rules_stock(&w->srec[i], &row, &cmd, &out);
	if (out.write_row) {
		if (!row.exists) {
			/* the store rolls back: an sku without a row is bad data */
			*code = RPC_UNAVAILABLE;
			*reason = "store_error";
			return;
		}
		int64_t delta = out.on_hand - row.on_hand;
		if (cmd.op == STOCK_OP_RESERVE && delta == -o->qty)
			sim_effect(w, i, c);
		else if (cmd.op == STOCK_OP_RELEASE && delta == o->qty)
			sim_effect(w, i, c);
		else
			sim_violation(w, "saga %d: %s moved %s by %" PRId64, i,
			    saga_command_name(c), cmd.sku, delta);
		w->on_hand[o->sku] = out.on_hand;
	}
	if (out.write_record)
		w->srec[i] = out.record;
	sim_trace(w, "stock: %s saga %d -> %s %s (on_hand %s=%" PRId64 ")%s", saga_command_name(c),
	    i, stock_status_name(out.reply_status), out.reason, cmd.sku, w->on_hand[o->sku],
	    out.write_record ? "" : " from record");
	*code = out.code;
	*reason = out.reason;
}

/* part_payment applies one payment command in one transaction
 * (payment_store) and fills the reply. */
static void part_payment(sim_world *w, int i, saga_command c, int *code, const char **reason)
{
	const sim_order *o = &w->orders[i];
	payment_cmd cmd
	    = {.op = c == SAGA_CMD_CHARGE_PAYMENT ? PAYMENT_OP_CHARGE : PAYMENT_OP_REFUND,
	        .customer = sim_customer_names[o->customer],
	        .amount = o->amount};
	payment_account acct
	    = {.exists = w->acct_exists[o->customer], .balance = w->balance[o->customer]};
	payment_outcome out;
	sim_rules_payment(&w->prec[i], &acct, &cmd, &out);
	if (out.write_account) {
		if (!acct.exists) {
			*code = RPC_UNAVAILABLE;
			*reason = "store_error";
			return;
		}
		int64_t delta = out.balance - acct.balance;
		if (cmd.op == PAYMENT_OP_CHARGE && delta == -o->amount)
			sim_effect(w, i, c);
		else if (cmd.op == PAYMENT_OP_REFUND && delta == o->amount)
			sim_effect(w, i, c);
		else
			sim_violation(w, "saga %d: %s moved %s by %" PRId64, i,
			    saga_command_name(c), cmd.customer, delta);
		w->balance[o->customer] = out.balance;
	}
	if (out.write_record)
		w->prec[i] = out.record;
	sim_trace(w, "payment: %s saga %d -> %s %s (%s=%" PRId64 ")%s", saga_command_name(c), i,
	    payment_status_name(out.reply_status), out.reason, cmd.customer,
	    w->balance[o->customer], out.write_record ? "" : " from record");
	*code = out.code;
	*reason = out.reason;
}

/* part_shipping applies one ShipOrder in one transaction (shipping_store)
 * and fills the reply. */
static void part_shipping(sim_world *w, int i, saga_command c, int *code, const char **reason)
{
	const sim_order *o = &w->orders[i];
	shipping_cmd cmd = {.op = SHIPPING_OP_SHIP,
	    .customer = sim_customer_names[o->customer],
	    .sku = sim_sku_names[o->sku],
	    .qty = o->qty};
	shipping_outcome out;
	sim_rules_shipping(&w->shrec[i], &cmd, &out);
	if (out.write_record) {
		w->shrec[i] = out.record;
		sim_effect(w, i, c);
	}
	sim_trace(w, "shipping: %s saga %d -> %s %s%s", saga_command_name(c), i,
	    shipping_status_name(out.reply_status), out.reason,
	    out.write_record ? "" : " from record");
	*code = out.code;
	*reason = out.reason;
}

/* sim_node_of is the participant that serves `cmd`. */
static sim_node sim_node_of(saga_command cmd)
{
	switch (cmd) {
	case SAGA_CMD_RESERVE_STOCK:
	case SAGA_CMD_RELEASE_STOCK:
		return SIM_STOCK;
	case SAGA_CMD_SHIP_ORDER:
		return SIM_SHIPPING;
	case SAGA_CMD_CHARGE_PAYMENT:
	case SAGA_CMD_REFUND_PAYMENT:
	case SAGA_CMD_NONE:
		break;
	}
	return SIM_PAYMENT;
}

/* part_serve applies `c` for saga `i` at its participant. */
static void part_serve(
    sim_world *w, sim_node node, int i, saga_command c, int *code, const char **reason)
{
	if (node == SIM_STOCK)
		part_stock(w, i, c, code, reason);
	else if (node == SIM_SHIPPING)
		part_shipping(w, i, c, code, reason);
	else
		part_payment(w, i, c, code, reason);
}

/* sim_forge puts an attacker's command on the wire: a step or compensation
 * of a started saga, with a client's or an admin's role (never the
 * orchestrator's: it has no such certificate), arriving 1-20 ms later,
 * never dropped or copied (the attacker's own draws only). */
static void sim_forge(sim_world *w)
{
	static const saga_command cmds[] = {SAGA_CMD_RESERVE_STOCK, SAGA_CMD_RELEASE_STOCK,
	    SAGA_CMD_CHARGE_PAYMENT, SAGA_CMD_REFUND_PAYMENT, SAGA_CMD_SHIP_ORDER};
	int i = (int)forge_range(w, 0, w->nsagas - 1);
	saga_command c = cmds[forge_range(w, 0, 4)];
	unsigned roles = forge_range(w, 0, 1) ? AUTHZ_CLIENT : AUTHZ_ADMIN;
	int64_t delay = forge_range(w, 1, 20);
	w->next_forge_ms = w->now + 1 + forge_range(w, 0, 2 * w->forge_every_ms);
	int m = net_free_slot(w);
	if (!w->started[i] || m < 0)
		return;
	w->msgs[m] = (sim_msg) {.used = true,
	    .saga = i,
	    .cmd = c,
	    .forged = true,
	    .roles = roles,
	    .at_ms = w->now + delay,
	    .seq = ++w->seq};
	sim_trace(w, "attacker: %s saga %d as %s", saga_command_name(c), i,
	    roles == AUTHZ_CLIENT ? "client" : "admin");
}

void sim_deliver(sim_world *w, int m, int fault)
{
	sim_msg msg = w->msgs[m];
	w->msgs[m].used = false;
	if (msg.reply) {
		int c = 0;
		while (c < SIM_MAX_CALLS && !(w->calls[c].used && w->calls[c].id == msg.call))
			c++;
		if (!w->up[SIM_ORCH] || c == SIM_MAX_CALLS) {
			/* the REQ socket has no such request any more */
			sim_trace(w, "orch: late %s reply saga %d discarded",
			    saga_command_name(msg.cmd), msg.saga);
		} else {
			sim_trace(w, "orch: %s saga %d answered %d %s", saga_command_name(msg.cmd),
			    msg.saga, msg.code, msg.reason);
			orch_complete(w, c, msg.code, msg.reason, false, fault == 2, fault == 3);
		}
		sim_check(w);
		return;
	}
	sim_node node = sim_node_of(msg.cmd);
	if (!w->up[node]) {
		sim_trace(w, "%s: down, %s saga %d lost", sim_node_names[node],
		    saga_command_name(msg.cmd), msg.saga);
		return;
	}
	/* the roles table, before anything is served (docs/security.md): the
	 * orchestrator's commands must pass, an attacker's must not */
	unsigned roles = msg.forged ? msg.roles : AUTHZ_ORCHESTRATOR;
	if (sim_rules_authz(saga_command_method(msg.cmd), roles) != AUTHZ_ALLOWED) {
		sim_trace(w, "%s: %s saga %d refused: PERMISSION_DENIED%s", sim_node_names[node],
		    saga_command_name(msg.cmd), msg.saga, msg.forged ? " (forged)" : "");
		if (msg.forged)
			w->forged_refused++;
		else
			sim_violation(w, "the orchestrator's %s was refused by the roles table",
			    saga_command_name(msg.cmd));
		return; /* the reply, PERMISSION_DENIED, changes nothing */
	}
	if (msg.forged) {
		/* served (a broken variant): the effects are the checks' to judge;
		 * the reply goes to the attacker */
		int code = RPC_OK;
		const char *reason = "";
		part_serve(w, node, msg.saga, msg.cmd, &code, &reason);
		sim_check(w);
		return;
	}
	int code = RPC_OK;
	const char *reason = "";
	if (sim_rules_broken(SIM_BREAK_ABSOLUTE_DEADLINE)
	    && w->now + w->clock_off_ms[node] >= msg.deadline_wall_ms) {
		/* broken on purpose: the sender's instant against this clock */
		sim_trace(w, "%s: %s saga %d -> DEADLINE_EXCEEDED (its clock %+" PRId64 " ms)",
		    sim_node_names[node], saga_command_name(msg.cmd), msg.saga,
		    w->clock_off_ms[node] - w->clock_off_ms[SIM_ORCH]);
		code = RPC_DEADLINE_EXCEEDED;
		reason = "deadline";
	} else if (fault == 1) {
		sim_trace(w, "%s: %s saga %d -> UNAVAILABLE", sim_node_names[node],
		    saga_command_name(msg.cmd), msg.saga);
		code = RPC_UNAVAILABLE;
		reason = "store_error";
	} else if (fault == 3) {
		sim_crash(w, node, w->now + sim_downtime(w));
		return; /* before commit: nothing happened */
	} else {
		part_serve(w, node, msg.saga, msg.cmd, &code, &reason);
		if (fault == 2) {
			/* committed, but the reply never leaves */
			sim_crash(w, node, w->now + sim_downtime(w));
			sim_check(w);
			return;
		}
	}
	sim_msg rep
	    = {.reply = true, .saga = msg.saga, .cmd = msg.cmd, .call = msg.call, .code = code};
	snprintf(rep.reason, sizeof rep.reason, "%s", reason);
	net_send(w, &rep, w->serve_ms[node]); /* applied now, answered after serve_ms */
	sim_check(w);
}

/* --- the random-mode scheduler --- */

/* sim_stall freezes the orchestrator that holds the call reply `m`
 * completes, as SIGSTOP would: the reply is decided on only when it wakes,
 * past the end of the saga's lease plus up to 3 s, and the call's timeout
 * does not fire meanwhile (its timers are frozen too). Meanwhile the sweep,
 * standing for the other orchestrators, may claim the saga (rule 10 says
 * the sleeper's write is then refused). Returns false (nothing done) when
 * the reply's call is gone. */
static bool sim_stall(sim_world *w, int m)
{
	int c = 0;
	while (c < SIM_MAX_CALLS && !(w->calls[c].used && w->calls[c].id == w->msgs[m].call))
		c++;
	if (!w->up[SIM_ORCH] || c == SIM_MAX_CALLS)
		return false;
	const sim_row *row = &w->rows[w->calls[c].saga];
	int64_t lease_end = row->s.next_attempt_ms - (orch_now(w) - w->now);
	int64_t wake = (lease_end > w->now ? lease_end : w->now) + sim_range(w, 1, 3000);
	w->msgs[m].stalled = true;
	w->msgs[m].at_ms = wake;
	w->msgs[m].seq = ++w->seq;
	if (w->calls[c].expire_ms <= wake)
		w->calls[c].expire_ms = wake + 1;
	sim_trace(w, "orch: frozen with the %s reply of saga %d until t=%" PRId64,
	    saga_command_name(w->msgs[m].cmd), w->msgs[m].saga, wake);
	return true;
}

void sim_make_calm(sim_world *w)
{
	w->calm = true;
	w->calm_at_ms = w->now;
	sim_trace(w, "calm: faults stop");
	for (int n = 0; n < SIM_NODES; n++)
		if (!w->up[n])
			sim_restart(w, (sim_node)n);
}

enum sim_ev {
	SIM_EV_NONE,
	SIM_EV_RESTART,
	SIM_EV_CALM,
	SIM_EV_FAULT,
	SIM_EV_START,
	SIM_EV_SWEEP,
	SIM_EV_TIMEOUT,
	SIM_EV_MSG,
	SIM_EV_FORGE,
};

bool sim_step(sim_world *w)
{
	int64_t best = INT64_MAX;
	uint64_t best_seq = UINT64_MAX;
	enum sim_ev kind = SIM_EV_NONE;
	int idx = -1;
#define SIM_CAND(t, k, i)                                                                          \
	do {                                                                                       \
		if ((t) < best) {                                                                  \
			best = (t);                                                                \
			kind = (k);                                                                \
			idx = (i);                                                                 \
		}                                                                                  \
	} while (0)
	for (int n = 0; n < SIM_NODES; n++)
		if (!w->up[n])
			SIM_CAND(w->restart_ms[n], SIM_EV_RESTART, n);
	if (!w->calm) {
		SIM_CAND(w->calm_at_ms, SIM_EV_CALM, 0);
		SIM_CAND(w->next_fault_ms, SIM_EV_FAULT, 0);
		if (w->forge_every_ms > 0)
			SIM_CAND(w->next_forge_ms, SIM_EV_FORGE, 0);
	}
	if (w->up[SIM_ORCH]) {
		for (int i = 0; i < w->nsagas; i++)
			if (!w->started[i])
				SIM_CAND(w->orders[i].start_ms, SIM_EV_START, i);
		SIM_CAND(w->next_sweep_ms, SIM_EV_SWEEP, 0);
		for (int c = 0; c < SIM_MAX_CALLS; c++)
			if (w->calls[c].used)
				SIM_CAND(w->calls[c].expire_ms, SIM_EV_TIMEOUT, c);
	}
	for (int m = 0; m < SIM_MAX_MSGS; m++) {
		const sim_msg *msg = &w->msgs[m];
		if (msg->used
		    && (msg->at_ms < best
		        || (msg->at_ms == best && kind == SIM_EV_MSG && msg->seq < best_seq))) {
			best = msg->at_ms;
			best_seq = msg->seq;
			kind = SIM_EV_MSG;
			idx = m;
		}
	}
#undef SIM_CAND
	if (kind == SIM_EV_NONE)
		return false;
	if (best > w->now)
		w->now = best;
	w->steps++;
	switch (kind) {
	case SIM_EV_RESTART:
		sim_restart(w, (sim_node)idx);
		break;
	case SIM_EV_CALM:
		sim_make_calm(w);
		break;
	case SIM_EV_FAULT: {
		sim_node node = (sim_node)sim_range(w, 0, SIM_NODES - 1);
		if (w->up[node])
			sim_crash(w, node, w->now + sim_downtime(w));
		w->next_fault_ms = w->now + 1 + sim_range(w, 0, 2 * w->faults.crash_every_ms);
		break;
	}
	case SIM_EV_START:
		sim_start_saga(w, idx);
		break;
	case SIM_EV_FORGE:
		sim_forge(w);
		break;
	case SIM_EV_SWEEP: {
		bool crash = !w->calm && sim_chance(w, w->faults.orch_crash_send);
		sim_sweep(w, crash);
		if (w->up[SIM_ORCH])
			w->next_sweep_ms = w->now + w->timing.sweep_ms;
		break;
	}
	case SIM_EV_TIMEOUT:
		sim_timeout(w, idx);
		break;
	case SIM_EV_MSG: {
		int fault = 0;
		if (!w->calm && !w->explore && !w->msgs[idx].forged) {
			const sim_faults *f = &w->faults;
			if (w->msgs[idx].reply && !w->msgs[idx].stalled && f->stall > 0
			    && sim_chance(w, f->stall) && sim_stall(w, idx))
				break;
			if (w->msgs[idx].reply) {
				if (sim_chance(w, f->orch_crash_send))
					fault = 2;
				else if (sim_chance(w, f->dup_reply))
					fault = 3;
			} else if (sim_chance(w, f->unavailable)) {
				fault = 1;
			} else if (sim_chance(w, f->crash_commit)) {
				fault = 2;
			} else if (sim_chance(w, f->crash_before)) {
				fault = 3;
			}
		}
		sim_deliver(w, idx, fault);
		break;
	}
	case SIM_EV_NONE:
		break;
	}
	return true;
}

int sim_run_to_end(sim_world *w, uint64_t max_steps)
{
	uint64_t start = w->steps;
	while (!w->violated) {
		if (w->calm && w->ended_ms == 0 && sim_all_terminal(w))
			w->ended_ms = w->now;
		if (w->calm && w->ended_ms != 0 && sim_net_empty(w))
			break;
		if (w->calm && w->now > w->calm_at_ms + SIM_LIVENESS_MS)
			break; /* sim_end_check reports the saga that did not end */
		if (w->steps - start >= max_steps) {
			sim_violation(w, "liveness: %" PRIu64 " steps without an end", max_steps);
			break;
		}
		if (!sim_step(w))
			break;
	}
	if (!w->violated)
		sim_end_check(w);
	return w->violated ? -1 : 0;
}
