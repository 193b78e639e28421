#include "health.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>

#include "clock.h"
#include "log.h"
#include "methods.h"
#include "pg.h"
#include "sagas/v1/health.pb-c.h"
#include "valid.h"
#include "version.h"

/* ---- the service ---- */

static bool health_knows(const char *name, const char *service)
{
	return name[0] == '\0' || (service != NULL && strcmp(name, service) == 0)
	    || strcmp(name, "sagas.v1.Health") == 0 || strcmp(name, "sagas.v1.Admin") == 0;
}

static void health_check(const rpc_request *call, rpc_reply *reply, const char *service,
    bool (*healthy)(void *app), void *app)
{
	Sagas__V1__HealthCheckRequest *req
	    = sagas__v1__health_check_request__unpack(NULL, call->payload_len, call->payload);
	if (req == NULL) {
		rpc_reply_error(reply, RPC_INVALID_ARGUMENT, "malformed_payload",
		    "could not decode HealthCheckRequest");
		return;
	}
	if (!valid_utf8(req->service, strlen(req->service))) {
		rpc_reply_error(
		    reply, RPC_INVALID_ARGUMENT, "bad_field", "invalid service: not UTF-8");
	} else if (!health_knows(req->service, service)) {
		rpc_reply_error(reply, RPC_NOT_FOUND, "unknown_service", "unknown service \"%s\"",
		    req->service);
	} else {
		Sagas__V1__HealthCheckResponse out = SAGAS__V1__HEALTH_CHECK_RESPONSE__INIT;
		out.status = (healthy == NULL || healthy(app))
		    ? SAGAS__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__SERVING_STATUS_SERVING
		    : SAGAS__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__SERVING_STATUS_NOT_SERVING;
		out.version = (char *)saga_version;
		out.commit = (char *)saga_commit;
		rpc_reply_ok(reply, &out.base);
	}
	sagas__v1__health_check_request__free_unpacked(req, NULL);
}

void health_serve(void *ctx, const rpc_request *call, rpc_reply *reply)
{
	const health_service *h = ctx;
	if (method_find(call->method) == METHOD_Health_Check)
		health_check(call, reply, h->service, h->healthy, h->app);
	else
		rpc_reply_error(reply, RPC_UNIMPLEMENTED, "unknown_method", "unknown method \"%s\"",
		    call->method);
}

/* ---- the database probe ---- */

struct health_db {
	pthread_mutex_t mu;
	char *conninfo;
	PGconn *conn;       /* under mu; NULL when not connected */
	int64_t checked_ms; /* under mu: monotonic time of the last probe */
	bool probed;        /* under mu: a probe has run */
	bool fresh;         /* under mu: conn is new (its first probe sets the
	                       server's end of the link, pg_link_server_sql) */
	atomic_bool last;   /* the last result, read without the lock */
	char why[256];      /* under mu: the last failure, for the log */
};

int health_db_open(health_db **out, const char *conninfo)
{
	health_db *h = calloc(1, sizeof *h);
	if (h == NULL)
		return -ENOMEM;
	h->conninfo = strdup(conninfo);
	if (h->conninfo == NULL || pthread_mutex_init(&h->mu, NULL) != 0) {
		free(h->conninfo);
		free(h);
		return -ENOMEM;
	}
	atomic_init(&h->last, false);
	*out = h;
	return 0;
}

void health_db_close(health_db *h)
{
	if (h == NULL)
		return;
	PQfinish(h->conn);
	pthread_mutex_destroy(&h->mu);
	free(h->conninfo);
	free(h);
}

/* health_db_wait waits until the connection's socket is ready for `events`
 * or `deadline` (monotonic ms) passes. True when ready. */
static bool health_db_wait(PGconn *conn, short events, int64_t deadline)
{
	int fd = PQsocket(conn);
	if (fd < 0)
		return false;
	for (;;) {
		int64_t left = deadline - clock_mono_ms();
		if (left <= 0)
			return false;
		struct pollfd p = {.fd = fd, .events = events};
		int n = poll(&p, 1, (int)left);
		if (n > 0)
			return true;
		if (n < 0 && errno != EINTR)
			return false;
	}
}

static void health_db_fail(health_db *h, const char *what)
{
	char msg[192]; /* with `what` and ": ", within h->why */
	pg_one_line(h->conn ? PQerrorMessage(h->conn) : "out of memory", msg, sizeof msg);
	snprintf(h->why, sizeof h->why, "%s%s%s", what, msg[0] ? ": " : "", msg);
	PQfinish(h->conn);
	h->conn = NULL;
}

/* health_db_connect connects without blocking past `deadline`. */
static bool health_db_connect(health_db *h, int64_t deadline)
{
	/* the link timeout's keepalives (pg.h), then the probe's name */
	pg_params p;
	pg_params_make(&p, h->conninfo);
	p.keys[p.n] = "application_name", p.vals[p.n++] = "health";
	p.keys[p.n] = NULL, p.vals[p.n] = NULL;
	h->conn = PQconnectStartParams(p.keys, p.vals, 1);
	if (h->conn == NULL || PQstatus(h->conn) == CONNECTION_BAD) {
		health_db_fail(h, "could not connect");
		return false;
	}
	PostgresPollingStatusType st = PGRES_POLLING_WRITING;
	while (st != PGRES_POLLING_OK) {
		if (st == PGRES_POLLING_FAILED) {
			health_db_fail(h, "could not connect");
			return false;
		}
		if (!health_db_wait(
		        h->conn, st == PGRES_POLLING_READING ? POLLIN : POLLOUT, deadline)) {
			health_db_fail(h, "could not connect: timed out");
			return false;
		}
		st = PQconnectPoll(h->conn);
	}
	if (PQsetnonblocking(h->conn, 1) != 0) {
		health_db_fail(h, "could not connect");
		return false;
	}
	pg_log_notices(h->conn);
	h->fresh = true;
	/* a standby answers SELECT 1 but refuses every write of the daemon
	 * (a conninfo without target_session_attrs=read-write, or a failover
	 * not finished): not SERVING */
	if (pg_session_is_standby(h->conn)) {
		snprintf(h->why, sizeof h->why, "the server at %s:%s is a standby (read-only)",
		    PQhost(h->conn), PQport(h->conn));
		PQfinish(h->conn);
		h->conn = NULL;
		return false;
	}
	return true;
}

/* health_db_ping runs SELECT 1 on the probe's connection (made first when
 * needed) and drops the connection on any failure. */
static bool health_db_ping(health_db *h)
{
	int64_t deadline = clock_mono_ms() + HEALTH_DB_TIMEOUT_MS;
	if (h->conn != NULL && PQstatus(h->conn) != CONNECTION_OK) {
		PQfinish(h->conn);
		h->conn = NULL;
	}
	if (h->conn == NULL && !health_db_connect(h, deadline))
		return false;
	char sql[600] = "SELECT 1";
	if (h->fresh) {
		pg_link_server_sql(sql, sizeof sql - 16);
		strcat(sql, "; SELECT 1");
	}
	if (!PQsendQuery(h->conn, sql)) {
		health_db_fail(h, "could not send SELECT 1");
		return false;
	}
	int f;
	while ((f = PQflush(h->conn)) == 1)
		if (!health_db_wait(h->conn, POLLOUT, deadline))
			break;
	for (;;) {
		if (f != 0 || !PQconsumeInput(h->conn)) {
			health_db_fail(h, "SELECT 1 failed");
			return false;
		}
		if (!PQisBusy(h->conn))
			break;
		if (!health_db_wait(h->conn, POLLIN, deadline)) {
			health_db_fail(h, "SELECT 1 timed out");
			return false;
		}
	}
	bool ok = false;
	PGresult *r;
	while ((r = PQgetResult(h->conn)) != NULL) {
		ok = PQresultStatus(r) == PGRES_TUPLES_OK;
		PQclear(r);
		if (!ok)
			break;
	}
	if (!ok) {
		health_db_fail(h, "SELECT 1 failed");
		return false;
	}
	h->fresh = false;
	return true;
}

bool health_db_check(health_db *h)
{
	if (pthread_mutex_trylock(&h->mu) != 0)
		return atomic_load(&h->last); /* a probe is running: its last answer */
	int64_t now = clock_mono_ms();
	bool ok = atomic_load(&h->last);
	if (!h->probed || now - h->checked_ms >= HEALTH_DB_CACHE_MS) {
		bool was = ok, first = !h->probed;
		ok = health_db_ping(h);
		h->probed = true;
		h->checked_ms = clock_mono_ms();
		atomic_store(&h->last, ok);
		if (!ok && (was || first))
			log_warn(
			    NULL, "health: NOT_SERVING: the database is unreachable (%s)", h->why);
		else if (ok && !was && !first)
			log_info(NULL, "health: SERVING: the database is reachable again");
	}
	pthread_mutex_unlock(&h->mu);
	return ok;
}
