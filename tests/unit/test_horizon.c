/* test_horizon: the retention rules of common/horizon.h at their edges
 * (docs/saga-semantics.md, "Retention", rules R1-R4), 1 ms either side. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "horizon.h"

#define DAY  (24LL * 3600 * 1000)
#define NOW  (20000LL * DAY) /* 2024-10-04 */
#define RET  (7 * DAY)
#define SKEW (5 * 60 * 1000LL)

static const horizon_policy pol = {.retention_ms = RET, .skew_ms = SKEW};

/* R1: older than now - retention is refused, the edge itself taken; no start
 * is refused; a start past now + skew is "in the future" */
static void test_refuses(void **st)
{
	(void)st;
	assert_false(horizon_refuses(&pol, NOW - RET, NOW));
	assert_true(horizon_refuses(&pol, NOW - RET - 1, NOW));
	assert_false(horizon_refuses(&pol, NOW, NOW));
	assert_true(horizon_refuses(&pol, 0, NOW));
	assert_true(horizon_refuses(&pol, -5, NOW));
	assert_false(horizon_in_future(&pol, NOW + SKEW, NOW));
	assert_true(horizon_in_future(&pol, NOW + SKEW + 1, NOW));
	assert_true(horizon_in_future(&pol, INT64_MAX, NOW));
	/* retention 0: no horizon (the kit's own tests) */
	const horizon_policy off = {0, 0};
	assert_false(horizon_refuses(&off, 0, NOW));
	assert_false(horizon_in_future(&off, INT64_MAX, NOW));
	assert_true(horizon_may_send(&off, 0, NOW));
}

/* R2 and R4: the cutoffs, and the order they must keep: a record goes
 * only after every command of its saga is refused (2 x skew: the clocks'
 * difference and a step back), a saga only after its records */
static void test_cutoffs(void **st)
{
	(void)st;
	assert_int_equal(horizon_record_cutoff_ms(&pol, NOW), NOW - RET - 2 * SKEW);
	assert_int_equal(horizon_saga_cutoff_ms(&pol, NOW), NOW - RET - 4 * SKEW);
	/* a record made at C for a saga started up to one skew later, deleted
	 * at the cutoff: at a reading one skew earlier (a step back), every
	 * command of that saga is still refused */
	int64_t c = horizon_record_cutoff_ms(&pol, NOW) - 1;
	assert_true(horizon_refuses(&pol, c + SKEW, NOW - SKEW));
	assert_true(horizon_saga_cutoff_ms(&pol, NOW) < horizon_record_cutoff_ms(&pol, NOW));
}

/* R3: the orchestrator sends while created >= now - retention + skew, so a
 * participant whose clock is a skew ahead still takes it */
static void test_may_send(void **st)
{
	(void)st;
	int64_t edge = NOW - RET + SKEW;
	assert_true(horizon_may_send(&pol, edge, NOW));
	assert_false(horizon_may_send(&pol, edge - 1, NOW));
	assert_false(horizon_refuses(&pol, edge, NOW + SKEW));
}

static void test_policy_check(void **st)
{
	(void)st;
	assert_null(horizon_policy_check(&pol));
	horizon_policy p = {.retention_ms = 0, .skew_ms = 0};
	assert_non_null(horizon_policy_check(&p));
	p = (horizon_policy) {.retention_ms = RET, .skew_ms = -1};
	assert_non_null(horizon_policy_check(&p));
	p = (horizon_policy) {.retention_ms = 4 * SKEW - 1, .skew_ms = SKEW};
	assert_non_null(horizon_policy_check(&p));
	p = (horizon_policy) {.retention_ms = 4 * SKEW, .skew_ms = SKEW};
	assert_null(horizon_policy_check(&p));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_refuses),
	    cmocka_unit_test(test_cutoffs),
	    cmocka_unit_test(test_may_send),
	    cmocka_unit_test(test_policy_check),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
