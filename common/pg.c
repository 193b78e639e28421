#include "pg.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "log.h"

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
	if (!strncmp(sqlstate, "08", 2) || !strcmp(sqlstate, "57P01") || !strcmp(sqlstate, "57P02")
	    || !strcmp(sqlstate, "57P03"))
		return PG_ERR_CONNECTION;
	return PG_ERR_OTHER;
}

static void pg_sleep_ms(int64_t ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

PGconn *pg_connect(const char *conninfo, int64_t wait_ms)
{
	int64_t until = clock_mono_ms() + wait_ms;
	int64_t backoff = 50;
	for (;;) {
		PGconn *conn = PQconnectdb(conninfo);
		if (conn != NULL && PQstatus(conn) == CONNECTION_OK) {
			/* reads and writes see a consistent clock and text output */
			PGresult *r = PQexec(
			    conn, "SET TIME ZONE 'UTC'; SET client_min_messages = warning");
			PQclear(r);
			return conn;
		}
		if (clock_mono_ms() + backoff > until) {
			log_error(NULL, "could not connect to database: %s",
			    conn ? PQerrorMessage(conn) : "out of memory");
			PQfinish(conn);
			return NULL;
		}
		PQfinish(conn);
		pg_sleep_ms(backoff);
		backoff = backoff * 2 > 1000 ? 1000 : backoff * 2;
	}
}

int pg_exec(PGconn *conn, const char *sql, int nparams, const char *const *params, PGresult **out)
{
	if (out)
		*out = NULL;
	PGresult *res = PQexecParams(conn, sql, nparams, NULL, params, NULL, NULL, 0);
	ExecStatusType st = res ? PQresultStatus(res) : PGRES_FATAL_ERROR;
	if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) {
		if (out)
			*out = res;
		else
			PQclear(res);
		return PG_OK;
	}
	const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
	int rc = pg_classify(state);
	if (PQstatus(conn) != CONNECTION_OK)
		rc = PG_ERR_CONNECTION;
	char text[512];
	snprintf(text, sizeof text, "%s", res ? PQresultErrorMessage(res) : PQerrorMessage(conn));
	for (char *c = text; *c; c++)
		if (*c == '\n')
			*c = ' '; /* one log line per message */
	log_msg(rc == PG_ERR_OTHER ? LOG_LEVEL_ERROR : LOG_LEVEL_DEBUG, NULL,
	    "statement failed (sqlstate %s): %s", state ? state : "none", text);
	PQclear(res);
	return rc;
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
	return pg_run(conn, "COMMIT", 0, NULL);
}

void pg_rollback(PGconn *conn)
{
	if (PQstatus(conn) != CONNECTION_OK)
		return;
	PGresult *r = PQexec(conn, "ROLLBACK");
	PQclear(r);
}

bool pg_ensure(PGconn **conn, const char *conninfo, int64_t wait_ms)
{
	if (*conn != NULL && PQstatus(*conn) == CONNECTION_OK)
		return true;
	if (*conn != NULL) {
		PQreset(*conn);
		if (PQstatus(*conn) == CONNECTION_OK) {
			PGresult *r = PQexec(
			    *conn, "SET TIME ZONE 'UTC'; SET client_min_messages = warning");
			PQclear(r);
			log_info(NULL, "reconnected to database");
			return true;
		}
		PQfinish(*conn);
		*conn = NULL;
	}
	*conn = pg_connect(conninfo, wait_ms);
	if (*conn != NULL)
		log_info(NULL, "reconnected to database");
	return *conn != NULL;
}

int64_t pg_get_i64(const PGresult *res, int row, int col)
{
	if (PQgetisnull(res, row, col))
		return 0;
	return strtoll(PQgetvalue(res, row, col), NULL, 10);
}

int pg_apply_schema(PGconn *conn, const char *lock_key, const char *schema_sql, const char *what)
{
	const char *key[] = {lock_key};
	int rc = pg_begin(conn);
	if (rc != 0)
		return rc;
	/* "relation already exists, skipping" on every restart is noise */
	rc = pg_run(conn, "SET LOCAL client_min_messages = warning", 0, NULL);
	if (rc == 0)
		rc = pg_run(conn, "SELECT pg_advisory_xact_lock($1::bigint)", 1, key);
	if (rc != 0)
		goto out_rollback;
	/* several statements: the extended protocol behind pg_exec refuses
	 * them, and with no parameters the simple protocol is safe */
	PGresult *res = PQexec(conn, schema_sql);
	if (res == NULL || PQresultStatus(res) != PGRES_COMMAND_OK) {
		const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
		rc = PQstatus(conn) == CONNECTION_OK ? pg_classify(state) : PG_ERR_CONNECTION;
		log_error(NULL, "could not apply %s schema: %s", what,
		    res ? PQresultErrorMessage(res) : PQerrorMessage(conn));
		PQclear(res);
		goto out_rollback;
	}
	PQclear(res);
	return pg_commit(conn);
out_rollback:
	pg_rollback(conn);
	return rc;
}

int pg_connect_and_apply_schema(const char *conninfo, int64_t wait_ms, const char *lock_key,
    const char *schema_sql, const char *what)
{
	PGconn *conn = pg_connect(conninfo, wait_ms);
	if (conn == NULL)
		return PG_ERR_CONNECTION;
	int rc = pg_apply_schema(conn, lock_key, schema_sql, what);
	PQfinish(conn);
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
