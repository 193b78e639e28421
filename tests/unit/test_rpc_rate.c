/* The Health-only listener's rate (rpc_rate_take, common/rpc/rpc_conn.c;
 * docs/security.md, "Bounded resources"): a token bucket of
 * RPC_NO_ROLE_CALLS_PER_S calls a second, so that a burst is counted whole
 * however fast the server answers it, a probe a second always passes, no
 * window edge lets twice the rate through, and a clock that goes back
 * refills nothing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "rpc.h"
#include "rpc_internal.h"

#define PER_S RPC_NO_ROLE_CALLS_PER_S

static void test_burst(void **state)
{
	(void)state;
	rpc_rate r = {0};
	int passed = 0;
	for (int i = 0; i < 50; i++) /* 50 calls in 5 ms */
		passed += rpc_rate_take(&r, 5000 + i / 10, PER_S);
	assert_int_equal(passed, PER_S);
}

static void test_probe_each_second(void **state)
{
	(void)state;
	rpc_rate r = {0};
	for (int i = 0; i < 100; i++)
		assert_true(rpc_rate_take(&r, 1000 + 1000 * (int64_t)i, PER_S));
	/* PER_S calls a second, evenly, for 10 s: all pass */
	rpc_rate q = {0};
	for (int i = 0; i < 10 * PER_S; i++)
		assert_true(rpc_rate_take(&q, 200000 + (1000 / PER_S) * (int64_t)i, PER_S));
}

static void test_no_window_edge(void **state)
{
	(void)state;
	/* a full bucket spent just before a second's edge and again just after:
	 * only what refilled in between passes (a fixed window let 2 x PER_S) */
	rpc_rate r = {0};
	int passed = 0;
	for (int i = 0; i < 2 * PER_S; i++)
		passed += rpc_rate_take(&r, 999 + (i < PER_S ? 0 : 2), PER_S);
	assert_int_equal(passed, PER_S);
	/* 1 s later the bucket is full again, not more */
	passed = 0;
	for (int i = 0; i < 3 * PER_S; i++)
		passed += rpc_rate_take(&r, 5000, PER_S);
	assert_int_equal(passed, PER_S);
}

static void test_clock_back(void **state)
{
	(void)state;
	rpc_rate r = {0};
	for (int i = 0; i < PER_S; i++)
		assert_true(rpc_rate_take(&r, 10000, PER_S));
	assert_false(rpc_rate_take(&r, 10000, PER_S));
	assert_false(rpc_rate_take(&r, 500, PER_S)); /* back: nothing refilled */
	assert_false(rpc_rate_take(&r, 500 + 1000 / PER_S - 1, PER_S));
	assert_true(rpc_rate_take(&r, 500 + 1000 / PER_S + 124, PER_S));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_burst),
	    cmocka_unit_test(test_probe_each_second),
	    cmocka_unit_test(test_no_window_edge),
	    cmocka_unit_test(test_clock_back),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
