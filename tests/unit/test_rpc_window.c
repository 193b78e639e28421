/* The Health-only listener's rate (rpc_window_add, common/rpc/rpc_conn.c;
 * docs/security.md, "Bounded resources"): calls are counted in fixed
 * one-second windows, so a burst is counted whole however fast the server
 * answers it, a probe a second stays at 1, and a clock that goes back
 * starts a new window rather than holding the count. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "rpc.h"
#include "rpc_internal.h"

static void test_burst(void **state)
{
	(void)state;
	int64_t start = 0;
	int n = 0;
	for (int i = 0; i < 50; i++)
		n = rpc_window_add(&start, n, 5000 + i / 10); /* 50 calls in 5 ms */
	assert_int_equal(n, 50);
	assert_int_equal(start, 5000);
	assert_true(n > RPC_NO_ROLE_CALLS_PER_S);
}

static void test_probe_each_second(void **state)
{
	(void)state;
	int64_t start = 0;
	int n = 0;
	for (int i = 0; i < 100; i++) {
		n = rpc_window_add(&start, n, 1000 + 1000 * (int64_t)i);
		assert_int_equal(n, 1);
	}
	/* 8 calls a second, at the limit, for 10 s */
	n = 0;
	for (int i = 0; i < 80; i++) {
		n = rpc_window_add(&start, n, 200000 + 125 * (int64_t)i);
		assert_true(n <= RPC_NO_ROLE_CALLS_PER_S);
	}
}

static void test_window_edges(void **state)
{
	(void)state;
	int64_t start = 0;
	int n = rpc_window_add(&start, 0, 7000);
	assert_int_equal(n, 1);
	assert_int_equal(rpc_window_add(&start, n, 7999), 2); /* same window */
	n = 2;
	assert_int_equal(rpc_window_add(&start, n, 8000), 1); /* 1000 ms on: a new one */
	assert_int_equal(start, 8000);
	n = rpc_window_add(&start, 1, 8001);
	assert_int_equal(n, 2);
	assert_int_equal(rpc_window_add(&start, n, 100), 1); /* the clock went back */
	assert_int_equal(start, 100);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_burst),
	    cmocka_unit_test(test_probe_each_second),
	    cmocka_unit_test(test_window_edges),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
