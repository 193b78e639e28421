#include "pg.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "log.h"
#include "metrics.h"
#include "pg_internal.h"
#include "version.h"

const char *pg_err_name(int rc)
{
	switch (rc) {
	case PG_OK:
		return "ok";
	case PG_ERR_RETRY:
		return "lost a race (serialization failure or deadlock)";
	case PG_ERR_UNIQUE:
		return "unique violation";
	case PG_ERR_CHECK:
		return "check violation";
	case PG_ERR_CONNECTION:
		return "database connection lost";
	case PG_ERR_OTHER:
		return "database error";
	case PG_ERR_INJECTED:
		return "injected fault";
	case PG_ERR_SCHEMA_NEWER:
		return "database schema newer than this program";
	case PG_ERR_CANCELED:
		return "statement cancelled (statement_timeout or a cancel request)";
	default:
		return rc < 0 ? strerror(-rc) : "unknown error";
	}
}

int pg_classify(const char *sqlstate)
{
	if (sqlstate == NULL || strlen(sqlstate) != 5)
		return PG_ERR_CONNECTION;
	if (!strcmp(sqlstate, "40001") || !strcmp(sqlstate, "40P01"))
		return PG_ERR_RETRY;
	if (!strcmp(sqlstate, "23505"))
		return PG_ERR_UNIQUE;
	if (!strcmp(sqlstate, "23514"))
		return PG_ERR_CHECK;
	if (!strcmp(sqlstate, "57014"))
		return PG_ERR_CANCELED;
	/* 25006 read_only_sql_transaction: the session is on a standby (a
	 * failover demoted its server, or a conninfo without
	 * target_session_attrs=read-write chose one): not a bad statement but
	 * the wrong server, so the session is dropped (pg_fail) and made
	 * again, which finds the primary (docs/operations.md, "PostgreSQL
	 * failover") */
	if (!strncmp(sqlstate, "08", 2) || !strcmp(sqlstate, "57P01") || !strcmp(sqlstate, "57P02")
	    || !strcmp(sqlstate, "57P03") || !strcmp(sqlstate, "25006"))
		return PG_ERR_CONNECTION;
	return PG_ERR_OTHER;
}

/* pg_notice logs a server's notice (a WARNING such as "terminating
 * connection due to immediate shutdown command", as a failover's primary
 * sends) as one line of the daemon's log, instead of libpq's default of
 * raw text on stderr. */
static void pg_notice(void *arg, const char *message)
{
	(void)arg;
	char text[512];
	log_warn(NULL, "database: %s", pg_one_line(message, text, sizeof text));
}

void pg_log_notices(PGconn *conn)
{
	PQsetNoticeProcessor(conn, pg_notice, NULL);
}

/* pg_session_setup sets what every session of the daemons relies on:
 * - its notices into the log (pg_log_notices);
 * - a consistent clock and text output (UTC, no NOTICEs);
 * - no sequential scans where an index can serve (enable_seqscan = off).
 *   Every statement of the daemons reads or writes rows by key, most of
 *   them prepared (pg_exec_stmt), and PostgreSQL keeps the generic plan of
 *   a prepared statement it first made while the table was empty: a plan
 *   that scans the whole table, and goes on doing so as the table grows
 *   (seen under load: a batch's lock of 20 charges read 12,000 rows). The
 *   few whole-table reads (ListStock, ListAccounts) still run, through an
 *   index or, where none serves, a sequential scan all the same.
 * - generic plans for every prepared statement (plan_cache_mode =
 *   force_generic_plan). With the default (auto) PostgreSQL plans each
 *   statement afresh for its first five runs and then keeps doing so
 *   whenever the generic plan's estimate is dearer than the custom plans'
 *   average, which is so for the statements over unnest($n::type[]) of a
 *   few rows: the planner ran at every execution, 12% of PostgreSQL's CPU
 *   at 1,200 sagas/s (perf; docs/benchmarks.md). The statements read and
 *   write by key, so the generic plan is the plan a custom one would be. */
static _Atomic int64_t pg_link_ms = PG_LINK_TIMEOUT_DEFAULT_MS;

void pg_set_link_timeout(int64_t ms)
{
	pg_link_ms = ms < PG_LINK_TIMEOUT_MIN_MS ? PG_LINK_TIMEOUT_MIN_MS : ms;
}

int64_t pg_link_timeout_ms(void)
{
	return pg_link_ms;
}

pg_keepalive pg_keepalive_for(int64_t ms)
{
	int64_t t = ms / 1000 > 2 ? ms / 1000 : 2;
	pg_keepalive k;
	k.idle_s = (int)(t / 2);
	k.interval_s = t / 8 > 1 ? (int)(t / 8) : 1;
	/* idle + count x interval reaches the timeout: the count ends a link
	 * where tcp_user_timeout is not known (with it, Linux ends the link
	 * at the first probe past the timeout) */
	k.count = (int)((t - k.idle_s + k.interval_s - 1) / k.interval_s);
	if (k.count < 1)
		k.count = 1;
	return k;
}

void pg_params_make(pg_params *p, const char *conninfo)
{
	int64_t ms = pg_link_ms;
	pg_keepalive k = pg_keepalive_for(ms);
	snprintf(p->text[0], sizeof p->text[0], "%d", k.idle_s);
	snprintf(p->text[1], sizeof p->text[1], "%d", k.interval_s);
	snprintf(p->text[2], sizeof p->text[2], "%d", k.count);
	snprintf(p->text[3], sizeof p->text[3], "%lld", (long long)ms);
	snprintf(p->text[4], sizeof p->text[4], "%lld", (long long)((ms + 999) / 1000));
	int n = 0;
	p->keys[n] = "keepalives", p->vals[n++] = "1";
	p->keys[n] = "keepalives_idle", p->vals[n++] = p->text[0];
	p->keys[n] = "keepalives_interval", p->vals[n++] = p->text[1];
	p->keys[n] = "keepalives_count", p->vals[n++] = p->text[2];
	p->keys[n] = "tcp_user_timeout", p->vals[n++] = p->text[3];
	p->keys[n] = "connect_timeout", p->vals[n++] = p->text[4];
	/* last: the conninfo's own keywords override the defaults above
	 * (libpq applies the arrays in order, expanding this first dbname) */
	p->keys[n] = "dbname", p->vals[n++] = conninfo;
	p->keys[n] = NULL, p->vals[n] = NULL;
	p->n = n;
}

/* pg_connectdb is PQconnectdb(conninfo) with the link timeout's defaults. */
static PGconn *pg_connectdb(const char *conninfo)
{
	pg_params p;
	pg_params_make(&p, conninfo);
	return PQconnectdbParams(p.keys, p.vals, 1);
}

void pg_link_server_sql(char *buf, size_t len)
{
	int64_t ms = pg_link_ms;
	pg_keepalive k = pg_keepalive_for(ms);
	snprintf(buf, len,
	    "SELECT set_config(name, CASE name WHEN 'tcp_keepalives_idle' THEN '%d' "
	    "WHEN 'tcp_keepalives_interval' THEN '%d' WHEN 'tcp_keepalives_count' THEN '%d' "
	    "ELSE '%lld' END, false) FROM pg_settings WHERE name IN ('tcp_keepalives_idle', "
	    "'tcp_keepalives_interval', 'tcp_keepalives_count', 'tcp_user_timeout') "
	    "AND source = 'default'",
	    k.idle_s, k.interval_s, k.count, (long long)ms);
}

void pg_session_setup(PGconn *conn)
{
	pg_log_notices(conn);
	/* the server's end of the link (pg.h, the link timeout): a backend
	 * whose client vanished without a reset ends, and frees its advisory
	 * locks; only what the server has at its built-in default is set */
	char link[512], sql[768];
	pg_link_server_sql(link, sizeof link);
	snprintf(sql, sizeof sql,
	    "SET TIME ZONE 'UTC'; SET client_min_messages = warning; SET enable_seqscan = off; "
	    "SET plan_cache_mode = force_generic_plan; %s",
	    link);
	PGresult *r = PQexec(conn, sql);
	PQclear(r);
}

const char *pg_one_line(const char *m, char *out, size_t len)
{
	snprintf(out, len, "%s", m);
	char *w = out;
	for (const char *r = out; *r; r++) {
		char ch = *r == '\n' || *r == '\t' || *r == '\r' ? ' ' : *r;
		if ((unsigned char)ch < 0x20 || ch == 0x7f)
			ch = '?'; /* ESC, BEL, ...: never raw into a log */
		if (ch == ' ' && (w == out || w[-1] == ' '))
			continue;
		*w++ = ch;
	}
	while (w > out && w[-1] == ' ')
		w--;
	*w = '\0';
	return out;
}

bool pg_conninfo_ok(const char *conninfo, char *why, size_t len)
{
	char *err = NULL;
	PQconninfoOption *o = PQconninfoParse(conninfo, &err);
	if (o != NULL) {
		PQconninfoFree(o);
		return true;
	}
	pg_one_line(err != NULL ? err : "out of memory", why, len);
	PQfreemem(err);
	return false;
}

bool pg_session_is_standby(const PGconn *conn)
{
	const char *hs = PQparameterStatus(conn, "in_hot_standby");
	return hs != NULL && strcmp(hs, "on") == 0;
}

/* The connection of this thread whose session was found on a read-only
 * server (SQLSTATE 25006, pg_fail): pg_ensure makes it again although
 * libpq still calls it CONNECTION_OK. One per thread is enough, as each
 * thread owns its connection (house style). */
static _Thread_local const PGconn *pg_read_only_conn;

PGconn *pg_connect_once(const char *conninfo, char *why, size_t len)
{
	PGconn *conn = pg_connectdb(conninfo);
	if (conn != NULL && PQstatus(conn) == CONNECTION_OK) {
		pg_session_setup(conn);
		return conn;
	}
	pg_one_line(conn ? PQerrorMessage(conn) : "out of memory", why, len);
	PQfinish(conn);
	return NULL;
}

PGconn *pg_connect(const char *conninfo, int64_t wait_ms)
{
	int64_t until = clock_mono_ms() + wait_ms;
	int64_t backoff = 50;
	char why[512];
	for (bool first = true;; first = false) {
		PGconn *conn = pg_connectdb(conninfo);
		if (conn != NULL && PQstatus(conn) == CONNECTION_OK
		    && !pg_session_is_standby(conn)) {
			if (conn == pg_read_only_conn) /* new, where a dropped one was */
				pg_read_only_conn = NULL;
			pg_session_setup(conn);
			return conn;
		}
		/* a standby (a conninfo without target_session_attrs=read-write,
		 * or a failover not finished) cannot take the daemons' writes:
		 * a failed try, as libpq's read-write check makes it */
		if (conn != NULL && PQstatus(conn) == CONNECTION_OK)
			snprintf(why, sizeof why,
			    "the server at %s:%s is a standby (read-only), not the primary",
			    PQhost(conn), PQport(conn));
		else
			pg_one_line(conn ? PQerrorMessage(conn) : "out of memory", why, sizeof why);
		PQfinish(conn);
		int64_t left = until - clock_mono_ms();
		if (left <= 0) {
			log_error(NULL, "could not connect to database: %s", why);
			return NULL;
		}
		/* say why at once when the wait is long (a start's --db-wait): a
		 * wrong dbname or password fails the same way at every try. A
		 * worker's short reconnect wait stays quiet until it gives up. */
		if (first && wait_ms >= PG_CONNECT_WARN_WAIT_MS)
			log_warn(NULL,
			    "could not connect to database yet, retrying for up to %lld ms: %s",
			    (long long)left, why);
		clock_sleep_us((backoff < left ? backoff : left) * 1000);
		backoff = backoff * 2 > 1000 ? 1000 : backoff * 2;
	}
}

static const metric_def PG_COMMIT_SECONDS = {"sagas_db_commit_seconds",
    "Time of each transaction that committed, from its last statement sent to the commit "
    "confirmed (a whole pipeline for the pipelined ones)",
    METRIC_HISTOGRAM, "", METRICS_LATENCY_BUCKETS, METRICS_LATENCY_NBUCKETS};
static const metric_def PG_ERRORS = {"sagas_db_errors_total",
    "Failed database statements, by SQLSTATE class (40: serialization, 23: constraint, ...) "
    "or connection",
    METRIC_COUNTER, "class", NULL, 0};
static const metric_def PG_RECONNECTS = {"sagas_db_reconnects_total",
    "Database sessions made again after one was lost (or found read-only)", METRIC_COUNTER, "",
    NULL, 0};

void pg_metrics_init(void)
{
	metric_add(metric_get(&PG_RECONNECTS, NULL), 0);
	metric_add(metric_get1(&PG_ERRORS, "connection"), 0);
	metric_add(metric_get1(&PG_ERRORS, "40"), 0);
	(void)metric_get(&PG_COMMIT_SECONDS, NULL);
}

/* pg_observe_commit records a commit that took from `t0_us` (clock_mono_us)
 * to now. */
void pg_observe_commit(int64_t t0_us)
{
	static metric *m;
	metric *h = __atomic_load_n(&m, __ATOMIC_RELAXED);
	if (h == NULL) {
		h = metric_get(&PG_COMMIT_SECONDS, NULL);
		__atomic_store_n(&m, h, __ATOMIC_RELAXED);
	}
	metric_observe(h, (double)(clock_mono_us() - t0_us) / 1e6);
}

/* pg_count_error counts a failure of class `rc` with SQLSTATE `state`. */
static void pg_count_error(int rc, const char *state)
{
	char cls[3] = {0};
	if (state != NULL && isalnum((unsigned char)state[0]) && isalnum((unsigned char)state[1]))
		memcpy(cls, state, 2);
	metric_inc(metric_get1(&PG_ERRORS,
	    rc == PG_ERR_CONNECTION ? "connection"
	        : cls[0]            ? cls
	                            : "none"));
}

/* pg_fail classifies the failed result `res` (may be NULL) of `what` into
 * an enum pg_err and logs the server's message: at ERROR for a bug or bad
 * data, at DEBUG for what the callers retry. Does not free `res`. */
int pg_fail(PGconn *conn, PGresult *res, const char *what)
{
	const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
	int rc = pg_classify(state);
	if (PQstatus(conn) != CONNECTION_OK)
		rc = PG_ERR_CONNECTION;
	pg_count_error(rc, state);
	if (state != NULL && strcmp(state, "25006") == 0) {
		pg_read_only_conn = conn; /* on a standby: pg_ensure makes it again */
		/* at most one WARNING per thread every 10 s: a server that stays
		 * read-only (and takes new sessions: no target_session_attrs)
		 * fails every sweep */
		static _Thread_local int64_t warned_ms;
		int64_t now = clock_mono_ms();
		bool loud = warned_ms == 0 || now - warned_ms >= 10000;
		if (loud)
			warned_ms = now;
		log_msg(loud ? LOG_LEVEL_WARN : LOG_LEVEL_DEBUG, NULL,
		    "the database session is read-only (SQLSTATE 25006: a standby, or a "
		    "server set read-only): reconnecting to find the primary");
	}
	char text[512];
	pg_one_line(res ? PQresultErrorMessage(res) : PQerrorMessage(conn), text, sizeof text);
	log_msg(rc == PG_ERR_OTHER ? LOG_LEVEL_ERROR : LOG_LEVEL_DEBUG, NULL,
	    "%s failed (sqlstate %s): %s", what, state ? state : "none", text);
	return rc;
}

/* pg_result_take ends a statement with its result `res` (NULL: none):
 * success hands it to *out (or clears it when out is NULL) and returns
 * PG_OK; else it is cleared and the enum pg_err of pg_fail returned. */
static int pg_result_take(PGconn *conn, PGresult *res, PGresult **out)
{
	ExecStatusType st = res ? PQresultStatus(res) : PGRES_FATAL_ERROR;
	if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) {
		if (out)
			*out = res;
		else
			PQclear(res);
		return PG_OK;
	}
	int rc = pg_fail(conn, res, "statement");
	PQclear(res);
	return rc;
}

int pg_exec(PGconn *conn, const char *sql, int nparams, const char *const *params, PGresult **out)
{
	if (out)
		*out = NULL;
	PGresult *res = PQexecParams(conn, sql, nparams, NULL, params, NULL, NULL, 0);
	return pg_result_take(conn, res, out);
}

/* pg_wait_socket waits until `conn`'s socket is ready for `events` or the
 * monotonic `deadline` (ms) passes; true when ready (or in error: the next
 * libpq call says which). */
static bool pg_wait_socket(PGconn *conn, short events, int64_t deadline)
{
	int fd = PQsocket(conn);
	if (fd < 0)
		return true;
	for (;;) {
		int64_t left = deadline - clock_mono_ms();
		if (left <= 0)
			return false;
		struct pollfd p = {.fd = fd, .events = events};
		int n = poll(&p, 1, left > 1000 ? 1000 : (int)left);
		if (n > 0 || (n < 0 && errno != EINTR))
			return true;
	}
}

int pg_exec_within(PGconn *conn, const char *sql, int nparams, const char *const *params,
    PGresult **out, int64_t timeout_ms)
{
	if (out)
		*out = NULL;
	int64_t deadline = clock_mono_ms() + timeout_ms;
	int rc;
	PGresult *res = NULL; /* the first failed result, else the last */
	if (PQsetnonblocking(conn, 1) != 0
	    || !PQsendQueryParams(conn, sql, nparams, NULL, params, NULL, NULL, 0))
		goto out_broken;
	for (;;) {
		int f = PQflush(conn);
		if (f < 0)
			goto out_broken;
		if (f == 0)
			break;
		if (!pg_wait_socket(conn, POLLOUT, deadline))
			goto out_timeout;
	}
	for (;;) {
		while (!PQisBusy(conn)) {
			PGresult *r = PQgetResult(conn);
			if (r == NULL)
				goto out_done;
			bool res_ok = res != NULL
			    && (PQresultStatus(res) == PGRES_COMMAND_OK
			        || PQresultStatus(res) == PGRES_TUPLES_OK);
			if (res == NULL || res_ok) {
				PQclear(res);
				res = r;
			} else {
				PQclear(r);
			}
		}
		if (!pg_wait_socket(conn, POLLIN, deadline)) {
			PQclear(res);
			goto out_timeout;
		}
		if (!PQconsumeInput(conn)) {
			PQclear(res);
			goto out_broken;
		}
	}
out_done:
	PQsetnonblocking(conn, 0);
	return pg_result_take(conn, res, out);
out_broken:
	rc = pg_fail(conn, NULL, "statement");
	PQsetnonblocking(conn, 0); /* does not block: nothing left to flush that could */
	return rc;
out_timeout:
	pg_count_error(PG_ERR_CONNECTION, NULL);
	log_debug(NULL, "statement failed: no answer from the database within %lld ms",
	    (long long)timeout_ms);
	return PG_ERR_CONNECTION;
}

int pg_run(PGconn *conn, const char *sql, int nparams, const char *const *params)
{
	return pg_exec(conn, sql, nparams, params, NULL);
}

int pg_begin(PGconn *conn)
{
	return pg_run(conn, "BEGIN", 0, NULL);
}

int pg_commit(PGconn *conn)
{
	int64_t t0 = clock_mono_us();
	int rc = pg_run(conn, "COMMIT", 0, NULL);
	if (rc == PG_OK)
		pg_observe_commit(t0);
	return rc;
}

void pg_rollback(PGconn *conn)
{
	if (PQstatus(conn) != CONNECTION_OK)
		return;
	PGresult *r = PQexec(conn, "ROLLBACK");
	PQclear(r);
}

/* pg_said_reconnected logs a reconnection of this thread: at INFO, but one
 * that replaces a read-only session at most once every 10 s per thread (at
 * DEBUG otherwise): a primary set read-only (default_transaction_read_only)
 * takes every new session, so each sweep, and each call of a client, would
 * reconnect and say so again. */
static void pg_said_reconnected(const PGconn *conn, bool after_read_only)
{
	static _Thread_local int64_t said_ms;
	int64_t now = clock_mono_ms();
	bool quiet = after_read_only && said_ms != 0 && now - said_ms < 10000;
	if (after_read_only && !quiet)
		said_ms = now;
	metric_inc(metric_get(&PG_RECONNECTS, NULL));
	log_msg(quiet ? LOG_LEVEL_DEBUG : LOG_LEVEL_INFO, NULL, "reconnected to database at %s:%s",
	    PQhost(conn), PQport(conn));
}

bool pg_ensure(PGconn **conn, const char *conninfo, int64_t wait_ms)
{
	bool read_only = *conn != NULL && *conn == pg_read_only_conn;
	if (*conn != NULL && PQstatus(*conn) == CONNECTION_OK && !read_only)
		return true;
	/* a first connection (a thread's, a leader's) is no reconnection: it
	 * says "connected", and is not counted */
	bool first = *conn == NULL;
	if (read_only)
		pg_read_only_conn = NULL;
	if (*conn != NULL) {
		/* libpq tries every host of a multi-host conninfo again, in order,
		 * with its target_session_attrs */
		PQreset(*conn);
		if (PQstatus(*conn) == CONNECTION_OK && !pg_session_is_standby(*conn)) {
			pg_session_setup(*conn);
			pg_said_reconnected(*conn, read_only);
			return true;
		}
		PQfinish(*conn);
		*conn = NULL;
	}
	*conn = pg_connect(conninfo, wait_ms);
	if (*conn != NULL && !first)
		pg_said_reconnected(*conn, read_only);
	else if (*conn != NULL)
		log_msg(LOG_LEVEL_INFO, NULL, "connected to database at %s:%s", PQhost(*conn),
		    PQport(*conn));
	return *conn != NULL;
}

int64_t pg_get_i64(const PGresult *res, int row, int col)
{
	if (PQgetisnull(res, row, col))
		return 0;
	return strtoll(PQgetvalue(res, row, col), NULL, 10);
}

/* The table of schema versions, one row per component (pg_apply_schema). */
#define PG_SCHEMA_VERSION_TABLE                                                                    \
	"CREATE TABLE IF NOT EXISTS schema_version ("                                              \
	"  component text PRIMARY KEY,"                                                            \
	"  version int NOT NULL CHECK (version > 0),"                                              \
	"  applied_at timestamptz NOT NULL DEFAULT now(),"                                         \
	"  applied_by text NOT NULL)"

int pg_apply_schema(PGconn *conn, const pg_schema *s)
{
	const char *key[] = {s->lock_key};
	char ver[16], by[160];
	snprintf(ver, sizeof ver, "%d", s->version);
	snprintf(by, sizeof by, "%s %s (commit %s)", s->prog, saga_version, saga_commit);
	const char *p[] = {s->what, ver, by};
	PGresult *res = NULL;
	int rc = pg_begin(conn);
	if (rc != 0)
		return rc;
	/* "relation already exists, skipping" on every restart is noise */
	rc = pg_run(conn, "SET LOCAL client_min_messages = warning", 0, NULL);
	/* daemons starting together take turns; a lock held long (a stuck
	 * session) is said, not waited on in silence */
	if (rc == 0)
		rc = pg_exec(conn, "SELECT pg_try_advisory_xact_lock($1::bigint)", 1, key, &res);
	if (rc == 0 && strcmp(PQgetvalue(res, 0, 0), "t") != 0) {
		log_info(NULL,
		    "waiting for the %s schema lock (advisory lock %s): another session is "
		    "applying the schema, or holds it",
		    s->what, s->lock_key);
		rc = pg_run(conn, "SELECT pg_advisory_xact_lock($1::bigint)", 1, key);
	}
	PQclear(res);
	res = NULL;
	if (rc == 0)
		rc = pg_run(conn, PG_SCHEMA_VERSION_TABLE, 0, NULL);
	/* the version is compared by the database, as a bigint: a table made
	 * otherwise (a view, another column type, a NULL, two rows) is
	 * refused, or fails the cast, rather than read as "older" */
	if (rc == 0)
		rc = pg_exec(conn,
		    "SELECT coalesce((SELECT relkind::text FROM pg_class"
		    "   WHERE oid = to_regclass('schema_version')), ''),"
		    " count(*), bool_or(version IS NULL), coalesce(max(version::bigint), 0),"
		    " coalesce(max(version::bigint) > $2::bigint, false), "
		    "coalesce(max(applied_by), '')"
		    " FROM schema_version WHERE component = $1",
		    2, p, &res);
	if (rc != 0)
		goto out_rollback;
	if (strcmp(PQgetvalue(res, 0, 0), "r") != 0 || pg_get_i64(res, 0, 1) > 1
	    || strcmp(PQgetvalue(res, 0, 2), "t") == 0) {
		log_error(NULL,
		    "could not read the %s schema version: schema_version is not the table %s "
		    "makes (a view, several rows or a NULL version for %s): refusing to start",
		    s->what, s->prog, s->what);
		rc = PG_ERR_OTHER;
		goto out_rollback;
	}
	if (strcmp(PQgetvalue(res, 0, 4), "t") == 0) {
		char who[96];
		pg_one_line(PQgetvalue(res, 0, 5), who, sizeof who);
		log_error(NULL,
		    "the %s database holds schema version %s (applied by %s), newer than the %d "
		    "this %s knows: refusing to start; run the %s of that build or a later one "
		    "(docs/operations.md, \"Upgrading\")",
		    s->what, PQgetvalue(res, 0, 3), who, s->version, s->prog, s->prog);
		rc = PG_ERR_SCHEMA_NEWER;
		goto out_rollback;
	}
	PQclear(res);
	/* several statements: the extended protocol behind pg_exec refuses
	 * them, and with no parameters the simple protocol is safe */
	res = PQexec(conn, s->sql);
	if (res == NULL || PQresultStatus(res) != PGRES_COMMAND_OK) {
		const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
		rc = PQstatus(conn) == CONNECTION_OK ? pg_classify(state) : PG_ERR_CONNECTION;
		if (state != NULL && strcmp(state, "25006") == 0)
			pg_read_only_conn = conn; /* on a standby: made again */
		log_error(NULL, "could not apply %s schema: %s", s->what,
		    res ? PQresultErrorMessage(res) : PQerrorMessage(conn));
		goto out_rollback;
	}
	PQclear(res);
	res = NULL;
	/* recorded when new or older (an equal version is left as it is) */
	rc = pg_run(conn,
	    "INSERT INTO schema_version (component, version, applied_by) VALUES ($1, $2::int, $3) "
	    "ON CONFLICT (component) DO UPDATE SET version = EXCLUDED.version, applied_at = now(), "
	    "applied_by = EXCLUDED.applied_by WHERE schema_version.version::bigint < "
	    "EXCLUDED.version",
	    3, p);
	if (rc != 0)
		goto out_rollback;
	return pg_commit(conn);
out_rollback:
	PQclear(res);
	pg_rollback(conn);
	return rc;
}

bool pg_schema_try_again(int rc, int64_t until_ms, const char *what)
{
	int64_t left = until_ms - clock_mono_ms();
	if ((rc != PG_ERR_CONNECTION && rc != PG_ERR_RETRY) || left <= 0)
		return false;
	/* PG_ERR_RETRY: a deadlock or serialization failure with another
	 * instance starting or running on the same database (two orchestrators
	 * of compose, one applying the schema while the other works): the
	 * transaction rolled back and the schema is idempotent */
	log_warn(NULL, "could not apply the %s schema: %s; trying again for up to %lld ms", what,
	    rc == PG_ERR_RETRY ? "lost a race with another instance (deadlock)"
	                       : "database connection lost (a failover?)",
	    (long long)left);
	clock_sleep_us((left < PG_SCHEMA_RETRY_MS ? left : PG_SCHEMA_RETRY_MS) * 1000);
	return true;
}

int pg_connect_and_apply_schema(const char *conninfo, int64_t wait_ms, const pg_schema *s)
{
	int64_t until = clock_mono_ms() + wait_ms;
	int rc;
	do {
		int64_t left = until - clock_mono_ms();
		PGconn *conn = pg_connect(conninfo, left > 0 ? left : 0);
		if (conn == NULL)
			return PG_ERR_CONNECTION;
		rc = pg_apply_schema(conn, s);
		PQfinish(conn);
	} while (pg_schema_try_again(rc, until, s->what));
	return rc;
}

int pg_ready(PGconn **conn, const char *conninfo, int64_t wait_ms)
{
	if (!pg_ensure(conn, conninfo, wait_ms))
		return PG_ERR_CONNECTION;
	/* every path ends its transaction; this only guards against a bug
	 * leaving one open and every later call failing inside it */
	if (PQtransactionStatus(*conn) != PQTRANS_IDLE)
		pg_rollback(*conn);
	return 0;
}

bool pg_may_rerun(PGconn **conn, const char *conninfo, int64_t wait_ms, int rc, bool *rerun_done)
{
	if (rc != PG_ERR_CONNECTION || *rerun_done)
		return false;
	*rerun_done = true;
	return pg_ensure(conn, conninfo, wait_ms);
}
