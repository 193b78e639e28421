/* sim_flow: the generic model of a saga definition (docs/saga-definitions.md,
 * section 3, "What the model checks"; docs/testing.md, "The generic
 * model"). It runs the production saga_flow_transition over the flow of one
 * type of a definition file (saga_def_load, saga_def_flow) for several
 * sagas at once, against:
 *   - an orchestrator: it writes a decision, then sends its commands (rule
 *     1), and may crash between the two or at any time, losing what it held
 *     in memory; on restart it re-sends what every unfinished saga's row
 *     says is due. A try without a reply within the request timeout is a
 *     transient failure; retries wait for the decision's next attempt; a
 *     sweep delivers SAGA_EV_DEADLINE when a step's deadline has passed. The
 *     policy is the daemons' defaults (--step-timeout 5000 ...);
 *   - a participant per step, modelled from its kind: a record per (saga,
 *     step) that applies the command once and answers copies from it (rule
 *     2), a tombstone when the compensation comes first, which refuses the
 *     late command (rule 5); compensable steps and the pivot refuse
 *     definitively at random (as out_of_stock, payment_declined), retriable
 *     steps refuse a few times and then succeed, compensations succeed (or
 *     fail transiently while faults last);
 *   - a network that drops, duplicates, delays and reorders commands and
 *     replies (a lost reply is an unknown outcome).
 * Faults last FAULT_MS of simulated time; then ("calm") the run goes on
 * until every saga is terminal (bounded), and each saga is checked:
 *   1. completed: every step's effect applied once, no compensation;
 *   2. cancelled: every compensable step and the pivot has no effect, or its
 *      effect and its compensation once each; no step after the pivot acted;
 *   3. once the pivot succeeded, no compensation is sent (checked at send
 *      time) and the saga does not end cancelled (a retriable step is never
 *      given up);
 *   4. groups: every member of a group that acted is compensated in a
 *      cancelled saga;
 *   5. versions (schema 9, orch_defs.h): the orchestrator restarts, now and
 *      then, with another version of the definition (a new file); every
 *      command and compensation of a saga carries the arguments of the
 *      version it started with (the row's def_id picks the plan), so no
 *      participant sees a saga's arguments change (a real one refuses
 *      that: key_mismatch). Checked at the participant: the first version
 *      it records for (saga, step) is the one every later copy must carry.
 * `--break NAME` wraps the decision with a broken rule (the production code
 * is untouched): pivot_compensated (a refusal or deadline of the step after
 * the pivot compensates from the pivot), group_member_forgotten (a group
 * member's refusal skips its siblings' compensations), retriable_given_up (a
 * retriable step's refusal cancels the saga at once), current_version (a
 * send builds its request from the orchestrator's current version, not the
 * saga's), policy_deadline (a step entered gets the policy's deadline, not
 * its own deadline_ms), cancel_after_pivot (an operator's cancel refused
 * past_pivot is taken anyway: the saga compensates from the pivot; rule
 * 11). Operators cancel sagas at random (rule 11), in any state: checks 2
 * and 3 hold for a cancelled saga as for any other. Check 6 (a step's own timing): a step is
 * compensated for its deadline no sooner than its own deadline_ms, or the policy's, after it was
 * entered. Usage: sim_flow --definitions FILE --type T [--seeds A..B] [--break NAME]
 * [--expect-violation] [--trace]. Every 50th seed is run twice and must end
 * the same (a seed is the whole run). Exit 0 when the expectation holds (no
 * violation, or with --expect-violation at least one), 1 when not, 2 on a
 * usage or definition error. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "saga_def.h"
#include "saga_flow.h"
#include "saga_model.h"
#include "status.h"

#define NSAGAS    4
#define MAXMSG    512
#define TICK_MS   10
#define SWEEP_MS  100
#define FAULT_MS  20000
#define LIMIT_MS  (FAULT_MS + 600000)
#define TRACE_MAX 64
#define TRACE_LEN 120

/* the daemons' defaults, as the fixed point takes them */
#define policy saga_model_policy

enum brk {
	BRK_NONE,
	BRK_PIVOT_COMPENSATED,
	BRK_GROUP_MEMBER_FORGOTTEN,
	BRK_RETRIABLE_GIVEN_UP,
	BRK_CURRENT_VERSION,
	BRK_POLICY_DEADLINE,
	BRK_CANCEL_AFTER_PIVOT,
	BRK_LAST = BRK_CANCEL_AFTER_PIVOT
};
static const char *const brk_names[] = {"none", "pivot_compensated", "group_member_forgotten",
    "retriable_given_up", "current_version", "policy_deadline", "cancel_after_pivot"};

/* A command (to a participant) or a reply (to the orchestrator). */
typedef struct msg {
	int64_t at; /* delivered at */
	bool reply;
	int saga;
	saga_flow_cmd cmd;
	saga_event_kind kind; /* a reply's */
	const char *reason;
	int32_t version; /* a command's: the definition version its request was built from */
} msg;

/* A participant's record of (saga, step). */
typedef struct rec {
	bool applied, refused, tomb, compensated;
	int effects, comps; /* how many times each was applied */
	int refusals_left;  /* a retriable step's refusals before it succeeds */
	int32_t version;    /* the version of the first command or compensation
	                       recorded (its arguments); 0: none yet */
} rec;

typedef struct world {
	uint64_t rng;
	const saga_flow *flow;
	int32_t pivot; /* the pivot's index, or -1 */
	int64_t now;
	/* faults of this seed, in per mille */
	uint32_t p_drop, p_dup, p_delay, p_crash, p_refuse, p_transient, p_redeploy;
	uint32_t p_cancel;      /* an operator's cancel of each unfinished saga, per
	                           mille per sweep (rule 11) */
	int32_t version;        /* the definition version the orchestrator runs
	                           now (1, 2, ...: a restart may bring a new one) */
	int32_t def_id[NSAGAS]; /* the version each saga started with (its row's) */
	/* the orchestrator */
	bool started[NSAGAS];
	int64_t start_at[NSAGAS];
	saga_flow_row row[NSAGAS]; /* the database's rows */
	int64_t waiting[NSAGAS];   /* a try's reply awaited until; 0 none */
	bool pivot_ok[NSAGAS];     /* the saga passed its pivot */
	int64_t entered[NSAGAS];   /* when it entered its position (check 6) */
	int64_t down_until;        /* crashed until */
	int64_t next_sweep;
	/* the participants and the network */
	rec recs[NSAGAS][SAGA_FLOW_MAX_STEPS];
	msg net[MAXMSG];
	int nmsg;
	/* the checks */
	char bad[NSAGAS][TRACE_LEN];
	char trace[NSAGAS][TRACE_MAX][TRACE_LEN];
	int ntrace[NSAGAS];
	/* what happened, for the figures */
	unsigned long long crashes, deadlines, tombstones, late_refused;
	unsigned long long cancels, cancels_refused;
} world;

static enum brk brk;
static bool trace_all;

static uint64_t rnd64(world *w)
{
	w->rng ^= w->rng << 13, w->rng ^= w->rng >> 7, w->rng ^= w->rng << 17;
	return w->rng;
}

static uint32_t rnd(world *w, uint32_t n)
{
	return (uint32_t)(rnd64(w) % n);
}

static bool calm(const world *w)
{
	return w->now >= FAULT_MS;
}

/* a fault drawn at `per_mille`, none once calm */
static bool fault(world *w, uint32_t per_mille)
{
	return !calm(w) && rnd(w, 1000) < per_mille;
}

static void tr(world *w, int s, const char *fmt, ...)
{
	char line[TRACE_LEN];
	int n = snprintf(line, sizeof line, "%7" PRId64 " s%d ", w->now, s);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
	va_end(ap);
	if (trace_all)
		printf("  %s\n", line);
	memcpy(w->trace[s][w->ntrace[s] % TRACE_MAX], line, sizeof line);
	w->ntrace[s]++;
}

static void violation(world *w, int s, const char *what)
{
	if (w->bad[s][0] == '\0')
		snprintf(w->bad[s], sizeof w->bad[s], "%s", what);
	tr(w, s, "VIOLATION: %s", what);
}

static const char *step_name(const world *w, const saga_flow_cmd *c)
{
	return w->flow->steps[c->step + (c->member < 0 ? 0 : c->member)].name;
}

static bool terminal(const world *w, int s)
{
	return w->started[s] && saga_flow_is_terminal(w->flow, &w->row[s].pos);
}

/* ---- the network ---- */

static void post(world *w, const msg *m)
{
	if (fault(w, w->p_drop))
		return;
	int copies = fault(w, w->p_dup) ? 2 : 1;
	for (int i = 0; i < copies && w->nmsg < MAXMSG; i++) {
		msg c = *m;
		c.at = w->now + 1 + rnd(w, 40);
		if (fault(w, w->p_delay))
			c.at += rnd(w, 4000); /* past a try's timeout, sometimes */
		w->net[w->nmsg++] = c;
	}
}

/* ---- the orchestrator: sends ---- */

static void send_members(world *w, int s, const saga_flow_pos *pos, uint64_t members)
{
	int32_t n = saga_flow_stage_len(w->flow, pos->step);
	bool group = w->flow->steps[pos->step].group >= 0;
	for (int32_t i = 0; i < n; i++) {
		if (!(members & ((uint64_t)1 << i)))
			continue;
		/* the plan of the saga's own version (orch_defs_plan by the row's
		 * def_id); the broken variant takes the orchestrator's current one */
		msg m = {.saga = s,
		    .cmd = {.step = pos->step, .phase = pos->phase, .member = group ? i : -1},
		    .version = brk == BRK_CURRENT_VERSION ? w->version : w->def_id[s]};
		bool comp = pos->phase == SAGA_FLOW_COMPENSATING;
		tr(w, s, "send %s %s", comp ? "compensation" : "command", step_name(w, &m.cmd));
		if (comp && w->pivot_ok[s])
			violation(w, s, "a compensation sent after the pivot succeeded (rule 3)");
		post(w, &m);
	}
	w->waiting[s] = w->now + policy.request_timeout_ms;
}

static void crash(world *w)
{
	w->down_until = w->now + 1 + rnd(w, 1000);
	w->crashes++;
	if (fault(w, w->p_redeploy)) /* it comes back with another file */
		w->version++;
	for (int s = 0; s < NSAGAS; s++) {
		w->waiting[s] = 0;
		if (w->started[s] && !terminal(w, s))
			tr(w, s, "orchestrator crashed until %" PRId64, w->down_until);
	}
}

/* ---- the broken variants: wrappers around the decision ---- */

/* the first step of the stage holding step i */
static int32_t stage_first(const saga_flow *f, int32_t i)
{
	while (i > 0 && f->steps[i].group >= 0 && f->steps[i - 1].group == f->steps[i].group)
		i--;
	return i;
}

static void break_to(
    const saga_flow *f, int64_t now, saga_flow_decision *d, int32_t step, const char *name)
{
	saga_flow_pos pos = {.step = step, .phase = SAGA_FLOW_COMPENSATING, .members = 0};
	bool term = saga_flow_is_terminal(f, &pos);
	d->ignored = false;
	d->refused = NULL;
	d->state_changed = true;
	d->next.pos = pos;
	d->next.attempts = 0;
	d->next.attention = false;
	d->next.step_deadline_ms = 0;
	d->next.next_attempt_ms = term ? 0 : now;
	d->send = saga_flow_due(f, &pos);
	d->event_name = name;
}

/* broken_rule: the broken variant `brk` applied to decision *d of flow f
 * (the row, the event, the time); the random runs and the fixed point
 * (saga_model_opts.wrap) share it */
static void broken_rule(const saga_flow *f, const saga_flow_row *row, const saga_flow_event *ev,
    int64_t now, saga_flow_decision *d)
{
	int32_t st = row->pos.step, pivot = -1;
	for (int32_t i = 0; i < f->nsteps; i++)
		if (f->steps[i].kind == SAGA_FLOW_PIVOT)
			pivot = i;
	/* a cancel refused past_pivot is taken anyway: compensate from the
	 * pivot, what rule 11 (and rule 3) forbid */
	if (brk == BRK_CANCEL_AFTER_PIVOT && ev->kind == SAGA_EV_CANCEL && pivot >= 0
	    && d->refused != NULL && !strcmp(d->refused, REASON_PAST_PIVOT)
	    && row->pos.phase == SAGA_FLOW_FORWARD && st >= 0 && st < f->nsteps)
		break_to(f, now, d, pivot, "broken:cancel_after_pivot");
	if (brk == BRK_NONE || d->ignored || row->pos.phase != SAGA_FLOW_FORWARD)
		return;
	bool refused = ev->kind == SAGA_EV_REFUSED;
	if (brk == BRK_POLICY_DEADLINE && d->state_changed && d->next.step_deadline_ms > 0)
		d->next.step_deadline_ms = now + policy.step_timeout_ms; /* the option's */
	bool after_pivot = st > 0 && f->steps[st].kind == SAGA_FLOW_RETRIABLE && st - 1 == pivot;
	if (brk == BRK_PIVOT_COMPENSATED && after_pivot
	    && (refused || ev->kind == SAGA_EV_DEADLINE))
		break_to(f, now, d, pivot, "broken:pivot_compensated");
	if (brk == BRK_RETRIABLE_GIVEN_UP && refused && f->steps[st].kind == SAGA_FLOW_RETRIABLE)
		break_to(f, now, d, -1, "broken:retriable_given_up");
	if (brk == BRK_GROUP_MEMBER_FORGOTTEN && refused && f->steps[st].group >= 0
	    && d->next.pos.phase == SAGA_FLOW_COMPENSATING && d->next.pos.step == st)
		break_to(f, now, d, st > 0 ? stage_first(f, st - 1) : -1,
		    "broken:group_member_forgotten");
}

static void broken(
    world *w, const saga_flow_row *row, const saga_flow_event *ev, saga_flow_decision *d)
{
	broken_rule(w->flow, row, ev, w->now, d);
}

static void model_wrap(void *ctx, const saga_flow *f, const saga_flow_row *row,
    const saga_flow_event *ev, int64_t now_ms, saga_flow_decision *d)
{
	(void)ctx;
	broken_rule(f, row, ev, now_ms, d);
}

/* ---- the orchestrator: decisions ---- */

/* apply event `ev` to saga s: decide, write the row, then send (rule 1) */
static void apply(world *w, int s, const saga_flow_event *ev)
{
	saga_flow_decision d;
	saga_flow_transition(w->flow, &w->row[s], ev, w->now, rnd64(w), &policy, &d);
	broken(w, &w->row[s], ev, &d);
	if (ev->kind == SAGA_EV_CANCEL) {
		if (d.refused != NULL)
			w->cancels_refused++;
		else if (!d.ignored)
			w->cancels++;
	}
	if (d.ignored)
		return;
	if (!strcmp(d.event_name, "deadline")) {
		/* check 6: a step is compensated for its deadline no sooner than
		 * its own deadline_ms (or the policy's) after it was entered */
		int64_t own
		    = saga_flow_stage_policy(w->flow, &w->row[s].pos, &policy).step_timeout_ms;
		if (w->now < w->entered[s] + own) {
			char what[TRACE_LEN];
			snprintf(what, sizeof what,
			    "%s compensated for its deadline %" PRId64
			    " ms after entry, before its "
			    "%" PRId64 " ms",
			    w->flow->steps[w->row[s].pos.step].name, w->now - w->entered[s], own);
			violation(w, s, what);
		}
	}
	if (d.next.pos.step != w->row[s].pos.step || d.next.pos.phase != w->row[s].pos.phase)
		w->entered[s] = w->now;
	w->row[s] = d.next; /* the row is written first */
	if (ev->kind == SAGA_EV_DEADLINE || !strcmp(d.event_name, "deadline"))
		w->deadlines++;
	const saga_flow_pos *p = &d.next.pos;
	tr(w, s, "%s -> step %d %s members %" PRIx64 " attempts %d%s%s", d.event_name, p->step,
	    p->phase == SAGA_FLOW_FORWARD ? "forward" : "compensating", p->members, d.next.attempts,
	    d.next.reason[0] ? " reason " : "", d.next.reason);
	if (w->pivot >= 0 && p->phase == SAGA_FLOW_FORWARD && p->step > w->pivot)
		w->pivot_ok[s] = true;
	if (d.send) {
		if (fault(w, w->p_crash)) { /* between the write and the send */
			tr(w, s, "crash before the send");
			crash(w);
			return;
		}
		send_members(w, s, p, d.send);
	} else if (!d.state_changed) {
		w->waiting[s] = 0; /* a retry: next_attempt_ms says when */
	}
}

static void start(world *w, int s)
{
	w->started[s] = true;
	w->row[s] = saga_flow_start(w->flow, w->now, &policy);
	w->entered[s] = w->now;
	w->def_id[s] = w->version; /* stored with the row */
	tr(w, s, "started");
	uint64_t due = saga_flow_due(w->flow, &w->row[s].pos);
	if (due && !fault(w, w->p_crash))
		send_members(w, s, &w->row[s].pos, due);
	else if (due)
		crash(w);
}

/* timers: starts, a restart's re-sends, try timeouts, retries, the sweep */
static void orchestrator_tick(world *w)
{
	if (w->down_until > 0 && w->now < w->down_until)
		return;
	bool restarted = w->down_until > 0;
	w->down_until = 0;
	for (int s = 0; s < NSAGAS; s++) {
		if (!w->started[s]) {
			if (w->now >= w->start_at[s])
				start(w, s);
			continue;
		}
		if (terminal(w, s))
			continue;
		uint64_t due = saga_flow_due(w->flow, &w->row[s].pos);
		if (restarted && due) {
			tr(w, s, "restart: re-send");
			send_members(w, s, &w->row[s].pos, due);
		} else if (w->waiting[s] && w->now >= w->waiting[s]) {
			w->waiting[s] = 0;
			int32_t m = __builtin_ctzll(due ? due : 1);
			bool group = w->flow->steps[w->row[s].pos.step].group >= 0;
			saga_flow_event ev = {.kind = SAGA_EV_TRANSIENT,
			    .cmd = {w->row[s].pos.step, w->row[s].pos.phase, group ? m : -1}};
			tr(w, s, "no reply in time");
			apply(w, s, &ev);
		} else if (!w->waiting[s] && due && w->row[s].next_attempt_ms > 0
		    && w->now >= w->row[s].next_attempt_ms) {
			send_members(w, s, &w->row[s].pos, due);
		}
	}
	if (w->now >= w->next_sweep) {
		w->next_sweep = w->now + SWEEP_MS;
		for (int s = 0; s < NSAGAS; s++)
			if (w->started[s] && !terminal(w, s) && w->row[s].step_deadline_ms > 0
			    && w->now >= w->row[s].step_deadline_ms) {
				saga_flow_event ev = {.kind = SAGA_EV_DEADLINE};
				apply(w, s, &ev);
			}
		/* rule 11: an operator cancels, in any state */
		for (int s = 0; s < NSAGAS; s++)
			if (w->started[s] && !terminal(w, s) && fault(w, w->p_cancel)) {
				saga_flow_event ev = {.kind = SAGA_EV_CANCEL};
				tr(w, s, "an operator cancels");
				apply(w, s, &ev);
			}
	}
	if (fault(w, w->p_crash / 20))
		crash(w);
}

/* ---- the participants ---- */

static const char *refusal_reason(const world *w, const saga_flow_cmd *c)
{
	int32_t i = c->step + (c->member < 0 ? 0 : c->member);
	return w->flow->steps[i].kind == SAGA_FLOW_PIVOT ? REASON_PAYMENT_DECLINED
	                                                 : REASON_OUT_OF_STOCK;
}

/* a command or compensation reaches the participant of its step */
static void participant(world *w, const msg *m)
{
	int32_t i = m->cmd.step + (m->cmd.member < 0 ? 0 : m->cmd.member);
	rec *r = &w->recs[m->saga][i];
	msg reply = *m;
	reply.reply = true;
	reply.kind = SAGA_EV_SUCCESS;
	reply.reason = NULL;
	bool transient = fault(w, w->p_transient);
	if (!transient && r->version != 0 && m->version != r->version) {
		/* check 5: a real participant refuses it (key_mismatch) */
		char what[TRACE_LEN];
		snprintf(what, sizeof what,
		    "%s: a %s built from version %d after version %d's (the saga's arguments "
		    "changed)",
		    w->flow->steps[i].name,
		    m->cmd.phase == SAGA_FLOW_COMPENSATING ? "compensation" : "command", m->version,
		    r->version);
		violation(w, m->saga, what);
	}
	if (!transient && r->version == 0)
		r->version = m->version;
	if (transient) { /* unavailable: nothing recorded */
		reply.kind = SAGA_EV_TRANSIENT;
	} else if (m->cmd.phase == SAGA_FLOW_COMPENSATING) {
		if (r->applied && !r->compensated) {
			r->compensated = true;
			r->comps++;
			tr(w, m->saga, "%s: compensation applied", w->flow->steps[i].name);
		} else if (!r->applied && !r->refused && !r->tomb) {
			r->tomb = true; /* rule 5: the command may come later */
			w->tombstones++;
			tr(w, m->saga, "%s: tombstone", w->flow->steps[i].name);
		}
	} else if (r->tomb) {
		w->late_refused++;
		reply.kind = SAGA_EV_REFUSED;
		reply.reason = REASON_TOMBSTONE;
	} else if (r->refused) {
		reply.kind = SAGA_EV_REFUSED;
		reply.reason = refusal_reason(w, &m->cmd);
	} else if (!r->applied && w->flow->steps[i].kind == SAGA_FLOW_RETRIABLE
	    && r->refusals_left > 0) {
		r->refusals_left--; /* not recorded: a later try may succeed */
		reply.kind = SAGA_EV_REFUSED;
		reply.reason = "not_now";
	} else if (!r->applied && w->flow->steps[i].kind != SAGA_FLOW_RETRIABLE
	    && rnd(w, 1000) < w->p_refuse) {
		r->refused = true;
		reply.kind = SAGA_EV_REFUSED;
		reply.reason = refusal_reason(w, &m->cmd);
		tr(w, m->saga, "%s: refused %s", w->flow->steps[i].name, reply.reason);
	} else if (!r->applied) {
		r->applied = true;
		r->effects++;
		tr(w, m->saga, "%s: applied", w->flow->steps[i].name);
	}
	post(w, &reply);
}

/* deliver every message due now, earliest first */
static void deliver(world *w)
{
	for (;;) {
		int best = -1;
		for (int k = 0; k < w->nmsg; k++)
			if (w->net[k].at <= w->now && (best < 0 || w->net[k].at < w->net[best].at))
				best = k;
		if (best < 0)
			return;
		msg m = w->net[best];
		w->net[best] = w->net[--w->nmsg];
		if (!m.reply) {
			participant(w, &m);
		} else if (w->down_until == 0 || w->now >= w->down_until) {
			saga_flow_event ev = {.kind = m.kind, .cmd = m.cmd, .reason = m.reason};
			tr(w, m.saga, "reply %s %s%s%s", step_name(w, &m.cmd),
			    m.kind == SAGA_EV_SUCCESS         ? "ok"
			        : m.kind == SAGA_EV_TRANSIENT ? "transient"
			                                      : "refused ",
			    m.kind == SAGA_EV_REFUSED ? m.reason : "",
			    m.cmd.phase == SAGA_FLOW_COMPENSATING ? " (compensation)" : "");
			apply(w, m.saga, &ev);
		}
	}
}

/* ---- the checks ---- */

static void check_saga(world *w, int s)
{
	const saga_flow *f = w->flow;
	if (!terminal(w, s)) {
		violation(w, s, "not terminal after the calm run");
		return;
	}
	bool completed = w->row[s].pos.phase == SAGA_FLOW_FORWARD;
	char what[TRACE_LEN];
	for (int32_t i = 0; i < f->nsteps; i++) {
		const rec *r = &w->recs[s][i];
		const char *name = f->steps[i].name;
		if (completed && (r->effects != 1 || r->comps != 0)) {
			snprintf(what, sizeof what, "completed: %s applied %d, compensated %d",
			    name, r->effects, r->comps);
			violation(w, s, what);
		}
		if (completed)
			continue;
		if (w->pivot >= 0 && i > w->pivot && r->effects != 0) {
			snprintf(what, sizeof what, "cancelled: %s after the pivot applied", name);
			violation(w, s, what);
		}
		if (f->steps[i].kind != SAGA_FLOW_RETRIABLE && r->effects != r->comps) {
			snprintf(what, sizeof what, "cancelled: %s%s applied %d, compensated %d",
			    name, f->steps[i].group >= 0 ? " (a group member)" : "", r->effects,
			    r->comps);
			violation(w, s, what);
		}
		if (r->effects > 1 || r->comps > 1) {
			snprintf(what, sizeof what, "cancelled: %s applied %d, compensated %d",
			    name, r->effects, r->comps);
			violation(w, s, what);
		}
	}
	if (!completed && w->pivot_ok[s])
		violation(w, s, "cancelled after the pivot succeeded (rule 3)");
}

/* ---- a run ---- */

typedef struct totals {
	unsigned long long seeds, sagas, completed, cancelled, bad_seeds, bad_sagas;
	unsigned long long crashes, deadlines, tombstones, late_refused;
	unsigned long long cancels, cancels_refused;
	int64_t max_ms; /* the longest run, simulated ms */
} totals;

static void print_bad(const world *w, int s, unsigned long long seed)
{
	printf("seed %llu: saga %d: %s\n", seed, s, w->bad[s]);
	int n = w->ntrace[s], from = n > TRACE_MAX ? n - TRACE_MAX : 0;
	for (int k = from; k < n; k++)
		printf("  %s\n", w->trace[s][k % TRACE_MAX]);
}

/* one seed; returns whether a saga violated a check */
static bool run_seed(world *w, const saga_flow *flow, unsigned long long seed, totals *t, bool show)
{
	memset(w, 0, sizeof *w);
	w->rng = seed * 0x9E3779B97F4A7C15ULL + 1;
	w->flow = flow;
	w->pivot = -1;
	for (int32_t i = 0; i < flow->nsteps; i++)
		if (flow->steps[i].kind == SAGA_FLOW_PIVOT)
			w->pivot = i;
	w->p_drop = rnd(w, 200);
	w->p_dup = rnd(w, 200);
	w->p_delay = rnd(w, 100);
	w->p_crash = rnd(w, 100);
	w->p_refuse = 50 + rnd(w, 300);
	w->p_transient = rnd(w, 150);
	w->p_redeploy = rnd(w, 500);
	w->p_cancel = rnd(w, 60);
	w->version = 1;
	for (int s = 0; s < NSAGAS; s++) {
		w->start_at[s] = rnd(w, 3000);
		for (int32_t i = 0; i < flow->nsteps; i++)
			w->recs[s][i].refusals_left = (int)rnd(w, 4);
	}
	if (trace_all)
		printf("seed %llu\n", seed);
	for (;;) {
		bool done = calm(w);
		for (int s = 0; s < NSAGAS && done; s++)
			done = terminal(w, s);
		if (done || w->now > LIMIT_MS)
			break;
		deliver(w);
		orchestrator_tick(w);
		w->now += TICK_MS;
	}
	bool bad = false;
	t->seeds++;
	t->crashes += w->crashes;
	t->deadlines += w->deadlines;
	t->tombstones += w->tombstones;
	t->late_refused += w->late_refused;
	t->cancels += w->cancels;
	t->cancels_refused += w->cancels_refused;
	if (w->now > t->max_ms)
		t->max_ms = w->now;
	for (int s = 0; s < NSAGAS; s++) {
		check_saga(w, s);
		t->sagas++;
		if (terminal(w, s) && w->row[s].pos.phase == SAGA_FLOW_FORWARD)
			t->completed++;
		else if (terminal(w, s))
			t->cancelled++;
		if (w->bad[s][0] != '\0') {
			t->bad_sagas++;
			if (!bad && show)
				print_bad(w, s, seed);
			bad = true;
		}
	}
	t->bad_seeds += bad;
	return bad;
}

/* the two runs of one seed ended the same: time, rows, records, figures */
static bool same_run(const world *a, const world *b)
{
	if (a->now != b->now || a->crashes != b->crashes || a->deadlines != b->deadlines
	    || a->tombstones != b->tombstones || a->late_refused != b->late_refused
	    || a->cancels != b->cancels || a->cancels_refused != b->cancels_refused
	    || memcmp(a->recs, b->recs, sizeof a->recs) != 0)
		return false;
	for (int s = 0; s < NSAGAS; s++) {
		const saga_flow_row *x = &a->row[s], *y = &b->row[s];
		if (x->pos.step != y->pos.step || x->pos.phase != y->pos.phase
		    || x->pos.members != y->pos.members || x->attempts != y->attempts
		    || strcmp(x->reason, y->reason) != 0 || strcmp(a->bad[s], b->bad[s]) != 0)
			return false;
	}
	return true;
}

/* fixed_point: saga_model_check over the flow, the broken variant as its
 * wrap; prints the figures and, on a violation, its shortest path. Returns
 * the exit code. */
static int fixed_point(
    const char *type, const saga_flow *flow, size_t max_states, bool expect_violation)
{
	if (brk == BRK_CURRENT_VERSION || brk == BRK_POLICY_DEADLINE) {
		fprintf(stderr,
		    "sim_flow: --fixed-point models neither versions nor time: "
		    "--break %s is for the random runs\n",
		    brk_names[brk]);
		return 2;
	}
	saga_model_opts o = {.max_states = max_states, .wrap = brk ? model_wrap : NULL};
	saga_model_result r;
	int rc = saga_model_check(flow, &o, &r);
	if (rc != 0 && !r.violation) {
		fprintf(stderr, "sim_flow: fixed point: %s\n", strerror(-rc));
		saga_model_result_free(&r);
		return 2;
	}
	printf("sim_flow %s%s%s: fixed point %s: %zu states, %zu transitions, depth %d; "
	       "%zu end states completed, %zu cancelled\n",
	    type, brk ? " --break " : "", brk ? brk_names[brk] : "",
	    r.violation      ? "stopped at a violation"
	        : r.complete ? "reached"
	                     : "NOT reached (--max-states)",
	    r.states, r.transitions, r.depth, r.completed, r.cancelled);
	if (r.violation) {
		printf("VIOLATION: %s\nshortest path (%zu events):\n", r.what,
		    r.npath ? r.npath - 1 : 0);
		for (size_t i = 0; i < r.npath; i++)
			printf("  %s\n", r.path[i]);
	}
	bool violation = r.violation, complete = r.complete;
	saga_model_result_free(&r);
	if (expect_violation)
		return violation ? 0 : 1;
	return !violation && complete ? 0 : 1;
}

static int usage(FILE *out, int rc)
{
	fprintf(out,
	    "usage: sim_flow --definitions FILE --type T [--seeds A..B] "
	    "[--break pivot_compensated|group_member_forgotten|retriable_given_up|current_version|"
	    "policy_deadline|cancel_after_pivot] "
	    "[--expect-violation] [--trace]\n"
	    "       sim_flow --definitions FILE --type T --fixed-point [--max-states N] "
	    "[--break pivot_compensated|group_member_forgotten|retriable_given_up|"
	    "cancel_after_pivot] "
	    "[--expect-violation]\n");
	return rc;
}

static bool parse_break(const char *name)
{
	for (int b = BRK_PIVOT_COMPENSATED; b <= BRK_LAST; b++)
		if (!strcmp(name, brk_names[b])) {
			brk = (enum brk)b;
			return true;
		}
	return false;
}

int main(int argc, char **argv)
{
	const char *file = NULL, *type = NULL;
	unsigned long long a = 1, b = 1000;
	bool expect_violation = false, fixed = false;
	size_t max_states = 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--definitions") && i + 1 < argc)
			file = argv[++i];
		else if (!strcmp(argv[i], "--type") && i + 1 < argc)
			type = argv[++i];
		else if (!strcmp(argv[i], "--seeds") && i + 1 < argc
		    && sscanf(argv[++i], "%llu..%llu", &a, &b) == 2 && a <= b)
			continue;
		else if (!strcmp(argv[i], "--break") && i + 1 < argc && parse_break(argv[i + 1]))
			i++;
		else if (!strcmp(argv[i], "--expect-violation"))
			expect_violation = true;
		else if (!strcmp(argv[i], "--fixed-point"))
			fixed = true;
		else if (!strcmp(argv[i], "--max-states") && i + 1 < argc
		    && sscanf(argv[++i], "%zu", &max_states) == 1 && max_states > 0)
			continue;
		else if (!strcmp(argv[i], "--trace"))
			trace_all = true;
		else
			return usage(strcmp(argv[i], "--help") ? stderr : stdout,
			    strcmp(argv[i], "--help") ? 2 : 0);
	}
	if (file == NULL || type == NULL)
		return usage(stderr, 2);
	saga_defs *defs = NULL;
	char err[512];
	if (saga_def_load(file, &defs, err, sizeof err) != 0) {
		fprintf(stderr, "sim_flow: %s\n", err);
		return 2;
	}
	const saga_def_type *t = NULL;
	for (size_t k = 0; k < defs->ntypes; k++)
		if (!strcmp(defs->types[k].name, type))
			t = &defs->types[k];
	static saga_flow flow;
	if (t == NULL || saga_def_flow(t, &flow) != 0) {
		fprintf(stderr, "sim_flow: %s: no saga type %s with a flow\n", file, type);
		saga_defs_free(defs);
		return 2;
	}
	if (fixed) {
		int frc = fixed_point(type, &flow, max_states, expect_violation);
		saga_defs_free(defs);
		return frc;
	}
	static world w, again;
	totals tot = {0}, scratch = {0};
	bool shown = false, replays_differ = false;
	unsigned long long replays = 0;
	for (unsigned long long seed = a; seed <= b; seed++) {
		if (run_seed(&w, &flow, seed, &tot, !shown))
			shown = true;
		if (seed % 50 == 0 && !trace_all) { /* a seed is the whole run */
			run_seed(&again, &flow, seed, &scratch, false);
			replays++;
			if (!same_run(&w, &again)) {
				printf("seed %llu: a second run differs\n", seed);
				replays_differ = true;
			}
		}
	}
	printf("sim_flow %s%s%s: %llu seeds, %llu sagas (%llu completed, %llu cancelled), "
	       "%llu seeds and %llu sagas with a violation, longest run %" PRId64 " ms\n",
	    type, brk ? " --break " : "", brk ? brk_names[brk] : "", tot.seeds, tot.sagas,
	    tot.completed, tot.cancelled, tot.bad_seeds, tot.bad_sagas, tot.max_ms);
	printf("  %llu crashes, %llu deadlines passed, %llu tombstones, %llu late commands "
	       "refused, %llu cancels taken and %llu refused; %llu seeds run twice, %s\n",
	    tot.crashes, tot.deadlines, tot.tombstones, tot.late_refused, tot.cancels,
	    tot.cancels_refused, replays, replays_differ ? "NOT identical" : "identical");
	saga_defs_free(defs);
	if (replays_differ)
		return 1;
	return expect_violation ? (tot.bad_seeds > 0 ? 0 : 1) : (tot.bad_seeds == 0 ? 0 : 1);
}
