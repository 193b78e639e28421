#include "engine.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <nng/nng.h>
#include <nng/supplemental/util/platform.h>

#include "clock.h"
#include "codec.h"
#include "dbclock.h"
#include "decide.h"
#include "fault.h"
#include "log.h"
#include "methods.h"
#include "orch_metrics.h"
#include "pg.h"
#include "rpc.h"
#include "status.h"
#include "valid.h"

/* One command in flight, then its completion, then (maybe) its successor. */
typedef struct engine_item {
	struct engine_item *next;
	struct engine *eng; /* the engine the reply goes back to */
	saga_row row;       /* the row as it was when the command was sent */
	saga_flow_cmd cmd;  /* the command sent: its stage, phase and member */
	const char *method; /* its method's name ("ReserveStock", static): the
	                       logs, the metrics and the faults' label */
	int code;           /* reply status code */
	bool transport;     /* no reply came */
	char reason[RPC_REASON_MAX];
	int64_t sent_us; /* clock_mono_us when it was handed to the link */
} engine_item;

typedef struct engine_queue {
	engine_item *head, *tail;
} engine_queue;

/* Commands gathered by one thread since its last engine_out_flush: one
 * frame per participant (rpc_batch), by its link (engine_config.links). */
typedef struct engine_out {
	rpc_batch *to[ORCH_LINKS_MAX];
} engine_out;

struct engine {
	engine_config cfg;
	PGconn *conn; /* engine thread only */
	/* a link per participant (engine_config.links) */
	rpc_client *clients[ORCH_LINKS_MAX];
	size_t nclients;
	nng_thread *thread;
	uint64_t rng;            /* engine thread only */
	uint64_t fenced;         /* engine thread only: transitions refused by rule 10 */
	int64_t claim_warned_ms; /* engine thread only: the last claim failure logged */

	nng_mtx *mtx; /* guards everything below */
	nng_cv *cv;
	engine_queue done;      /* replies waiting to be decided on */
	engine_queue submitted; /* new sagas handed over by the API */
	int inflight;
	int queued; /* new sagas submitted and not yet sent or dropped */
	bool stopping;

	/* engine thread only: new sagas waiting for room under max_inflight,
	 * oldest first (back-pressure: they wait here, not in a timed call) */
	engine_queue backlog;

	/* engine thread only: clock_mono_ms of its last dbclock_sync, 0 never */
	int64_t clock_synced_ms;

	/* engine thread only: the commands it dispatched since its last
	 * engine_out_flush */
	engine_out out;

	/* engine thread only: scratch arrays of cfg.batch entries, made once
	 * (a round of replies or a sweep used to calloc ~200 KB) */
	saga_row *rows, *dl_rows;
	struct engine_redo *redo;
	struct engine_pending *pend;
	store_update *ups;
};

/* engine_out_flush sends the commands gathered in `o`. */
static void engine_out_flush(engine *e, engine_out *o)
{
	for (size_t i = 0; i < e->nclients; i++) {
		rpc_batch_send(o->to[i]);
		o->to[i] = NULL;
	}
}

/* engine_batch_for is the open batch of `o` for participant `p` (a frame
 * each send_batch commands), opened on first use; NULL when batches are off
 * (send_batch <= 1) or out of memory (then the command goes alone). */
static rpc_batch *engine_batch_for(engine *e, engine_out *o, size_t p)
{
	if (e->cfg.send_batch <= 1)
		return NULL;
	if (o->to[p] == NULL)
		o->to[p] = rpc_batch_open(e->clients[p], e->cfg.send_batch);
	return o->to[p];
}

/* Most new sagas queued in memory for the engine (submitted, not yet sent);
 * past that they are left to the sweep, which finds them when their lease
 * ends. */
#define ENGINE_SUBMIT_MAX 100000

static void engine_push(engine_queue *q, engine_item *it)
{
	it->next = NULL;
	if (q->tail)
		q->tail->next = it;
	else
		q->head = it;
	q->tail = it;
}

static engine_item *engine_take_all(engine_queue *q)
{
	engine_item *h = q->head;
	q->head = q->tail = NULL;
	return h;
}

/* xorshift64*: jitter only needs to be cheap and spread out */
static uint64_t engine_rand(engine *e)
{
	e->rng ^= e->rng >> 12;
	e->rng ^= e->rng << 25;
	e->rng ^= e->rng >> 27;
	return e->rng * 2685821657736338717ULL;
}

int engine_inflight(engine *e)
{
	nng_mtx_lock(e->mtx);
	int n = e->inflight;
	nng_mtx_unlock(e->mtx);
	return n;
}

static void engine_on_reply(void *arg, const rpc_result *res)
{
	engine_item *it = arg;
	engine *e = it->eng;
	/* failure injection: the command went out and was answered, and the
	 * answer is lost with the process */
	fault_exit_if(FAULT_EXIT_AFTER_SEND, it->method);
	it->code = res->code;
	it->transport = res->transport;
	orch_metrics_command(it->method, res->code, res->transport,
	    it->sent_us > 0 ? clock_mono_us() - it->sent_us : -1);
	memcpy(it->reason, res->reason, sizeof it->reason);
	engine_item *copy = NULL;
	if (fault_check(FAULT_DUPLICATE_REPLY, it->method, NULL)) {
		copy = malloc(sizeof *copy);
		if (copy)
			*copy = *it;
	}
	nng_mtx_lock(e->mtx);
	engine_push(&e->done, it);
	if (copy)
		engine_push(&e->done, copy);
	e->inflight--;
	nng_mtx_unlock(e->mtx);
	/* woken after the unlock, so the engine thread does not wake only to
	 * block on the mutex still held here (one more context switch per
	 * reply). Safe: engine_stop frees the cv only after rpc_client_close,
	 * which returns once every reply callback has returned. */
	nng_cv_wake(e->cv);
}

/* engine_inflight_add adds `n` (may be negative) to the commands in flight. */
static void engine_inflight_add(engine *e, int n)
{
	if (n == 0)
		return;
	nng_mtx_lock(e->mtx);
	e->inflight += n;
	nng_mtx_unlock(e->mtx);
}

/* engine_row_pos finds the version `row` started with (read on `conn` when
 * not loaded yet: orch_defs_version) and its position in that version's
 * flow. NULL when the version cannot run here (logged by orch_defs) or the
 * row's state is not a name of it (logged here). */
static const orch_def_version *engine_row_pos(
    engine *e, PGconn *conn, const saga_row *row, saga_flow_pos *pos)
{
	const orch_def_version *v = orch_defs_version(e->cfg.defs, conn, row->def_id);
	if (v != NULL && !orch_def_pos(v, row->state, row->members, pos)) {
		log_error(row->saga_id,
		    "state %s is not a state of its definition (%s version %.12s)", row->state,
		    v->type->name, v->hex);
		return NULL;
	}
	return v;
}

/* engine_dispatch_to sends the commands of `row`'s position that are due
 * and in `mask` (members of its stage, bit 0 for a step alone; ~0: every
 * one due), gathered in `o` (sent by engine_out_flush). The row must
 * already be leased in the database (rule 1: written before sent).
 * `counted`: the caller has already counted one command in e->inflight.
 * Each command goes to its step's link, with its method and its request
 * built by the plan of the definition the saga started with (its
 * version's: orch_def_plan). A version not loaded here yet is read on the
 * engine's connection; only the engine thread has one, and a first
 * command sent from an API thread is always of the current version. None
 * sent (logged): the sweep tries again when the lease ends. */
static void engine_dispatch_to(
    engine *e, const saga_row *row, engine_out *o, bool counted, uint64_t mask)
{
	saga_flow_pos pos;
	const orch_def_version *v = engine_row_pos(e, o == &e->out ? e->conn : NULL, row, &pos);
	uint64_t due = v != NULL ? saga_flow_due(&v->flow, &pos) & mask : 0;
	engine_inflight_add(e, __builtin_popcountll(due) - (counted ? 1 : 0));
	if (due == 0)
		return;
	/* each try waits longer, never past the step deadline (rule T4) */
	int64_t timeout = saga_try_timeout_ms(&row->s, dbclock_now_ms(), &e->cfg.policy);
	bool group = v->flow.steps[pos.step].group >= 0;
	for (int32_t m = 0; m < SAGA_FLOW_MAX_STEPS && due != 0; m++) {
		if (!(due & ((uint64_t)1 << m)))
			continue;
		due &= ~((uint64_t)1 << m);
		int link = 0;
		const saga_def_cmd *plan = orch_def_plan(v, pos.step + m, pos.phase, &link);
		engine_item *it = plan == NULL ? NULL : calloc(1, sizeof *it);
		if (it == NULL) {
			log_error(row->saga_id, "could not send step %d's %s: %s",
			    (int)(pos.step + m),
			    pos.phase == SAGA_FLOW_FORWARD ? "command" : "compensation",
			    plan == NULL ? "no plan" : "out of memory");
			engine_inflight_add(e, -1);
			continue; /* the sweep sends it when the lease ends */
		}
		it->row = *row;
		it->cmd = (saga_flow_cmd) {
		    .step = pos.step, .phase = pos.phase, .member = group ? m : -1};
		it->method = method_table[plan->method].name;
		it->eng = e;
		log_debug(row->saga_id, "sending %s (attempt %d)", it->method, row->s.attempts + 1);
		rpc_batch *batch = engine_batch_for(e, o, (size_t)link);
		it->sent_us = clock_mono_us();
		int rc = codec_send_command(
		    e->clients[link], batch, plan, row, timeout, engine_on_reply, it);
		if (rc != 0) {
			log_warn(row->saga_id, "could not send %s: error %d", it->method, rc);
			engine_inflight_add(e, -1);
			free(it);
		}
	}
}

/* engine_dispatch: engine_dispatch_to on the engine thread's own batches,
 * of the members in `mask`. */
static void engine_dispatch(engine *e, const saga_row *row, uint64_t mask)
{
	engine_dispatch_to(e, row, &e->out, false, mask);
}

/* engine_reconnect makes sure the engine's connection is usable. */
static bool engine_db_ok(engine *e)
{
	return pg_ensure(&e->conn, e->cfg.db, e->cfg.db_wait_ms);
}

/* A decision waiting to be written, with the row it produces. */
typedef struct engine_pending {
	store_update up;
	saga_row after;
	uint64_t send;      /* the members of after's stage whose command is due now */
	bool held;          /* no room to send: written due now, sent by a later sweep */
	bool retry;         /* a failed try, to be tried again (sagas_step_retries_total) */
	int32_t tries;      /* the step ended after this many tries (0: not by a reply) */
	const char *was;    /* the method of the stage decided on (metrics, logs) */
	const char *step;   /* that stage's step name, by its definition (metrics) */
	const char *now;    /* the method of the stage after it */
	saga_policy stage;  /* the timing of the stage after it (its attention
	                       line's backoff cap) */
	saga_flow_event ev; /* the event decided on, its reason in ev_reason */
	char ev_reason[RPC_REASON_MAX];
	char why[RPC_REASON_MAX + 32];
	bool lost; /* out of engine_commit: not written, the row changed since it
	              was read (and not fenced): engine_redecide */
} engine_pending;

/* One lost decision to take again on the row as it is now
 * (engine_redecide). */
typedef struct engine_redo {
	char saga_id[VALID_UUID_LEN + 1];
	int64_t epoch;
	saga_flow_event ev;
	char reason[RPC_REASON_MAX];
	char why[RPC_REASON_MAX + 32];
} engine_redo;

/* How many times a reply's decision is taken again after losing the race
 * for its row (a group's members answering together; a duplicated reply):
 * each round reads the rows again. */
#define ENGINE_REDECIDE_ROUNDS 3

/* engine_decide runs the state machine on one event and, unless the event
 * is ignored, appends the write it needs to `pend`. The transition is the
 * generic one over the flow of the definition the saga started with, its
 * steps' own deadlines and retries (docs/saga-definitions.md, section 2);
 * a version that cannot run here (logged by orch_defs) decides nothing:
 * the saga waits, leased as it is, for an orchestratord that runs it. A
 * command it makes due is leased and sent after the commit; with
 * `can_send` false (no room under --max-inflight) it is written due when
 * the state machine says, and held for a later sweep. */
static void engine_decide(engine *e, const saga_row *row, const saga_flow_event *ev, int64_t now,
    const char *why, bool can_send, engine_pending *pend, size_t *npend)
{
	saga_flow_pos pos;
	const orch_def_version *v = engine_row_pos(e, e->conn, row, &pos);
	if (v == NULL)
		return;
	saga_flow_decision d = {.ignored = false};
	saga_row after;
	if (decide_row(v, row, ev, now, engine_rand(e), &e->cfg.policy, &d, &after) != 0) {
		/* the transition returns positions of its flow */
		log_error(row->saga_id, "no state name for step %d: dropped", (int)d.next.pos.step);
		return;
	}
	if (d.ignored) {
		log_debug(row->saga_id, "event ignored in state %s", row->state);
		return;
	}
	/* the command decided on: a reply's own (a group's member), else the
	 * stage's first (its deadline) */
	bool reply = ev->kind != SAGA_EV_DEADLINE && ev->kind != SAGA_EV_PAST_HORIZON;
	saga_flow_pos at = pos;
	if (reply && ev->cmd.step >= 0 && ev->cmd.step < v->flow.nsteps) {
		at.step = ev->cmd.step + (ev->cmd.member > 0 ? ev->cmd.member : 0);
		at.phase = ev->cmd.phase;
		if (at.step >= v->flow.nsteps)
			at = pos;
	}
	const char *was = orch_def_method(v, &at);
	int32_t n = d.next.attempts;
	/* a retry: tries 1, 2, 4, 8, ...; a saga parked past the horizon is
	 * not tried again (its own WARNING, engine_commit, says so) */
	bool parked = strcmp(d.event_name, "past_horizon") == 0
	    || strcmp(d.event_name, "saga_id_reused") == 0;
	if (!d.state_changed && !parked && (n & (n - 1)) == 0)
		log_info(row->saga_id, "%s failed (%s), try %d again in %lld ms", was,
		    why ? why : "unknown", n + 1, (long long)(d.next.next_attempt_ms - now));
	engine_pending *p = &pend[(*npend)++];
	memset(p, 0, sizeof *p);
	p->after = after;
	saga_row *a = &p->after;
	p->send = d.send;
	p->held = d.send != 0 && !can_send;
	p->was = was;
	p->step = at.step >= 0 && at.step < v->flow.nsteps ? v->flow.steps[at.step].name : "none";
	p->now = orch_def_method(v, &d.next.pos);
	p->stage = saga_flow_stage_policy(&v->flow, &d.next.pos, &e->cfg.policy);
	p->retry = reply && !d.state_changed && ev->kind != SAGA_EV_SUCCESS;
	p->tries = reply && d.state_changed ? row->s.attempts + 1 : 0;
	if (d.send != 0 && can_send) /* lease the row while its commands are out,
	                                never past its deadline (rule T5) */
		a->s.next_attempt_ms = saga_lease_until_ms(&a->s, now, &e->cfg.policy);
	p->up.next = a->s;
	p->up.state = a->state;
	p->up.members = a->members;
	p->up.compensating = a->compensating;
	p->up.finished = a->finished;
	p->up.state_changed = d.state_changed;
	p->up.attention_raised = d.attention_raised;
	p->up.event = d.event_name;
	p->ev = *ev;
	if (ev->reason != NULL) {
		snprintf(p->ev_reason, sizeof p->ev_reason, "%s", ev->reason);
		p->ev.reason = p->ev_reason;
	}
	snprintf(p->why, sizeof p->why, "%s", why != NULL ? why : "");
}

/* engine_warn_attention logs that saga `p->after` (as written) needs
 * attention, with its stage's method and backoff cap (its own retry's, or
 * --backoff-cap). */
static void engine_warn_attention(engine *e, const engine_pending *p)
{
	const saga_row *a = &p->after;
	log_warn(a->saga_id,
	    "saga needs attention: %s failed %d times; retrying, each try "
	    "waiting up to %lld ms for its reply and then up to %lld ms",
	    p->now, a->s.attempts,
	    (long long)saga_try_timeout_ms(&a->s, a->updated_ms, &e->cfg.policy),
	    (long long)p->stage.backoff_cap_ms);
}

/* engine_commit writes the pending decisions in one transaction, then sends
 * the commands they made due (only after the commit: rule 1). */
static void engine_commit(engine *e, const saga_row *rows, engine_pending *pend, size_t n)
{
	if (n == 0)
		return;
	store_update *ups = e->ups; /* n <= cfg.batch */
	for (size_t i = 0; i < n; i++) {
		ups[i] = pend[i].up;
		ups[i].before = &rows[i];
	}
	int rc
	    = engine_db_ok(e) ? store_apply(e->conn, ups, n, e->cfg.instance) : PG_ERR_CONNECTION;
	if (rc != 0) {
		/* nothing written: the leases end and the sweep retries, and the
		 * participants answer the re-sent commands from their records */
		log_warn(NULL, "could not write %zu saga transitions: %s", n, pg_err_name(rc));
		return;
	}
	/* failure injection: the transitions are committed, nothing is sent */
	fault_exit_if(FAULT_EXIT_AFTER_COMMIT, NULL);
	log_hold(); /* the batch's lines in one write */
	for (size_t i = 0; i < n; i++) {
		const saga_row *b = &rows[i];
		if (ups[i].fenced) {
			/* rule 10: the saga was claimed since this decision's row was
			 * read (this process was frozen or cut off past its lease);
			 * the holder of the new claim drives it */
			e->fenced++;
			log_info(b->saga_id,
			    "transition refused: fenced (the saga was claimed again since epoch "
			    "%lld; its new holder drives it): dropped (%llu fenced so far)",
			    (long long)b->epoch, (unsigned long long)e->fenced);
			continue;
		}
		if (!ups[i].applied) {
			log_debug(b->saga_id, "lost a race at version %lld", (long long)b->version);
			pend[i].lost = true;
			continue;
		}
		const saga_row *ar = &pend[i].after;
		const saga *a = &ar->s;
		const char *was = pend[i].was;
		if (pend[i].retry && !b->finished)
			orch_metrics_retry(was);
		if (pend[i].tries > 0 && !b->finished)
			orch_metrics_step_done(b->type, pend[i].step, was, pend[i].tries);
		if (ups[i].state_changed)
			log_info(b->saga_id, "%s -> %s (%s%s%s)", b->state, ar->state, ups[i].event,
			    a->reason[0] ? ", " : "", a->reason);
		if (strcmp(ups[i].event, "past_horizon") == 0)
			log_warn(b->saga_id,
			    "saga needs attention: past the retention horizon (it started before "
			    "it, or a participant's database clock is off by more than "
			    "--max-clock-skew): no participant takes its commands; left in %s, "
			    "never sent again; settle it by hand, or retry it once the clocks "
			    "agree (docs/operations.md, \"Retention\")",
			    ar->state);
		else if (strcmp(ups[i].event, "saga_id_reused") == 0)
			log_warn(b->saga_id,
			    "saga needs attention: %s refused saga_id_reused (the participant "
			    "still "
			    "keeps the record of an earlier saga with this id, deleted here by "
			    "retention): nothing applied; left in %s, never sent again; retry it "
			    "once the participant's retention forgot the earlier saga "
			    "(docs/operations.md, \"Retention\")",
			    was, ar->state);
		else if (ups[i].attention_raised)
			engine_warn_attention(e, &pend[i]);
		if (pend[i].send != 0 && !pend[i].held)
			engine_dispatch(e, &pend[i].after, pend[i].send);
		if (ups[i].updated_ms > 0)
			pend[i].after.updated_ms = ups[i].updated_ms;
		if (ups[i].state_changed && ar->finished)
			orch_metrics_finished(ar->type, ar->state, a->reason,
			    pend[i].after.updated_ms - b->created_ms);
		/* its waits end when it ends, or parks (never due again) */
		if (saga_wait_over(a) && e->cfg.on_finished)
			e->cfg.on_finished(e->cfg.on_finished_arg, &pend[i].after);
	}
	log_release();
	engine_out_flush(e, &e->out);
}

/* engine_redecide takes the replies' decisions among pend[0..n) that lost
 * the race for their row (engine_commit's `lost`: the row changed since the
 * reply's command was sent, as when a group's members answer together)
 * again, on the rows as they are now, read in one statement, at most
 * ENGINE_REDECIDE_ROUNDS times (rule 7: every decision is of the row as
 * written; one whose claim moved on, another epoch, is left to its
 * holder). Deadlines and horizons are not taken again: the sweep finds
 * them. Uses `rows` and `pend` (cfg.batch entries) as scratch. */
static void engine_redecide(engine *e, saga_row *rows, engine_pending *pend, size_t n)
{
	engine_redo *redo = e->redo;
	for (int round = 0; round < ENGINE_REDECIDE_ROUNDS; round++) {
		size_t m = 0;
		for (size_t i = 0; i < n; i++) {
			if (!pend[i].lost || pend[i].ev.kind == SAGA_EV_DEADLINE
			    || pend[i].ev.kind == SAGA_EV_PAST_HORIZON)
				continue;
			engine_redo *r = &redo[m++];
			memcpy(r->saga_id, rows[i].saga_id, sizeof r->saga_id);
			r->epoch = rows[i].epoch;
			r->ev = pend[i].ev;
			snprintf(r->reason, sizeof r->reason, "%s", pend[i].ev_reason);
			r->ev.reason = pend[i].ev.reason != NULL ? r->reason : NULL;
			snprintf(r->why, sizeof r->why, "%s", pend[i].why);
		}
		if (m == 0 || !engine_db_ok(e))
			return;
		const char *ids[m];
		bool found[m];
		for (size_t k = 0; k < m; k++)
			ids[k] = redo[k].saga_id;
		saga_row *fresh = e->dl_rows;
		if (store_get_sagas(e->conn, ids, m, fresh, found) != 0)
			return;                   /* the leases end and the sweep re-sends */
		int64_t now = dbclock_floor_ms(); /* rule T2: never before a deadline */
		n = 0;
		for (size_t k = 0; k < m; k++) {
			if (!found[k] || fresh[k].epoch != redo[k].epoch)
				continue; /* claimed since: its holder drives it */
			size_t before = n;
			engine_decide(e, &fresh[k], &redo[k].ev, now, redo[k].why, true, pend, &n);
			if (n > before)
				rows[before] = fresh[k];
		}
		engine_commit(e, rows, pend, n);
	}
}

/* engine_process_replies decides on a list of replies, `batch` at a time. */
static void engine_process_replies(engine *e, engine_item *list)
{
	size_t cap = (size_t)e->cfg.batch;
	saga_row *rows = e->rows;
	engine_pending *pend = e->pend;
	while (list != NULL) {
		size_t n = 0;
		int64_t now = dbclock_floor_ms(); /* rule T2: never before a deadline */
		while (list != NULL && n < cap) {
			engine_item *it = list;
			list = it->next;
			/* rule 3's classification of the answer */
			saga_event cls = saga_event_from_reply(
			    SAGA_CMD_NONE, it->code, it->reason, it->transport);
			saga_flow_event ev
			    = {.kind = cls.kind, .cmd = it->cmd, .reason = cls.reason};
			if (ev.kind != SAGA_EV_SUCCESS)
				log_debug(it->row.saga_id, "%s answered %s (%s)", it->method,
				    rpc_code_name(it->code), it->reason);
			size_t before = n;
			char why[RPC_REASON_MAX + 32];
			snprintf(why, sizeof why, "%s%s%s", rpc_code_name(it->code),
			    it->reason[0] ? " " : "", it->reason);
			engine_decide(e, &it->row, &ev, now, why, true, pend, &n);
			if (n > before)
				rows[before] = it->row;
			free(it);
		}
		engine_commit(e, rows, pend, n);
		engine_redecide(e, rows, pend, n);
	}
}

/* How often an engine measures the database's clock again (dbclock.h), ms. */
#define ENGINE_CLOCK_SYNC_MS 1000

/* engine_sync_clock measures the database's clock at most once every
 * ENGINE_CLOCK_SYNC_MS, on the engine's connection (a failure keeps the
 * offset in use: the next sweep tries again). */
static void engine_sync_clock(engine *e)
{
	int64_t mono = clock_mono_ms();
	if (e->clock_synced_ms != 0 && mono - e->clock_synced_ms < ENGINE_CLOCK_SYNC_MS)
		return;
	if (dbclock_sync(e->conn) == 0)
		e->clock_synced_ms = mono;
}

/* engine_sweep claims due sagas: deadlines become events, the rest are
 * (re)sent. Returns true when it may have left due work behind. */
static bool engine_sweep(engine *e)
{
	nng_mtx_lock(e->mtx);
	int room = e->cfg.max_inflight - e->inflight;
	nng_mtx_unlock(e->mtx);
	/* With no room to send (every slot may be held by a hung participant
	 * until --request-timeout), passed step deadlines are still claimed
	 * and their transitions written (rule 4), the compensations they make
	 * due left due for a later sweep: deadlines are not held back behind
	 * the slots. */
	bool full = room <= 0;
	int limit = e->cfg.batch;
	if (!full && room < limit)
		limit = room;
	if (!engine_db_ok(e))
		return false;
	saga_row *rows = e->rows, *dl_rows = e->dl_rows; /* limit <= cfg.batch */
	engine_pending *pend = e->pend;
	size_t n = 0, npend = 0;
	bool more = false;
	engine_sync_clock(e);
	int64_t now = dbclock_floor_ms(); /* rule T2: never before a deadline */
	/* a saga on its first try is due at the earliest when its first lease
	 * ends; half of it leaves room for the error of this host's estimate
	 * of the database's clock (dbclock.h) */
	const saga_policy *pol = &e->cfg.policy;
	int64_t lease = saga_first_lease_ms(pol);
	int64_t first = orch_defs_first_deadline_ms(e->cfg.defs, pol);
	if (first < lease) /* a first step's own deadline_ms ends its lease sooner */
		lease = first;
	int64_t young = lease / 2;
	const char *me = e->cfg.instance ? e->cfg.instance : "";
	int rc = full ? store_claim_deadlines(e->conn, now, pol, now - young, limit, me, rows, &n)
	              : store_claim_due(e->conn, now, pol, now - young, limit, me, rows, &n);
	if (rc != 0) {
		/* at most one WARNING every 10 s: a database that takes sessions
		 * but refuses the claim (set read-only) fails every sweep */
		int64_t mono = clock_mono_ms();
		bool loud = e->claim_warned_ms == 0 || mono - e->claim_warned_ms >= 10000;
		if (loud)
			e->claim_warned_ms = mono;
		log_msg(loud ? LOG_LEVEL_WARN : LOG_LEVEL_DEBUG, NULL,
		    "could not claim due sagas: %s", pg_err_name(rc));
		return false;
	}
	more = !full && n == (size_t)limit;
	for (size_t i = 0; i < n; i++) {
		/* the claim moved next_attempt_at; keep the lease in the row */
		const saga_row *r = &rows[i];
		if (!horizon_may_send(&e->cfg.horizon, r->created_ms, now)) {
			/* rule R3: too old for any participant to take a command */
			saga_flow_event ev = {.kind = SAGA_EV_PAST_HORIZON};
			size_t before = npend;
			engine_decide(e, r, &ev, now, "past_horizon", false, pend, &npend);
			if (npend > before)
				dl_rows[before] = *r;
		} else if (r->s.step_deadline_ms > 0 && now >= r->s.step_deadline_ms) {
			saga_flow_event ev = {.kind = SAGA_EV_DEADLINE};
			size_t before = npend;
			engine_decide(e, r, &ev, now, "deadline", !full, pend, &npend);
			if (npend > before)
				dl_rows[before] = *r;
		} else if (!full) {
			if (r->s.attempts > 0 || r->created_ms + lease < now)
				log_debug(r->saga_id, "resuming %s", r->state);
			engine_dispatch(e, r, ~(uint64_t)0);
		}
	}
	engine_commit(e, dl_rows, pend, npend);
	engine_out_flush(e, &e->out);
	return more;
}

/* engine_drain_backlog sends new sagas while there is room under
 * max_inflight. One whose lease ran out while it waited is left to the
 * sweep, which has claimed it or will (never sent twice by us). */
static void engine_drain_backlog(engine *e)
{
	int64_t now = dbclock_now_ms();
	while (e->backlog.head != NULL) {
		nng_mtx_lock(e->mtx);
		bool room = e->inflight < e->cfg.max_inflight;
		if (room)
			e->queued--;
		nng_mtx_unlock(e->mtx);
		if (!room)
			break;
		engine_item *it = e->backlog.head;
		e->backlog.head = it->next;
		if (e->backlog.head == NULL)
			e->backlog.tail = NULL;
		if (it->row.s.next_attempt_ms > now)
			engine_dispatch(e, &it->row, ~(uint64_t)0);
		else
			log_debug(it->row.saga_id,
			    "lease ran out while waiting to be sent: the "
			    "sweep sends it");
		free(it);
	}
	engine_out_flush(e, &e->out);
}

static void engine_main(void *arg)
{
	engine *e = arg;
	int64_t next_sweep = 0;
	for (;;) {
		nng_mtx_lock(e->mtx);
		while (!e->stopping && e->done.head == NULL && e->submitted.head == NULL
		    && clock_mono_ms() < next_sweep)
			nng_cv_until(e->cv, nng_clock() + (nng_time)(next_sweep - clock_mono_ms()));
		if (e->stopping) {
			nng_mtx_unlock(e->mtx);
			break;
		}
		engine_item *replies = engine_take_all(&e->done);
		/* replies free room: the backlog goes on in the same round */
		engine_item *subs = engine_take_all(&e->submitted);
		int inflight = e->inflight;
		nng_mtx_unlock(e->mtx);
		orch_metrics_in_flight(e->cfg.index, inflight);

		engine_process_replies(e, replies);
		while (subs != NULL) {
			engine_item *it = subs;
			subs = it->next;
			engine_push(&e->backlog, it);
		}
		engine_drain_backlog(e);
		if (clock_mono_ms() >= next_sweep) {
			bool more = engine_sweep(e);
			next_sweep = clock_mono_ms() + (more ? 0 : e->cfg.sweep_interval_ms);
		}
	}
}

void engine_submit(engine *e, const saga_row *row)
{
	engine_item *it = calloc(1, sizeof *it);
	if (it == NULL)
		return; /* the sweep finds it when the lease ends */
	it->row = *row;
	nng_mtx_lock(e->mtx);
	if (e->stopping || e->queued >= ENGINE_SUBMIT_MAX) {
		nng_mtx_unlock(e->mtx);
		free(it);
		return;
	}
	engine_push(&e->submitted, it);
	e->queued++;
	nng_mtx_unlock(e->mtx);
	/* after the unlock (as in engine_on_reply); the API's workers, the
	 * only callers, are joined before engine_stop */
	nng_cv_wake(e->cv);
}

void engine_submit_many(engine *e, const saga_row *rows, size_t n)
{
	if (n == 0)
		return;
	/* room now and nobody waiting before them: sent from this thread,
	 * without the hand-over to the engine thread (counted in inflight
	 * first, so max_inflight holds) */
	nng_mtx_lock(e->mtx);
	bool direct = !e->stopping && e->queued == 0
	    && (int64_t)e->inflight + (int64_t)n <= (int64_t)e->cfg.max_inflight;
	if (direct)
		e->inflight += (int)n;
	nng_mtx_unlock(e->mtx);
	if (!direct) {
		for (size_t i = 0; i < n; i++)
			engine_submit(e, &rows[i]);
		return;
	}
	engine_out o = {0};
	for (size_t i = 0; i < n; i++)
		engine_dispatch_to(e, &rows[i], &o, true, ~(uint64_t)0);
	engine_out_flush(e, &o);
}

static void engine_free_scratch(engine *e)
{
	free(e->rows);
	free(e->dl_rows);
	free(e->redo);
	free(e->pend);
	free(e->ups);
}

/* engine_close_clients closes every participant's link (NULL ones too). */
static void engine_close_clients(engine *e)
{
	for (size_t i = 0; i < e->nclients; i++) {
		rpc_client_close(e->clients[i]);
		e->clients[i] = NULL;
	}
}

int engine_start(engine **out, const engine_config *cfg)
{
	engine *e = calloc(1, sizeof *e);
	if (e == NULL)
		return -ENOMEM;
	e->cfg = *cfg;
	e->rng = (uint64_t)clock_wall_ms() * 0x9e3779b97f4a7c15ULL ^ (uint64_t)getpid();
	if (e->rng == 0)
		e->rng = 1;
	int rc = -ENOMEM;
	size_t cap = (size_t)(cfg->batch > 0 ? cfg->batch : 1);
	e->cfg.batch = (int)cap;
	e->rows = calloc(cap, sizeof *e->rows);
	e->dl_rows = calloc(cap, sizeof *e->dl_rows);
	e->redo = calloc(cap, sizeof *e->redo);
	e->pend = calloc(cap, sizeof *e->pend);
	e->ups = calloc(cap, sizeof *e->ups);
	if (e->rows == NULL || e->dl_rows == NULL || e->pend == NULL || e->ups == NULL
	    || e->redo == NULL)
		goto out_free;
	if (nng_mtx_alloc(&e->mtx) != 0)
		goto out_free;
	if (nng_cv_alloc(&e->cv, e->mtx) != 0)
		goto out_mtx;
	e->conn = pg_connect(cfg->db, cfg->db_wait_ms);
	if (e->conn == NULL) {
		rc = PG_ERR_CONNECTION;
		goto out_cv;
	}
	/* one socket per participant, dialing each of its replicas: nng
	 * spreads the commands over those connected (rpc_client_open_urls) */
	/* every command is idempotent by saga id (saga-semantics.md rule 2),
	 * so one in flight to a replica that dies may go to another at once */
	rpc_client_opts o
	    = {.resend_ms = cfg->resend_ms, .duplicate = cfg->duplicate_delivery, .failover = true};
	e->nclients = (size_t)cfg->nlinks;
	for (size_t i = 0; i < e->nclients; i++) {
		rc = rpc_client_open_urls(&e->clients[i], cfg->links[i], &o);
		if (rc != 0)
			goto out_clients;
	}
	rc = nng_thread_create(&e->thread, engine_main, e) == 0 ? 0 : -ENOMEM;
	if (rc != 0)
		goto out_clients;
	*out = e;
	return 0;
out_clients:
	engine_close_clients(e);
	PQfinish(e->conn);
out_cv:
	nng_cv_free(e->cv);
out_mtx:
	nng_mtx_free(e->mtx);
out_free:
	engine_free_scratch(e);
	free(e);
	return rc;
}

static void engine_free_list(engine_item *it)
{
	while (it != NULL) {
		engine_item *next = it->next;
		free(it);
		it = next;
	}
}

void engine_stop(engine *e)
{
	if (e == NULL)
		return;
	nng_mtx_lock(e->mtx);
	e->stopping = true;
	nng_cv_wake(e->cv);
	nng_mtx_unlock(e->mtx);
	nng_thread_destroy(e->thread); /* joins */
	/* closing the sockets completes every call in flight */
	engine_close_clients(e);
	nng_mtx_lock(e->mtx);
	while (e->inflight > 0)
		nng_cv_until(e->cv, nng_clock() + 10);
	engine_free_list(engine_take_all(&e->done));
	engine_free_list(engine_take_all(&e->submitted));
	engine_free_list(engine_take_all(&e->backlog));
	nng_mtx_unlock(e->mtx);
	PQfinish(e->conn);
	nng_cv_free(e->cv);
	nng_mtx_free(e->mtx);
	engine_free_scratch(e);
	free(e);
}
