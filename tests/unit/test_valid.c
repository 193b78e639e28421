/* Unit tests of input validation and money text (common/base/valid.c):
 * saga-semantics.md "Money and input". */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
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
	                        "b")); /* U+0085, a C1 control */
	assert_true(valid_name("a\xc2\xa0"
	                       "b"));                 /* U+00A0 is not a control */
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

/* Names that display as something else (issue 32, part 6): a
 * bidirectional control anywhere, or nothing visible at all. */
static void test_names_display(void **st)
{
	(void)st;
	/* every Bidi_Control, alone in a name that is otherwise fine */
	static const char *const bidi[] = {
	    "\xd8\x9c",                                     /* U+061C ALM */
	    "\xe2\x80\x8e", "\xe2\x80\x8f",                 /* U+200E LRM, U+200F RLM */
	    "\xe2\x80\xaa", "\xe2\x80\xab", "\xe2\x80\xac", /* U+202A LRE, RLE, PDF */
	    "\xe2\x80\xad", "\xe2\x80\xae",                 /* U+202D LRO, U+202E RLO */
	    "\xe2\x81\xa6", "\xe2\x81\xa7", "\xe2\x81\xa8", /* U+2066 LRI, RLI, FSI */
	    "\xe2\x81\xa9",                                 /* U+2069 PDI */
	};
	char name[32];
	for (size_t i = 0; i < sizeof bidi / sizeof bidi[0]; i++) {
		snprintf(name, sizeof name, "gnp%s.exe", bidi[i]);
		assert_false(valid_name(name));
		snprintf(name, sizeof name, "%sK1", bidi[i]);
		assert_false(valid_name(name));
	}
	/* the attack's own: "gnp" RLO "exe.png" shows as "gnpgnp.exe" */
	assert_false(valid_name("invoice\xe2\x80\xaegnp.exe"));
	/* nothing visible: zero-width characters, white space, marks alone */
	static const char *const blank[] = {
	    "\xe2\x80\x8b",                      /* U+200B ZWSP */
	    "\xe2\x80\x8c\xe2\x80\x8d",          /* U+200C ZWNJ, U+200D ZWJ */
	    "\xe2\x81\xa0",                      /* U+2060 WORD JOINER */
	    "\xef\xbb\xbf",                      /* U+FEFF BOM */
	    " ", "   ", "\xc2\xa0",              /* spaces, U+00A0 */
	    "\xe3\x80\x80",                      /* U+3000 IDEOGRAPHIC SPACE */
	    "\xe2\x80\xa8",                      /* U+2028 LINE SEPARATOR */
	    "\xcc\x81", "\xcc\x81\xcc\x81",      /* U+0301 COMBINING ACUTE, alone */
	    "\xe2\x83\x9d",                      /* U+20DD COMBINING ENCLOSING CIRCLE */
	    "\xc2\xad",                          /* U+00AD SOFT HYPHEN */
	    "\xe3\x85\xa4",                      /* U+3164 HANGUL FILLER */
	    "\xef\xb8\x8f",                      /* U+FE0F VARIATION SELECTOR-16 */
	    "\xf3\xa0\x80\x81",                  /* U+E0001 LANGUAGE TAG */
	    "\xe2\xa0\x80",                      /* U+2800 BRAILLE PATTERN BLANK */
	    "\xe2\x80\x8b \xef\xbb\xbf\xcc\x81", /* a mix of them */
	};
	for (size_t i = 0; i < sizeof blank / sizeof blank[0]; i++)
		assert_false(valid_name(blank[i]));
	/* a visible character with them is a name */
	/* one spelling (NFC), nothing invisible inside (the attack review's F3) */
	assert_false(valid_name("e\xcc\x81"));           /* e + COMBINING ACUTE */
	assert_true(valid_name("\xc3\xa9"));             /* U+00E9, its NFC */
	assert_true(valid_name("q\xcc\x81"));            /* q + ACUTE: no composed form */
	assert_false(valid_name("A\xe2\x80\x8b"));       /* A + ZWSP */
	assert_false(valid_name("ali\xe2\x81\xa0"));     /* + WORD JOINER */
	assert_false(valid_name("ali\xef\xbb\xbf"));     /* + U+FEFF */
	assert_false(valid_name("al\xc2\xadi"));         /* a SOFT HYPHEN inside */
	assert_false(valid_name("ali\xcd\x8f"));         /* + U+034F CGJ */
	assert_false(valid_name("ali\xe3\x85\xa4"));     /* + HANGUL FILLER */
	assert_false(valid_name("ali\xf3\xa0\x81\x81")); /* + TAG LATIN CAPITAL A */
	assert_false(valid_name("a\xe2\x80\xa8"
	                        "b"));                            /* a LINE SEPARATOR inside */
	assert_false(valid_name("\xf0\x9f\x91\x8d\xef\xb8\x8f")); /* thumbs up + VS16 */
	assert_true(valid_name("\xf0\x9f\x91\x8d"));              /* thumbs up alone */
	assert_true(valid_name("\xd7\xa9\xd7\xa8\xd7\x94"));      /* Hebrew, RTL by itself */
	assert_true(valid_name("John Smith"));
	assert_true(valid_visible('a'));
	assert_false(valid_visible(' '));
	assert_false(valid_visible(0x200b));
	assert_false(valid_visible(0x0301));
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

/* valid_escape: what a terminal would act on is shown as text; the
 * rest is copied byte for byte. */
static void test_escape(void **st)
{
	(void)st;
	char out[256];
	static const struct {
		const char *in, *want;
	} cases[] = {
	    {"plain K1", "plain K1"}, {"", ""},
	    {"a\x1b]0;pwned\x07z", "a\\x1B]0;pwned\\x07z"}, /* a window title */
	    {"ok\r\nFORGED", "ok\\r\\nFORGED"}, {"tab\there", "tab\\there"},
	    {"del\x7f", "del\\x7F"}, {"back\\slash", "back\\\\slash"},
	    {"c1\xc2\x9b"
	     "31m",
	        "c1\\u009B31m"},                             /* U+009B CSI */
	    {"rlo\xe2\x80\xaegnp.exe", "rlo\\u202Egnp.exe"}, /* U+202E */
	    {"\xd8\x9c\xe2\x81\xa6\xe2\x80\x8f", "\\u061C\\u2066\\u200F"},
	    {"ls\xe2\x80\xa8ps\xe2\x80\xa9", "ls\\u2028ps\\u2029"},
	    {"bad\xff\xc3", "bad\\xFF\\xC3"},    /* not UTF-8 */
	    {"\xed\xa0\x80", "\\xED\\xA0\\x80"}, /* a surrogate */
	    {"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80",
	        "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"},
	    {"\xd7\xa9\xd7\xa8\xd7\x94", "\xd7\xa9\xd7\xa8\xd7\x94"}, /* Hebrew is text */
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		size_t n = valid_escape(out, sizeof out, cases[i].in);
		assert_string_equal(out, cases[i].want);
		assert_int_equal(n, strlen(cases[i].want));
	}
	/* nothing a terminal acts on is left, whatever the bytes: every byte
	 * value in every position of a short string */
	for (unsigned b = 1; b < 256; b++) {
		char in[4] = {'x', (char)b, 'y', '\0'};
		valid_escape(out, sizeof out, in);
		for (const unsigned char *p = (const unsigned char *)out; *p; p++)
			assert_true(*p >= 0x20 && *p != 0x7f);
		assert_true(valid_utf8(out, strlen(out)));
	}
	/* cut as snprintf: the length of the whole, the copy shorter and
	 * never inside an escape or a character */
	char small[6];
	assert_int_equal(valid_escape(small, sizeof small, "ab\ncd"), 6);
	assert_string_equal(small, "ab\\nc");
	assert_int_equal(valid_escape(small, sizeof small, "abcd\n"), 6);
	assert_string_equal(small, "abcd");
	assert_int_equal(valid_escape(small, sizeof small, "abc\xe2\x82\xac"), 6);
	assert_string_equal(small, "abc");
	assert_int_equal(valid_escape(NULL, 0, "a\x1b"), 5);
}

/* valid_note: an operator's reason, one printable line */
static void test_notes(void **state)
{
	(void)state;
	assert_true(valid_note("customer called, ticket #4711", 255));
	assert_true(valid_note("M\xc3\xbcller said \"no\" \xe2\x9c\x93", 255));
	assert_true(valid_note("a\xe2\x80\x8b"
	                       " b",
	    255)); /* a zero-width space is fine in text */
	assert_false(valid_note("", 255));
	assert_false(valid_note("   ", 255));   /* nothing visible */
	assert_false(valid_note("a\tb", 255));  /* C0 */
	assert_false(valid_note("a\x7f", 255)); /* DEL */
	assert_false(valid_note("a\xc2\x9b"
	                        "2J",
	    255)); /* C1: CSI */
	assert_false(valid_note("a\xc2\x85"
	                        "b",
	    255)); /* C1: NEL */
	assert_false(valid_note("a\xe2\x80\xa8"
	                        "b",
	    255)); /* line separator */
	assert_false(valid_note("a\xe2\x80\xae"
	                        "b",
	    255));                              /* right-to-left override */
	assert_false(valid_note("a\xff", 255)); /* not UTF-8 */
	assert_true(valid_note("abc", 3));
	assert_false(valid_note("abcd", 3));
	assert_false(valid_note(NULL, 3));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_money_parse_accepts),
	    cmocka_unit_test(test_money_parse_refuses),
	    cmocka_unit_test(test_money_format),
	    cmocka_unit_test(test_uuid),
	    cmocka_unit_test(test_names),
	    cmocka_unit_test(test_notes),
	    cmocka_unit_test(test_names_display),
	    cmocka_unit_test(test_escape),
	    cmocka_unit_test(test_utf8_copy),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
