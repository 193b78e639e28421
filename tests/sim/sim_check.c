/* sim_check: what must hold of a simulated world (docs/saga-semantics.md,
 * "Invariants" and rules T4, T5): the invariants checked after every step,
 * the checks at the end of a run, and the state hash of the explorer. The
 * world itself, its actions and its scheduler are sim_world.c. */
#include <inttypes.h>
#include <string.h>

#include "sim.h"
#include "sim_internal.h"

/* --- invariants --- */

bool sim_check(sim_world *w)
{
	if (w->violated)
		return false;
	/* stock conservation and no negative stock, per sku */
	for (int k = 0; k < SIM_NSKU; k++) {
		int64_t reserved = 0;
		for (int i = 0; i < w->nsagas; i++)
			if (w->srec[i].status == STOCK_RESERVED
			    && strcmp(w->srec[i].sku, sim_sku_names[k]) == 0)
				reserved += w->srec[i].qty;
		if (w->on_hand[k] < 0)
			sim_violation(
			    w, "stock %s on hand %" PRId64 " < 0", sim_sku_names[k], w->on_hand[k]);
		if (w->on_hand[k] + reserved != w->init_on_hand[k])
			sim_violation(w,
			    "stock conservation: %s on_hand %" PRId64 " + reserved %" PRId64
			    " != initial %" PRId64,
			    sim_sku_names[k], w->on_hand[k], reserved, w->init_on_hand[k]);
	}
	/* money conservation and no negative balance, per account */
	for (int a = 0; a < SIM_NACCT; a++) {
		int64_t charged = 0;
		for (int i = 0; i < w->nsagas; i++)
			if (w->prec[i].status == PAYMENT_CHARGED
			    && strcmp(w->prec[i].customer, sim_customer_names[a]) == 0)
				charged += w->prec[i].amount;
		if (w->balance[a] < 0)
			sim_violation(w, "account %s balance %" PRId64 " < 0",
			    sim_customer_names[a], w->balance[a]);
		if (w->balance[a] + charged != w->init_balance[a])
			sim_violation(w,
			    "money conservation: %s balance %" PRId64 " + charged %" PRId64
			    " != initial %" PRId64,
			    sim_customer_names[a], w->balance[a], charged, w->init_balance[a]);
	}
	for (int i = 0; i < w->nsagas; i++) {
		const sim_order *o = &w->orders[i];
		if (w->srec[i].status != STOCK_NONE
		    && (strcmp(w->srec[i].sku, sim_sku_names[o->sku]) != 0
		        || w->srec[i].qty != o->qty))
			sim_violation(w, "saga %d: stock record for other arguments", i);
		if (w->prec[i].status != PAYMENT_NONE
		    && (strcmp(w->prec[i].customer, sim_customer_names[o->customer]) != 0
		        || w->prec[i].amount != o->amount))
			sim_violation(w, "saga %d: payment record for other arguments", i);
		if (w->shrec[i].status != SHIPPING_NONE
		    && (strcmp(w->shrec[i].customer, sim_customer_names[o->customer]) != 0
		        || strcmp(w->shrec[i].sku, sim_sku_names[o->sku]) != 0
		        || w->shrec[i].qty != o->qty))
			sim_violation(w, "saga %d: shipment for other arguments", i);
		if (!w->rows[i].exists)
			continue;
		saga_state st = w->rows[i].s.state;
		const saga *rs = &w->rows[i].s;
		if (!saga_is_terminal(st) && rs->step_deadline_ms > 0
		    && rs->next_attempt_ms > rs->step_deadline_ms
		    && rs->next_attempt_ms > orch_now(w))
			sim_violation(w,
			    "saga %d in %s not due before %" PRId64
			    ", past its step deadline %" PRId64
			    ": the sweep finds the deadline late (rule T5)",
			    i, saga_state_name(st), rs->next_attempt_ms, rs->step_deadline_ms);
		bool reserved = w->srec[i].status == STOCK_RESERVED;
		bool charged = w->prec[i].status == PAYMENT_CHARGED;
		bool shipped = w->shrec[i].status == SHIPPING_SHIPPED;
		if (st == SAGA_STATE_COMPLETED && (!reserved || !charged || !shipped))
			sim_violation(w,
			    "saga %d COMPLETED with stock %s, payment %s and shipment %s", i,
			    stock_status_name(w->srec[i].status),
			    payment_status_name(w->prec[i].status),
			    shipping_status_name(w->shrec[i].status));
		if (st == SAGA_STATE_CANCELLED && (reserved || charged || shipped))
			sim_violation(w,
			    "saga %d CANCELLED (%s) with stock %s, payment %s and shipment %s", i,
			    w->rows[i].s.reason, stock_status_name(w->srec[i].status),
			    payment_status_name(w->prec[i].status),
			    shipping_status_name(w->shrec[i].status));
		/* a shipment only of an order charged and reserved, which
		 * nothing undoes after the pivot (rule 3) */
		if (shipped && (!reserved || !charged))
			sim_violation(w, "saga %d shipped (%s) with stock %s and payment %s", i,
			    saga_state_name(st), stock_status_name(w->srec[i].status),
			    payment_status_name(w->prec[i].status));
	}
	return !w->violated;
}

void sim_check_send(sim_world *w, int i, saga_command cmd)
{
	if (cmd != SAGA_CMD_RELEASE_STOCK && cmd != SAGA_CMD_REFUND_PAYMENT)
		return;
	/* the charge succeeded (paymentd's record) and the orchestrator moved
	 * on past it: nothing may be compensated any more. A charge applied
	 * whose reply never came in time is not past the pivot: rule 4
	 * refunds it. */
	if (w->past_pivot[i])
		sim_violation(w,
		    "saga %d: %s sent after the pivot (payment %s, saga %s): after the pivot, "
		    "only forward (rule 3)",
		    i, saga_command_name(cmd), payment_status_name(w->prec[i].status),
		    saga_state_name(w->rows[i].s.state));
}

bool sim_all_terminal(const sim_world *w)
{
	for (int i = 0; i < w->nsagas; i++)
		if (!w->started[i] || !saga_is_terminal(w->rows[i].s.state))
			return false;
	return true;
}

/* sim_step_room_ms is the longest a step can take, from its first try to
 * its reply, against a participant that answers `serve_ms` after a command
 * arrives, with no fault: each try that times out, the longest backoff
 * after it and a sweep interval, then the try whose timeout (the
 * production saga_try_timeout_ms, rule T4) covers the round trip. INT64_MAX
 * when no try waits long enough. */
static int64_t sim_step_room_ms(const sim_world *w, int64_t serve_ms)
{
	const saga_policy *p = &w->timing.policy;
	int64_t round_trip = serve_ms + 2 * 20; /* net_delay: at most 20 each way */
	saga s = {.state = SAGA_STATE_CHARGING};
	int64_t t = 0;
	for (s.attempts = 0; s.attempts < 64; s.attempts++) {
		int64_t timeout = saga_try_timeout_ms(&s, 0, p);
		if (timeout >= round_trip)
			return t + round_trip;
		int64_t backoff = p->backoff_base_ms;
		for (int32_t k = 0; k < s.attempts && backoff < p->backoff_cap_ms; k++)
			backoff *= 2;
		t += timeout + (backoff < p->backoff_cap_ms ? backoff : p->backoff_cap_ms)
		    + w->timing.sweep_ms;
	}
	return INT64_MAX;
}

/* sim_end_check_slow checks rule T4 on a run without faults: when both
 * steps have room within the step deadline for their participant's
 * serving time, no saga was compensated for a timeout. */
static void sim_end_check_slow(sim_world *w)
{
	if (!w->slow_only)
		return;
	int64_t step = w->timing.policy.step_timeout_ms;
	/* the clock estimate's error and a sweep's rounding (50), and a try cut
	 * at the deadline rounded down to SAGA_TRY_GRAIN_MS */
	int64_t slack = 50 + SAGA_TRY_GRAIN_MS;
	int64_t stock = sim_step_room_ms(w, w->serve_ms[SIM_STOCK]);
	int64_t pay = sim_step_room_ms(w, w->serve_ms[SIM_PAYMENT]);
	if (stock == INT64_MAX || pay == INT64_MAX || stock + slack > step || pay + slack > step)
		return;
	for (int i = 0; i < w->nsagas; i++)
		if (strcmp(w->rows[i].s.reason, "timeout") == 0) {
			sim_violation(w,
			    "saga %d compensated for a timeout, though its participants answer in "
			    "%" PRId64 "/%" PRId64 " ms and its steps need at most %" PRId64
			    "/%" PRId64 " of %" PRId64 " ms (rule T4)",
			    i, w->serve_ms[SIM_STOCK], w->serve_ms[SIM_PAYMENT], stock, pay, step);
			return;
		}
}

/* sim_end_check verifies what must hold once the run is over: every saga
 * ended, and each effect happened at most once and only as the state says. */
void sim_end_check(sim_world *w)
{
	if (!sim_check(w))
		return;
	sim_end_check_slow(w); /* first: a stuck compensation says less */
	if (w->violated)
		return;
	for (int i = 0; i < w->nsagas; i++) {
		if (!w->started[i] || !saga_is_terminal(w->rows[i].s.state)) {
			sim_violation(w, "liveness: saga %d still %s %" PRId64 " ms after calm", i,
			    w->started[i] ? saga_state_name(w->rows[i].s.state) : "not started",
			    w->now - w->calm_at_ms);
			return;
		}
		int reserve = w->effects[i][SAGA_CMD_RESERVE_STOCK];
		int release = w->effects[i][SAGA_CMD_RELEASE_STOCK];
		int charge = w->effects[i][SAGA_CMD_CHARGE_PAYMENT];
		int refund = w->effects[i][SAGA_CMD_REFUND_PAYMENT];
		int ship = w->effects[i][SAGA_CMD_SHIP_ORDER];
		if (w->rows[i].s.state == SAGA_STATE_COMPLETED
		    && (reserve != 1 || release != 0 || charge != 1 || refund != 0 || ship != 1))
			sim_violation(w,
			    "saga %d COMPLETED with effects reserve %d release %d charge %d refund "
			    "%d ship %d",
			    i, reserve, release, charge, refund, ship);
		if (w->rows[i].s.state == SAGA_STATE_CANCELLED
		    && (reserve != release || charge != refund || ship != 0))
			sim_violation(w,
			    "saga %d CANCELLED with effects reserve %d release %d charge %d refund "
			    "%d ship %d",
			    i, reserve, release, charge, refund, ship);
	}
}

/* --- state hashing --- */

static uint64_t sim_mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
	h *= 0xff51afd7ed558ccdULL;
	return h ^ (h >> 33);
}

static uint64_t sim_mix_str(uint64_t h, const char *s)
{
	while (*s)
		h = sim_mix(h, (unsigned char)*s++);
	return sim_mix(h, 0);
}

/* sim_rel maps a time to its distance from `now` (0 stays "none"): the
 * decisions depend only on such differences, so states that differ by a
 * shift of the clock behave alike and hash alike. With `past`, every time
 * before now maps to one value (sim_hash_abstract). */
static uint64_t sim_rel_at(int64_t t, int64_t now, bool past)
{
	if (t == 0)
		return 0;
	if (past && t < now)
		return 1;
	return (uint64_t)(t - now) + (1ULL << 40);
}

/* How a hash sees a world: exact (sim_hash) or abstracted
 * (sim_hash_abstract: attempts saturated, versions relative, past times
 * alike). */
typedef struct sim_view {
	bool abstract;
	int32_t attempts_sat;
} sim_view;

/* sim_hash_row hashes a row; `cur` is the saga's current row when `r` is a
 * call's snapshot of it (NULL: `r` is the row itself); the abstract view
 * keeps only whether the snapshot's version and epoch are still current. */
static uint64_t sim_hash_row_v(const sim_row *r, int64_t now, const sim_view *v, const sim_row *cur)
{
	uint64_t h = sim_mix(1, r->exists);
	h = sim_mix(h, (uint64_t)r->s.state);
	h = sim_mix_str(h, r->s.reason);
	int32_t att = r->s.attempts;
	if (v->abstract && att > v->attempts_sat)
		att = v->attempts_sat;
	h = sim_mix(h, (uint64_t)att);
	h = sim_mix(h, r->s.attention);
	h = sim_mix(h, sim_rel_at(r->s.step_deadline_ms, now, v->abstract));
	h = sim_mix(h, sim_rel_at(r->s.next_attempt_ms, now, v->abstract));
	if (!v->abstract)
		return sim_mix(sim_mix(h, (uint64_t)r->version), (uint64_t)r->epoch);
	if (cur == NULL)
		return sim_mix(h, 0);
	return sim_mix(h, r->version != cur->version ? 2 : r->epoch != cur->epoch ? 3 : 1);
}

static uint64_t sim_hash_call_v(const sim_world *w, const sim_call *c, const sim_view *v)
{
	uint64_t h = sim_mix(2, (uint64_t)c->saga);
	h = sim_mix(h, (uint64_t)c->cmd);
	h = sim_mix(h, sim_hash_row_v(&c->row, w->now, v, &w->rows[c->saga]));
	return sim_mix(h, sim_rel_at(c->expire_ms, w->now, v->abstract));
}

static uint64_t sim_hash_v(const sim_world *w, const sim_view *v)
{
	int64_t now = w->now;
	uint64_t h = sim_mix(0, 0);
	for (int n = 0; n < SIM_NODES; n++)
		h = sim_mix(h, w->up[n]);
	for (int i = 0; i < w->nsagas; i++) {
		h = sim_mix(h, w->started[i]);
		h = sim_mix(h, sim_hash_row_v(&w->rows[i], now, v, NULL));
		h = sim_mix(h, (uint64_t)w->srec[i].status);
		h = sim_mix(h, (uint64_t)w->prec[i].status);
		h = sim_mix(h, (uint64_t)w->shrec[i].status);
		h = sim_mix(h, w->past_pivot[i]);
		for (int c = 0; c <= SAGA_CMD_LAST; c++)
			h = sim_mix(h, w->effects[i][c]);
	}
	for (int k = 0; k < SIM_NSKU; k++)
		h = sim_mix(h, (uint64_t)w->on_hand[k]);
	for (int a = 0; a < SIM_NACCT; a++)
		h = sim_mix(h, (uint64_t)w->balance[a]);
	/* calls and messages are multisets: sum their hashes */
	uint64_t calls = 0;
	for (int c = 0; c < SIM_MAX_CALLS; c++)
		if (w->calls[c].used)
			calls += sim_mix(3, sim_hash_call_v(w, &w->calls[c], v));
	h = sim_mix(h, calls);
	uint64_t msgs = 0;
	for (int m = 0; m < SIM_MAX_MSGS; m++) {
		const sim_msg *msg = &w->msgs[m];
		if (!msg->used)
			continue;
		uint64_t mh = sim_mix(4, msg->reply);
		mh = sim_mix(mh, (uint64_t)msg->saga);
		mh = sim_mix(mh, (uint64_t)msg->cmd);
		mh = sim_mix(mh, (uint64_t)msg->code);
		mh = sim_mix_str(mh, msg->reason);
		uint64_t target = 0; /* the content of the call it belongs to */
		for (int c = 0; c < SIM_MAX_CALLS; c++)
			if (w->calls[c].used && w->calls[c].id == msg->call)
				target = sim_hash_call_v(w, &w->calls[c], v);
		msgs += sim_mix(mh, target);
	}
	return sim_mix(h, msgs);
}

uint64_t sim_hash(const sim_world *w)
{
	static const sim_view exact = {.abstract = false};
	return sim_hash_v(w, &exact);
}

uint64_t sim_hash_abstract(const sim_world *w, int32_t attempts_sat)
{
	sim_view v = {.abstract = true, .attempts_sat = attempts_sat};
	return sim_hash_v(w, &v);
}

/* sim_doublings is how many doublings take `from` (<= 0 counts as 1) to
 * at least `to`. */
static int32_t sim_doublings(int64_t from, int64_t to)
{
	int64_t v = from > 0 ? from : 1;
	int32_t n = 0;
	for (; v < to; v *= 2)
		n++;
	return n;
}

int32_t sim_attempts_saturation(const sim_world *w)
{
	const saga_policy *p = &w->timing.policy;
	int32_t sat = p->attention_after;
	/* saga_backoff_ms: the ceiling doubles from try 2 until the cap */
	int32_t k = 1 + sim_doublings(p->backoff_base_ms, p->backoff_cap_ms);
	/* the try span doubles per failed try until request_timeout_max_ms */
	int32_t j = sim_doublings(p->request_timeout_ms, p->request_timeout_max_ms);
	if (k > sat)
		sat = k;
	if (j > sat)
		sat = j;
	return sat + 1;
}
