/* sim_retention: a deterministic simulation of the retention rules
 * (common/base/horizon.h, docs/saga-semantics.md "Retention", rules R1-R3),
 * with the production functions horizon_refuses, horizon_record_cutoff_ms
 * and horizon_may_send, over a model of clocks, a lossy network and
 * participants that delete their idempotency records. Time is in units
 * (the functions take ms; a unit is one): retention 100, skew 10.
 *
 * The model, for each seed:
 *   - Clocks. True time t. The orchestrator (its database) and the two
 *     participants each read t + e, e the node's error, in [-B, +B],
 *     changed every 5-40 units (every 200-2000 once the sagas are long
 *     past their horizons), to an extreme 3 times in 4: a change downwards
 *     is a clock stepping back, by at most 2B. So two readings at one true
 *     time differ by at most 2B, and from true time t on a clock never
 *     reads less than t - B. B is skew/2 = 5 (the tolerated error: any
 *     two clocks within skew of each other); `--clock-bound B` changes it.
 *   - Sagas. 1-8 sagas start in the first 2 x retention; a saga's start
 *     (created, sent in every command) is the orchestrator's reading. The
 *     orchestrator drives each by the rules of orchestrator/saga/saga.c,
 *     simplified to two participants: ReserveStock, then ChargePayment,
 *     then COMPLETED (the charge is the pivot here); a refused reserve
 *     cancels, a refused charge releases, a step past its deadline (its
 *     clock; 10-30 in a quarter of the seeds, else 100-300: --step-timeout
 *     may be as long as --retention) compensates: RefundPayment then
 *     ReleaseStock, then CANCELLED. A try waits 2 units for its reply (a
 *     later reply is dropped: the engine's call is over), then is retried
 *     after 1-4 units; a compensation is retried for ever, a refused one
 *     too (rule 3). Before every send it checks horizon_may_send on its
 *     clock; when that fails it parks the saga (flagged past_horizon, not
 *     terminal, never sent again); a try refused past_horizon parks it the
 *     same (orchestrator/saga/saga.c: a retried step's first copy may have
 *     been applied, so such a refusal is never "nothing applied"). It is down
 *     (replies lost, tries late) 1-3 times for 5-100 units in a quarter
 *     of the seeds, and in half of them once, from just after a saga's
 *     first try until 0-12 units before its horizon.
 *   - Network. Each send is 1 copy, or 2-3 (3 in 10); a copy is dropped 1
 *     in 10, else delivered after 1 unit (60 %), about retention later
 *     (80-120, 25 %), anywhere up to 150 (10 %) or days later (1000-20000,
 *     5 %). A reply is dropped 1 in 5, else takes 1 unit.
 *   - Participants (stock: reserve/release; payment: charge/refund) first
 *     refuse, without effect, a command with horizon_refuses on their
 *     clock (rule R1, before the record is read, as services/kit/pkit_rpc.c
 *     does); then apply it by its saga's record: the first command of a
 *     saga decides (a step is applied, or refused for the business: 15 %
 *     of sagas are out of stock, 15 % out of funds; a compensation first
 *     writes a tombstone, and the step is refused after it); a duplicate
 *     is answered from the record. Every 1-6 units (every 50-2000 once the
 *     sagas are long past their horizons) each deletes the records created
 *     (its clock) before horizon_record_cutoff_ms (rule R2).
 * The run goes on until every message is delivered or dropped and every
 * saga is terminal or parked. Checks (a violation prints the seed and the
 * first thing that broke, and the seed counts once):
 *   (a) never applied twice: per saga and participant, the step's effect
 *       (a reservation, a charge) is applied at most once in the run;
 *   (b) no compensation lost: at the end a CANCELLED saga has nothing in
 *       effect at either participant, a COMPLETED one exactly one
 *       reservation and one charge, a parked one is flagged (always, here:
 *       it may hold effects, an operator settles it), and none is left in
 *       between;
 *   (c) no record deleted too early: when a participant deletes a record,
 *       it refuses every command of that saga at every reading its clock
 *       can still show (t - B and up), by its own refusal rule;
 * Counted, not a check: tries sent while horizon_may_send held and refused
 * past_horizon all the same (rule R3's margin did not cover the clocks and
 * the time on the way: the saga is parked, which is safe; R3 only spares
 * the participants commands they would refuse).
 *   - Saga ids (rule R5). In half the seeds a saga may reuse the id of an
 *     earlier one, starting anywhere in the first 6 x retention: when the
 *     orchestrator still keeps that saga (not terminal), StartSaga finds
 *     it and nothing starts; else (the orchestrator forgot it, at once:
 *     the worst case) a new saga with that id starts, whatever the
 *     participants still keep. A participant's record keeps its saga's
 *     start; a command of another start is refused saga_id_reused without
 *     effect (services/kit/pkit_decide.c); a step so refused parks its saga, a
 *     compensation so refused is retried. Effects count for the saga whose
 *     record they change, so (a) and (b) check every saga with a reused id
 *     and the one whose id it reused.
 * `--break NAME` replaces one rule: `no_skew` deletes records at now -
 * retention (no clock margin), `no_refusal` makes participants accept any
 * old command, `send_past_horizon` lets the orchestrator send while
 * created >= now - retention (no margin for a participant ahead: more
 * sagas parked by a refusal, still safe, so not a variant a check catches),
 * `cancel_on_refusal` takes a past_horizon refusal for a plain refusal
 * ("nothing applied": a reserve cancels, a charge releases), which loses
 * the effect of a retried step whose first copy was applied ((b)),
 * `id_only` matches a command to a record by saga id alone (the records
 * before R5: the new saga is answered from the old one's record, or
 * compensates it), `cancel_on_reuse` takes a saga_id_reused refusal of a
 * step for "nothing applied" (a copy still on the way applies once the old
 * record is deleted, to a saga already cancelled). Usage:
 * sim_retention [--seeds A..B] [--break NAME] [--expect-violation]
 * [--clock-bound B] [--trace]; exit 0 when the expectation holds
 * (--expect-violation: some seed violates), 2 on a usage error. */
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "horizon.h"

#define RET       100
#define SKEW      10
#define T0        1000
#define TRY_WAIT  2
#define MAX_SAGAS 8
#define MAX_MSGS  512

enum { N_STOCK, N_PAY, N_ORCH, N_NODES };
enum {
	BRK_NONE,
	BRK_NO_SKEW,
	BRK_NO_REFUSAL,
	BRK_SEND_PAST,
	BRK_CANCEL,
	BRK_ID_ONLY,
	BRK_CANCEL_REUSED
};
static const char *const break_names[] = {"", "no_skew", "no_refusal", "send_past_horizon",
    "cancel_on_refusal", "id_only", "cancel_on_reuse"};
static int brk;
static bool trace;
/* the largest error of a clock: skew/2 (the header says why);
 * --clock-bound changes it */
static int64_t clock_bound = SKEW / 2;

#define TRACE(w, ...)                                                                              \
	do {                                                                                       \
		if (trace) {                                                                       \
			printf("t=%lld ", (long long)(w)->t);                                      \
			printf(__VA_ARGS__);                                                       \
		}                                                                                  \
	} while (0)

typedef enum { S_RESERVING, S_CHARGING, S_REFUNDING, S_RELEASING, S_COMPLETED, S_CANCELLED } st;
static const char *const st_names[]
    = {"RESERVING", "CHARGING", "REFUNDING", "RELEASING", "COMPLETED", "CANCELLED"};

/* a participant's record of a saga */
typedef enum { R_NONE, R_APPLIED, R_REFUSED, R_UNDONE, R_TOMBSTONE } rec_kind;

typedef struct record {
	rec_kind kind;
	int64_t created_at; /* the participant's clock */
	int owner;          /* the saga that made it (rule R5: its identity) */
	int64_t started;    /* that saga's start, as its commands carry it */
} record;

typedef struct msg {
	bool used, reply;
	int64_t at; /* true time of delivery */
	int saga, node;
	bool comp; /* a compensation (release, refund), else a step */
	int try_id;
	bool ok;           /* a reply's outcome */
	bool past_horizon; /* a reply's refusal is rule R1's */
	bool id_reused;    /* a reply's refusal is rule R5's */
} msg;

typedef struct saga {
	int64_t t_start, created; /* true start; the orchestrator's reading */
	st state;
	bool parked;
	int64_t deadline_o; /* the step's deadline (orchestrator's clock), 0: none */
	int64_t timer;      /* true time of the next try or of the try's end, 0: none */
	bool in_flight;
	int try_id;
	bool no_stock, no_funds;
	/* per participant: the step applied, the compensation applied */
	int applied[2], undone[2];
	int id;      /* its saga id: its own index, or an earlier saga's (R5) */
	bool never;  /* a reuser whose id's saga was still kept at its start:
	                StartSaga found that one (deduplicated), nothing started */
	bool reused; /* parked by a saga_id_reused refusal */
} saga;

typedef struct world {
	uint64_t rng;
	uint64_t seed;
	int64_t t;
	int64_t err[N_NODES], next_clk[N_NODES];
	int64_t next_ret[2];
	int64_t busy_until; /* after it, clocks and retention act rarely */
	int64_t down_from[3], down_until[3];
	int64_t step_timeout;
	int nsagas;
	saga sagas[MAX_SAGAS];
	record rec[2][MAX_SAGAS];
	msg msgs[MAX_MSGS];
	int nmsgs; /* slots in use are below it */
	bool bad;
	char what[4][256]; /* the first violation of each check */
	bool check_hit[4];
	long deletions, horizon_refusals, late_copies, refused_parks, reuses, reuse_refusals;
} world;

static const horizon_policy policy = {.retention_ms = RET, .skew_ms = SKEW};

static uint32_t rnd(world *w, uint32_t n)
{
	w->rng ^= w->rng << 13, w->rng ^= w->rng >> 7, w->rng ^= w->rng << 17;
	return (uint32_t)(w->rng % n);
}

static int64_t between(world *w, int64_t lo, int64_t hi)
{
	return lo + (int64_t)rnd(w, (uint32_t)(hi - lo + 1));
}

static int64_t reading(const world *w, int node)
{
	return w->t + w->err[node];
}

__attribute__((format(printf, 5, 6))) static void violation(
    world *w, int check, int sid, int node, const char *fmt, ...)
{
	w->bad = true;
	if (w->check_hit[check])
		return; /* the first of each check is reported */
	w->check_hit[check] = true;
	char buf[200];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	snprintf(w->what[check], sizeof w->what[check], "(%c) saga %d at %s, t=%lld: %s",
	    'a' + check, sid, node == N_STOCK ? "stock" : "payment", (long long)w->t, buf);
}

/* the rules, as the variant under test has them */
static bool part_refuses(int64_t started, int64_t now)
{
	return brk != BRK_NO_REFUSAL && horizon_refuses(&policy, started, now);
}

static int64_t record_cutoff(int64_t now)
{
	return brk == BRK_NO_SKEW ? now - RET : horizon_record_cutoff_ms(&policy, now);
}

static bool may_send(int64_t created, int64_t now)
{
	return brk == BRK_SEND_PAST ? created >= now - RET
	                            : horizon_may_send(&policy, created, now);
}

static void post(world *w, const msg *m)
{
	for (int i = 0; i < MAX_MSGS; i++)
		if (!w->msgs[i].used) {
			w->msgs[i] = *m;
			w->msgs[i].used = true;
			if (i >= w->nmsgs)
				w->nmsgs = i + 1;
			return;
		}
	fprintf(stderr, "sim_retention: out of message slots\n");
	exit(2);
}

static bool orch_down(const world *w, int64_t t)
{
	for (int i = 0; i < 3; i++)
		if (t >= w->down_from[i] && t < w->down_until[i])
			return true;
	return false;
}

/* the orchestrator sends a try of the command of s's state (now), or parks */
static void try_send(world *w, int id)
{
	saga *s = &w->sagas[id];
	if (!may_send(s->created, reading(w, N_ORCH))) {
		TRACE(w, "saga %d: parked in %s (orchestrator reads %lld)\n", id,
		    st_names[s->state], (long long)reading(w, N_ORCH));
		s->parked = true; /* flagged past_horizon: never sent again */
		s->timer = 0;
		s->in_flight = false;
		return;
	}
	msg m = {.saga = id, .try_id = ++s->try_id};
	m.node = s->state == S_RESERVING || s->state == S_RELEASING ? N_STOCK : N_PAY;
	m.comp = s->state == S_RELEASING || s->state == S_REFUNDING;
	int copies = rnd(w, 10) < 3 ? 2 + (int)rnd(w, 2) : 1;
	for (int c = 0; c < copies; c++) {
		if (rnd(w, 10) == 0)
			continue;
		uint32_t r = rnd(w, 100);
		int64_t d = r < 60 ? 1
		    : r < 85       ? between(w, RET - 2 * SKEW, RET + 2 * SKEW)
		    : r < 95       ? between(w, 1, RET + RET / 2)
		                   : between(w, 1000, 20000);
		m.at = w->t + d;
		TRACE(w, "saga %d: %s %s try %d sent (orchestrator reads %lld), arrives at %lld\n",
		    id, m.comp ? "compensation" : "step", m.node == N_STOCK ? "stock" : "payment",
		    m.try_id, (long long)reading(w, N_ORCH), (long long)m.at);
		post(w, &m);
	}
	s->in_flight = true;
	s->timer = w->t + TRY_WAIT;
}

static void enter(world *w, int id, st state)
{
	saga *s = &w->sagas[id];
	s->state = state;
	s->in_flight = false;
	s->timer = 0;
	s->deadline_o = state == S_RESERVING || state == S_CHARGING
	    ? reading(w, N_ORCH) + w->step_timeout
	    : 0;
	if (state != S_COMPLETED && state != S_CANCELLED)
		try_send(w, id);
}

/* a try's time is up, or a retry is due */
static void orch_timer(world *w, int id)
{
	saga *s = &w->sagas[id];
	bool step = s->state == S_RESERVING || s->state == S_CHARGING;
	if (s->in_flight) {
		/* no reply in time: retry after a backoff */
		s->in_flight = false;
		s->timer = w->t + between(w, 1, 4);
		return;
	}
	s->timer = 0;
	if (!may_send(s->created, reading(w, N_ORCH))) {
		TRACE(w, "saga %d: parked in %s (orchestrator reads %lld)\n", id,
		    st_names[s->state], (long long)reading(w, N_ORCH));
		s->parked = true;
		return;
	}
	if (step && reading(w, N_ORCH) >= s->deadline_o) {
		/* rule 4: compensate a step whose outcome is unknown */
		enter(w, id, s->state == S_RESERVING ? S_RELEASING : S_REFUNDING);
		return;
	}
	try_send(w, id);
}

static void orch_reply(world *w, const msg *m)
{
	saga *s = &w->sagas[m->saga];
	if (s->parked || !s->in_flight || m->try_id != s->try_id)
		return; /* a late reply: the call is over */
	TRACE(w, "saga %d: %s in %s\n", m->saga, m->ok ? "OK" : "refused", st_names[s->state]);
	if (m->past_horizon)
		w->refused_parks++; /* rule R3's margin was not enough: parked, safe */
	bool step = s->state == S_RESERVING || s->state == S_CHARGING;
	if (m->id_reused && step && brk != BRK_CANCEL_REUSED) {
		/* orchestrator/saga/saga.c: a step refused saga_id_reused parks (rule
		 * R5): a copy still on the way applies once the other saga's
		 * record is deleted, so cancelling could lose it */
		TRACE(w, "saga %d: parked in %s (refused saga_id_reused)\n", m->saga,
		    st_names[s->state]);
		s->parked = true;
		s->reused = true;
		s->timer = 0;
		s->in_flight = false;
		return;
	}
	if (m->past_horizon && brk != BRK_CANCEL) {
		/* orchestrator/saga/saga.c: a command refused past_horizon parks */
		TRACE(w, "saga %d: parked in %s (refused past_horizon)\n", m->saga,
		    st_names[s->state]);
		s->parked = true;
		s->timer = 0;
		s->in_flight = false;
		return;
	}
	switch (s->state) {
	case S_RESERVING:
		enter(w, m->saga, m->ok ? S_CHARGING : S_CANCELLED);
		break;
	case S_CHARGING:
		enter(w, m->saga, m->ok ? S_COMPLETED : S_RELEASING);
		break;
	case S_REFUNDING:
	case S_RELEASING:
		if (m->ok) {
			enter(w, m->saga, s->state == S_REFUNDING ? S_RELEASING : S_CANCELLED);
		} else {
			/* a compensation is never refused for good (rule 3) */
			s->in_flight = false;
			s->timer = w->t + between(w, 1, 4);
		}
		break;
	case S_COMPLETED:
	case S_CANCELLED:
		break;
	}
}

/* a participant takes a command; returns whether it answers OK, and in
 * *past_horizon whether it refused it by rule R1 */
static bool part_command(world *w, const msg *m, bool *past_horizon, bool *id_reused)
{
	saga *s = &w->sagas[m->saga];
	int p = m->node;
	record *r = &w->rec[p][s->id];
	int64_t now = reading(w, p);
	if (w->t - s->t_start > RET)
		w->late_copies++;
	TRACE(w, "saga %d: %s %s arrives (try %d, this clock reads %lld, record %d)\n", m->saga,
	    m->comp ? "compensation" : "step", p == N_STOCK ? "stock" : "payment", m->try_id,
	    (long long)now, (int)r->kind);
	if (part_refuses(s->created, now)) {
		TRACE(w, "  refused past_horizon (started %lld)\n", (long long)s->created);
		w->horizon_refusals++;
		*past_horizon = true;
		return false; /* rule R1: past_horizon, nothing applied */
	}
	if (r->kind != R_NONE && r->started != s->created && brk != BRK_ID_ONLY) {
		/* rule R5 (services/kit/pkit_decide.c): another saga's record */
		TRACE(w, "  refused saga_id_reused (the record is saga %d's)\n", r->owner);
		w->reuse_refusals++;
		*id_reused = true;
		return false;
	}
	if (m->comp) {
		switch (r->kind) {
		case R_NONE:
			r->kind = R_TOMBSTONE;
			r->created_at = now;
			r->owner = m->saga;
			r->started = s->created;
			return true;
		case R_APPLIED:
			r->kind = R_UNDONE;
			w->sagas[r->owner].undone[p]++; /* the record's saga's effect */
			return true;
		case R_REFUSED:
		case R_UNDONE:
		case R_TOMBSTONE:
			return true; /* nothing (more) to undo */
		}
		return true;
	}
	switch (r->kind) {
	case R_NONE:
		r->created_at = now;
		r->owner = m->saga;
		r->started = s->created;
		if (p == N_STOCK ? s->no_stock : s->no_funds) {
			r->kind = R_REFUSED;
			return false;
		}
		r->kind = R_APPLIED;
		if (++s->applied[p] > 1)
			violation(w, 0, m->saga, p,
			    "%s applied a second time (its record was deleted), the saga started "
			    "at %lld, "
			    "this clock reads %lld",
			    p == N_STOCK ? "ReserveStock" : "ChargePayment", (long long)s->created,
			    (long long)now);
		return true;
	case R_APPLIED:
		return true;
	case R_REFUSED:
	case R_TOMBSTONE:
		return false;
	case R_UNDONE:
		return true; /* answered from the record; the saga moved on */
	}
	return false;
}

static void part_retention(world *w, int p)
{
	int64_t cutoff = record_cutoff(reading(w, p));
	for (int i = 0; i < w->nsagas; i++) {
		record *r = &w->rec[p][i];
		if (r->kind == R_NONE || r->created_at >= cutoff)
			continue;
		/* (c): refused at every reading still to come, the lowest first */
		if (!part_refuses(r->started, w->t - clock_bound))
			violation(w, 2, r->owner, p,
			    "record (created at %lld) deleted while a command could still be "
			    "accepted: the saga started at %lld, this clock may still read %lld",
			    (long long)r->created_at, (long long)r->started,
			    (long long)(w->t - clock_bound));
		TRACE(w, "saga %d: %s record deleted\n", i, p == N_STOCK ? "stock" : "payment");
		r->kind = R_NONE;
		w->deletions++;
	}
}

static void deliver(world *w, msg *m)
{
	msg mm = *m;
	m->used = false;
	if (mm.reply) {
		if (!orch_down(w, w->t))
			orch_reply(w, &mm);
		return;
	}
	bool ph = false, reused = false;
	bool ok = part_command(w, &mm, &ph, &reused);
	if (rnd(w, 5) == 0)
		return;
	msg rep = mm;
	rep.reply = true;
	rep.ok = ok;
	rep.past_horizon = ph;
	rep.id_reused = reused;
	rep.at = w->t + 1;
	post(w, &rep);
}

static void step_clock(world *w, int n)
{
	int64_t h = clock_bound;
	w->err[n] = rnd(w, 4) ? (rnd(w, 2) ? h : -h) : between(w, -h, h);
	TRACE(w, "clock %d error %lld\n", n, (long long)w->err[n]);
	w->next_clk[n] = w->t + (w->t < w->busy_until ? between(w, 5, 40) : between(w, 200, 2000));
}

static bool saga_active(const saga *s)
{
	return !s->parked && !s->never && s->state != S_COMPLETED && s->state != S_CANCELLED;
}

/* runs seed `seed`; returns true when every check holds */
static bool run(world *w, uint64_t seed)
{
	memset(w, 0, sizeof *w);
	w->seed = seed;
	w->rng = seed * 2654435761u + 1;
	w->t = T0;
	w->nsagas = 1 + (int)rnd(w, MAX_SAGAS);
	w->step_timeout = rnd(w, 4) == 0 ? between(w, 10, 30) : between(w, RET, 3 * RET);
	w->busy_until = T0 + 2 * RET + 4 * RET;
	for (int n = 0; n < N_NODES; n++)
		step_clock(w, n);
	for (int p = 0; p < 2; p++)
		w->next_ret[p] = T0 + between(w, 1, 6);
	for (int i = 0; i < w->nsagas; i++) {
		saga *s = &w->sagas[i];
		s->t_start = T0 + between(w, 0, 2 * RET);
		s->no_stock = rnd(w, 100) < 15;
		s->no_funds = rnd(w, 100) < 15;
		s->timer = s->t_start; /* StartSaga: the first try */
		s->state = S_RESERVING;
		s->id = i;
		/* rule R5: in half the seeds, a saga reuses an earlier saga's
		 * id, at any time from that saga's start to long after it
		 * (an orchestrator whose retention forgot it at once, and
		 * participants that keep its records any time) */
		if (i > 0 && seed % 2 == 0 && rnd(w, 3) == 0) {
			s->id = w->sagas[rnd(w, (uint32_t)i)].id;
			s->t_start = T0 + between(w, 0, 6 * RET);
			s->timer = s->t_start;
		}
	}
	/* outages: anywhere, or ending near a saga's horizon (the sweep then
	 * resumes it there) */
	uint32_t outages = rnd(w, 4); /* none, 1-3 anywhere, or (2 in 4) one near a horizon */
	if (outages)
		for (int i = 0, k = outages == 1 ? 1 + (int)rnd(w, 3) : 1; i < k; i++) {
			if (outages == 1) {
				w->down_from[i] = T0 + between(w, 0, 3 * RET);
				w->down_until[i] = w->down_from[i] + between(w, 5, RET);
			} else {
				const saga *s = &w->sagas[rnd(w, (uint32_t)w->nsagas)];
				w->down_from[i] = s->t_start + between(w, 1, 3);
				w->down_until[i] = s->t_start + RET - between(w, 0, SKEW + 2);
			}
		}
	TRACE(w, "seed %llu: %d sagas, step timeout %lld\n", (unsigned long long)seed, w->nsagas,
	    (long long)w->step_timeout);
	for (int i = 0; i < 3; i++)
		if (w->down_until[i])
			TRACE(w, "orchestrator down from %lld to %lld\n",
			    (long long)w->down_from[i], (long long)w->down_until[i]);
	for (;;) {
		/* the next event; clocks and retention do not keep the run going */
		int64_t next = INT64_MAX;
		bool pending = false;
		while (w->nmsgs > 0 && !w->msgs[w->nmsgs - 1].used)
			w->nmsgs--;
		for (int i = 0; i < w->nmsgs; i++)
			if (w->msgs[i].used && w->msgs[i].at < next)
				next = w->msgs[i].at, pending = true;
		for (int i = 0; i < w->nsagas; i++)
			if (saga_active(&w->sagas[i]) && w->sagas[i].timer
			    && w->sagas[i].timer < next)
				next = w->sagas[i].timer, pending = true;
		if (!pending)
			break;
		for (int n = 0; n < N_NODES; n++)
			if (w->next_clk[n] < next)
				next = w->next_clk[n];
		for (int p = 0; p < 2; p++)
			if (w->next_ret[p] < next)
				next = w->next_ret[p];
		w->t = next;
		for (int n = 0; n < N_NODES; n++)
			if (w->next_clk[n] == next)
				step_clock(w, n);
		for (int i = 0; i < w->nmsgs; i++)
			if (w->msgs[i].used && w->msgs[i].at == next)
				deliver(w, &w->msgs[i]);
		for (int p = 0; p < 2; p++)
			if (w->next_ret[p] == next) {
				part_retention(w, p);
				w->next_ret[p] = next
				    + (next < w->busy_until ? between(w, 1, 6)
				                            : between(w, 50, 2000));
			}
		for (int i = 0; i < w->nsagas; i++) {
			saga *s = &w->sagas[i];
			if (!saga_active(s) || s->timer != next)
				continue;
			if (orch_down(w, next)) {
				/* resumed by the sweep when it is back: the try is lost */
				int64_t up = next;
				while (orch_down(w, up))
					up++;
				s->in_flight = false;
				s->timer = up;
				continue;
			}
			if (s->created == 0 && s->id != i) {
				/* StartSaga of a reused id: deduplicated while the
				 * orchestrator keeps a saga with that id (one not
				 * terminal is never deleted, rule R4) */
				for (int k = 0; k < i; k++)
					if (w->sagas[k].id == s->id && !w->sagas[k].never
					    && (w->sagas[k].created == 0
					        || saga_active(&w->sagas[k])
					        || w->sagas[k].parked)) {
						s->never = true;
						break;
					}
				if (s->never) {
					TRACE(w,
					    "saga %d: StartSaga of saga %d's id deduplicated\n", i,
					    s->id);
					continue;
				}
				w->reuses++;
			}
			if (s->created == 0) {
				/* StartSaga: its start, then the first try */
				s->created = reading(w, N_ORCH);
				s->deadline_o = s->created + w->step_timeout;
				s->timer = 0;
				try_send(w, i);
				continue;
			}
			orch_timer(w, i);
		}
	}
	/* (b) at the end */
	for (int i = 0; i < w->nsagas; i++) {
		const saga *s = &w->sagas[i];
		int net_stock = s->applied[N_STOCK] - s->undone[N_STOCK];
		int net_pay = s->applied[N_PAY] - s->undone[N_PAY];
		char buf[160];
		snprintf(buf, sizeof buf, "%s%s with %d reservation(s) and %d charge(s) in effect",
		    st_names[s->state], s->parked ? " (parked, flagged)" : "", net_stock, net_pay);
		if (s->parked || s->never)
			continue;
		if (s->state == S_CANCELLED && (net_stock != 0 || net_pay != 0))
			violation(
			    w, 1, i, net_pay ? N_PAY : N_STOCK, "%s: a compensation lost", buf);
		else if (s->state == S_COMPLETED && (net_stock != 1 || net_pay != 1))
			violation(w, 1, i, net_pay != 1 ? N_PAY : N_STOCK, "%s", buf);
		else if (s->state != S_CANCELLED && s->state != S_COMPLETED)
			violation(w, 1, i, N_STOCK, "%s: neither ended nor parked", buf);
	}
	return !w->bad;
}

int main(int argc, char **argv)
{
	unsigned long long a = 1, b = 2000;
	bool expect_violation = false;
	long long cb;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--seeds") && i + 1 < argc
		    && sscanf(argv[++i], "%llu..%llu", &a, &b) == 2 && a <= b)
			continue;
		if (!strcmp(argv[i], "--break") && i + 1 < argc) {
			i++;
			for (int k = 1; k < (int)(sizeof break_names / sizeof break_names[0]); k++)
				if (!strcmp(argv[i], break_names[k]))
					brk = k;
			if (brk != BRK_NONE)
				continue;
		} else if (!strcmp(argv[i], "--clock-bound") && i + 1 < argc
		    && sscanf(argv[++i], "%lld", &cb) == 1 && cb >= 0 && cb <= SKEW) {
			clock_bound = cb;
			continue;
		} else if (!strcmp(argv[i], "--trace")) {
			trace = true;
			continue;
		} else if (!strcmp(argv[i], "--expect-violation")) {
			expect_violation = true;
			continue;
		}
		fprintf(stderr,
		    "usage: sim_retention [--seeds A..B] "
		    "[--break no_skew|no_refusal|send_past_horizon|cancel_on_refusal|id_only|"
		    "cancel_on_reuse] "
		    "[--expect-violation] "
		    "[--clock-bound B] [--trace]\n");
		return strcmp(argv[i], "--help") == 0 ? 0 : 2;
	}
	const char *bad_policy = horizon_policy_check(&policy);
	if (bad_policy != NULL) {
		fprintf(stderr, "sim_retention: %s\n", bad_policy);
		return 2;
	}
	world *w = malloc(sizeof *w);
	if (w == NULL)
		return 2;
	unsigned long long bad = 0, by[4] = {0}, sagas = 0, parked = 0, completed = 0,
	                   cancelled = 0, deletions = 0, refusals = 0, late = 0, rparks = 0,
	                   reuses = 0, reused = 0, reuse_refusals = 0;
	for (unsigned long long s = a; s <= b; s++) {
		if (!run(w, s))
			bad++;
		/* the first violation of each check in the run */
		for (int c = 0; c < 4; c++)
			if (w->check_hit[c] && by[c]++ == 0)
				printf("seed %llu: %s\n", s, w->what[c]);
		for (int i = 0; i < w->nsagas; i++) {
			sagas++;
			parked += w->sagas[i].parked;
			completed += !w->sagas[i].parked && w->sagas[i].state == S_COMPLETED;
			cancelled += !w->sagas[i].parked && w->sagas[i].state == S_CANCELLED;
		}
		deletions += (unsigned long long)w->deletions;
		refusals += (unsigned long long)w->horizon_refusals;
		rparks += (unsigned long long)w->refused_parks;
		reuses += (unsigned long long)w->reuses;
		reuse_refusals += (unsigned long long)w->reuse_refusals;
		for (int i = 0; i < w->nsagas; i++)
			reused += w->sagas[i].reused;
		late += (unsigned long long)w->late_copies;
	}
	free(w);
	printf("sim_retention%s%s%s: %llu seeds, %llu with a violation (a: %llu, b: %llu, c: "
	       "%llu); %llu sagas (%llu completed, %llu cancelled, %llu parked, %llu of them by a "
	       "refusal), %llu records deleted, %llu copies delivered past retention, %llu "
	       "refused past_horizon; %llu sagas reused an id, %llu commands refused "
	       "saga_id_reused, %llu sagas parked by it\n",
	    brk ? " (" : "", break_names[brk], brk ? ")" : "", b - a + 1, bad, by[0], by[1], by[2],
	    sagas, completed, cancelled, parked, rparks, deletions, late, refusals, reuses,
	    reuse_refusals, reused);
	return expect_violation ? (bad > 0 ? 0 : 1) : (bad == 0 ? 0 : 1);
}
