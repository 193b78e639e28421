/* The link timeout's connection defaults (common/db/pg.c, pg_params_make):
 * what libpq would connect with, read back with PQconninfo from a
 * connection started to a socket folder that does not exist (no server
 * needed):
 *   - the defaults for 20 s: keepalives on, idle 10 s, every 2 s, 5 probes,
 *     tcp_user_timeout 20000 ms, connect_timeout 20 s;
 *   - a conninfo's own keywords win, in keyword/value and URI form;
 *   - pg_set_link_timeout changes them (4 s: 2, 1, 2, 4000), never below
 *     the minimum; idle + count x interval reaches the timeout.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "pg.h"

#define NOWHERE "host=/nonexistent-sagas-test port=1 dbname=x"

/* option copies `conninfo`'s option `key` as libpq would connect with it
 * into `out` ("" when unset). */
static void option(const char *conninfo, const char *key, char *out, size_t len)
{
	pg_params p;
	pg_params_make(&p, conninfo);
	PGconn *c = PQconnectStartParams(p.keys, p.vals, 1);
	assert_non_null(c);
	PQconninfoOption *o = PQconninfo(c);
	assert_non_null(o);
	out[0] = '\0';
	for (PQconninfoOption *i = o; i->keyword != NULL; i++)
		if (strcmp(i->keyword, key) == 0 && i->val != NULL)
			snprintf(out, len, "%s", i->val);
	PQconninfoFree(o);
	PQfinish(c);
}

static void expect(const char *conninfo, const char *key, const char *want)
{
	char got[64];
	option(conninfo, key, got, sizeof got);
	if (strcmp(got, want) != 0)
		fail_msg("%s in \"%s\": got \"%s\", want \"%s\"", key, conninfo, got, want);
}

static void test_defaults(void **state)
{
	(void)state;
	pg_set_link_timeout(PG_LINK_TIMEOUT_DEFAULT_MS);
	expect(NOWHERE, "keepalives", "1");
	expect(NOWHERE, "keepalives_idle", "10");
	expect(NOWHERE, "keepalives_interval", "2");
	expect(NOWHERE, "keepalives_count", "5");
	expect(NOWHERE, "tcp_user_timeout", "20000");
	expect(NOWHERE, "connect_timeout", "20");
	expect(NOWHERE, "dbname", "x");
	expect(NOWHERE, "host", "/nonexistent-sagas-test");
}

static void test_conninfo_wins(void **state)
{
	(void)state;
	pg_set_link_timeout(PG_LINK_TIMEOUT_DEFAULT_MS);
	const char *ci = NOWHERE " keepalives=0 tcp_user_timeout=0 keepalives_idle=77";
	expect(ci, "keepalives", "0");
	expect(ci, "tcp_user_timeout", "0");
	expect(ci, "keepalives_idle", "77");
	expect(ci, "keepalives_interval", "2");
	const char *uri = "postgresql:///x?host=/nonexistent-sagas-test&keepalives_idle=33"
	                  "&connect_timeout=3";
	expect(uri, "keepalives_idle", "33");
	expect(uri, "connect_timeout", "3");
	expect(uri, "keepalives_count", "5");
	expect(uri, "dbname", "x");
}

static void test_set_link_timeout(void **state)
{
	(void)state;
	pg_set_link_timeout(4000);
	assert_int_equal(pg_link_timeout_ms(), 4000);
	expect(NOWHERE, "keepalives_idle", "2");
	expect(NOWHERE, "keepalives_interval", "1");
	expect(NOWHERE, "keepalives_count", "2");
	expect(NOWHERE, "tcp_user_timeout", "4000");
	pg_set_link_timeout(10);
	assert_int_equal(pg_link_timeout_ms(), PG_LINK_TIMEOUT_MIN_MS);
	pg_set_link_timeout(PG_LINK_TIMEOUT_DEFAULT_MS);
	for (int64_t ms = PG_LINK_TIMEOUT_MIN_MS; ms <= 3600000; ms += 1000) {
		pg_keepalive k = pg_keepalive_for(ms);
		int64_t reach = k.idle_s + (int64_t)k.count * k.interval_s;
		assert_true(k.idle_s >= 1 && k.interval_s >= 1 && k.count >= 1);
		assert_true(reach * 1000 >= ms - 999);                /* reaches it */
		assert_true(reach * 1000 < ms + k.interval_s * 1000); /* not much past */
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_defaults),
	    cmocka_unit_test(test_conninfo_wins),
	    cmocka_unit_test(test_set_link_timeout),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
