#include "listen.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <nng/nng.h>
#include <nng/supplemental/util/platform.h>

#include "log.h"
#include "pg.h"
#include "store.h"

/* The sagas read in one statement (store_get_sagas). */
#define LISTEN_READ_MAX 256
/* The pause between two connection attempts: 50 ms doubling to 1 s. */
#define LISTEN_BACKOFF_MIN_MS 50
#define LISTEN_BACKOFF_MAX_MS 1000
/* The longest poll() sleeps: a bound on a stop missed by the pipe (never
 * expected; the pipe wakes it). */
#define LISTEN_POLL_MS 1000

typedef char listen_id[VALID_UUID_LEN + 1];

struct listener {
	const char *db; /* borrowed */
	waits *w;       /* borrowed */
	int wake[2];    /* listener_stop writes a byte to wake[1] */
	atomic_bool stop;
	nng_thread *thread;
	PGconn *conn; /* the thread's; NULL while disconnected */
};

/* listener_pause sleeps `ms` ms unless stopped meanwhile: true when it
 * should stop. */
static bool listener_pause(listener *l, int ms)
{
	struct pollfd p = {.fd = l->wake[0], .events = POLLIN};
	if (!atomic_load(&l->stop))
		(void)poll(&p, 1, ms);
	return atomic_load(&l->stop);
}

/* listener_connect connects and LISTENs, retrying until it can or the
 * listener stops (NULL then). The first failure of an outage is logged,
 * and the recovery. */
static PGconn *listener_connect(listener *l)
{
	int backoff = LISTEN_BACKOFF_MIN_MS;
	bool warned = false;
	char why[512];
	while (!atomic_load(&l->stop)) {
		PGconn *conn = pg_connect_once(l->db, why, sizeof why);
		if (conn != NULL) {
			PGresult *r = PQexec(conn,
			    "SET application_name = '" LISTEN_APP_NAME
			    "'; LISTEN " STORE_NOTIFY_CHANNEL);
			bool ok = r != NULL && PQresultStatus(r) == PGRES_COMMAND_OK;
			if (!ok)
				pg_one_line(PQerrorMessage(conn), why, sizeof why);
			PQclear(r);
			if (ok) {
				if (warned)
					log_info(NULL,
					    "listening again for the ends of sagas that "
					    "other orchestrators write");
				return conn;
			}
			PQfinish(conn);
		}
		if (!warned)
			log_warn(NULL,
			    "could not listen for the ends of sagas that other orchestrators "
			    "write, retrying: %s (calls waiting here for them are answered once "
			    "it is back, or when their wait runs out)",
			    why);
		warned = true;
		if (listener_pause(l, backoff))
			break;
		backoff = backoff * 2 > LISTEN_BACKOFF_MAX_MS ? LISTEN_BACKOFF_MAX_MS : backoff * 2;
	}
	return NULL;
}

/* listener_answer reads the `n` sagas `ids` and answers the calls waiting
 * for those that have finished (waits_finished). Returns 0 or the
 * store_get_sagas error. */
static int listener_answer(listener *l, const listen_id *ids, size_t n)
{
	saga_row *rows = calloc(LISTEN_READ_MAX, sizeof *rows);
	if (rows == NULL)
		return -ENOMEM;
	int rc = 0;
	for (size_t at = 0; rc == 0 && at < n; at += LISTEN_READ_MAX) {
		size_t m = n - at < LISTEN_READ_MAX ? n - at : LISTEN_READ_MAX;
		const char *p[LISTEN_READ_MAX];
		bool found[LISTEN_READ_MAX];
		for (size_t i = 0; i < m; i++)
			p[i] = ids[at + i];
		rc = store_get_sagas(l->conn, p, m, rows, found);
		for (size_t i = 0; rc == 0 && i < m; i++) {
			if (!found[i] || !saga_wait_over(&rows[i].s))
				continue;
			log_debug(rows[i].saga_id,
			    "finished (%s), written elsewhere: answering the "
			    "calls waiting here",
			    rows[i].state);
			waits_finished(l->w, &rows[i]);
		}
	}
	free(rows);
	return rc;
}

/* listener_recheck answers every waiting call whose saga has finished:
 * after a (re)connection, for the NOTIFYs lost meanwhile. Returns as
 * listener_answer. */
static int listener_recheck(listener *l)
{
	listen_id *ids = NULL;
	size_t n = 0;
	int rc = waits_ids(l->w, &ids, &n);
	if (rc == 0 && n > 0)
		rc = listener_answer(l, ids, n);
	free(ids);
	return rc;
}

/* listener_drain takes every notification libpq has read (after reading
 * what the socket holds) and keeps, in *ids (grown with realloc; *n used,
 * *cap allocated), the saga ids some call here waits for. Returns false
 * when the connection is lost. */
static bool listener_drain(listener *l, listen_id **ids, size_t *n, size_t *cap)
{
	if (!PQconsumeInput(l->conn) || PQstatus(l->conn) != CONNECTION_OK)
		return false;
	PGnotify *nt;
	while ((nt = PQnotifies(l->conn)) != NULL) {
		const char *id = nt->extra;
		bool keep = strlen(id) == VALID_UUID_LEN && waits_has(l->w, id);
		for (size_t i = 0; keep && i < *n; i++)
			keep = strcmp((*ids)[i], id) != 0; /* an end is NOTIFYed once,
			                                      but cheap to be sure */
		if (keep && *n == *cap) {
			size_t c = *cap ? 2 * *cap : 64;
			listen_id *g = realloc(*ids, c * sizeof *g);
			if (g != NULL) {
				*ids = g;
				*cap = c;
			}
		}
		/* out of memory: that call is answered when its wait runs out */
		if (keep && *n < *cap)
			memcpy((*ids)[(*n)++], id, sizeof(listen_id));
		PQfreemem(nt);
	}
	return true;
}

static void listener_main(void *arg)
{
	listener *l = arg;
	listen_id *ids = NULL;
	size_t cap = 0;
	while (!atomic_load(&l->stop)) {
		if (l->conn == NULL) {
			l->conn = listener_connect(l);
			if (l->conn == NULL)
				break; /* stopping */
			if (listener_recheck(l) != 0)
				goto lost;
		}
		size_t n = 0;
		if (!listener_drain(l, &ids, &n, &cap))
			goto lost;
		if (n > 0) {
			if (listener_answer(l, ids, n) != 0)
				goto lost;
			continue; /* notifications may have come during the read */
		}
		struct pollfd p[2] = {{.fd = PQsocket(l->conn), .events = POLLIN},
		    {.fd = l->wake[0], .events = POLLIN}};
		if (poll(p, 2, LISTEN_POLL_MS) < 0 && errno != EINTR)
			log_warn(NULL, "listener: poll failed: %s", strerror(errno));
		continue;
	lost:
		if (!atomic_load(&l->stop))
			log_warn(NULL,
			    "lost the connection that listens for the ends of sagas that "
			    "other orchestrators write: reconnecting");
		PQfinish(l->conn);
		l->conn = NULL;
	}
	free(ids);
	PQfinish(l->conn);
	l->conn = NULL;
}

int listener_start(listener **out, const char *db, waits *w)
{
	listener *l = calloc(1, sizeof *l);
	if (l == NULL)
		return -ENOMEM;
	l->db = db;
	l->w = w;
	atomic_init(&l->stop, false);
	if (pipe(l->wake) != 0) {
		int rc = -errno;
		free(l);
		return rc;
	}
	for (int i = 0; i < 2; i++) {
		(void)fcntl(l->wake[i], F_SETFD, FD_CLOEXEC);
		(void)fcntl(l->wake[i], F_SETFL, O_NONBLOCK);
	}
	if (nng_thread_create(&l->thread, listener_main, l) != 0) {
		close(l->wake[0]);
		close(l->wake[1]);
		free(l);
		return -ENOMEM;
	}
	*out = l;
	return 0;
}

void listener_stop(listener *l)
{
	if (l == NULL)
		return;
	atomic_store(&l->stop, true);
	ssize_t k = write(l->wake[1], "x", 1);
	(void)k;                       /* a full pipe wakes it as well */
	nng_thread_destroy(l->thread); /* joins */
	close(l->wake[0]);
	close(l->wake[1]);
	free(l);
}
