/* Unit tests of the retention rules' functions (common/base/horizon.c;
 * docs/saga-semantics.md, "Retention", rule R1): the refusal of a saga's
 * start before the horizon, and of one ahead of the participant's clock
 * by more than the tolerated error (a clock fault or a forged start, which
 * would otherwise keep a command young for ever: its record deleted by
 * rule R2 while a late copy is still taken and applied again). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "horizon.h"

static const horizon_policy P
    = {.retention_ms = HORIZON_RETENTION_DEFAULT_MS, .skew_ms = HORIZON_SKEW_DEFAULT_MS};
static const int64_t NOW = 1796256000000; /* 2026-12-03 */

static void test_refuses_before_horizon(void **st)
{
	(void)st;
	assert_false(horizon_refuses(&P, NOW, NOW));
	assert_false(horizon_refuses(&P, NOW - P.retention_ms, NOW)); /* the boundary */
	assert_true(horizon_refuses(&P, NOW - P.retention_ms - 1, NOW));
	assert_true(horizon_refuses(&P, 0, NOW)); /* not said */
	assert_true(horizon_refuses(&P, -1, NOW));
	assert_true(horizon_refuses(&P, INT64_MIN, NOW));
}

static void test_refuses_ahead(void **st)
{
	(void)st;
	int64_t edge = NOW + P.skew_ms + HORIZON_AHEAD_SLACK_MS;
	assert_false(horizon_refuses(&P, NOW + P.skew_ms, NOW)); /* a clock one skew ahead */
	assert_false(horizon_refuses(&P, edge, NOW));
	assert_false(horizon_ahead(&P, edge, NOW));
	assert_true(horizon_refuses(&P, edge + 1, NOW));
	assert_true(horizon_ahead(&P, edge + 1, NOW));
	assert_true(horizon_refuses(&P, 32503680000000, NOW)); /* the year 3000 */
	assert_true(horizon_refuses(&P, INT64_MAX, NOW));
	/* no horizon (unit tests of the kit): nothing refused */
	const horizon_policy none = {.retention_ms = 0, .skew_ms = 0};
	assert_false(horizon_refuses(&none, INT64_MAX, NOW));
	assert_false(horizon_ahead(&none, INT64_MAX, NOW));
}

/* Rule R2's argument holds for every start taken: a record made at `now`
 * of a command taken is deleted only once every command of its saga is
 * refused, at every reading of a clock up to one skew behind. */
static void test_taken_then_deleted_is_refused(void **st)
{
	(void)st;
	const int64_t starts[] = {NOW - P.retention_ms, NOW, NOW + P.skew_ms,
	    NOW + P.skew_ms + HORIZON_AHEAD_SLACK_MS, NOW + 1000LL * 86400 * 365};
	for (size_t i = 0; i < sizeof starts / sizeof starts[0]; i++) {
		if (horizon_refuses(&P, starts[i], NOW))
			continue; /* not taken: no record */
		int64_t created = NOW;
		/* the first reading at which the record may go */
		int64_t later = created + P.retention_ms + 2 * P.skew_ms + 1;
		assert_true(horizon_record_cutoff_ms(&P, later) > created);
		/* a clock read one skew back from there, less the slack of
		 * the estimate, still refuses it */
		assert_true(
		    horizon_refuses(&P, starts[i] - HORIZON_AHEAD_SLACK_MS, later - P.skew_ms));
	}
}

/* R2 and R4: the cutoffs, and their order: a saga goes only after its
 * records may have (two skews later) */
static void test_cutoffs(void **st)
{
	(void)st;
	int64_t r = P.retention_ms, k = P.skew_ms;
	assert_int_equal(horizon_record_cutoff_ms(&P, NOW), NOW - r - 2 * k);
	assert_int_equal(horizon_saga_cutoff_ms(&P, NOW), NOW - r - 4 * k);
	assert_true(horizon_saga_cutoff_ms(&P, NOW) < horizon_record_cutoff_ms(&P, NOW));
}

/* R5: a deleted saga's id is kept until no participant, with a retention
 * of up to id_retention, can keep a record of it: its last command goes by
 * created + retention - skew (R3), a record of it is made by created +
 * retention on a clock one skew ahead, and goes id_retention + 2 x skew
 * after that (R2), read on clocks one skew apart */
static void test_id_cutoff(void **st)
{
	(void)st;
	int64_t r = P.retention_ms, k = P.skew_ms;
	assert_int_equal(horizon_id_cutoff_ms(&P, NOW), NOW - 2 * r - 4 * k); /* 0: retention */
	horizon_policy longer = P;
	longer.id_retention_ms = 5 * r;
	assert_int_equal(horizon_id_cutoff_ms(&longer, NOW), NOW - 6 * r - 4 * k);
	/* the last record a participant with retention id_retention can make
	 * of a saga created at C, and when it may delete it, in the
	 * orchestrator's clock: the id is still kept then */
	int64_t C = NOW - 6 * r - 4 * k;         /* forgotten from NOW on */
	int64_t last_record = C + r - k + k + k; /* R3's last send, one skew ahead, + transit */
	int64_t deleted = last_record + longer.id_retention_ms + 2 * k + k;
	assert_true(deleted <= NOW + k);
	assert_true(horizon_id_cutoff_ms(&longer, NOW) < horizon_saga_cutoff_ms(&longer, NOW));
	assert_null(horizon_policy_check(&longer));
	longer.id_retention_ms = r - 1;
	assert_non_null(horizon_policy_check(&longer));
}

/* R3: the orchestrator sends while created >= now - retention + skew, so a
 * participant whose clock is one skew ahead still takes the command */
static void test_may_send(void **st)
{
	(void)st;
	int64_t edge = NOW - P.retention_ms + P.skew_ms;
	assert_true(horizon_may_send(&P, edge, NOW));
	assert_false(horizon_may_send(&P, edge - 1, NOW));
	assert_false(horizon_refuses(&P, edge, NOW + P.skew_ms));
	const horizon_policy off = {0, 0, 0}; /* no horizon: the kit's own tests */
	assert_true(horizon_may_send(&off, 0, NOW));
	assert_false(horizon_refuses(&off, 0, NOW));
}

static void test_policy_check(void **st)
{
	(void)st;
	assert_null(horizon_policy_check(&P));
	horizon_policy p = {.retention_ms = 0, .skew_ms = 0};
	assert_non_null(horizon_policy_check(&p));
	p = (horizon_policy) {.retention_ms = P.retention_ms, .skew_ms = -1};
	assert_non_null(horizon_policy_check(&p));
	p = (horizon_policy) {.retention_ms = 4 * P.skew_ms - 1, .skew_ms = P.skew_ms};
	assert_non_null(horizon_policy_check(&p));
	p = (horizon_policy) {.retention_ms = 4 * P.skew_ms, .skew_ms = P.skew_ms};
	assert_null(horizon_policy_check(&p));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_refuses_before_horizon),
	    cmocka_unit_test(test_refuses_ahead),
	    cmocka_unit_test(test_taken_then_deleted_is_refused),
	    cmocka_unit_test(test_cutoffs),
	    cmocka_unit_test(test_id_cutoff),
	    cmocka_unit_test(test_may_send),
	    cmocka_unit_test(test_policy_check),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
