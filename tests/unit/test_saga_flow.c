/* Unit tests of the generic saga transition (orchestrator/saga/saga_flow.c,
 * docs/saga-definitions.md section 2): the order saga as a flow decides,
 * event for event, what saga_transition decides and what the hand-written
 * table it replaced decided (saga_transition_ref.c), for every state, event
 * kind, command, reason and a few attempts, deadlines and times; and a flow with
 * a group of two compensable members, a pivot and a retriable step. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "saga.h"
#include "saga_flow.h"
#include "saga_transition_ref.h"
#include "status.h"

#define NOW 1000000
static const saga_policy pol = {.step_timeout_ms = 5000,
    .backoff_base_ms = 50,
    .backoff_cap_ms = 800,
    .attention_after = 3,
    .request_timeout_ms = 1000,
    .lease_grace_ms = SAGA_LEASE_GRACE_MS};

/* via_flow decides as saga_transition does, through saga_flow_transition
 * over saga_flow_order and the maps of states and commands. */
static void via_flow(const saga *s, const saga_event *ev, int64_t now_ms, uint64_t rand,
    const saga_policy *p, saga_decision *out)
{
	memset(out, 0, sizeof *out);
	saga_flow_row r;
	memset(&r, 0, sizeof r);
	if (!saga_flow_order_pos(s->state, &r.pos)) {
		out->next = *s;
		out->ignored = true;
		out->event_name = "ignored";
		return;
	}
	memcpy(r.reason, s->reason, sizeof r.reason);
	r.attempts = s->attempts;
	r.attention = s->attention;
	r.step_deadline_ms = s->step_deadline_ms;
	r.next_attempt_ms = s->next_attempt_ms;
	saga_flow_event fe = {.kind = ev->kind, .reason = ev->reason};
	saga_flow_order_cmd(ev->cmd, &fe.cmd);
	saga_flow_decision d;
	saga_flow_transition(&saga_flow_order, &r, &fe, now_ms, rand, p, &d);
	out->ignored = d.ignored;
	out->state_changed = d.state_changed;
	out->attention_raised = d.attention_raised;
	out->event_name = d.event_name;
	out->next.state = saga_flow_order_state(&d.next.pos);
	memcpy(out->next.reason, d.next.reason, sizeof out->next.reason);
	out->next.attempts = d.next.attempts;
	out->next.attention = d.next.attention;
	out->next.step_deadline_ms = d.next.step_deadline_ms;
	out->next.next_attempt_ms = d.next.next_attempt_ms;
	if (d.send != 0) {
		assert_int_equal(d.send, 1);
		saga_flow_cmd c
		    = {.step = d.next.pos.step, .phase = d.next.pos.phase, .member = -1};
		out->send = saga_flow_order_command(&c);
		assert_int_not_equal(out->send, SAGA_CMD_NONE);
	}
	assert_int_equal(d.next.pos.members, 0);
}

static void assert_same(const saga_decision *a, const saga_decision *b)
{
	assert_int_equal(a->ignored, b->ignored);
	assert_int_equal(a->state_changed, b->state_changed);
	assert_int_equal(a->attention_raised, b->attention_raised);
	assert_int_equal(a->next.state, b->next.state);
	assert_string_equal(a->next.reason, b->next.reason);
	assert_int_equal(a->next.attempts, b->next.attempts);
	assert_int_equal(a->next.attention, b->next.attention);
	assert_int_equal(a->next.step_deadline_ms, b->next.step_deadline_ms);
	assert_int_equal(a->next.next_attempt_ms, b->next.next_attempt_ms);
	assert_int_equal(a->send, b->send);
	assert_non_null(a->event_name);
	assert_non_null(b->event_name);
	assert_string_equal(a->event_name, b->event_name);
}

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

/* Every (state, event kind, command, reason) of the order saga, over rows
 * with a few attempts, attention flags, deadlines, reasons and times: case
 * number i is read as a number whose digits index each list. */
static void test_order_equivalence(void **st)
{
	(void)st;
	static const char *const reasons[]
	    = {NULL, "", REASON_OUT_OF_STOCK, REASON_UNKNOWN_SKU, REASON_PAYMENT_DECLINED,
	        REASON_PAST_HORIZON, REASON_SAGA_ID_REUSED, REASON_TOMBSTONE, "something_else"};
	static const int32_t attempts[] = {0, 1, 2, 3, 7};
	static const int64_t deadlines[] = {0, NOW - 1, NOW, NOW + 50, NOW + 150, NOW + 5000};
	static const int64_t nows[] = {NOW - 1000, NOW, NOW + 10};
	static const char *const row_reasons[] = {"", REASON_PAST_HORIZON, "ship_refused"};
	static const uint64_t rands[] = {0, 12345, 0xffffffffffffffffULL};
	const size_t radix[]
	    = {SAGA_STATE_LAST + 2, 5 /* event kinds */, SAGA_CMD_LAST + 2, N_OF(reasons),
	        N_OF(attempts), 2, N_OF(deadlines), N_OF(nows), N_OF(row_reasons), N_OF(rands)};
	size_t total = 1;
	for (size_t k = 0; k < N_OF(radix); k++)
		total *= radix[k];
	long n = 0;
	for (size_t i = 0; i < total; i++) {
		size_t d[N_OF(radix)], rest = i;
		for (size_t k = 0; k < N_OF(radix); k++) {
			d[k] = rest % radix[k];
			rest /= radix[k];
		}
		saga_event ev = {.kind = (saga_event_kind)(SAGA_EV_SUCCESS + (int)d[1]),
		    .cmd = (saga_command)d[2],
		    .reason = reasons[d[3]]};
		if (ev.reason == NULL && ev.kind == SAGA_EV_REFUSED)
			continue; /* a refusal has a reason (saga_event_from_reply) */
		saga s;
		memset(&s, 0, sizeof s);
		s.state = (saga_state)d[0];
		snprintf(s.reason, sizeof s.reason, "%s", row_reasons[d[8]]);
		s.attempts = attempts[d[4]];
		s.attention = d[5] != 0;
		s.step_deadline_ms = deadlines[d[6]];
		s.next_attempt_ms = NOW + 7;
		saga_decision a, b, c;
		saga_ref_transition(&s, &ev, nows[d[7]], rands[d[9]], &pol, &a);
		via_flow(&s, &ev, nows[d[7]], rands[d[9]], &pol, &b);
		assert_same(&a, &b);
		saga_transition(&s, &ev, nows[d[7]], rands[d[9]], &pol, &c);
		assert_same(&a, &c);
		n++;
	}
	assert_true(n > 100000);
}

/* Chains of events from saga_start, with the reasons the participants
 * give, agree too (the states reached are the ones the table reaches). */
static void test_order_equivalence_runs(void **st)
{
	(void)st;
	uint64_t x = 88172645463325252ULL;
	for (int run = 0; run < 2000; run++) {
		saga a = saga_start(NOW, &pol);
		int64_t now = NOW;
		for (int i = 0; i < 40 && !saga_is_terminal(a.state); i++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			saga_event ev = {.kind = (saga_event_kind)(1 + x % 5),
			    .cmd = (x >> 8) % 4 == 0 ? (saga_command)((x >> 12) % 6)
			                             : saga_command_of(a.state),
			    .reason = (x >> 20) % 3 == 0 ? REASON_OUT_OF_STOCK : "nope"};
			if ((x >> 24) % 16 == 0)
				ev.kind
				    = SAGA_EV_PAST_HORIZON == ev.kind ? SAGA_EV_SUCCESS : ev.kind;
			now += (int64_t)((x >> 30) % 3000);
			saga_decision da, db, dc;
			saga_ref_transition(&a, &ev, now, x, &pol, &da);
			via_flow(&a, &ev, now, x, &pol, &db);
			assert_same(&da, &db);
			saga_transition(&a, &ev, now, x, &pol, &dc);
			assert_same(&da, &dc);
			a = da.next;
		}
	}
}

/* The order flow's maps are each other's inverses. */
static void test_order_maps(void **st)
{
	(void)st;
	assert_true(saga_flow_valid(&saga_flow_order));
	for (int s = 1; s <= SAGA_STATE_LAST; s++) {
		saga_flow_pos pos;
		assert_true(saga_flow_order_pos((saga_state)s, &pos));
		assert_int_equal(saga_flow_order_state(&pos), s);
		assert_int_equal(
		    saga_flow_is_terminal(&saga_flow_order, &pos), saga_is_terminal((saga_state)s));
		saga_flow_cmd c = {.step = pos.step, .phase = pos.phase, .member = -1};
		assert_int_equal(saga_flow_order_command(&c), saga_command_of((saga_state)s));
	}
	saga_flow_pos pos;
	assert_false(saga_flow_order_pos(SAGA_STATE_UNSPECIFIED, &pos));
	for (int c = 1; c <= SAGA_CMD_LAST; c++) {
		saga_flow_cmd fc;
		assert_true(saga_flow_order_cmd((saga_command)c, &fc));
		assert_int_equal(saga_flow_order_command(&fc), c);
	}
	saga_flow_cmd none;
	assert_false(saga_flow_order_cmd(SAGA_CMD_NONE, &none));
	saga_flow_row r = saga_flow_start(&saga_flow_order, NOW, &pol);
	saga s = saga_start(NOW, &pol);
	assert_int_equal(saga_flow_order_state(&r.pos), s.state);
	assert_int_equal(r.step_deadline_ms, s.step_deadline_ms);
	assert_int_equal(r.next_attempt_ms, s.next_attempt_ms);
}

/* booking: a group (room, seat), the pivot (pay), a retriable step. */
static saga_flow booking(void)
{
	saga_flow f = {.nsteps = 4,
	    .steps = {
	        {.name = "room",
	            .kind = SAGA_FLOW_COMPENSABLE,
	            .has_compensation = true,
	            .has_deadline = true,
	            .group = 0},
	        {.name = "seat",
	            .kind = SAGA_FLOW_COMPENSABLE,
	            .has_compensation = true,
	            .has_deadline = true,
	            .group = 0},
	        {.name = "pay",
	            .kind = SAGA_FLOW_PIVOT,
	            .has_compensation = true,
	            .has_deadline = true,
	            .group = -1},
	        {.name = "confirm", .kind = SAGA_FLOW_RETRIABLE, .group = -1},
	    }};
	return f;
}

static saga_flow_decision ev_on(const saga_flow *f, const saga_flow_row *r, saga_event_kind kind,
    int32_t step, saga_flow_phase phase, int32_t member, const char *reason, int64_t now)
{
	saga_flow_event ev = {.kind = kind,
	    .cmd = {.step = step, .phase = phase, .member = member},
	    .reason = reason};
	saga_flow_decision d;
	saga_flow_transition(f, r, &ev, now, 777, &pol, &d);
	return d;
}

static void test_group_sent_and_waits(void **st)
{
	(void)st;
	saga_flow f = booking();
	assert_true(saga_flow_valid(&f));
	assert_int_equal(saga_flow_stage_len(&f, 0), 2);
	saga_flow_row r = saga_flow_start(&f, NOW, &pol);
	assert_int_equal(r.pos.step, 0);
	assert_int_equal(r.pos.phase, SAGA_FLOW_FORWARD);
	assert_int_equal(saga_flow_due(&f, &r.pos), 3); /* both members sent */
	assert_int_equal(r.step_deadline_ms, NOW + 5000);

	/* one success waits for the other member */
	saga_flow_decision d
	    = ev_on(&f, &r, SAGA_EV_SUCCESS, 0, SAGA_FLOW_FORWARD, 1, "", NOW + 10);
	assert_false(d.ignored);
	assert_true(d.state_changed);
	assert_int_equal(d.next.pos.step, 0);
	assert_int_equal(d.next.pos.members, 2);
	assert_int_equal(d.send, 0);
	assert_int_equal(d.next.step_deadline_ms, NOW + 5000);
	assert_int_equal(saga_flow_due(&f, &d.next.pos), 1);
	r = d.next;
	/* its copy is stale */
	d = ev_on(&f, &r, SAGA_EV_SUCCESS, 0, SAGA_FLOW_FORWARD, 1, "", NOW + 11);
	assert_true(d.ignored);
	/* a member's transient failure retries the group's open members */
	d = ev_on(&f, &r, SAGA_EV_TRANSIENT, 0, SAGA_FLOW_FORWARD, 0, "", NOW + 12);
	assert_string_equal(d.event_name, "transient");
	assert_int_equal(d.next.attempts, 1);
	assert_int_equal(d.next.pos.members, 2);
	r = d.next;
	/* both succeeded: the pivot, with a deadline of its own */
	d = ev_on(&f, &r, SAGA_EV_SUCCESS, 0, SAGA_FLOW_FORWARD, 0, "", NOW + 20);
	assert_int_equal(d.next.pos.step, 2);
	assert_int_equal(d.next.pos.phase, SAGA_FLOW_FORWARD);
	assert_int_equal(d.next.pos.members, 0);
	assert_int_equal(d.send, 1);
	assert_int_equal(d.next.attempts, 0);
	assert_int_equal(d.next.step_deadline_ms, NOW + 20 + 5000);
	assert_string_equal(d.event_name, "reply_ok");
}

static void test_group_member_refused(void **st)
{
	(void)st;
	saga_flow f = booking();
	for (int first_ok = 0; first_ok < 2; first_ok++) {
		saga_flow_row r = saga_flow_start(&f, NOW, &pol);
		saga_flow_decision d;
		if (first_ok) {
			d = ev_on(&f, &r, SAGA_EV_SUCCESS, 0, SAGA_FLOW_FORWARD, 0, "", NOW + 1);
			r = d.next;
		}
		/* seat refused: it did not act; room may have: compensate it */
		d = ev_on(&f, &r, SAGA_EV_REFUSED, 0, SAGA_FLOW_FORWARD, 1, "no_seat", NOW + 2);
		assert_true(d.state_changed);
		assert_string_equal(d.event_name, "refused");
		assert_string_equal(d.next.reason, "seat_refused");
		assert_int_equal(d.next.pos.step, 0);
		assert_int_equal(d.next.pos.phase, SAGA_FLOW_COMPENSATING);
		assert_int_equal(d.next.pos.members, 2);
		assert_int_equal(d.send, 1);
		assert_int_equal(d.next.step_deadline_ms, 0);
		r = d.next;
		/* a compensation refused is retried */
		d = ev_on(&f, &r, SAGA_EV_REFUSED, 0, SAGA_FLOW_COMPENSATING, 0, "x", NOW + 3);
		assert_string_equal(d.event_name, "transient");
		assert_int_equal(d.next.attempts, 1);
		assert_int_equal(d.next.pos.phase, SAGA_FLOW_COMPENSATING);
		/* the refused member's compensation is not in flight */
		d = ev_on(&f, &r, SAGA_EV_SUCCESS, 0, SAGA_FLOW_COMPENSATING, 1, "", NOW + 3);
		assert_true(d.ignored);
		d = ev_on(&f, &r, SAGA_EV_SUCCESS, 0, SAGA_FLOW_COMPENSATING, 0, "", NOW + 4);
		assert_int_equal(d.next.pos.step, -1);
		assert_int_equal(d.next.pos.phase, SAGA_FLOW_COMPENSATING);
		assert_true(saga_flow_is_terminal(&f, &d.next.pos));
		assert_int_equal(d.send, 0);
		assert_int_equal(d.next.next_attempt_ms, 0);
		assert_string_equal(d.next.reason, "seat_refused");
	}
	/* a known reason is kept */
	saga_flow_row r = saga_flow_start(&f, NOW, &pol);
	saga_flow_decision d
	    = ev_on(&f, &r, SAGA_EV_REFUSED, 0, SAGA_FLOW_FORWARD, 0, REASON_OUT_OF_STOCK, NOW);
	assert_string_equal(d.next.reason, REASON_OUT_OF_STOCK);
	assert_int_equal(d.next.pos.members, 1);
	assert_int_equal(d.send, 2);
}

static void test_group_deadline(void **st)
{
	(void)st;
	saga_flow f = booking();
	saga_flow_row r = saga_flow_start(&f, NOW, &pol);
	saga_flow_decision d = ev_on(&f, &r, SAGA_EV_SUCCESS, 0, SAGA_FLOW_FORWARD, 0, "", NOW + 1);
	r = d.next;
	/* before the deadline: ignored */
	d = ev_on(&f, &r, SAGA_EV_DEADLINE, 0, SAGA_FLOW_FORWARD, -1, NULL, NOW + 4999);
	assert_true(d.ignored);
	/* a transient failure past it is the deadline */
	d = ev_on(&f, &r, SAGA_EV_TRANSIENT, 0, SAGA_FLOW_FORWARD, 1, "", NOW + 5000);
	assert_string_equal(d.event_name, "deadline");
	d = ev_on(&f, &r, SAGA_EV_DEADLINE, 0, SAGA_FLOW_FORWARD, -1, NULL, NOW + 5000);
	assert_string_equal(d.event_name, "deadline");
	assert_string_equal(d.next.reason, REASON_TIMEOUT);
	assert_int_equal(d.next.pos.step, 0);
	assert_int_equal(d.next.pos.phase, SAGA_FLOW_COMPENSATING);
	assert_int_equal(d.next.pos.members, 0);
	assert_int_equal(d.send, 3); /* both compensated: the outcome of each is unknown */
	r = d.next;
	d = ev_on(&f, &r, SAGA_EV_SUCCESS, 0, SAGA_FLOW_COMPENSATING, 1, "", NOW + 5001);
	assert_int_equal(d.next.pos.members, 2);
	assert_int_equal(d.send, 0);
	assert_int_equal(d.next.pos.step, 0);
	r = d.next;
	d = ev_on(&f, &r, SAGA_EV_SUCCESS, 0, SAGA_FLOW_COMPENSATING, 0, "", NOW + 5002);
	assert_int_equal(d.next.pos.step, -1);
	assert_string_equal(d.next.reason, REASON_TIMEOUT);
}

/* a step's own deadline_ms and retry replace the policy's for that step
 * (its command and its compensation); a group takes the largest of its
 * members'; a step without its own keeps the policy's */
static void test_step_timing(void **st)
{
	(void)st;
	saga_flow f = booking();
	f.steps[0].deadline_ms = 700;   /* room */
	f.steps[1].deadline_ms = 900;   /* seat: the group waits 900 */
	f.steps[1].backoff_base_ms = 7; /* seat */
	f.steps[1].backoff_cap_ms = 9;
	f.steps[2].deadline_ms = 30000; /* pay */
	f.steps[3].backoff_cap_ms = 20; /* confirm: its retries */
	f.steps[3].attention_after = 2;
	saga_flow_row r = saga_flow_start(&f, NOW, &pol);
	assert_int_equal(r.step_deadline_ms, NOW + 900);
	saga_policy sp = saga_flow_stage_policy(&f, &r.pos, &pol);
	assert_int_equal(sp.step_timeout_ms, 900);
	assert_int_equal(sp.backoff_base_ms, 50); /* room has the policy's 50 > 7 */
	assert_int_equal(sp.backoff_cap_ms, 800); /* the policy's 800 > 9 */
	assert_int_equal(sp.attention_after, 3);
	/* a retry of the group: within the policy's cap (800) */
	saga_flow_decision d
	    = ev_on(&f, &r, SAGA_EV_TRANSIENT, 0, SAGA_FLOW_FORWARD, 0, "", NOW + 1);
	assert_false(d.state_changed);
	assert_true(d.next.next_attempt_ms >= NOW + 2 && d.next.next_attempt_ms <= NOW + 1 + 50);
	/* the deadline is the group's: 899 ms in, ignored; at 900 compensated */
	d = ev_on(&f, &r, SAGA_EV_DEADLINE, 0, SAGA_FLOW_FORWARD, -1, NULL, NOW + 899);
	assert_true(d.ignored);
	d = ev_on(&f, &r, SAGA_EV_DEADLINE, 0, SAGA_FLOW_FORWARD, -1, NULL, NOW + 900);
	assert_string_equal(d.event_name, "deadline");
	/* the pivot entered at NOW + 10 gets its own 30000 */
	d = ev_on(&f, &r, SAGA_EV_SUCCESS, 0, SAGA_FLOW_FORWARD, 0, "", NOW + 5);
	d = ev_on(&f, &d.next, SAGA_EV_SUCCESS, 0, SAGA_FLOW_FORWARD, 1, "", NOW + 10);
	assert_int_equal(d.next.pos.step, 2);
	assert_int_equal(d.next.step_deadline_ms, NOW + 10 + 30000);
	/* the retriable step after it: no deadline, its cap and attention */
	d = ev_on(&f, &d.next, SAGA_EV_SUCCESS, 2, SAGA_FLOW_FORWARD, -1, "", NOW + 20);
	assert_int_equal(d.next.pos.step, 3);
	assert_int_equal(d.next.step_deadline_ms, 0);
	r = d.next;
	for (int i = 1; i <= 2; i++) {
		d = ev_on(&f, &r, SAGA_EV_TRANSIENT, 3, SAGA_FLOW_FORWARD, -1, "", NOW + 20 + i);
		assert_int_equal(d.next.attempts, i);
		assert_true(d.next.next_attempt_ms - (NOW + 20 + i) <= 20); /* cap 20, not 800 */
		assert_int_equal(d.next.attention, i >= 2);                 /* after 2, not 3 */
		assert_int_equal(d.attention_raised, i == 2);
		r = d.next;
	}
	/* the order saga over a flow with its own timing: saga_flow_order_start
	 * and saga_flow_order_transition */
	saga_flow o = saga_flow_order;
	o.steps[0].deadline_ms = 1234;
	o.steps[1].deadline_ms = 4321;
	saga s = saga_flow_order_start(&o, NOW, &pol);
	assert_int_equal(s.state, SAGA_STATE_RESERVING);
	assert_int_equal(s.step_deadline_ms, NOW + 1234);
	saga_event ok = {.kind = SAGA_EV_SUCCESS, .cmd = SAGA_CMD_RESERVE_STOCK, .reason = ""};
	saga_decision od;
	saga_flow_order_transition(&o, &s, &ok, NOW + 3, 1, &pol, &od);
	assert_int_equal(od.next.state, SAGA_STATE_CHARGING);
	assert_int_equal(od.next.step_deadline_ms, NOW + 3 + 4321);
	/* saga_transition keeps the policy's */
	saga_transition(&s, &ok, NOW + 3, 1, &pol, &od);
	assert_int_equal(od.next.step_deadline_ms, NOW + 3 + 5000);
}

static saga_flow_row at_pivot(const saga_flow *f)
{
	saga_flow_row r = saga_flow_start(f, NOW, &pol);
	saga_flow_decision d = ev_on(f, &r, SAGA_EV_SUCCESS, 0, SAGA_FLOW_FORWARD, 0, "", NOW);
	d = ev_on(f, &d.next, SAGA_EV_SUCCESS, 0, SAGA_FLOW_FORWARD, 1, "", NOW);
	assert_int_equal(d.next.pos.step, 2);
	return d.next;
}

static void test_pivot_refused_and_deadline(void **st)
{
	(void)st;
	saga_flow f = booking();
	saga_flow_row r = at_pivot(&f);
	/* refused: the pivot did not act; both members are compensated */
	saga_flow_decision d = ev_on(
	    &f, &r, SAGA_EV_REFUSED, 2, SAGA_FLOW_FORWARD, -1, REASON_PAYMENT_DECLINED, NOW + 1);
	assert_int_equal(d.next.pos.step, 0);
	assert_int_equal(d.next.pos.phase, SAGA_FLOW_COMPENSATING);
	assert_int_equal(d.send, 3);
	assert_string_equal(d.next.reason, REASON_PAYMENT_DECLINED);
	/* its deadline: its compensation first, then both members */
	d = ev_on(&f, &r, SAGA_EV_DEADLINE, 0, SAGA_FLOW_FORWARD, -1, NULL, NOW + 5000);
	assert_int_equal(d.next.pos.step, 2);
	assert_int_equal(d.next.pos.phase, SAGA_FLOW_COMPENSATING);
	assert_int_equal(d.send, 1);
	r = d.next;
	d = ev_on(&f, &r, SAGA_EV_SUCCESS, 2, SAGA_FLOW_COMPENSATING, -1, "", NOW + 5001);
	assert_int_equal(d.next.pos.step, 0);
	assert_int_equal(d.next.pos.phase, SAGA_FLOW_COMPENSATING);
	assert_int_equal(d.next.pos.members, 0);
	assert_int_equal(d.send, 3);
}

static void test_after_pivot_only_forward(void **st)
{
	(void)st;
	saga_flow f = booking();
	saga_flow_row r = at_pivot(&f);
	saga_flow_decision d
	    = ev_on(&f, &r, SAGA_EV_SUCCESS, 2, SAGA_FLOW_FORWARD, -1, "", NOW + 1);
	assert_int_equal(d.next.pos.step, 3);
	assert_int_equal(d.send, 1);
	assert_int_equal(d.next.step_deadline_ms, 0); /* a retriable step has none */
	r = d.next;
	int64_t now = NOW + 2;
	for (int i = 0; i < 10; i++) {
		d = ev_on(&f, &r, i % 2 ? SAGA_EV_REFUSED : SAGA_EV_TRANSIENT, 3, SAGA_FLOW_FORWARD,
		    -1, "no", now);
		assert_int_equal(d.next.pos.step, 3);
		assert_int_equal(d.next.pos.phase, SAGA_FLOW_FORWARD);
		assert_int_equal(d.send, 0);
		assert_int_equal(d.next.attempts, i + 1);
		assert_int_equal(d.next.attention, i + 1 >= pol.attention_after);
		r = d.next;
		d = ev_on(&f, &r, SAGA_EV_DEADLINE, 0, SAGA_FLOW_FORWARD, -1, NULL, now + 1000000);
		assert_true(d.ignored);
		now += 1000;
	}
	assert_string_equal(r.reason, "confirm_refused");
	d = ev_on(&f, &r, SAGA_EV_SUCCESS, 3, SAGA_FLOW_FORWARD, -1, "", now);
	assert_int_equal(d.next.pos.step, 4);
	assert_true(saga_flow_is_terminal(&f, &d.next.pos));
	assert_string_equal(d.next.reason, "");
	assert_false(d.next.attention);
	/* terminal: everything is ignored */
	r = d.next;
	d = ev_on(&f, &r, SAGA_EV_DEADLINE, 0, SAGA_FLOW_FORWARD, -1, NULL, now);
	assert_true(d.ignored);
}

/* rule 11: a cancel compensates a stage before the pivot, or the pivot,
 * from that stage (every member, whatever succeeded), at any time; it is
 * refused past the pivot, while compensating and once cancelled */
static void test_cancel(void **st)
{
	(void)st;
	saga_flow f = booking();
	saga_flow_row r = saga_flow_start(&f, NOW, &pol);
	/* the group, one member done, long before its deadline */
	saga_flow_decision d = ev_on(&f, &r, SAGA_EV_SUCCESS, 0, SAGA_FLOW_FORWARD, 0, "", NOW + 1);
	r = d.next;
	d = ev_on(&f, &r, SAGA_EV_CANCEL, 0, SAGA_FLOW_FORWARD, -1, NULL, NOW + 2);
	assert_false(d.ignored);
	assert_null(d.refused);
	assert_true(d.state_changed);
	assert_string_equal(d.event_name, "cancel");
	assert_string_equal(d.next.reason, REASON_CANCEL_REQUESTED);
	assert_int_equal(d.next.pos.step, 0);
	assert_int_equal(d.next.pos.phase, SAGA_FLOW_COMPENSATING);
	assert_int_equal(d.next.pos.members, 0);
	assert_int_equal(d.send, 3); /* both members: either may have acted */
	assert_int_equal(d.next.attempts, 0);
	assert_int_equal(d.next.step_deadline_ms, 0);
	assert_int_equal(d.next.next_attempt_ms, NOW + 2);
	/* compensating: refused, nothing changes */
	saga_flow_row comp = d.next;
	d = ev_on(&f, &comp, SAGA_EV_CANCEL, 0, SAGA_FLOW_FORWARD, -1, NULL, NOW + 3);
	assert_true(d.ignored);
	assert_false(d.state_changed);
	assert_string_equal(d.refused, REASON_COMPENSATING);
	assert_memory_equal(&d.next, &comp, sizeof comp);
	/* at the pivot: its compensation first (its outcome is unknown) */
	r = at_pivot(&f);
	d = ev_on(&f, &r, SAGA_EV_CANCEL, 0, SAGA_FLOW_FORWARD, -1, NULL, NOW + 1);
	assert_null(d.refused);
	assert_int_equal(d.next.pos.step, 2);
	assert_int_equal(d.next.pos.phase, SAGA_FLOW_COMPENSATING);
	assert_int_equal(d.send, 1);
	/* the pivot's success recorded first: refused past_pivot */
	d = ev_on(&f, &r, SAGA_EV_SUCCESS, 2, SAGA_FLOW_FORWARD, -1, "", NOW + 1);
	r = d.next;
	d = ev_on(&f, &r, SAGA_EV_CANCEL, 0, SAGA_FLOW_FORWARD, -1, NULL, NOW + 2);
	assert_true(d.ignored);
	assert_string_equal(d.refused, REASON_PAST_PIVOT);
	assert_int_equal(d.send, 0);
	assert_int_equal(d.next.pos.step, 3);
	/* completed: past_pivot; cancelled: cancelled */
	d = ev_on(&f, &r, SAGA_EV_SUCCESS, 3, SAGA_FLOW_FORWARD, -1, "", NOW + 3);
	d = ev_on(&f, &d.next, SAGA_EV_CANCEL, 0, SAGA_FLOW_FORWARD, -1, NULL, NOW + 4);
	assert_string_equal(d.refused, REASON_PAST_PIVOT);
	saga_flow_row done = {.pos = {.step = -1, .phase = SAGA_FLOW_COMPENSATING}};
	d = ev_on(&f, &done, SAGA_EV_CANCEL, 0, SAGA_FLOW_FORWARD, -1, NULL, NOW + 4);
	assert_true(d.ignored);
	assert_string_equal(d.refused, REASON_CANCELLED);
	/* every other event leaves refused NULL */
	d = ev_on(&f, &done, SAGA_EV_DEADLINE, 0, SAGA_FLOW_FORWARD, -1, NULL, NOW + 4);
	assert_null(d.refused);
	/* the order saga: CHARGING -> REFUNDING, RESERVING -> RELEASING */
	saga s = saga_start(NOW, &pol);
	saga_event ev = {.kind = SAGA_EV_CANCEL};
	saga_decision od;
	saga_transition(&s, &ev, NOW + 1, 1, &pol, &od);
	assert_int_equal(od.next.state, SAGA_STATE_RELEASING);
	assert_int_equal(od.send, SAGA_CMD_RELEASE_STOCK);
	s.state = SAGA_STATE_CHARGING;
	saga_transition(&s, &ev, NOW + 1, 1, &pol, &od);
	assert_int_equal(od.next.state, SAGA_STATE_REFUNDING);
	assert_int_equal(od.send, SAGA_CMD_REFUND_PAYMENT);
	s.state = SAGA_STATE_SHIPPING;
	s.step_deadline_ms = 0;
	saga_transition(&s, &ev, NOW + 1, 1, &pol, &od);
	assert_true(od.ignored);
	assert_int_equal(od.next.state, SAGA_STATE_SHIPPING);
}

static void test_flow_valid(void **st)
{
	(void)st;
	saga_flow f = booking();
	assert_true(saga_flow_valid(&f));
	f.steps[2].group = 0; /* the pivot in a group */
	assert_false(saga_flow_valid(&f));
	f = booking();
	f.steps[3].has_deadline = true;
	assert_false(saga_flow_valid(&f));
	f = booking();
	f.steps[1].group = 1;
	f.steps[2] = f.steps[0]; /* group 0 in two runs, before the pivot */
	f.steps[2].name = "again";
	f.steps[3].kind = SAGA_FLOW_PIVOT;
	f.steps[3].has_compensation = true;
	assert_false(saga_flow_valid(&f));
	f = booking();
	f.steps[0].group = -1;
	f.steps[1].group = -1;
	f.steps[0].kind = SAGA_FLOW_RETRIABLE; /* before the pivot */
	f.steps[0].has_compensation = false;
	f.steps[0].has_deadline = false;
	assert_false(saga_flow_valid(&f));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_order_equivalence),
	    cmocka_unit_test(test_order_equivalence_runs),
	    cmocka_unit_test(test_order_maps),
	    cmocka_unit_test(test_group_sent_and_waits),
	    cmocka_unit_test(test_group_member_refused),
	    cmocka_unit_test(test_group_deadline),
	    cmocka_unit_test(test_step_timing),
	    cmocka_unit_test(test_pivot_refused_and_deadline),
	    cmocka_unit_test(test_after_pivot_only_forward),
	    cmocka_unit_test(test_cancel),
	    cmocka_unit_test(test_flow_valid),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
