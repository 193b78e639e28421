/* pg_watch: a statement run asynchronously and cancelled when its result is
 * no longer wanted (pg_watch.h). */
#include "pg_watch.h"

#include <poll.h>
#include <stdio.h>
#include <string.h>

#include "log.h"
#include "pg.h"

/* pg_watch_cancel sends a cancel request for the statement running on
 * `conn` (a new short connection to the server, libpq's PQcancel). Returns
 * true when the request was sent; the statement may still finish first. */
static bool pg_watch_cancel(PGconn *conn)
{
	PGcancel *c = PQgetCancel(conn);
	if (c == NULL)
		return false;
	char err[256] = "";
	bool ok = PQcancel(c, err, sizeof err) == 1;
	PQfreeCancel(c);
	if (!ok)
		log_warn(NULL, "could not send a cancel request to the database: %s", err);
	return ok;
}

/* pg_watch_wait waits until `conn` has a whole result to read (or broke),
 * polling gone(arg) between waits and cancelling once it holds. Returns 0,
 * or PG_ERR_CONNECTION when the connection failed. */
static int pg_watch_wait(PGconn *conn, pg_watch_gone_fn gone, void *arg, bool *cancelled)
{
	for (;;) {
		int f = PQflush(conn);
		if (f < 0)
			return PG_ERR_CONNECTION;
		if (!PQconsumeInput(conn))
			return PG_ERR_CONNECTION;
		if (f == 0 && !PQisBusy(conn))
			return 0;
		if (!*cancelled && gone != NULL && gone(arg))
			*cancelled = pg_watch_cancel(conn);
		struct pollfd p = {.fd = PQsocket(conn), .events = POLLIN | (f > 0 ? POLLOUT : 0)};
		if (p.fd < 0)
			return PG_ERR_CONNECTION;
		(void)poll(&p, 1, PG_WATCH_POLL_MS);
	}
}

int pg_exec_watched(PGconn *conn, const char *sql, int nparams, const char *const *params,
    PGresult **out, pg_watch_gone_fn gone, void *arg, bool *cancelled)
{
	bool sent_cancel = false;
	if (out)
		*out = NULL;
	if (cancelled)
		*cancelled = false;
	if (!PQsendQueryParams(conn, sql, nparams, NULL, params, NULL, NULL, 0))
		return PG_ERR_CONNECTION;
	PGresult *last = NULL;
	int rc = 0;
	for (;;) {
		if (pg_watch_wait(conn, gone, arg, &sent_cancel) != 0) {
			rc = PG_ERR_CONNECTION;
			break;
		}
		PGresult *r = PQgetResult(conn);
		if (r == NULL)
			break; /* the statement's results are all read */
		PQclear(last);
		last = r;
	}
	if (cancelled)
		*cancelled = sent_cancel;
	if (rc != 0 || PQstatus(conn) != CONNECTION_OK) {
		PQclear(last);
		return PG_ERR_CONNECTION;
	}
	ExecStatusType st = last ? PQresultStatus(last) : PGRES_FATAL_ERROR;
	if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) {
		if (out)
			*out = last;
		else
			PQclear(last);
		return 0;
	}
	const char *state = last ? PQresultErrorField(last, PG_DIAG_SQLSTATE) : NULL;
	rc = pg_classify(state);
	char text[512];
	pg_one_line(last ? PQresultErrorMessage(last) : PQerrorMessage(conn), text, sizeof text);
	log_msg(rc == PG_ERR_OTHER ? LOG_LEVEL_ERROR : LOG_LEVEL_DEBUG, NULL,
	    "statement failed (sqlstate %s): %s", state ? state : "none", text);
	PQclear(last);
	return rc;
}
