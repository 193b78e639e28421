/* feed_cursor (orchestrator/core/feed_cursor.h): the history feed's cursor
 * encodes both of its forms and decodes them back unchanged under the same
 * key; only the canonical text of a cursor made under that key is read (a
 * forged or altered one, or one of another database, is refused); a
 * snapshot PostgreSQL would refuse (so that a cast in SQL could fail) is
 * refused before it gets there, even under a valid MAC; the cursor after a
 * page and its `more` (feed_cursor_after_page). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <mbedtls/md.h>

#include "feed_cursor.h"

static char text[FEED_CURSOR_MAX + 1];
static const uint8_t key[FEED_KEY_LEN] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17,
    18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32};
static const uint8_t other_key[FEED_KEY_LEN] = {9};

/* b64url writes the base64url (no padding) of raw into text. */
static void b64url(const char *raw)
{
	static const char *b64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
	const unsigned char *s = (const unsigned char *)raw;
	size_t n = strlen(raw), k = 0;
	for (size_t j = 0; j < n; j += 3) {
		uint32_t v = (uint32_t)s[j] << 16 | (j + 1 < n ? (uint32_t)s[j + 1] << 8 : 0)
		    | (j + 2 < n ? s[j + 2] : 0);
		text[k++] = b64[v >> 18 & 63];
		text[k++] = b64[v >> 12 & 63];
		if (j + 1 < n)
			text[k++] = b64[v >> 6 & 63];
		if (j + 2 < n)
			text[k++] = b64[v & 63];
	}
	text[k] = '\0';
}

/* signed_b64url writes the cursor text of `body` with a valid MAC under
 * key (as feed_cursor_encode would, whatever the body holds). */
static void signed_b64url(const char *body)
{
	unsigned char mac[32];
	assert_int_equal(mbedtls_md_hmac(mbedtls_md_info_from_type(MBEDTLS_MD_SHA256), key,
	                     sizeof key, (const unsigned char *)body, strlen(body), mac),
	    0);
	char raw[512];
	int n = snprintf(raw, sizeof raw, "%s;", body);
	for (int i = 0; i < 16; i++)
		n += snprintf(raw + n, sizeof raw - (size_t)n, "%02x", mac[i]);
	b64url(raw);
}

static void test_snapshots(void **state)
{
	(void)state;
	const char *good[] = {"1:1:", "750:760:", "750:760:750", "750:760:752,755,759",
	    FEED_SNAPSHOT_EMPTY, "9223372036854775806:9223372036854775807:"};
	for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
		assert_true(feed_snapshot_valid(good[i]));
	const char *bad[] = {"", "1:1", "0:1:", "5:4:", "750:760:749", "750:760:760",
	    "750:760:755,752", "750:760:752,752", "750:760:,752", "750:760:752,",
	    "0750:760:", "750:760: 752", "-1:2:", "750:760:752;x",
	    "9223372036854775808:9223372036854775809:", "1:99999999999999999999:"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		assert_false(feed_snapshot_valid(bad[i]));
	/* longer than FEED_SNAPSHOT_MAX */
	char *big = malloc(FEED_SNAPSHOT_MAX + 64);
	assert_non_null(big);
	int n = snprintf(big, FEED_SNAPSHOT_MAX + 64, "100:100000000:");
	for (int x = 100; n < FEED_SNAPSHOT_MAX + 10; x++)
		n += snprintf(
		    big + n, (size_t)(FEED_SNAPSHOT_MAX + 64 - n), "%s%d", x == 100 ? "" : ",", x);
	assert_false(feed_snapshot_valid(big));
	free(big);
}

static void test_round_trip(void **state)
{
	(void)state;
	feed_cursor c = {0}, back;
	snprintf(c.seen, sizeof c.seen, "750:760:752,755");
	assert_int_equal(feed_cursor_encode(&c, key, text, sizeof text), 0);
	/* base64url without padding: safe in a URL's query */
	assert_int_equal(
	    strspn(text, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"),
	    strlen(text));
	assert_int_equal(feed_cursor_decode(text, key, &back), 0);
	assert_string_equal(back.seen, c.seen);
	assert_false(back.has_next);

	c.has_next = true;
	snprintf(c.next, sizeof c.next, "758:790:760,771");
	c.xid = 757;
	snprintf(c.saga_id, sizeof c.saga_id, "0d0e0000-0000-4000-8000-00000000000d");
	c.version = 4;
	assert_int_equal(feed_cursor_encode(&c, key, text, sizeof text), 0);
	assert_int_equal(feed_cursor_decode(text, key, &back), 0);
	assert_true(back.has_next);
	assert_string_equal(back.seen, c.seen);
	assert_string_equal(back.next, c.next);
	assert_true(back.xid == 757);
	assert_string_equal(back.saga_id, c.saga_id);
	assert_int_equal(back.version, 4);
}

static void test_refused(void **state)
{
	(void)state;
	feed_cursor c;
	/* not base64url, padding, empty */
	assert_int_equal(feed_cursor_decode("", key, &c), -EINVAL);
	assert_int_equal(feed_cursor_decode("a b", key, &c), -EINVAL);
	/* a well-made body under a valid MAC decodes; with padding it does not */
	signed_b64url("v1;1:1:");
	assert_int_equal(feed_cursor_decode(text, key, &c), 0);
	assert_string_equal(c.seen, "1:1:");
	char padded[FEED_CURSOR_MAX + 3];
	snprintf(padded, sizeof padded, "%s==", text);
	assert_int_equal(feed_cursor_decode(padded, key, &c), -EINVAL);
	/* the same body without a MAC, with another key's, or altered */
	b64url("v1;1:1:");
	assert_int_equal(feed_cursor_decode(text, key, &c), -EINVAL);
	signed_b64url("v1;1:1:");
	assert_int_equal(feed_cursor_decode(text, other_key, &c), -EINVAL);
	b64url("v1;1:2:;00000000000000000000000000000000");
	assert_int_equal(feed_cursor_decode(text, key, &c), -EINVAL);
	/* a forged cursor naming committed transactions as in progress (the
	 * attack the MAC stops) is refused without the key */
	b64url("v1;1:5:;1:9223372036854775807:1,2,3,4;1;0d0e0000-0000-4000-8000-00000000000d;1;"
	       "0123456789abcdef0123456789abcdef");
	assert_int_equal(feed_cursor_decode(text, key, &c), -EINVAL);
	/* bodies refused even under a valid MAC */
	const char *raw[] = {"v2;1:1:", "v1;0:1:", "v1;1:1:;1:1:;1;x;1",
	    "v1;1:1:;2:2:;1;0d0e0000-0000-4000-8000-00000000000d;0",
	    "v1;1:1:;2:2:;0;0d0e0000-0000-4000-8000-00000000000d;1",
	    "v1;1:1:;2:2:;1;0d0e0000-0000-4000-8000-00000000000d;1;", "v1;1:1:;", "v1;1:1:\n"};
	for (size_t i = 0; i < sizeof raw / sizeof raw[0]; i++) {
		signed_b64url(raw[i]);
		assert_int_equal(feed_cursor_decode(text, key, &c), -EINVAL);
	}
	/* a text whose last character carries bits that re-encode otherwise */
	signed_b64url("v1;1:1:");
	size_t n = strlen(text);
	text[n - 1] = text[n - 1] == 'A' ? 'B' : 'A';
	assert_int_equal(feed_cursor_decode(text, key, &c), -EINVAL);
}

static void test_encode_refused(void **state)
{
	(void)state;
	feed_cursor c = {0};
	snprintf(c.seen, sizeof c.seen, "0:1:");
	assert_int_equal(feed_cursor_encode(&c, key, text, sizeof text), -EINVAL);
	snprintf(c.seen, sizeof c.seen, "1:1:");
	c.has_next = true;
	snprintf(c.next, sizeof c.next, "2:2:");
	c.xid = 1;
	snprintf(c.saga_id, sizeof c.saga_id, "nope");
	c.version = 1;
	assert_int_equal(feed_cursor_encode(&c, key, text, sizeof text), -EINVAL);
	char small[8];
	c.has_next = false;
	assert_int_equal(feed_cursor_encode(&c, key, small, sizeof small), -ENOSPC);
}

/* feed_cursor_after_page: the cursor after a page and its `more`. A page
 * that ends a run begun under an earlier snapshot says more, so a client
 * that stops at more = false reads on under a snapshot of its own (the
 * rows committed since are not in the old one); a fresh read that is not
 * cut says no more. */
static void test_after_page(void **state)
{
	(void)state;
	static const char *saga = "0b1f3c4e-5a6b-4c7d-8e9f-0a1b2c3d4e5f";
	feed_cursor from = {0}, next;
	snprintf(from.seen, sizeof from.seen, "5:9:7");
	/* a fresh read, cut after 2 entries: both snapshots and the key */
	assert_true(feed_cursor_after_page(&from, "12:14:13", true, 2, 11, saga, 3, &next));
	assert_true(next.has_next);
	assert_string_equal(next.seen, "5:9:7");
	assert_string_equal(next.next, "12:14:13");
	assert_int_equal(next.xid, 11);
	assert_string_equal(next.saga_id, saga);
	assert_int_equal(next.version, 3);
	assert_int_equal(feed_cursor_encode(&next, key, text, sizeof text), 0);
	/* a fresh read not cut: the later snapshot alone, and no more */
	assert_false(feed_cursor_after_page(&from, "12:14:13", false, 4, 11, saga, 3, &next));
	assert_false(next.has_next);
	assert_string_equal(next.seen, "12:14:13");
	/* the last page of a run begun earlier: `later` is the old snapshot,
	 * so more, and the next call reads under its own */
	feed_cursor run = next;
	run.has_next = true;
	snprintf(run.next, sizeof run.next, "20:22:");
	run.xid = 19;
	snprintf(run.saga_id, sizeof run.saga_id, "%s", saga);
	run.version = 2;
	assert_true(feed_cursor_after_page(&run, "20:22:", false, 1, 21, saga, 1, &next));
	assert_false(next.has_next);
	assert_string_equal(next.seen, "20:22:");
	/* ... even when nothing was left of it */
	assert_true(feed_cursor_after_page(&run, "20:22:", false, 0, 0, NULL, 0, &next));
	assert_string_equal(next.seen, "20:22:");
	/* not one entry fitted: as asked */
	assert_true(feed_cursor_after_page(&run, "20:22:", true, 0, 0, NULL, 0, &next));
	assert_true(next.has_next);
	assert_string_equal(next.next, "20:22:");
	assert_int_equal(next.xid, 19);
	/* the rule itself */
	assert_false(feed_page_more(false, false));
	assert_true(feed_page_more(true, false));
	assert_true(feed_page_more(false, true));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_snapshots),
	    cmocka_unit_test(test_round_trip),
	    cmocka_unit_test(test_refused),
	    cmocka_unit_test(test_encode_refused),
	    cmocka_unit_test(test_after_page),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
