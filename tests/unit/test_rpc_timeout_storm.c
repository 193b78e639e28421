/* A storm of async calls timing out (common/rpc/rpc_client.c): an in-process REP server
 * (rpc_server on tcp loopback) answers every request after a delay spread
 * around the client's timeout, so replies and send completions keep
 * arriving while nng's timeout thread expires other calls in the same
 * instant; thousands of calls are kept in flight, each on its own context
 * closed in its callback. The calls must all complete exactly once, with
 * OK or DEADLINE_EXCEEDED, the process must not crash (run under ASan in
 * the sanitizer build), and afterwards 40 calls with a long timeout must
 * all come back OK. Before the fix this crashed in nng's
 * "nng:aio:expire" thread (docs in common/rpc/rpc_client.c, "client").
 *
 * Environment (for longer manual runs): STORM_SECONDS (default 6),
 * STORM_INFLIGHT (default 200), STORM_TIMEOUT_MS (default 20).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <nng/nng.h>
#include <nng/protocol/reqrep0/rep.h>
#include <nng/supplemental/util/platform.h>

#include "clock.h"
#include "rpc.h"
#include "sagas/v1/rpc.pb-c.h"

static long env_long(const char *name, long dflt)
{
	const char *v = getenv(name);
	if (v == NULL || *v == '\0')
		return dflt;
	long n = strtol(v, NULL, 10);
	return n > 0 ? n : dflt;
}

typedef struct storm {
	int64_t timeout_ms;
	atomic_uint seed;
	nng_mtx *mtx;
	nng_cv *cv;
	long inflight;
	long started, ok, deadline, other, twice;
} storm;

typedef struct storm_call {
	storm *st;
	atomic_int done;
} storm_call;

/* The server: raw REP contexts, each answering its request after a delay
 * of 0..2*timeout (nng_sleep_aio), so that thousands of replies land
 * around the client's deadlines. */
#define SRV_CTXS 1024
typedef struct srv_ctx {
	storm *st;
	nng_ctx ctx;
	nng_aio *aio;
	int state; /* 0 receiving, 1 sleeping, 2 sending */
	nng_msg *reply;
} srv_ctx;

static void srv_cb(void *arg)
{
	srv_ctx *s = arg;
	int rv = nng_aio_result(s->aio);
	switch (s->state) {
	case 0:
		if (rv != 0) {
			if (rv == NNG_ECLOSED)
				return;
			break; /* receive again */
		}
		nng_msg_free(nng_aio_get_msg(s->aio));
		nng_aio_set_msg(s->aio, NULL);
		{
			unsigned r = atomic_fetch_add(&s->st->seed, 2654435761u) >> 7;
			s->state = 1;
			nng_sleep_aio(
			    (nng_duration)(r % (unsigned)(2 * s->st->timeout_ms + 1)), s->aio);
		}
		return;
	case 1: {
		if (rv == NNG_ECLOSED)
			return;
		Sagas__V1__ReplyEnvelope env = SAGAS__V1__REPLY_ENVELOPE__INIT;
		nng_msg *m = NULL;
		if (nng_msg_alloc(&m, sagas__v1__reply_envelope__get_packed_size(&env)) != 0)
			break;
		sagas__v1__reply_envelope__pack(&env, nng_msg_body(m));
		s->state = 2;
		nng_aio_set_msg(s->aio, m);
		nng_ctx_send(s->ctx, s->aio);
		return;
	}
	case 2:
		if (rv != 0) {
			nng_msg_free(nng_aio_get_msg(s->aio));
			if (rv == NNG_ECLOSED)
				return;
		}
		break;
	}
	s->state = 0;
	nng_ctx_recv(s->ctx, s->aio);
}

static void storm_done(void *arg, const rpc_result *res)
{
	storm_call *c = arg;
	storm *st = c->st;
	int was = atomic_fetch_add(&c->done, 1);
	nng_mtx_lock(st->mtx);
	if (was != 0)
		st->twice++;
	else if (res->code == RPC_OK)
		st->ok++;
	else if (res->code == RPC_DEADLINE_EXCEEDED)
		st->deadline++;
	else
		st->other++;
	st->inflight--;
	nng_cv_wake(st->cv);
	nng_mtx_unlock(st->mtx);
	/* freed by the callback itself: never touched again by rpc */
	if (was == 0)
		free(c);
}

static void test_timeout_storm(void **state)
{
	(void)state;
	static storm st; /* static: still reachable from nng threads at exit */
	st.timeout_ms = env_long("STORM_TIMEOUT_MS", 20);
	long seconds = env_long("STORM_SECONDS", 6);
	long max_inflight = env_long("STORM_INFLIGHT", 200);
	atomic_init(&st.seed, 12345u);
	assert_int_equal(nng_mtx_alloc(&st.mtx), 0);
	assert_int_equal(nng_cv_alloc(&st.cv, st.mtx), 0);

	/* a free loopback port: let the kernel pick one through a listener */
	char url[64] = "";
	nng_socket srv;
	nng_listener l;
	assert_int_equal(nng_rep0_open(&srv), 0);
	assert_int_equal(nng_listen(srv, "tcp://127.0.0.1:0", &l, 0), 0);
	int port = 0;
	assert_int_equal(nng_listener_get_int(l, NNG_OPT_TCP_BOUND_PORT, &port), 0);
	snprintf(url, sizeof url, "tcp://127.0.0.1:%d", port);
	static srv_ctx sc[SRV_CTXS];
	for (int i = 0; i < SRV_CTXS; i++) {
		sc[i].st = &st;
		assert_int_equal(nng_ctx_open(&sc[i].ctx, srv), 0);
		assert_int_equal(nng_aio_alloc(&sc[i].aio, srv_cb, &sc[i]), 0);
		nng_ctx_recv(sc[i].ctx, sc[i].aio);
	}

	/* two clients: one plain, one in duplicate mode (two contexts per call) */
	rpc_client *cl[2] = {NULL, NULL};
	rpc_client_opts dup = {.duplicate = true};
	assert_int_equal(rpc_client_open(&cl[0], url, NULL), 0);
	assert_int_equal(rpc_client_open(&cl[1], url, &dup), 0);

	Sagas__V1__RequestEnvelope msg = SAGAS__V1__REQUEST_ENVELOPE__INIT; /* any message */
	msg.method = "x";
	int64_t end = clock_mono_ms() + seconds * 1000;
	while (clock_mono_ms() < end) {
		nng_mtx_lock(st.mtx);
		while (st.inflight >= max_inflight)
			nng_cv_until(st.cv, nng_clock() + 100);
		long room = max_inflight - st.inflight;
		st.inflight += room;
		nng_mtx_unlock(st.mtx);
		for (long i = 0; i < room; i++) {
			storm_call *c = calloc(1, sizeof *c);
			assert_non_null(c);
			c->st = &st;
			/* timeouts spread over a few ms so expiries come in batches */
			int64_t t = st.timeout_ms + (int64_t)(i % 3);
			int rc = rpc_call_async(
			    cl[i % 2], "/storm.v1.S/Call", &msg.base, t, storm_done, c);
			assert_int_equal(rc, 0);
			nng_mtx_lock(st.mtx);
			st.started++;
			nng_mtx_unlock(st.mtx);
		}
	}
	/* every call completes: bounded by the timeout (plus slack for a loaded box) */
	nng_mtx_lock(st.mtx);
	int64_t wait_end = clock_mono_ms() + 30000;
	while (st.inflight > 0 && clock_mono_ms() < wait_end)
		nng_cv_until(st.cv, nng_clock() + 100);
	long left = st.inflight;
	nng_mtx_unlock(st.mtx);
	fprintf(stderr,
	    "storm: %ld calls, %ld OK, %ld DEADLINE_EXCEEDED, %ld other, %ld twice, %ld left\n",
	    st.started, st.ok, st.deadline, st.other, st.twice, left);
	assert_int_equal(left, 0);
	assert_int_equal(st.twice, 0);
	assert_int_equal(st.other, 0);
	assert_true(st.deadline > 0); /* the storm did time calls out */
	/* After the storm both clients still work: calls with time to spare
	 * all come back OK. (How many storm calls beat their 20 ms timeout
	 * depends on the machine's load: a few dozen of 23,000 under ASan,
	 * sometimes none while other tests run.) */
	nng_mtx_lock(st.mtx);
	long ok_before = st.ok, deadline_before = st.deadline;
	st.inflight += 40;
	nng_mtx_unlock(st.mtx);
	for (long i = 0; i < 40; i++) {
		storm_call *c = calloc(1, sizeof *c);
		assert_non_null(c);
		c->st = &st;
		assert_int_equal(
		    rpc_call_async(cl[i % 2], "/storm.v1.S/Call", &msg.base, 10000, storm_done, c),
		    0);
	}
	nng_mtx_lock(st.mtx);
	wait_end = clock_mono_ms() + 30000;
	while (st.inflight > 0 && clock_mono_ms() < wait_end)
		nng_cv_until(st.cv, nng_clock() + 100);
	long calm_ok = st.ok - ok_before, calm_deadline = st.deadline - deadline_before;
	nng_mtx_unlock(st.mtx);
	assert_int_equal(calm_ok, 40);
	assert_int_equal(calm_deadline, 0);
	/* the clients and the server are left to the process exit: under this
	 * storm nng 1.5.2's nng_close can wait forever for its reaper (stuck
	 * stopping a pipe), a separate nng issue; the close path is covered
	 * by the integration tests */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_timeout_storm),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
