/* page_token (orchestrator/core/page_token.h): ListSagas' cursor encodes a key
 * and decodes it back unchanged; only the canonical text of a token is
 * read; a created_at outside 0..9999-12-31T23:59:59.999999Z is refused on
 * both sides. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "page_token.h"

static void round_trip(int64_t us, const char *id)
{
	page_key k = {.created_us = us}, back;
	snprintf(k.saga_id, sizeof k.saga_id, "%s", id);
	char t[PAGE_TOKEN_LEN + 1];
	assert_int_equal(page_token_encode(&k, t), 0);
	assert_int_equal(strlen(t), PAGE_TOKEN_LEN);
	assert_int_equal(page_token_decode(t, &back), 0);
	assert_int_equal(back.created_us, us);
	assert_string_equal(back.saga_id, id);
}

static void test_round_trip(void **state)
{
	(void)state;
	round_trip(1764000000123456, "0d0e0000-0000-4000-8000-00000000000d");
	round_trip(0, "00000000-0000-0000-0000-000000000000");
	round_trip(PAGE_TOKEN_MAX_US, "ffffffff-ffff-ffff-ffff-ffffffffffff");
	round_trip(1, "7e500000-0000-4000-8000-000000000001");
}

static void test_known_text(void **state)
{
	(void)state;
	/* 9999-12-31T23:59:59.999999Z and the nil UUID, as Python's base64
	 * writes it: the format is the documented one */
	page_key k = {.created_us = PAGE_TOKEN_MAX_US};
	snprintf(k.saga_id, sizeof k.saga_id, "00000000-0000-0000-0000-000000000000");
	char t[PAGE_TOKEN_LEN + 1];
	assert_int_equal(page_token_encode(&k, t), 0);
	assert_string_equal(t, "A4REDMxzX/8AAAAAAAAAAAAAAAAAAAAA");
}

static void test_refused(void **state)
{
	(void)state;
	page_key k;
	static const char *const bad[] = {
	    "",
	    "A4REDMxzX/8AAAAAAAAAAAAAAAAAAAA",   /* 31 characters */
	    "A4REDMxzX/8AAAAAAAAAAAAAAAAAAAAAA", /* 33 */
	    "A4REDMxzX/8AAAAAAAAAAAAAAAAAAA==",  /* padding: 22 bytes */
	    "A4REDMxzX_8AAAAAAAAAAAAAAAAAAAAA",  /* the URL-safe alphabet */
	    "A4REDMxzX/8AAAAAAAAAAAAAAAAAAAA ",  /* a space */
	    "A4REDMxzX/8AAAAAAAAAA\nAAAAAAAAAA", /* a line break mbedTLS skips */
	    "A4REDMxzYAAAAAAAAAAAAAAAAAAAAAAA",  /* one us past 9999 */
	    "//////////8AAAAAAAAAAAAAAAAAAAAA",  /* all ones: negative as int64 */
	    "gAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",  /* INT64_MIN */
	    "not a token at all!!!!!!!!!!!!!!",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		assert_int_equal(page_token_decode(bad[i], &k), -EINVAL);
}

static void test_encode_out_of_range(void **state)
{
	(void)state;
	page_key k = {.created_us = PAGE_TOKEN_MAX_US + 1};
	snprintf(k.saga_id, sizeof k.saga_id, "0d0e0000-0000-4000-8000-00000000000d");
	char t[PAGE_TOKEN_LEN + 1];
	assert_int_equal(page_token_encode(&k, t), -EINVAL);
	k.created_us = -1;
	assert_int_equal(page_token_encode(&k, t), -EINVAL);
	k.created_us = 0;
	snprintf(k.saga_id, sizeof k.saga_id, "not-a-uuid");
	assert_int_equal(page_token_encode(&k, t), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_round_trip),
	    cmocka_unit_test(test_known_text),
	    cmocka_unit_test(test_refused),
	    cmocka_unit_test(test_encode_out_of_range),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
