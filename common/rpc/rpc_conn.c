/* rpc_conn: a server's listeners and open connections (rpc_internal.h):
 * each listener's roles, the connection cap, the idle timeout, and the
 * peer's address for the logs. */
#include "rpc.h"
#include "rpc_internal.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <nng/nng.h>
#include <nng/supplemental/tls/tls.h>
#include <nng/transport/tls/tls.h>
#include <uthash.h>

#include "authz.h"
#include "clock.h"
#include "log.h"
#include "metrics.h"
#include "sockscan.h"

/* One open connection (an nng pipe), for the cap and the idle timeout. */
typedef struct rpc_conn rpc_conn;
struct rpc_conn {
	uint32_t id;
	int listener;     /* index in rpc_conns.listeners */
	int64_t last_ms;  /* clock_mono_ms of its last whole request (or its start) */
	int busy;         /* its calls received and not yet answered */
	rpc_rate rate;    /* its calls a second (a listener with no role) */
	bool doomed;      /* rpc_conns_doom: the reaper closes it at once */
	nng_sockaddr rem; /* its peer's address, to tell it from a handshake */
	UT_hash_handle hh;
};

/* A TCP connection to a TLS listener that is no pipe yet (rpc_hs_scan). */
typedef struct rpc_hs {
	unsigned long inode;
	int64_t first_ms; /* when the reaper first saw it */
	unsigned gen;     /* the last pass that saw it */
	UT_hash_handle hh;
} rpc_hs;

int rpc_conns_init(rpc_conns *s, int max_conns, int64_t idle_ms)
{
	s->max_conns = max_conns;
	s->idle_ms = idle_ms;
	int rv = nng_mtx_alloc(&s->mtx);
	if (rv == 0)
		rv = nng_cv_alloc(&s->cv, s->mtx);
	return rv;
}

void rpc_conns_fini(rpc_conns *s)
{
	struct rpc_conn *c, *tmp;
	HASH_ITER(hh, s->table, c, tmp)
	{
		HASH_DEL(s->table, c);
		free(c);
	}
	rpc_hs *h, *htmp;
	HASH_ITER(hh, s->hs, h, htmp)
	{
		HASH_DEL(s->hs, h);
		free(h);
	}
	if (s->cv)
		nng_cv_free(s->cv);
	if (s->mtx)
		nng_mtx_free(s->mtx);
}

const char *rpc_peer(uint32_t pipe, char *buf, size_t len)
{
	nng_pipe p = NNG_PIPE_INITIALIZER;
	p.id = pipe;
	nng_sockaddr sa;
	char a[64];
	if (nng_pipe_get_addr(p, NNG_OPT_REMADDR, &sa) != 0) {
		snprintf(buf, len, "unknown");
	} else if (sa.s_family == NNG_AF_INET) {
		inet_ntop(AF_INET, &sa.s_in.sa_addr, a, sizeof a);
		snprintf(buf, len, "%s:%u", a, ntohs(sa.s_in.sa_port));
	} else if (sa.s_family == NNG_AF_INET6) {
		inet_ntop(AF_INET6, sa.s_in6.sa_addr, a, sizeof a);
		snprintf(buf, len, "[%s]:%u", a, ntohs(sa.s_in6.sa_port));
	} else if (sa.s_family == NNG_AF_IPC) {
		snprintf(buf, len, "ipc:%s", sa.s_ipc.sa_path);
	} else {
		snprintf(buf, len, "local");
	}
	return buf;
}

/* rpc_lsn_of is the index of the listener that made pipe `p`, or -1. */
static int rpc_lsn_of(const rpc_conns *s, nng_pipe p)
{
	int id = nng_listener_id(nng_pipe_listener(p));
	for (int i = 0; i < s->nlisten; i++)
		if (s->listeners[i].id == id)
			return i;
	return -1;
}

static const metric_def RPC_CONNECTIONS = {"sagas_rpc_connections",
    "Open RPC connections on this process's listeners (accepted, not yet closed)", METRIC_GAUGE, "",
    NULL, 0};

void rpc_conns_added(rpc_conns *s, nng_pipe p)
{
	int li = rpc_lsn_of(s, p);
	if (li < 0)
		return;
	rpc_lsn *l = &s->listeners[li];
	char peer[96], what[400];
	bool verified = false;
	if (l->tls && (nng_pipe_get_bool(p, NNG_OPT_TLS_VERIFIED, &verified) != 0 || !verified)) {
		snprintf(what, sizeof what,
		    "closed a connection to %s: UNAUTHENTICATED (no verified client certificate)",
		    l->url);
		authz_count_refusal("unverified", 1);
		authz_log_limited("unverified", rpc_peer(nng_pipe_id(p), peer, sizeof peer), what);
		nng_pipe_close(p);
		return;
	}
	rpc_conn *c = calloc(1, sizeof *c);
	if (c != NULL && nng_pipe_get_addr(p, NNG_OPT_REMADDR, &c->rem) != 0)
		c->rem.s_family = NNG_AF_UNSPEC;
	nng_mtx_lock(s->mtx);
	bool full = l->conns >= s->max_conns;
	if (!full && c != NULL) {
		c->id = nng_pipe_id(p);
		c->listener = li;
		c->last_ms = clock_mono_ms();
		HASH_ADD(hh, s->table, id, sizeof c->id, c);
		l->conns++;
		metric_inc(metric_get(&RPC_CONNECTIONS, NULL));
	}
	nng_mtx_unlock(s->mtx);
	if (full || c == NULL) {
		free(c);
		snprintf(what, sizeof what,
		    "closed a connection to %s: %d are open, the most allowed (max-connections)",
		    l->url, s->max_conns);
		authz_count_refusal("conn_cap", 1);
		authz_log_limited("conn_cap", rpc_peer(nng_pipe_id(p), peer, sizeof peer), what);
		nng_pipe_close(p);
	}
}

void rpc_conns_removed(rpc_conns *s, uint32_t id)
{
	rpc_conn *c = NULL;
	nng_mtx_lock(s->mtx);
	HASH_FIND(hh, s->table, &id, sizeof id, c);
	if (c != NULL) {
		s->listeners[c->listener].conns--;
		HASH_DEL(s->table, c);
		metric_add(metric_get(&RPC_CONNECTIONS, NULL), -1);
	}
	nng_mtx_unlock(s->mtx);
	free(c);
}

int rpc_conns_busy(rpc_conns *s, uint32_t id, int delta, int *busy, bool *over_rate)
{
	rpc_conn *c = NULL;
	int li = -1;
	nng_mtx_lock(s->mtx);
	HASH_FIND(hh, s->table, &id, sizeof id, c);
	if (c != NULL) {
		c->busy += delta;
		bool over = false;
		if (delta > 0) {
			c->last_ms = clock_mono_ms();
			over = !rpc_rate_take(&c->rate, c->last_ms, RPC_NO_ROLE_CALLS_PER_S);
		}
		li = c->listener;
		if (busy != NULL)
			*busy = c->busy;
		if (over_rate != NULL)
			*over_rate = over;
	}
	nng_mtx_unlock(s->mtx);
	return li;
}

bool rpc_rate_take(rpc_rate *r, int64_t now_ms, int per_s)
{
	int64_t full = (int64_t)per_s * 1000;
	if (!r->started) {
		r->started = true;
		r->milli = full;
	} else if (now_ms > r->at_ms) {
		r->milli += (now_ms - r->at_ms) * per_s;
		if (r->milli > full)
			r->milli = full;
	}
	r->at_ms = now_ms; /* a clock that went back refills nothing */
	if (r->milli < 1000)
		return false;
	r->milli -= 1000;
	return true;
}

void rpc_conns_doom(rpc_conns *s, uint32_t id)
{
	rpc_conn *c = NULL;
	nng_mtx_lock(s->mtx);
	HASH_FIND(hh, s->table, &id, sizeof id, c);
	if (c != NULL) {
		c->doomed = true;
		nng_cv_wake(s->cv);
	}
	nng_mtx_unlock(s->mtx);
}

/* How many idle connections one pass of the reaper closes at most, and
 * how often it looks (ms). */
#define RPC_REAP_MAX      256
#define RPC_REAP_EVERY_MS 1000

/* rpc_reaper_main closes connections that sent no whole request for
 * idle_ms while none of their calls was in service: a peer that stalls in
 * the middle of a frame, or one that holds a connection it does not use. */
/* ---- connections stuck in their TLS handshake ----
 *
 * nng 1.5.2 keeps a TLS connection whose peer never finishes the handshake
 * for as long as the peer likes (its negotiation timeout does not reach the
 * handshake), and such a connection is no pipe yet, so the cap does not
 * count it: without a certificate, a few thousand of them take every
 * descriptor. nng shows no such connection, so the reaper finds them in
 * /proc/net/tcp and tcp6: connections to a TLS listener's port whose peer is
 * no open pipe's, seen for RPC_HANDSHAKE_TIMEOUT_MS, and shuts their socket
 * down (found in /proc/self/fd by its inode); nng then closes them. */

#define RPC_HS_KILL_MAX 512 /* sockets shut down per pass at most */

/* rpc_hs_is_pipe is true when a pipe of the listener on `lport` has the
 * peer `addr` (16 bytes, IPv4 in the first 4) : `port` (under s->mtx). The
 * listener's port counts: Linux gives one source port to connections to
 * different ports, so a peer address alone matched a stalled handshake to
 * a pipe of another listener, and the reaper left it (1 of 300 in a CI run
 * of the stall test). */
static bool rpc_hs_is_pipe(
    rpc_conns *s, unsigned lport, bool v6, const uint8_t *addr, unsigned port)
{
	rpc_conn *c, *tmp;
	HASH_ITER(hh, s->table, c, tmp)
	{
		if (c->listener < 0 || c->listener >= s->nlisten
		    || (unsigned)s->listeners[c->listener].port != lport)
			continue;
		if (!v6 && c->rem.s_family == NNG_AF_INET && ntohs(c->rem.s_in.sa_port) == port
		    && memcmp(&c->rem.s_in.sa_addr, addr, 4) == 0)
			return true;
		if (v6 && c->rem.s_family == NNG_AF_INET6 && ntohs(c->rem.s_in6.sa_port) == port
		    && memcmp(c->rem.s_in6.sa_addr, addr, 16) == 0)
			return true;
	}
	return false;
}

/* One pass of rpc_hs_reap over the scanned connections. */
typedef struct rpc_hs_pass {
	rpc_conns *s;
	unsigned gen;
	int64_t now;
	unsigned long *kill;
	int nkill;
} rpc_hs_pass;

/* rpc_hs_seen notes a connection to a TLS listener's port (sockscan_tcp's
 * callback, under s->mtx): one that is no pipe is noted in s->hs with this
 * pass's gen, and put in kill[] (up to RPC_HS_KILL_MAX) once it was seen
 * for RPC_HANDSHAKE_TIMEOUT_MS. */
static void rpc_hs_seen(void *arg, const sockscan_conn *c)
{
	rpc_hs_pass *p = arg;
	rpc_conns *s = p->s;
	if (rpc_hs_is_pipe(s, c->lport, c->v6, c->raddr, c->rport))
		return;
	unsigned long inode = c->inode;
	rpc_hs *h = NULL;
	HASH_FIND(hh, s->hs, &inode, sizeof inode, h);
	if (h == NULL && (h = calloc(1, sizeof *h)) != NULL) {
		h->inode = inode;
		h->first_ms = p->now;
		HASH_ADD(hh, s->hs, inode, sizeof h->inode, h);
	}
	if (h == NULL)
		return;
	h->gen = p->gen;
	if (p->now - h->first_ms >= RPC_HANDSHAKE_TIMEOUT_MS && p->nkill < RPC_HS_KILL_MAX)
		p->kill[p->nkill++] = inode;
}

/* rpc_hs_reap is one pass over the connections still in their TLS
 * handshake (under s->mtx, which it drops while it shuts sockets down).
 * Returns how many it shut down. */
static int rpc_hs_reap(rpc_conns *s, int64_t now)
{
	unsigned ports[RPC_LISTEN_MAX];
	int n = 0;
	for (int i = 0; i < s->nlisten; i++)
		if (s->listeners[i].tls && s->listeners[i].port > 0)
			ports[n++] = (unsigned)s->listeners[i].port;
	if (n == 0)
		return 0;
	static unsigned long kill[RPC_HS_KILL_MAX]; /* the reaper's thread only */
	rpc_hs_pass pass = {.s = s, .gen = ++s->hs_gen, .now = now, .kill = kill};
	/* only this process's sockets: a connection another process holds on
	 * the same port (at another address) is not ours to watch */
	sockscan_own own;
	if (sockscan_own_read(&own) == 0)
		sockscan_tcp(ports, n, &own, rpc_hs_seen, &pass);
	sockscan_own_free(&own);
	unsigned gen = pass.gen;
	int nkill = pass.nkill;
	rpc_hs *h, *tmp;
	HASH_ITER(hh, s->hs, h, tmp)
	{
		if (h->gen != gen) { /* gone, or a pipe now */
			HASH_DEL(s->hs, h);
			free(h);
		}
	}
	if (nkill == 0)
		return 0;
	nng_mtx_unlock(s->mtx);
	int done = sockscan_shutdown(kill, nkill);
	nng_mtx_lock(s->mtx);
	return done;
}

static void rpc_reaper_main(void *arg)
{
	rpc_conns *s = arg;
	uint32_t ids[RPC_REAP_MAX];
	nng_mtx_lock(s->mtx);
	while (s->reaping) {
		nng_cv_until(s->cv, nng_clock() + RPC_REAP_EVERY_MS);
		if (!s->reaping)
			break;
		int64_t now = clock_mono_ms();
		int stuck = rpc_hs_reap(s, now);
		if (stuck > 0) {
			char what[200];
			snprintf(what, sizeof what,
			    "closed %d connections that had not finished their TLS handshake in %d "
			    "ms",
			    stuck, RPC_HANDSHAKE_TIMEOUT_MS);
			nng_mtx_unlock(s->mtx);
			authz_log_limited("handshake", NULL, what);
			authz_count_refusal("handshake", stuck);
			nng_mtx_lock(s->mtx);
		}
		int n = 0;
		rpc_conn *c, *tmp;
		HASH_ITER(hh, s->table, c, tmp)
		{
			bool idle
			    = s->idle_ms > 0 && c->busy == 0 && now - c->last_ms >= s->idle_ms;
			if (n < RPC_REAP_MAX && (idle || c->doomed)) {
				ids[n++] = c->id;
				c->last_ms = now; /* once; it goes soon */
				c->doomed = false;
			}
		}
		nng_mtx_unlock(s->mtx);
		for (int i = 0; i < n; i++) {
			nng_pipe p = NNG_PIPE_INITIALIZER;
			p.id = ids[i];
			nng_pipe_close(p);
		}
		if (n > 0)
			log_debug(NULL, "closed %d connections idle for %lld ms (idle-timeout)", n,
			    (long long)s->idle_ms);
		nng_mtx_lock(s->mtx);
	}
	nng_mtx_unlock(s->mtx);
}

int rpc_conns_listen(rpc_conns *s, nng_socket sock, int i, const rpc_listen *ls)
{
	rpc_lsn *l = &s->listeners[i];
	snprintf(l->url, sizeof l->url, "%s", ls->url);
	l->roles = ls->roles;
	l->tls = ls->tls != NULL;
	int rv = nng_listener_create(&l->l, sock, ls->url);
	if (rv == 0 && ls->tls != NULL)
		rv = nng_listener_set_ptr(l->l, NNG_OPT_TLS_CONFIG, tls_conf_nng(ls->tls));
	if (rv == 0 && ls->tls != NULL)
		rv = nng_listener_set_bool(l->l, NNG_OPT_TCP_NODELAY, true);
	if (rv == 0) {
		l->id = nng_listener_id(l->l);
		s->nlisten = i + 1; /* known before its first pipe arrives */
		rv = nng_listener_start(l->l, 0);
	}
	if (rv == 0 && l->tls && nng_listener_get_int(l->l, NNG_OPT_TCP_BOUND_PORT, &l->port) != 0)
		l->port = 0; /* not TCP: no handshake to watch */
	if (rv != 0)
		log_error(NULL, "could not listen on %s: %s%s", ls->url, nng_strerror(rv),
		    rv == NNG_EADDRINUSE ? " (something else listens there: another process, or "
		                           "another listener of this one; on one host, each daemon "
		                           "needs ports of its own, e.g. --listen)"
		                         : "");
	return rv;
}

int rpc_conns_start_reaper(rpc_conns *s)
{
	s->reaping = true;
	int rv = nng_thread_create(&s->reaper, rpc_reaper_main, s);
	if (rv != 0)
		s->reaping = false;
	return rv;
}

void rpc_conns_stop_reaper(rpc_conns *s)
{
	if (s->reaper == NULL)
		return;
	nng_mtx_lock(s->mtx);
	s->reaping = false;
	nng_cv_wake(s->cv);
	nng_mtx_unlock(s->mtx);
	nng_thread_destroy(s->reaper); /* joins */
	s->reaper = NULL;
}
