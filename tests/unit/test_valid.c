/* Unit tests of input validation and money text (common/valid.c):
 * saga-semantics.md "Money and input". */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "valid.h"

static void test_money_parse_accepts(void **st)
{
	(void)st;
	int64_t v = -1;
	assert_int_equal(money_parse("12.5", false, &v), 0);
	assert_int_equal(v, 1250);
	assert_int_equal(money_parse("12.50", false, &v), 0);
	assert_int_equal(v, 1250);
	assert_int_equal(money_parse("200", false, &v), 0);
	assert_int_equal(v, 20000);
	assert_int_equal(money_parse("0.01", false, &v), 0);
	assert_int_equal(v, 1);
	assert_int_equal(money_parse("0", true, &v), 0);
	assert_int_equal(v, 0);
	assert_int_equal(money_parse("10000000000000", false, &v), 0);
	assert_int_equal(v, VALID_AMOUNT_MAX);
}

static void test_money_parse_refuses(void **st)
{
	(void)st;
	const char *bad[] = {"12.005", "1e3", "", "-1", "+1", " 1", "1 ", "12.", ".5", "1,5",
	    "0x10", "1..2", "abc", "١٢"};
	int64_t v = 77;
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		assert_int_equal(money_parse(bad[i], false, &v), -EINVAL);
		assert_int_equal(v, 77); /* untouched */
	}
	assert_int_equal(money_parse("0", false, &v), -ERANGE);
	assert_int_equal(money_parse("0.00", false, &v), -ERANGE);
	assert_int_equal(money_parse("10000000000000.01", false, &v), -ERANGE);
	assert_int_equal(money_parse("99999999999999999999999", false, &v), -ERANGE);
	assert_int_equal(v, 77);
}

static void test_money_format(void **st)
{
	(void)st;
	char buf[32];
	assert_string_equal(money_format(30000, buf, sizeof buf), "300.00");
	assert_string_equal(money_format(5, buf, sizeof buf), "0.05");
	assert_string_equal(money_format(0, buf, sizeof buf), "0.00");
	assert_string_equal(money_format(-105, buf, sizeof buf), "-1.05");
}

static void test_uuid(void **st)
{
	(void)st;
	assert_true(valid_uuid("0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9"));
	assert_false(valid_uuid("0F1E2D3C-4B5A-4978-8695-A4B3C2D1E0F9")); /* not canonical */
	assert_false(valid_uuid("0f1e2d3c4b5a49788695a4b3c2d1e0f9"));
	assert_false(valid_uuid("0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f"));
	assert_false(valid_uuid("0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0fg"));
	assert_false(valid_uuid(""));
	assert_false(valid_uuid(NULL));
	char id[VALID_UUID_LEN + 1];
	saga_id_new(id);
	assert_true(valid_uuid(id));
	assert_int_equal(id[14], '4'); /* version 4 */
}

static void test_names(void **st)
{
	(void)st;
	assert_true(valid_name("A1"));
	assert_true(valid_name("سارة")); /* UTF-8 */
	assert_false(valid_name(""));
	assert_false(valid_name("tab\there"));
	assert_false(valid_name("\x7f"));
	assert_false(valid_name("a\xc2\x85"
	                        "b"));                /* U+0085, a C1 control */
	assert_true(valid_name("\xc2\xa0"));          /* U+00A0 is not a control */
	assert_false(valid_name("\xc3\x28"));         /* bad continuation */
	assert_false(valid_name("\xc0\xaf"));         /* overlong */
	assert_false(valid_name("\xed\xa0\x80"));     /* surrogate */
	assert_false(valid_name("\xf4\x90\x80\x80")); /* past U+10FFFF */
	assert_false(valid_name("\xe2\x82"));         /* truncated */
	char longname[VALID_NAME_MAX + 2];
	memset(longname, 'x', sizeof longname);
	longname[VALID_NAME_MAX] = '\0';
	assert_true(valid_name(longname));
	longname[VALID_NAME_MAX] = 'x';
	longname[VALID_NAME_MAX + 1] = '\0';
	assert_false(valid_name(longname));
}

/* valid_utf8_copy cuts at a character boundary: "é" is 2 bytes, "€" 3 and
 * "😀" 4; whatever the room, the copy is valid UTF-8 and a prefix. */
static void test_utf8_copy(void **st)
{
	(void)st;
	char dst[8];
	assert_int_equal(valid_utf8_copy(dst, sizeof dst, "abc"), 3);
	assert_string_equal(dst, "abc");
	/* "aé€😀" = 1 + 2 + 3 + 4 bytes: each room from 1 to 11 */
	const char *text = "a\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80";
	const size_t want[] = {0, 0, 1, 1, 3, 3, 3, 6, 6, 6, 6, 10};
	char big[16];
	for (size_t room = 1; room <= 11; room++) {
		size_t n = valid_utf8_copy(big, room, text);
		assert_int_equal(n, want[room]);
		assert_int_equal(strlen(big), n);
		assert_true(valid_utf8(big, n));
		assert_memory_equal(big, text, n);
	}
	/* a long method name of 3-byte characters, as in an unknown-method
	 * error message */
	char method[400];
	for (size_t i = 0; i + 3 < sizeof method; i += 3)
		memcpy(method + i, "\xe2\x82\xac", 3), method[i + 3] = '\0';
	char msg[256];
	size_t n = valid_utf8_copy(msg, sizeof msg, method);
	assert_true(n <= 255 && n % 3 == 0);
	assert_true(valid_utf8(msg, n));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_money_parse_accepts),
	    cmocka_unit_test(test_money_parse_refuses),
	    cmocka_unit_test(test_money_format),
	    cmocka_unit_test(test_uuid),
	    cmocka_unit_test(test_names),
	    cmocka_unit_test(test_utf8_copy),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
