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
#include "fault.h"
#include "log.h"
#include "orch_metrics.h"
#include "pg.h"
#include "rpc.h"
#include "status.h"

/* One command in flight, then its completion, then (maybe) its successor. */
typedef struct engine_item {
	struct engine_item *next;
	struct engine *eng; /* the engine the reply goes back to */
	saga_row row;       /* the row as it was when the command was sent */
	saga_command cmd;   /* the command sent */
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
	fault_exit_if(FAULT_EXIT_AFTER_SEND, saga_command_name(it->cmd));
	it->code = res->code;
	it->transport = res->transport;
	orch_metrics_command(it->cmd, res->code, res->transport,
	    it->sent_us > 0 ? clock_mono_us() - it->sent_us : -1);
	memcpy(it->reason, res->reason, sizeof it->reason);
	engine_item *copy = NULL;
	if (fault_check(FAULT_DUPLICATE_REPLY, saga_command_name(it->cmd), NULL)) {
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

/* engine_dispatch_to sends the command `row` makes due, gathered in `o`
 * (sent by engine_out_flush). The row must already be leased in the
 * database (rule 1: written before sent). `counted`: the caller has already
 * counted the command in e->inflight. */
static void engine_dispatch_to(engine *e, const saga_row *row, engine_out *o, bool counted)
{
	saga_command cmd = saga_command_of(row->s.state);
	/* the plan of the definition the saga started with: its participant's
	 * link, method and request. A version not loaded here yet is read on
	 * the engine's connection; only the engine thread has one, and a first
	 * command sent from an API thread is always of the current version.
	 * NULL (logged there): the sweep tries again when the lease ends. */
	int link = 0;
	const saga_def_cmd *plan = cmd == SAGA_CMD_NONE
	    ? NULL
	    : orch_defs_plan(e->cfg.defs, o == &e->out ? e->conn : NULL, row->def_id, cmd, &link);
	engine_item *it = plan == NULL ? NULL : calloc(1, sizeof *it);
	if (it == NULL) {
		if (plan != NULL)
			log_error(row->saga_id, "could not send %s: out of memory",
			    saga_command_name(cmd));
		if (counted) {
			nng_mtx_lock(e->mtx);
			e->inflight--;
			nng_mtx_unlock(e->mtx);
		}
		return; /* the sweep sends it when the lease ends */
	}
	it->row = *row;
	it->cmd = cmd;
	it->eng = e;
	/* each try waits longer, never past the step deadline (rule T4) */
	int64_t timeout = saga_try_timeout_ms(&row->s, dbclock_now_ms(), &e->cfg.policy);
	rpc_client *client = e->clients[link];
	if (!counted) {
		nng_mtx_lock(e->mtx);
		e->inflight++;
		nng_mtx_unlock(e->mtx);
	}
	log_debug(
	    row->saga_id, "sending %s (attempt %d)", saga_command_name(cmd), row->s.attempts + 1);
	rpc_batch *batch = engine_batch_for(e, o, (size_t)link);
	it->sent_us = clock_mono_us();
	int rc = codec_send_command(client, batch, plan, row, timeout, engine_on_reply, it);
	if (rc != 0) {
		log_warn(row->saga_id, "could not send %s: error %d", saga_command_name(cmd), rc);
		nng_mtx_lock(e->mtx);
		e->inflight--;
		nng_mtx_unlock(e->mtx);
		free(it);
	}
}

/* engine_dispatch: engine_dispatch_to on the engine thread's own batches. */
static void engine_dispatch(engine *e, const saga_row *row)
{
	engine_dispatch_to(e, row, &e->out, false);
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
	saga_command send;
	bool held;     /* no room to send: written due now, sent by a later sweep */
	bool retry;    /* a failed try, to be tried again (sagas_step_retries_total) */
	int32_t tries; /* the step ended after this many tries (0: not by a reply) */
} engine_pending;

/* engine_decide runs the state machine on one event and, unless the event
 * is ignored, appends the write it needs to `pend`. A command it makes due
 * is leased and sent after the commit; with `can_send` false (no room under
 * --max-inflight) it is written due when the state machine says, and held
 * for a later sweep. */
static void engine_decide(engine *e, const saga_row *row, const saga_event *ev, int64_t now,
    const char *why, bool can_send, engine_pending *pend, size_t *npend)
{
	/* the flow of the definition the saga started with: its steps' own
	 * deadlines and retries. A version that cannot run here (logged by
	 * orch_defs) decides nothing: the saga waits, leased as it is, for an
	 * orchestratord that runs it. */
	const orch_def_version *v = orch_defs_version(e->cfg.defs, e->conn, row->def_id);
	if (v == NULL)
		return;
	saga_decision d;
	saga_flow_order_transition(&v->flow, &row->s, ev, now, engine_rand(e), &e->cfg.policy, &d);
	if (d.ignored) {
		log_debug(row->saga_id, "event ignored in state %s", saga_state_name(row->s.state));
		return;
	}
	int32_t n = d.next.attempts;
	/* a retry: tries 1, 2, 4, 8, ...; a saga parked past the horizon is
	 * not tried again (its own WARNING, engine_commit, says so) */
	bool parked = strcmp(d.event_name, "past_horizon") == 0
	    || strcmp(d.event_name, "saga_id_reused") == 0;
	if (!d.state_changed && !parked && (n & (n - 1)) == 0)
		log_info(row->saga_id, "%s failed (%s), try %d again in %lld ms",
		    saga_command_name(saga_command_of(row->s.state)), why ? why : "unknown", n + 1,
		    (long long)(d.next.next_attempt_ms - now));
	engine_pending *p = &pend[(*npend)++];
	memset(p, 0, sizeof *p);
	p->after = *row;
	p->after.s = d.next;
	p->after.version = row->version + 1;
	p->after.updated_ms = now;
	p->send = d.send;
	p->held = d.send != SAGA_CMD_NONE && !can_send;
	bool reply = ev->kind != SAGA_EV_DEADLINE && ev->kind != SAGA_EV_PAST_HORIZON;
	p->retry = reply && !d.state_changed && ev->kind != SAGA_EV_SUCCESS;
	p->tries = reply && d.state_changed ? row->s.attempts + 1 : 0;
	if (d.send != SAGA_CMD_NONE && can_send) /* lease the row while its command is out,
	                                            never past its deadline (rule T5) */
		p->after.s.next_attempt_ms = saga_lease_until_ms(&d.next, now, &e->cfg.policy);
	p->up.next = p->after.s;
	p->up.state_changed = d.state_changed;
	p->up.attention_raised = d.attention_raised;
	p->up.event = d.event_name;
}

/* engine_warn_attention logs that saga `a` (as written) needs attention,
 * with its step's backoff cap (its own retry's, or --backoff-cap). */
static void engine_warn_attention(engine *e, const saga_row *a)
{
	saga_policy p = e->cfg.policy;
	saga_flow_pos pos;
	const orch_def_version *v = orch_defs_version(e->cfg.defs, NULL, a->def_id);
	if (v != NULL && saga_flow_order_pos(a->s.state, &pos))
		p = saga_flow_stage_policy(&v->flow, &pos, &e->cfg.policy);
	log_warn(a->saga_id,
	    "saga needs attention: %s failed %d times; retrying, each try "
	    "waiting up to %lld ms for its reply and then up to %lld ms",
	    saga_command_name(saga_command_of(a->s.state)), a->s.attempts,
	    (long long)saga_try_timeout_ms(&a->s, a->updated_ms, &e->cfg.policy),
	    (long long)p.backoff_cap_ms);
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
			log_debug(b->saga_id, "lost a race at version %lld: dropped",
			    (long long)b->version);
			continue;
		}
		const saga *a = &pend[i].after.s;
		saga_command was = saga_command_of(b->s.state);
		if (pend[i].retry && was != SAGA_CMD_NONE)
			orch_metrics_retry(was);
		if (pend[i].tries > 0 && was != SAGA_CMD_NONE)
			orch_metrics_step_done(was, pend[i].tries);
		if (ups[i].state_changed)
			log_info(b->saga_id, "%s -> %s (%s%s%s)", saga_state_name(b->s.state),
			    saga_state_name(a->state), ups[i].event, a->reason[0] ? ", " : "",
			    a->reason);
		if (strcmp(ups[i].event, "past_horizon") == 0)
			log_warn(b->saga_id,
			    "saga needs attention: past the retention horizon (it started before "
			    "it, or a participant's database clock is off by more than "
			    "--max-clock-skew): no participant takes its commands; left in %s, "
			    "never sent again; settle it by hand, or retry it once the clocks "
			    "agree (docs/operations.md, \"Retention\")",
			    saga_state_name(a->state));
		else if (strcmp(ups[i].event, "saga_id_reused") == 0)
			log_warn(b->saga_id,
			    "saga needs attention: %s refused saga_id_reused (the participant "
			    "still "
			    "keeps the record of an earlier saga with this id, deleted here by "
			    "retention): nothing applied; left in %s, never sent again; retry it "
			    "once the participant's retention forgot the earlier saga "
			    "(docs/operations.md, \"Retention\")",
			    saga_command_name(saga_command_of(b->s.state)),
			    saga_state_name(a->state));
		else if (ups[i].attention_raised)
			engine_warn_attention(e, &pend[i].after);
		if (pend[i].send != SAGA_CMD_NONE && !pend[i].held)
			engine_dispatch(e, &pend[i].after);
		if (ups[i].updated_ms > 0)
			pend[i].after.updated_ms = ups[i].updated_ms;
		if (ups[i].state_changed && saga_is_terminal(a->state))
			orch_metrics_finished(
			    a->state, a->reason, pend[i].after.updated_ms - b->created_ms);
		/* its waits end when it ends, or parks (never due again) */
		if (saga_wait_over(a) && e->cfg.on_finished)
			e->cfg.on_finished(e->cfg.on_finished_arg, &pend[i].after);
	}
	log_release();
	engine_out_flush(e, &e->out);
}

/* engine_process_replies decides on a list of replies, `batch` at a time. */
static void engine_process_replies(engine *e, engine_item *list)
{
	size_t cap = (size_t)e->cfg.batch;
	saga_row *rows = e->rows;
	engine_pending *pend = e->pend;
	while (list != NULL) {
		size_t n = 0;
		int64_t now = dbclock_now_ms();
		while (list != NULL && n < cap) {
			engine_item *it = list;
			list = it->next;
			saga_event ev
			    = saga_event_from_reply(it->cmd, it->code, it->reason, it->transport);
			if (ev.kind != SAGA_EV_SUCCESS)
				log_debug(it->row.saga_id, "%s answered %s (%s)",
				    saga_command_name(it->cmd), rpc_code_name(it->code),
				    it->reason);
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
	int64_t now = dbclock_now_ms();
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
			saga_event ev = {.kind = SAGA_EV_PAST_HORIZON};
			size_t before = npend;
			engine_decide(e, r, &ev, now, "past_horizon", false, pend, &npend);
			if (npend > before)
				dl_rows[before] = *r;
		} else if (r->s.step_deadline_ms > 0 && now >= r->s.step_deadline_ms) {
			saga_event ev = {.kind = SAGA_EV_DEADLINE};
			size_t before = npend;
			engine_decide(e, r, &ev, now, "deadline", !full, pend, &npend);
			if (npend > before)
				dl_rows[before] = *r;
		} else if (!full) {
			if (r->s.attempts > 0 || r->created_ms + lease < now)
				log_debug(r->saga_id, "resuming %s", saga_state_name(r->s.state));
			engine_dispatch(e, r);
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
			engine_dispatch(e, &it->row);
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
		engine_dispatch_to(e, &rows[i], &o, true);
	engine_out_flush(e, &o);
}

static void engine_free_scratch(engine *e)
{
	free(e->rows);
	free(e->dl_rows);
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
	e->pend = calloc(cap, sizeof *e->pend);
	e->ups = calloc(cap, sizeof *e->ups);
	if (e->rows == NULL || e->dl_rows == NULL || e->pend == NULL || e->ups == NULL)
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
