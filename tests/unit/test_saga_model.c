/* Unit tests of the fixed point over a flow (orchestrator/saga/saga_model.c,
 * docs/saga-definitions.md section 3): flows of every shape the transition
 * accepts reach their fixed point with no violation and with the end
 * states they must have; a broken rule (a wrap around the decision) is
 * caught with a shortest path that starts at the start and ends at the
 * violating event; --max-states stops the exploration without a verdict;
 * an invalid flow is refused. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "saga_flow.h"
#include "saga_model.h"

static saga_flow_step step(const char *name, saga_flow_kind kind, int32_t group)
{
	bool retriable = kind == SAGA_FLOW_RETRIABLE;
	return (saga_flow_step) {.name = name,
	    .kind = kind,
	    .has_compensation = !retriable,
	    .has_deadline = !retriable,
	    .group = group};
}

#define C(n)    step(n, SAGA_FLOW_COMPENSABLE, -1)
#define G(n, g) step(n, SAGA_FLOW_COMPENSABLE, g)
#define P(n)    step(n, SAGA_FLOW_PIVOT, -1)
#define R(n)    step(n, SAGA_FLOW_RETRIABLE, -1)

static saga_flow flow_of(int n, const saga_flow_step *steps)
{
	saga_flow f;
	memset(&f, 0, sizeof f);
	f.nsteps = n;
	for (int i = 0; i < n; i++)
		f.steps[i] = steps[i];
	return f;
}

/* check_clean: `f` reaches its fixed point, no violation, one completed
 * end state, `cancelled` cancelled ones (-1: at least one) */
static void check_clean(const saga_flow *f, long cancelled)
{
	saga_model_result r;
	assert_int_equal(saga_model_check(f, NULL, &r), 0);
	print_message("%d steps: %zu states, %zu transitions, %zu completed, %zu cancelled\n",
	    f->nsteps, r.states, r.transitions, r.completed, r.cancelled);
	if (r.violation)
		for (size_t i = 0; i < r.npath; i++)
			print_message("%s\n", r.path[i]);
	assert_false(r.violation);
	assert_true(r.complete);
	assert_int_equal(r.completed, 1);
	if (cancelled >= 0)
		assert_int_equal(r.cancelled, (size_t)cancelled);
	else
		assert_true(r.cancelled > 0);
	assert_true(r.states > 1);
	assert_true(r.transitions >= r.states - 1);
	assert_int_equal(r.npath, 0);
	saga_model_result_free(&r);
}

static void test_order(void **state)
{
	(void)state;
	/* reserve refused, a tombstone, or applied and released; charge
	 * refused or charged and refunded, each with reserve released, or
	 * charge with its own tombstone: 6 end states */
	check_clean(&saga_flow_order, 6);
}

static void test_shapes(void **state)
{
	(void)state;
	const saga_flow_step booking[] = {G("room", 0), G("seat", 0), P("pay"), R("confirm")};
	const saga_flow_step no_pivot[] = {C("a"), C("b")};
	const saga_flow_step pivot_first[] = {P("pay"), R("ship"), R("mail")};
	const saga_flow_step two_groups[] = {G("a", 0), G("b", 0), G("c", 1), G("d", 1), P("p")};
	const saga_flow_step lone[] = {C("only")};
	saga_flow f = flow_of(4, booking);
	check_clean(&f, -1);
	f = flow_of(2, no_pivot);
	check_clean(&f, -1);
	f = flow_of(3, pivot_first);
	check_clean(&f, -1);
	f = flow_of(5, two_groups);
	check_clean(&f, -1);
	f = flow_of(1, lone);
	/* refused, a tombstone, or applied and compensated */
	check_clean(&f, 3);
}

/* skip_compensation: a deadline of a forward step moves on as if it had
 * succeeded (a rule 4 violation: the outcome is unknown) */
static void skip_on_deadline(void *ctx, const saga_flow *f, const saga_flow_row *row,
    const saga_flow_event *ev, int64_t now_ms, saga_flow_decision *d)
{
	(void)ctx;
	(void)now_ms;
	if (ev->kind != SAGA_EV_DEADLINE || d->ignored || row->pos.phase != SAGA_FLOW_FORWARD)
		return;
	int32_t next = row->pos.step + saga_flow_stage_len(f, row->pos.step);
	d->next.pos = (saga_flow_pos) {.step = next, .phase = SAGA_FLOW_FORWARD, .members = 0};
	d->next.step_deadline_ms = 0;
	d->send = saga_flow_due(f, &d->next.pos);
}

static void test_broken_caught(void **state)
{
	(void)state;
	saga_model_opts o = {.wrap = skip_on_deadline};
	saga_model_result r;
	assert_int_equal(saga_model_check(&saga_flow_order, &o, &r), 0);
	assert_true(r.violation);
	assert_false(r.complete);
	assert_true(r.npath >= 2);
	assert_non_null(strstr(r.path[0], "start: row: reserve forward"));
	/* the shortest: the deadline passes at once, then charge runs while
	 * reserve may never have acted: the first bad event is the deadline's */
	print_message("violation: %s\n", r.what);
	for (size_t i = 0; i < r.npath; i++)
		print_message("  %s\n", r.path[i]);
	saga_model_result_free(&r);
	assert_int_equal(r.npath, 0);
}

/* ignore_compensation_replies: a compensation's success is never taken,
 * so a compensating saga can never end (check 4) */
static void ignore_compensation_replies(void *ctx, const saga_flow *f, const saga_flow_row *row,
    const saga_flow_event *ev, int64_t now_ms, saga_flow_decision *d)
{
	(void)ctx;
	(void)f;
	(void)now_ms;
	if (row->pos.phase == SAGA_FLOW_COMPENSATING && ev->kind == SAGA_EV_SUCCESS)
		d->ignored = true;
}

static void test_stuck_caught(void **state)
{
	(void)state;
	saga_model_opts o = {.wrap = ignore_compensation_replies};
	saga_model_result r;
	assert_int_equal(saga_model_check(&saga_flow_order, &o, &r), 0);
	assert_true(r.violation);
	assert_non_null(strstr(r.what, "can no longer end"));
	assert_true(r.npath >= 2);
	/* the shallowest stuck state: reserve compensating (its deadline) */
	assert_non_null(strstr(r.path[r.npath - 1], "row: reserve compensating"));
	saga_model_result_free(&r);
}

static void test_bounded(void **state)
{
	(void)state;
	saga_model_opts o = {.max_states = 50};
	saga_model_result r;
	assert_int_equal(saga_model_check(&saga_flow_order, &o, &r), 0);
	assert_false(r.complete);
	assert_false(r.violation);
	assert_int_equal(r.states, 50);
	saga_model_result_free(&r);
}

/* max_ms bounds the time: a group of six members takes far more than 1 ms */
static void test_time_bound(void **state)
{
	(void)state;
	const saga_flow_step six[]
	    = {G("a", 0), G("b", 0), G("c", 0), G("d", 0), G("e", 0), G("f", 0), P("p")};
	saga_flow f = flow_of(7, six);
	saga_model_opts o = {.max_ms = 1};
	saga_model_result r;
	assert_int_equal(saga_model_check(&f, &o, &r), 0);
	assert_true(r.timed_out);
	assert_false(r.complete);
	assert_false(r.violation);
	saga_model_result_free(&r);
}

static void test_invalid(void **state)
{
	(void)state;
	const saga_flow_step bad[] = {R("ship"), P("pay")}; /* retriable before the pivot */
	saga_flow f = flow_of(2, bad);
	saga_model_result r;
	assert_int_equal(saga_model_check(&f, NULL, &r), -EINVAL);
	assert_int_equal(r.states, 0);
	assert_int_equal(saga_model_check(NULL, NULL, &r), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_order),
	    cmocka_unit_test(test_shapes),
	    cmocka_unit_test(test_broken_caught),
	    cmocka_unit_test(test_stuck_caught),
	    cmocka_unit_test(test_bounded),
	    cmocka_unit_test(test_time_bound),
	    cmocka_unit_test(test_invalid),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
