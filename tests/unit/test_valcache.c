/* The participants' value cache (common/base/valcache.c):
 *
 *   - a key never learnt cannot be claimed; once learnt, a claim gives its
 *     value, and a second claim of it fails until the first is released;
 *   - a claim is all or nothing: one unknown or claimed key and none of the
 *     others is claimed;
 *   - a release with values sets them; a release without forgets the keys;
 *   - learning a claimed key makes its claim's release forget it (which
 *     commit came last is unknown); a later learn makes it known again;
 *   - a full cache learns no new key but still updates known ones; keys
 *     longer than VALCACHE_KEY_MAX are never cached.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "valcache.h"

static void test_claim_learn_release(void **state)
{
	(void)state;
	valcache *c = NULL;
	assert_int_equal(valcache_new(&c, 100), 0);
	const char *a[] = {"A1"};
	int64_t v[2] = {0, 0};
	assert_false(valcache_claim(c, a, 1, v)); /* never learnt */
	const int64_t five = 5;
	valcache_learn(c, a, 1, &five);
	assert_true(valcache_claim(c, a, 1, v));
	assert_int_equal(v[0], 5);
	assert_false(valcache_claim(c, a, 1, v)); /* claimed by the first */
	const int64_t three = 3;
	valcache_learn(c, a, 1, &three); /* during the claim: both are doubtful */
	valcache_release(c, a, 1, (const int64_t[]) {2});
	assert_false(valcache_claim(c, a, 1, v));
	valcache_learn(c, a, 1, &five);
	assert_true(valcache_claim(c, a, 1, v));
	assert_int_equal(v[0], 5);
	valcache_release(c, a, 1, (const int64_t[]) {2}); /* not overtaken: kept */
	assert_true(valcache_claim(c, a, 1, v));
	assert_int_equal(v[0], 2);
	valcache_release(c, a, 1, NULL); /* failed: forgotten */
	assert_false(valcache_claim(c, a, 1, v));
	valcache_learn(c, a, 1, &three);
	assert_true(valcache_claim(c, a, 1, v));
	assert_int_equal(v[0], 3);
	valcache_release(c, a, 1, NULL);
	valcache_free(c);
}

static void test_claim_is_all_or_nothing(void **state)
{
	(void)state;
	valcache *c = NULL;
	assert_int_equal(valcache_new(&c, 100), 0);
	const char *ab[] = {"A", "B"}, *bc[] = {"B", "C"}, *a[] = {"A"}, *b[] = {"B"};
	valcache_learn(c, ab, 2, (const int64_t[]) {10, 20});
	int64_t v[2] = {0, 0};
	assert_false(valcache_claim(c, bc, 2, v)); /* C unknown: B stays free */
	assert_true(valcache_claim(c, b, 1, v));
	assert_int_equal(v[0], 20);
	assert_false(valcache_claim(c, ab, 2, v)); /* B claimed: A stays free */
	assert_true(valcache_claim(c, a, 1, v));
	assert_int_equal(v[0], 10);
	valcache_release(c, a, 1, (const int64_t[]) {11});
	valcache_release(c, b, 1, (const int64_t[]) {21});
	assert_true(valcache_claim(c, ab, 2, v));
	assert_int_equal(v[0], 11);
	assert_int_equal(v[1], 21);
	valcache_release(c, ab, 2, NULL);
	valcache_free(c);
}

static void test_bounds(void **state)
{
	(void)state;
	valcache *c = NULL;
	assert_int_equal(valcache_new(&c, 0), -EINVAL);
	assert_int_equal(valcache_new(&c, 2), 0);
	const char *abc[] = {"A", "B", "C"}, *a[] = {"A"}, *cc[] = {"C"};
	valcache_learn(c, abc, 3, (const int64_t[]) {1, 2, 3}); /* room for 2 */
	int64_t v[1] = {0};
	assert_false(valcache_claim(c, cc, 1, v));
	valcache_learn(c, a, 1, (const int64_t[]) {7}); /* known: updated */
	assert_true(valcache_claim(c, a, 1, v));
	assert_int_equal(v[0], 7);
	valcache_release(c, a, 1, NULL);
	valcache_free(c);

	assert_int_equal(valcache_new(&c, 10), 0);
	char long_key[VALCACHE_KEY_MAX + 2];
	memset(long_key, 'k', sizeof long_key - 1);
	long_key[sizeof long_key - 1] = '\0';
	const char *lk[] = {long_key};
	valcache_learn(c, lk, 1, (const int64_t[]) {1});
	assert_false(valcache_claim(c, lk, 1, v));
	assert_false(valcache_claim(c, lk, 0, v)); /* no keys: nothing to claim */
	valcache_free(c);
	valcache_free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_claim_learn_release),
	    cmocka_unit_test(test_claim_is_all_or_nothing),
	    cmocka_unit_test(test_bounds),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
