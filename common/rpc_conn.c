/* rpc_conn: a server's listeners and open connections (rpc_internal.h):
 * each listener's roles, the connection cap, the idle timeout, and the
 * peer's address for the logs. */
#include "rpc.h"
#include "rpc_internal.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>

#include <nng/nng.h>
#include <nng/supplemental/tls/tls.h>
#include <nng/transport/tls/tls.h>
#include <uthash.h>

#include "authz.h"
#include "clock.h"
#include "log.h"

/* One open connection (an nng pipe), for the cap and the idle timeout. */
typedef struct rpc_conn rpc_conn;
struct rpc_conn {
	uint32_t id;
	int listener;    /* index in rpc_conns.listeners */
	int64_t last_ms; /* clock_mono_ms of its last whole request (or its start) */
	int busy;        /* its calls received and not yet answered */
	UT_hash_handle hh;
};

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
		authz_log_limited("unverified", rpc_peer(nng_pipe_id(p), peer, sizeof peer), what);
		nng_pipe_close(p);
		return;
	}
	rpc_conn *c = calloc(1, sizeof *c);
	nng_mtx_lock(s->mtx);
	bool full = l->conns >= s->max_conns;
	if (!full && c != NULL) {
		c->id = nng_pipe_id(p);
		c->listener = li;
		c->last_ms = clock_mono_ms();
		HASH_ADD(hh, s->table, id, sizeof c->id, c);
		l->conns++;
	}
	nng_mtx_unlock(s->mtx);
	if (full || c == NULL) {
		free(c);
		snprintf(what, sizeof what,
		    "closed a connection to %s: %d are open, the most allowed (max-connections)",
		    l->url, s->max_conns);
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
	}
	nng_mtx_unlock(s->mtx);
	free(c);
}

int rpc_conns_busy(rpc_conns *s, uint32_t id, int delta)
{
	rpc_conn *c = NULL;
	int li = -1;
	nng_mtx_lock(s->mtx);
	HASH_FIND(hh, s->table, &id, sizeof id, c);
	if (c != NULL) {
		c->busy += delta;
		if (delta > 0)
			c->last_ms = clock_mono_ms();
		li = c->listener;
	}
	nng_mtx_unlock(s->mtx);
	return li;
}

/* How many idle connections one pass of the reaper closes at most, and
 * how often it looks (ms). */
#define RPC_REAP_MAX      256
#define RPC_REAP_EVERY_MS 1000

/* rpc_reaper_main closes connections that sent no whole request for
 * idle_ms while none of their calls was in service: a peer that stalls in
 * the middle of a frame, or one that holds a connection it does not use. */
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
		int n = 0;
		rpc_conn *c, *tmp;
		HASH_ITER(hh, s->table, c, tmp)
		{
			if (n < RPC_REAP_MAX && c->busy == 0 && now - c->last_ms >= s->idle_ms) {
				ids[n++] = c->id;
				c->last_ms = now; /* once; it goes soon */
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
	if (rv != 0)
		log_error(NULL, "could not listen on %s: %s", ls->url, nng_strerror(rv));
	return rv;
}

int rpc_conns_start_reaper(rpc_conns *s)
{
	if (s->idle_ms <= 0)
		return 0;
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
