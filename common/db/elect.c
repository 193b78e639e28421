#include "elect.h"

#include <errno.h>
#include <inttypes.h>
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "log.h"
#include "pg.h"

struct elect {
	char *conninfo;
	char *what;
	int64_t key;
	PGconn *conn;
	bool leading;
	bool said_other; /* logged that another process leads (once per spell) */
};

int elect_open(elect **out, const char *conninfo, int64_t key, const char *what)
{
	elect *e = calloc(1, sizeof *e);
	if (e == NULL)
		return -ENOMEM;
	e->conninfo = strdup(conninfo);
	e->what = strdup(what);
	if (e->conninfo == NULL || e->what == NULL) {
		elect_close(e);
		return -ENOMEM;
	}
	e->key = key;
	*out = e;
	return 0;
}

/* elect_lost records that the lock is gone with its session. */
static void elect_lost(elect *e, const char *why)
{
	if (e->leading)
		log_warn(NULL, "no longer leading %s: %s", e->what, why);
	e->leading = false;
	if (e->conn != NULL) {
		PQfinish(e->conn);
		e->conn = NULL;
	}
}

bool elect_lead(elect *e)
{
	if (e->conn == NULL || PQstatus(e->conn) != CONNECTION_OK) {
		elect_lost(e, "its database connection broke");
		e->conn = pg_connect(e->conninfo, 1000);
		if (e->conn == NULL)
			return false;
	}
	char key[24];
	snprintf(key, sizeof key, "%" PRId64, e->key);
	const char *p[1] = {key};
	PGresult *r = NULL;
	/* held already: a round trip proves the session (and its lock) lives;
	 * taking it again would stack a second hold, so only ask when not */
	/* the leader's own bound: an answer within the link timeout (pg.h), or
	 * the lead is given up and the session dropped; on a stalled link the
	 * server ends that session within about the same time, which frees the
	 * lock for another process (docs/operations.md, "A database link that
	 * stalls") */
	int64_t bound = pg_link_timeout_ms();
	int64_t t0 = clock_mono_ms();
	int rc = e->leading
	    ? pg_exec_within(e->conn, "SELECT true", 0, NULL, &r, bound)
	    : pg_exec_within(e->conn, "SELECT pg_try_advisory_lock($1::bigint)", 1, p, &r, bound);
	if (rc != 0) {
		char why[160];
		if (clock_mono_ms() - t0 >= bound)
			snprintf(why, sizeof why,
			    "its database session did not answer within %lld ms (db-link-timeout)",
			    (long long)bound);
		else
			snprintf(why, sizeof why, "%s", pg_err_name(rc));
		elect_lost(e, why);
		return false;
	}
	bool held = PQntuples(r) == 1 && PQgetvalue(r, 0, 0)[0] == 't';
	PQclear(r);
	if (held && !e->leading) {
		log_info(NULL, "now leading %s (advisory lock %" PRId64 ")", e->what, e->key);
		e->said_other = false;
	} else if (!held && !e->said_other) {
		log_info(
		    NULL, "another process leads %s (advisory lock %" PRId64 ")", e->what, e->key);
		e->said_other = true;
	}
	e->leading = held;
	return held;
}

PGconn *elect_conn(elect *e)
{
	return e->leading ? e->conn : NULL;
}

void elect_close(elect *e)
{
	if (e == NULL)
		return;
	if (e->conn != NULL)
		PQfinish(e->conn);
	free(e->conninfo);
	free(e->what);
	free(e);
}
