/* Unit tests of the pure saga state machine (orchestrator/saga/saga.c): every row
 * of the state table of saga-semantics.md, with its success, definitive
 * refusal and deadline columns, plus retries, backoff and stale replies. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "methods.h"
#include "saga.h"
#include "status.h"

#define NOW 1000000
static const saga_policy pol
    = {.step_timeout_ms = 5000, .backoff_base_ms = 50, .backoff_cap_ms = 800, .attention_after = 3};

static saga in_state(saga_state st)
{
	saga s = saga_start(NOW - 100, &pol);
	s.state = st;
	if (st != SAGA_STATE_RESERVING && st != SAGA_STATE_CHARGING)
		s.step_deadline_ms = 0;
	return s;
}

static saga_decision run(
    const saga *s, saga_event_kind kind, saga_command cmd, const char *reason, int64_t now)
{
	saga_event ev = {.kind = kind, .cmd = cmd, .reason = reason};
	saga_decision d;
	saga_transition(s, &ev, now, 12345, &pol, &d);
	return d;
}

static void test_start(void **st)
{
	(void)st;
	saga s = saga_start(NOW, &pol);
	assert_int_equal(s.state, SAGA_STATE_RESERVING);
	assert_int_equal(s.step_deadline_ms, NOW + 5000);
	assert_int_equal(s.next_attempt_ms, NOW);
	assert_int_equal(s.attempts, 0);
	assert_string_equal(s.reason, "");
}

/* RESERVING | ReserveStock | CHARGING | CANCELLED (out_of_stock / unknown_sku) | RELEASING */
static void test_reserving_success(void **st)
{
	(void)st;
	saga s = in_state(SAGA_STATE_RESERVING);
	saga_decision d = run(&s, SAGA_EV_SUCCESS, SAGA_CMD_RESERVE_STOCK, "", NOW);
	assert_false(d.ignored);
	assert_true(d.state_changed);
	assert_int_equal(d.next.state, SAGA_STATE_CHARGING);
	assert_int_equal(d.send, SAGA_CMD_CHARGE_PAYMENT);
	assert_int_equal(d.next.step_deadline_ms, NOW + 5000); /* a fresh step deadline */
	assert_int_equal(d.next.attempts, 0);
	assert_string_equal(d.event_name, "reply_ok");
}

static void test_reserving_refused(void **st)
{
	(void)st;
	const char *reasons[] = {REASON_OUT_OF_STOCK, REASON_UNKNOWN_SKU};
	for (int i = 0; i < 2; i++) {
		saga s = in_state(SAGA_STATE_RESERVING);
		saga_decision d = run(&s, SAGA_EV_REFUSED, SAGA_CMD_RESERVE_STOCK, reasons[i], NOW);
		assert_int_equal(d.next.state, SAGA_STATE_CANCELLED);
		assert_string_equal(d.next.reason, reasons[i]);
		assert_int_equal(d.send, SAGA_CMD_NONE); /* nothing reserved: no compensation */
		assert_int_equal(d.next.next_attempt_ms, 0);
		assert_string_equal(d.event_name, "refused");
	}
}

static void test_reserving_deadline(void **st)
{
	(void)st;
	saga s = in_state(SAGA_STATE_RESERVING);
	saga_decision d = run(&s, SAGA_EV_DEADLINE, SAGA_CMD_NONE, "", s.step_deadline_ms);
	assert_int_equal(d.next.state, SAGA_STATE_RELEASING); /* rule 4 */
	assert_string_equal(d.next.reason, REASON_TIMEOUT);
	assert_int_equal(d.send, SAGA_CMD_RELEASE_STOCK);
	assert_int_equal(d.next.step_deadline_ms, 0); /* compensations have none */
	assert_string_equal(d.event_name, "deadline");
}

static void test_deadline_not_yet(void **st)
{
	(void)st;
	saga s = in_state(SAGA_STATE_RESERVING);
	saga_decision d = run(&s, SAGA_EV_DEADLINE, SAGA_CMD_NONE, "", s.step_deadline_ms - 1);
	assert_true(d.ignored);
	assert_int_equal(d.next.state, SAGA_STATE_RESERVING);
}

/* CHARGING (pivot) | ChargePayment | SHIPPING | RELEASING (payment_declined) | REFUNDING */
static void test_charging_success(void **st)
{
	(void)st;
	saga s = in_state(SAGA_STATE_CHARGING);
	saga_decision d = run(&s, SAGA_EV_SUCCESS, SAGA_CMD_CHARGE_PAYMENT, "", NOW);
	assert_false(d.ignored);
	assert_true(d.state_changed);
	assert_int_equal(d.next.state, SAGA_STATE_SHIPPING);
	assert_int_equal(d.send, SAGA_CMD_SHIP_ORDER);
	assert_int_equal(d.next.step_deadline_ms, 0); /* a retriable step has no deadline */
	assert_int_equal(d.next.next_attempt_ms, NOW);
	assert_int_equal(d.next.attempts, 0);
	assert_string_equal(d.next.reason, "");
	assert_string_equal(d.event_name, "reply_ok");
}

/* SHIPPING | ShipOrder | COMPLETED | never refused: retried | none: retried */
static void test_shipping_success(void **st)
{
	(void)st;
	saga s = in_state(SAGA_STATE_SHIPPING);
	s.attempts = 4;
	s.attention = true;
	saga_decision d = run(&s, SAGA_EV_SUCCESS, SAGA_CMD_SHIP_ORDER, "", NOW);
	assert_true(d.state_changed);
	assert_int_equal(d.next.state, SAGA_STATE_COMPLETED);
	assert_int_equal(d.send, SAGA_CMD_NONE);
	assert_int_equal(d.next.next_attempt_ms, 0);
	assert_int_equal(d.next.attempts, 0);
	assert_false(d.next.attention); /* success clears the flag */
	assert_string_equal(d.next.reason, "");
}

/* After the pivot, only forward: a refusal (key_mismatch, INVALID_ARGUMENT,
 * anything definitive) and a transient failure of ShipOrder are retried
 * with backoff, never compensated (rule 3). */
static void test_shipping_failures_retried(void **st)
{
	(void)st;
	struct {
		saga_event_kind kind;
		const char *reason;
	} cases[] = {
	    {SAGA_EV_REFUSED, REASON_KEY_MISMATCH},
	    {SAGA_EV_REFUSED, "bad_field"},
	    {SAGA_EV_REFUSED, ""},
	    {SAGA_EV_TRANSIENT, ""},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		saga s = in_state(SAGA_STATE_SHIPPING);
		for (int32_t n = 1; n <= 2; n++) {
			saga_decision d = run(&s, cases[i].kind, SAGA_CMD_SHIP_ORDER,
			    cases[i].reason, NOW + 60000 * n); /* long after any step deadline */
			assert_false(d.ignored);
			assert_false(d.state_changed);
			assert_int_equal(d.next.state, SAGA_STATE_SHIPPING);
			assert_int_equal(d.send, SAGA_CMD_NONE);
			assert_int_equal(d.next.attempts, n);
			assert_int_equal(d.next.step_deadline_ms, 0);
			int64_t delay = d.next.next_attempt_ms - (NOW + 60000 * n);
			int64_t ceiling = n == 1 ? 50 : 100;
			assert_true(delay >= 1 && delay <= ceiling);
			/* never a reason to cancel; a refusal shows on the row
			 * (an unexpected reason as ship_refused) */
			const char *want = cases[i].kind == SAGA_EV_TRANSIENT ? ""
			    : strcmp(cases[i].reason, REASON_KEY_MISMATCH) == 0
			    ? REASON_KEY_MISMATCH
			    : "ship_refused";
			assert_string_equal(d.next.reason, want);
			assert_string_equal(d.event_name, "transient");
			s = d.next;
		}
	}
	/* the classification of ShipOrder's replies: a definitive code is a
	 * refusal, which SHIPPING retries all the same */
	saga_event e = saga_event_from_reply(
	    SAGA_CMD_SHIP_ORDER, RPC_ALREADY_EXISTS, REASON_KEY_MISMATCH, false);
	assert_int_equal(e.kind, SAGA_EV_REFUSED);
	saga s = in_state(SAGA_STATE_SHIPPING);
	saga_decision d;
	saga_transition(&s, &e, NOW, 1, &pol, &d);
	assert_int_equal(d.next.state, SAGA_STATE_SHIPPING);
	assert_int_equal(d.next.attempts, 1);
}

/* Attention after attention_after failed tries of ShipOrder, then the
 * slowest cadence (the backoff cap), retrying for ever. */
static void test_shipping_attention(void **st)
{
	(void)st;
	saga s = in_state(SAGA_STATE_SHIPPING);
	saga_decision d;
	for (int i = 1; i <= 2; i++) {
		d = run(&s, SAGA_EV_TRANSIENT, SAGA_CMD_SHIP_ORDER, "", NOW);
		assert_false(d.next.attention);
		assert_false(d.attention_raised);
		assert_true(d.next.next_attempt_ms < NOW + 800);
		s = d.next;
	}
	d = run(&s, SAGA_EV_REFUSED, SAGA_CMD_SHIP_ORDER, REASON_KEY_MISMATCH, NOW);
	assert_int_equal(d.next.state, SAGA_STATE_SHIPPING);
	assert_int_equal(d.next.attempts, 3);
	assert_true(d.next.attention);
	assert_true(d.attention_raised);
	assert_int_equal(d.next.next_attempt_ms, NOW + 800); /* the cap */
	s = d.next;
	for (int i = 0; i < 20; i++) {
		d = run(&s, SAGA_EV_TRANSIENT, SAGA_CMD_SHIP_ORDER, "", NOW + i);
		assert_int_equal(d.next.state, SAGA_STATE_SHIPPING);
		assert_true(d.next.attention);
		assert_false(d.attention_raised); /* raised once */
		assert_int_equal(d.next.next_attempt_ms, NOW + i + 800);
		s = d.next;
	}
	assert_int_equal(s.attempts, 23);
	/* the refusal's reason stays through transient tries, and a success
	 * completes the saga with no reason */
	assert_string_equal(s.reason, REASON_KEY_MISMATCH);
	d = run(&s, SAGA_EV_SUCCESS, SAGA_CMD_SHIP_ORDER, "", NOW + 30);
	assert_int_equal(d.next.state, SAGA_STATE_COMPLETED);
	assert_string_equal(d.next.reason, "");
}

/* SHIPPING has no step deadline: a DEADLINE event is ignored, whenever it
 * comes, and the try's timeout and lease are not cut. */
static void test_shipping_deadline_ignored(void **st)
{
	(void)st;
	saga s = in_state(SAGA_STATE_SHIPPING);
	assert_int_equal(s.step_deadline_ms, 0);
	saga_decision d = run(&s, SAGA_EV_DEADLINE, SAGA_CMD_NONE, "", NOW + 3600000);
	assert_true(d.ignored);
	assert_false(d.state_changed);
	assert_int_equal(d.send, SAGA_CMD_NONE);
	/* even with a deadline left in the row (a bug elsewhere), never
	 * compensated */
	s.step_deadline_ms = NOW;
	d = run(&s, SAGA_EV_DEADLINE, SAGA_CMD_NONE, "", NOW + 10);
	assert_true(d.ignored);
	d = run(&s, SAGA_EV_TRANSIENT, SAGA_CMD_SHIP_ORDER, "", NOW + 10);
	assert_false(d.ignored); /* retried, not taken for the deadline */
	assert_int_equal(d.next.state, SAGA_STATE_SHIPPING);
	assert_int_equal(d.next.attempts, 1);
	s.step_deadline_ms = 0;
	saga_policy p = pol;
	p.request_timeout_ms = 2000;
	p.request_timeout_max_ms = 8000;
	p.lease_grace_ms = 1000;
	s.attempts = 5;
	assert_int_equal(saga_try_timeout_ms(&s, NOW, &p), 8000);
	assert_int_equal(saga_lease_until_ms(&s, NOW, &p), NOW + 9000);
	/* a reply to another command is stale */
	d = run(&s, SAGA_EV_SUCCESS, SAGA_CMD_CHARGE_PAYMENT, "", NOW);
	assert_true(d.ignored);
}

static void test_charging_refused(void **st)
{
	(void)st;
	saga s = in_state(SAGA_STATE_CHARGING);
	saga_decision d
	    = run(&s, SAGA_EV_REFUSED, SAGA_CMD_CHARGE_PAYMENT, REASON_PAYMENT_DECLINED, NOW);
	assert_int_equal(d.next.state, SAGA_STATE_RELEASING);
	assert_string_equal(d.next.reason, REASON_PAYMENT_DECLINED);
	assert_int_equal(d.send, SAGA_CMD_RELEASE_STOCK);
	d = run(&s, SAGA_EV_REFUSED, SAGA_CMD_CHARGE_PAYMENT, REASON_UNKNOWN_ACCOUNT, NOW);
	assert_int_equal(d.next.state, SAGA_STATE_RELEASING);
	assert_string_equal(d.next.reason, REASON_UNKNOWN_ACCOUNT);
}

static void test_charging_deadline(void **st)
{
	(void)st;
	saga s = in_state(SAGA_STATE_CHARGING);
	saga_decision d = run(&s, SAGA_EV_DEADLINE, SAGA_CMD_NONE, "", s.step_deadline_ms + 10);
	assert_int_equal(d.next.state, SAGA_STATE_REFUNDING); /* it may have charged */
	assert_string_equal(d.next.reason, REASON_TIMEOUT);
	assert_int_equal(d.send, SAGA_CMD_REFUND_PAYMENT);
}

/* REFUNDING | RefundPayment | RELEASING | never refused: retried | retried */
static void test_refunding(void **st)
{
	(void)st;
	saga s = in_state(SAGA_STATE_REFUNDING);
	strcpy(s.reason, REASON_TIMEOUT);
	saga_decision d = run(&s, SAGA_EV_SUCCESS, SAGA_CMD_REFUND_PAYMENT, "", NOW);
	assert_int_equal(d.next.state, SAGA_STATE_RELEASING);
	assert_int_equal(d.send, SAGA_CMD_RELEASE_STOCK);
	assert_string_equal(d.next.reason, REASON_TIMEOUT); /* the cause is kept */

	d = run(&s, SAGA_EV_REFUSED, SAGA_CMD_REFUND_PAYMENT, "key_mismatch", NOW);
	assert_false(d.state_changed);
	assert_int_equal(d.next.state, SAGA_STATE_REFUNDING);
	assert_int_equal(d.next.attempts, 1);
	assert_true(d.next.next_attempt_ms > NOW);
	assert_int_equal(d.send, SAGA_CMD_NONE);

	d = run(&s, SAGA_EV_DEADLINE, SAGA_CMD_NONE, "", NOW + 100000);
	assert_true(d.ignored); /* compensations have no deadline */
}

/* Rule R3 (docs/saga-semantics.md, "Retention"): a saga past the horizon
 * is parked in its state, flagged, never due again, nothing sent; and a
 * command refused past_horizon parks it the same (never a cancel without
 * compensation: an earlier try of a step may have applied). */
static void test_past_horizon_parks(void **st)
{
	(void)st;
	const saga_state states[] = {SAGA_STATE_RESERVING, SAGA_STATE_CHARGING, SAGA_STATE_SHIPPING,
	    SAGA_STATE_REFUNDING, SAGA_STATE_RELEASING};
	const saga_command cmds[] = {SAGA_CMD_RESERVE_STOCK, SAGA_CMD_CHARGE_PAYMENT,
	    SAGA_CMD_SHIP_ORDER, SAGA_CMD_REFUND_PAYMENT, SAGA_CMD_RELEASE_STOCK};
	for (size_t i = 0; i < sizeof states / sizeof states[0]; i++) {
		saga s = in_state(states[i]);
		s.attempts = 1;
		for (int how = 0; how < 2; how++) {
			saga_decision d = how == 0
			    ? run(&s, SAGA_EV_PAST_HORIZON, SAGA_CMD_NONE, "", NOW)
			    : run(&s, SAGA_EV_REFUSED, cmds[i], REASON_PAST_HORIZON, NOW);
			assert_false(d.ignored);
			assert_false(d.state_changed);
			assert_int_equal(d.next.state, states[i]);
			assert_true(d.next.attention);
			assert_true(d.attention_raised);
			assert_string_equal(d.next.reason, REASON_PAST_HORIZON);
			assert_int_equal(d.next.next_attempt_ms, 0); /* never due */
			assert_int_equal(d.next.step_deadline_ms, 0);
			assert_int_equal(d.send, SAGA_CMD_NONE);
			assert_string_equal(d.event_name, "past_horizon");
		}
	}
	/* already flagged: not raised again; a finished saga is left alone */
	saga s = in_state(SAGA_STATE_REFUNDING);
	s.attention = true;
	assert_false(run(&s, SAGA_EV_PAST_HORIZON, SAGA_CMD_NONE, "", NOW).attention_raised);
	s = in_state(SAGA_STATE_COMPLETED);
	assert_true(run(&s, SAGA_EV_PAST_HORIZON, SAGA_CMD_NONE, "", NOW).ignored);
}

/* Rule R5: a step refused saga_id_reused (a participant keeps another
 * saga's record under this id) parks its saga: neither cancelled (a copy
 * still on the way applies once that record is deleted) nor compensated;
 * a compensation or the retriable step so refused is retried (rule 3),
 * which succeeds once the other record is gone. */
static void test_saga_id_reused(void **st)
{
	(void)st;
	const saga_state steps[] = {SAGA_STATE_RESERVING, SAGA_STATE_CHARGING};
	const saga_command step_cmds[] = {SAGA_CMD_RESERVE_STOCK, SAGA_CMD_CHARGE_PAYMENT};
	for (size_t i = 0; i < 2; i++) {
		saga s = in_state(steps[i]);
		saga_decision d
		    = run(&s, SAGA_EV_REFUSED, step_cmds[i], REASON_SAGA_ID_REUSED, NOW);
		assert_false(d.ignored);
		assert_false(d.state_changed);
		assert_int_equal(d.next.state, steps[i]);
		assert_true(d.next.attention);
		assert_true(d.attention_raised);
		assert_string_equal(d.next.reason, REASON_SAGA_ID_REUSED);
		assert_int_equal(d.next.next_attempt_ms, 0); /* never due */
		assert_int_equal(d.next.step_deadline_ms, 0);
		assert_int_equal(d.send, SAGA_CMD_NONE);
		assert_string_equal(d.event_name, "saga_id_reused");
		/* a late reply of another command changes nothing */
		assert_true(
		    run(&s, SAGA_EV_REFUSED, SAGA_CMD_SHIP_ORDER, REASON_SAGA_ID_REUSED, NOW)
		        .ignored);
	}
	const saga_state forever[]
	    = {SAGA_STATE_SHIPPING, SAGA_STATE_REFUNDING, SAGA_STATE_RELEASING};
	const saga_command forever_cmds[]
	    = {SAGA_CMD_SHIP_ORDER, SAGA_CMD_REFUND_PAYMENT, SAGA_CMD_RELEASE_STOCK};
	for (size_t i = 0; i < 3; i++) {
		saga s = in_state(forever[i]);
		saga_decision d
		    = run(&s, SAGA_EV_REFUSED, forever_cmds[i], REASON_SAGA_ID_REUSED, NOW);
		assert_false(d.state_changed);
		assert_int_equal(d.next.state, forever[i]);
		assert_int_equal(d.send, SAGA_CMD_NONE);
		assert_int_equal(d.next.attempts, 1);
		assert_true(d.next.next_attempt_ms > NOW); /* retried */
		assert_string_equal(d.event_name, "transient");
	}
}

/* RELEASING | ReleaseStock | CANCELLED | never refused: retried | retried */
static void test_releasing(void **st)
{
	(void)st;
	saga s = in_state(SAGA_STATE_RELEASING);
	strcpy(s.reason, REASON_PAYMENT_DECLINED);
	saga_decision d = run(&s, SAGA_EV_SUCCESS, SAGA_CMD_RELEASE_STOCK, "", NOW);
	assert_int_equal(d.next.state, SAGA_STATE_CANCELLED);
	assert_string_equal(d.next.reason, REASON_PAYMENT_DECLINED);
	assert_int_equal(d.send, SAGA_CMD_NONE);

	d = run(&s, SAGA_EV_TRANSIENT, SAGA_CMD_RELEASE_STOCK, "", NOW);
	assert_int_equal(d.next.state, SAGA_STATE_RELEASING);
	assert_int_equal(d.next.attempts, 1);
	d = run(&s, SAGA_EV_DEADLINE, SAGA_CMD_NONE, "", NOW + 100000);
	assert_true(d.ignored);
}

static void test_terminal_ignores_everything(void **st)
{
	(void)st;
	saga_state terms[] = {SAGA_STATE_COMPLETED, SAGA_STATE_CANCELLED};
	saga_event_kind kinds[]
	    = {SAGA_EV_SUCCESS, SAGA_EV_REFUSED, SAGA_EV_TRANSIENT, SAGA_EV_DEADLINE};
	for (int i = 0; i < 2; i++)
		for (int k = 0; k < 4; k++) {
			saga s = in_state(terms[i]);
			saga_decision d = run(&s, kinds[k], SAGA_CMD_CHARGE_PAYMENT, "", NOW);
			assert_true(d.ignored);
			assert_int_equal(d.next.state, terms[i]);
			assert_int_equal(d.send, SAGA_CMD_NONE);
		}
}

/* A late or duplicated reply to an earlier command makes no transition. */
static void test_stale_reply_ignored(void **st)
{
	(void)st;
	saga s = in_state(SAGA_STATE_CHARGING);
	saga_decision d = run(&s, SAGA_EV_SUCCESS, SAGA_CMD_RESERVE_STOCK, "", NOW);
	assert_true(d.ignored);
	s = in_state(SAGA_STATE_RELEASING);
	d = run(&s, SAGA_EV_REFUSED, SAGA_CMD_RESERVE_STOCK, REASON_TOMBSTONE, NOW);
	assert_true(d.ignored);
	d = run(&s, SAGA_EV_SUCCESS, SAGA_CMD_CHARGE_PAYMENT, "", NOW);
	assert_true(d.ignored);
}

static void test_step_transient_retries_until_deadline(void **st)
{
	(void)st;
	saga s = in_state(SAGA_STATE_CHARGING);
	saga_decision d = run(&s, SAGA_EV_TRANSIENT, SAGA_CMD_CHARGE_PAYMENT, "", NOW);
	assert_false(d.state_changed);
	assert_int_equal(d.next.state, SAGA_STATE_CHARGING);
	assert_int_equal(d.next.attempts, 1);
	assert_true(d.next.next_attempt_ms > NOW && d.next.next_attempt_ms <= NOW + 50);
	/* a retry never waits past the deadline */
	s.step_deadline_ms = NOW + 10;
	s.attempts = 20;
	d = run(&s, SAGA_EV_TRANSIENT, SAGA_CMD_CHARGE_PAYMENT, "", NOW);
	assert_int_equal(d.next.next_attempt_ms, NOW + 10);
	/* nor starts with less than SAGA_TRY_GRAIN_MS of the step left: it
	 * waits for the deadline (a backoff of at most 50 ms, 120 ms left) */
	s.step_deadline_ms = NOW + 120;
	s.attempts = 0;
	d = run(&s, SAGA_EV_TRANSIENT, SAGA_CMD_CHARGE_PAYMENT, "", NOW);
	assert_int_equal(d.next.next_attempt_ms, NOW + 120);
	/* with more left, the retry keeps its backoff */
	s.step_deadline_ms = NOW + 1000;
	d = run(&s, SAGA_EV_TRANSIENT, SAGA_CMD_CHARGE_PAYMENT, "", NOW);
	assert_true(d.next.next_attempt_ms > NOW && d.next.next_attempt_ms <= NOW + 50);
	s.step_deadline_ms = NOW + 10;
	s.attempts = 20;
	/* a transient failure at or past the deadline is the deadline */
	d = run(&s, SAGA_EV_TRANSIENT, SAGA_CMD_CHARGE_PAYMENT, "", NOW + 10);
	assert_int_equal(d.next.state, SAGA_STATE_REFUNDING);
	assert_int_equal(d.send, SAGA_CMD_REFUND_PAYMENT);
	assert_string_equal(d.next.reason, REASON_TIMEOUT);
}

static void test_attention_after_n(void **st)
{
	(void)st;
	saga s = in_state(SAGA_STATE_RELEASING);
	saga_decision d;
	for (int i = 1; i <= 2; i++) {
		d = run(&s, SAGA_EV_TRANSIENT, SAGA_CMD_RELEASE_STOCK, "", NOW);
		assert_false(d.next.attention);
		assert_false(d.attention_raised);
		s = d.next;
	}
	d = run(&s, SAGA_EV_TRANSIENT, SAGA_CMD_RELEASE_STOCK, "", NOW);
	assert_int_equal(d.next.attempts, 3);
	assert_true(d.next.attention);
	assert_true(d.attention_raised);
	assert_int_equal(d.next.next_attempt_ms, NOW + 800); /* the slowest cadence */
	s = d.next;
	d = run(&s, SAGA_EV_TRANSIENT, SAGA_CMD_RELEASE_STOCK, "", NOW);
	assert_true(d.next.attention);
	assert_false(d.attention_raised); /* raised once */
	/* success clears it */
	d = run(&s, SAGA_EV_SUCCESS, SAGA_CMD_RELEASE_STOCK, "", NOW);
	assert_int_equal(d.next.state, SAGA_STATE_CANCELLED);
	assert_false(d.next.attention);
}

static void test_backoff_full_jitter_capped(void **st)
{
	(void)st;
	for (uint64_t r = 0; r < 2000; r += 7) {
		int64_t b1 = saga_backoff_ms(1, r, &pol);
		int64_t b3 = saga_backoff_ms(3, r, &pol);
		int64_t b30 = saga_backoff_ms(30, r, &pol);
		assert_true(b1 >= 1 && b1 <= 50);
		assert_true(b3 >= 1 && b3 <= 200);
		assert_true(b30 >= 1 && b30 <= 800);
	}
	assert_int_equal(saga_backoff_ms(1, 49, &pol), 50);
	assert_int_equal(saga_backoff_ms(30, 799, &pol), 800);
}

static void test_event_from_reply(void **st)
{
	(void)st;
	saga_event e = saga_event_from_reply(SAGA_CMD_RESERVE_STOCK, RPC_OK, "", false);
	assert_int_equal(e.kind, SAGA_EV_SUCCESS);
	e = saga_event_from_reply(
	    SAGA_CMD_RESERVE_STOCK, RPC_FAILED_PRECONDITION, REASON_OUT_OF_STOCK, false);
	assert_int_equal(e.kind, SAGA_EV_REFUSED);
	assert_string_equal(e.reason, REASON_OUT_OF_STOCK);
	e = saga_event_from_reply(SAGA_CMD_RESERVE_STOCK, RPC_NOT_FOUND, REASON_UNKNOWN_SKU, false);
	assert_int_equal(e.kind, SAGA_EV_REFUSED);
	e = saga_event_from_reply(SAGA_CMD_RESERVE_STOCK, RPC_ABORTED, REASON_TOMBSTONE, false);
	assert_int_equal(e.kind, SAGA_EV_REFUSED);
	int transient[] = {RPC_UNAVAILABLE, RPC_DEADLINE_EXCEEDED, RPC_INTERNAL, RPC_UNKNOWN,
	    RPC_RESOURCE_EXHAUSTED, 99};
	for (size_t i = 0; i < sizeof transient / sizeof transient[0]; i++)
		assert_int_equal(
		    saga_event_from_reply(SAGA_CMD_CHARGE_PAYMENT, transient[i], "", false).kind,
		    SAGA_EV_TRANSIENT);
	e = saga_event_from_reply(SAGA_CMD_CHARGE_PAYMENT, RPC_OK, "", true);
	assert_int_equal(e.kind, SAGA_EV_TRANSIENT); /* no reply is never success */
}

static void test_names(void **st)
{
	(void)st;
	assert_int_equal(saga_state_parse("charging"), SAGA_STATE_CHARGING);
	assert_int_equal(saga_state_parse("CANCELLED"), SAGA_STATE_CANCELLED);
	assert_int_equal(saga_state_parse("nope"), SAGA_STATE_UNSPECIFIED);
	assert_string_equal(saga_state_name(SAGA_STATE_REFUNDING), "REFUNDING");
	assert_string_equal(saga_command_name(SAGA_CMD_RELEASE_STOCK), "ReleaseStock");
	assert_int_equal(saga_command_of(SAGA_STATE_COMPLETED), SAGA_CMD_NONE);
	assert_int_equal(saga_state_parse("shipping"), SAGA_STATE_SHIPPING);
	assert_string_equal(saga_state_name(SAGA_STATE_SHIPPING), "SHIPPING");
	assert_int_equal(saga_command_of(SAGA_STATE_SHIPPING), SAGA_CMD_SHIP_ORDER);
	assert_string_equal(saga_command_name(SAGA_CMD_SHIP_ORDER), "ShipOrder");
	assert_string_equal(
	    saga_command_method(SAGA_CMD_SHIP_ORDER), "/sagas.v1.Shipping/ShipOrder");
	assert_true(saga_is_retriable(SAGA_STATE_SHIPPING));
	assert_false(saga_is_compensating(SAGA_STATE_SHIPPING));
	assert_false(saga_is_terminal(SAGA_STATE_SHIPPING));
	assert_string_equal(saga_state_name((saga_state)8), "UNSPECIFIED");
}

/* Each command is sent as a method of the table of methods (methods.h):
 * its path, the row's own pointer (METHOD_PATH), the method named after the
 * command, one only the orchestrator role may call; none for
 * SAGA_CMD_NONE. */
static void test_command_methods(void **st)
{
	(void)st;
	static const char *const paths[SAGA_CMD_LAST + 1] = {
	    [SAGA_CMD_RESERVE_STOCK] = "/sagas.v1.Stock/ReserveStock",
	    [SAGA_CMD_CHARGE_PAYMENT] = "/sagas.v1.Payment/ChargePayment",
	    [SAGA_CMD_REFUND_PAYMENT] = "/sagas.v1.Payment/RefundPayment",
	    [SAGA_CMD_RELEASE_STOCK] = "/sagas.v1.Stock/ReleaseStock",
	    [SAGA_CMD_SHIP_ORDER] = "/sagas.v1.Shipping/ShipOrder",
	};
	assert_null(saga_command_method(SAGA_CMD_NONE));
	for (int c = 1; c <= SAGA_CMD_LAST; c++) {
		const char *m = saga_command_method((saga_command)c);
		assert_non_null(m);
		assert_string_equal(m, paths[c]);
		enum method_id id = method_find(m);
		assert_int_not_equal(id, METHOD_NONE);
		assert_ptr_equal(m, METHOD_PATH(id));
		assert_string_equal(method_table[id].name, saga_command_name((saga_command)c));
		assert_int_equal(method_table[id].roles, AUTHZ_ORCHESTRATOR);
	}
}

/* Rule T4: each try of a step waits twice as long as the one before, at
 * most request_timeout_max_ms, and never past the step deadline, so the last
 * try waits for all that is left. */
static void test_try_timeout_grows_within_deadline(void **st)
{
	(void)st;
	saga_policy p = pol;
	p.request_timeout_ms = 1000;
	p.request_timeout_max_ms = 6000;
	p.step_timeout_ms = 60000;
	saga s = saga_start(NOW, &p); /* deadline NOW + 60000 */
	const int64_t want[] = {1000, 2000, 4000, 6000, 6000, 6000};
	for (int32_t a = 0; a < 6; a++) {
		s.attempts = a;
		assert_int_equal(saga_try_timeout_ms(&s, NOW, &p), want[a]);
	}
	/* 2,500 ms left of the step: the fourth try waits exactly that */
	s.attempts = 3;
	assert_int_equal(saga_try_timeout_ms(&s, NOW + 57500, &p), 2500);
	/* cut by the deadline: rounded down to 100 ms (SAGA_TRY_GRAIN_MS), so
	 * that tries due together share a timeout and a frame; under 100 ms
	 * left, exactly what is left */
	assert_int_equal(saga_try_timeout_ms(&s, NOW + 57050, &p), 2900);
	assert_int_equal(saga_try_timeout_ms(&s, NOW + 59901, &p), 99);
	/* at or past the deadline: 1 ms, never 0 or negative */
	assert_int_equal(saga_try_timeout_ms(&s, NOW + 60000, &p), 1);
	assert_int_equal(saga_try_timeout_ms(&s, NOW + 70000, &p), 1);
	/* a step timeout shorter than the request timeout is valid: the first
	 * try is cut at the deadline */
	p.step_timeout_ms = 300;
	saga shortstep = saga_start(NOW, &p);
	assert_int_equal(saga_try_timeout_ms(&shortstep, NOW, &p), 300);
	/* a compensation has no deadline: only the cap bounds it; no max set
	 * means the first try's timeout */
	saga comp = in_state(SAGA_STATE_RELEASING);
	comp.attempts = 40;
	assert_int_equal(saga_try_timeout_ms(&comp, NOW, &p), 6000);
	p.request_timeout_max_ms = 0;
	assert_int_equal(saga_try_timeout_ms(&comp, NOW, &p), 1000);
}

/* Rule T5: a lease is the try's timeout plus the grace, never past the
 * step deadline; a compensation's is not cut. */
static void test_lease_never_past_deadline(void **st)
{
	(void)st;
	saga_policy p = pol;
	p.request_timeout_ms = 5000;
	p.request_timeout_max_ms = 30000;
	p.lease_grace_ms = 1000;
	p.step_timeout_ms = 2000; /* shorter than a request: the case */
	saga s = saga_start(NOW, &p);
	assert_int_equal(saga_lease_until_ms(&s, NOW, &p), NOW + 2000);
	assert_int_equal(saga_first_lease_ms(&p), 2000);
	p.step_timeout_ms = 60000;
	s = saga_start(NOW, &p);
	assert_int_equal(saga_lease_until_ms(&s, NOW, &p), NOW + 5000 + 1000);
	assert_int_equal(saga_first_lease_ms(&p), 5000 + 1000);
	s.attempts = 2; /* 20,000 ms try */
	assert_int_equal(saga_lease_until_ms(&s, NOW, &p), NOW + 21000);
	assert_int_equal(saga_lease_until_ms(&s, NOW + 50000, &p), NOW + 60000);
	/* the try's rounding does not shorten the lease: with no grace, a
	 * try cut at the deadline still leases until the deadline */
	p.lease_grace_ms = 0;
	assert_int_equal(saga_lease_until_ms(&s, NOW + 57050, &p), NOW + 60000);
	p.lease_grace_ms = 1000;
	/* a deadline already passed: the lease is the deadline, so the next
	 * sweep claims it */
	assert_int_equal(saga_lease_until_ms(&s, NOW + 61000, &p), NOW + 60000);
	saga comp = in_state(SAGA_STATE_REFUNDING);
	comp.attempts = 1;
	assert_int_equal(saga_lease_until_ms(&comp, NOW, &p), NOW + 10000 + 1000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_start),
	    cmocka_unit_test(test_reserving_success),
	    cmocka_unit_test(test_reserving_refused),
	    cmocka_unit_test(test_reserving_deadline),
	    cmocka_unit_test(test_deadline_not_yet),
	    cmocka_unit_test(test_charging_success),
	    cmocka_unit_test(test_charging_refused),
	    cmocka_unit_test(test_charging_deadline),
	    cmocka_unit_test(test_shipping_success),
	    cmocka_unit_test(test_shipping_failures_retried),
	    cmocka_unit_test(test_shipping_attention),
	    cmocka_unit_test(test_shipping_deadline_ignored),
	    cmocka_unit_test(test_refunding),
	    cmocka_unit_test(test_releasing),
	    cmocka_unit_test(test_past_horizon_parks),
	    cmocka_unit_test(test_saga_id_reused),
	    cmocka_unit_test(test_terminal_ignores_everything),
	    cmocka_unit_test(test_stale_reply_ignored),
	    cmocka_unit_test(test_step_transient_retries_until_deadline),
	    cmocka_unit_test(test_attention_after_n),
	    cmocka_unit_test(test_backoff_full_jitter_capped),
	    cmocka_unit_test(test_event_from_reply),
	    cmocka_unit_test(test_names),
	    cmocka_unit_test(test_command_methods),
	    cmocka_unit_test(test_try_timeout_grows_within_deadline),
	    cmocka_unit_test(test_lease_never_past_deadline),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
