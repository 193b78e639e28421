/* Held calls answered before, during and after their handler returns
 * (rpc_hold / rpc_held_reply, common/rpc/rpc_server.c), under a storm of calls on few
 * receive contexts. An in-process rpc_server (tcp loopback, 4 workers, 64
 * contexts, so every context is reused hundreds of times while a backlog of
 * requests waits for it) serves a made-up service:
 *
 *   /t.T/Echo       replies at once with the request payload;
 *   /t.T/HoldNow    rpc_hold, then rpc_held_reply with the echo, both in
 *                   the handler (the reply leaves, and the context may
 *                   receive its next request, before the handler returns);
 *   /t.T/HoldLater  rpc_hold, the token and the echo go to a replier thread
 *                   that answers after 0..3 ms (often before the handler,
 *                   or its batch, has returned).
 *
 * The payload is a sagas.v1.GetSagaRequest whose saga_id is unique per call
 * (and names the method). Both holding handlers also fill in a bogus
 * INTERNAL reply after rpc_hold, which the server must drop. Several
 * clients keep up to HOLD_INFLIGHT calls in flight with a random mix of the
 * three methods; every call must complete exactly once with OK and its own
 * payload, the handlers must see every call exactly once with the payload
 * that belongs to its method, the process must not crash (run it under ASan
 * in the sanitizer build) and rpc_server_stop must return. Run once with
 * only `handle` and once with `handle_batch`.
 *
 * Before the fix (commit "rpc server: a worker takes the request message
 * from its slot") the worker freed the slot's message after serving, which
 * for a held call already answered was the slot's *next* request: a use
 * after free or a NULL message (SIGSEGV).
 *
 * Environment (for longer manual runs): HOLD_CALLS (default 20000 per
 * run), HOLD_INFLIGHT (default 500).
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>
#include <nng/nng.h>
#include <nng/supplemental/util/platform.h>

#include "clock.h"
#include "rpc.h"
#include "sagas/v1/orchestrator.pb-c.h"
#include "unit_server.h"

#define SRV_WORKERS  4
#define SRV_CONTEXTS 64
#define NCLIENTS     4
#define CALL_TIMEOUT 10000 /* ms; a lost call shows up as DEADLINE_EXCEEDED */

static long env_long(const char *name, long dflt)
{
	const char *v = getenv(name);
	if (v == NULL || *v == '\0')
		return dflt;
	long n = strtol(v, NULL, 10);
	return n > 0 ? n : dflt;
}

static uint64_t mono_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* xorshift, one state per thread */
static unsigned rnd(void)
{
	static _Thread_local uint32_t x;
	if (x == 0)
		x = (uint32_t)mono_us() ^ (uint32_t)(uintptr_t)&x ^ 0x9e3779b9u;
	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	return x;
}

enum { M_ECHO, M_HOLD_NOW, M_HOLD_LATER, M_COUNT };
static const char *const method_name[M_COUNT] = {"/t.T/Echo", "/t.T/HoldNow", "/t.T/HoldLater"};
static const char method_tag[M_COUNT] = {'E', 'N', 'L'};

/* ---- server ---- */

typedef struct later {
	rpc_held *h;
	rpc_reply reply; /* the echo, packed in the handler */
	uint64_t due_us;
	struct later *next;
} later;

typedef struct srv_app {
	pthread_mutex_t mtx; /* guards the later list and stop */
	pthread_cond_t cv;   /* CLOCK_MONOTONIC */
	later *list;
	bool stop;
	pthread_t repliers[2];
	atomic_long seen[M_COUNT]; /* calls each handler saw */
	atomic_long bad;           /* wrong method/payload pairs, undecodable payloads */
	atomic_long hold_null;     /* rpc_hold refused */
	atomic_long unknown;       /* unknown methods */
	atomic_long batches, batched_calls;
} srv_app;

static void *replier_main(void *arg)
{
	srv_app *a = arg;
	pthread_mutex_lock(&a->mtx);
	while (!a->stop) {
		later **pp = NULL;
		for (later **q = &a->list; *q; q = &(*q)->next)
			if (pp == NULL || (*q)->due_us < (*pp)->due_us)
				pp = q;
		if (pp == NULL) {
			pthread_cond_wait(&a->cv, &a->mtx);
			continue;
		}
		uint64_t now = mono_us();
		if ((*pp)->due_us > now) {
			uint64_t due = (*pp)->due_us;
			struct timespec ts = {
			    .tv_sec = (time_t)(due / 1000000u),
			    .tv_nsec = (long)(due % 1000000u) * 1000,
			};
			pthread_cond_timedwait(&a->cv, &a->mtx, &ts);
			continue;
		}
		later *l = *pp;
		*pp = l->next;
		pthread_mutex_unlock(&a->mtx);
		rpc_held_reply(l->h, &l->reply); /* frees the payload */
		free(l);
		pthread_mutex_lock(&a->mtx);
	}
	pthread_mutex_unlock(&a->mtx);
	return NULL;
}

static void serve_one(srv_app *a, const rpc_request *call, rpc_reply *reply)
{
	int m = 0;
	while (m < M_COUNT && strcmp(call->method, method_name[m]) != 0)
		m++;
	if (m == M_COUNT) {
		atomic_fetch_add(&a->unknown, 1);
		rpc_reply_error(reply, RPC_UNIMPLEMENTED, "", "unknown method %s", call->method);
		return;
	}
	atomic_fetch_add(&a->seen[m], 1);
	Sagas__V1__GetSagaRequest *req
	    = sagas__v1__get_saga_request__unpack(NULL, call->payload_len, call->payload);
	if (req == NULL || req->saga_id[0] != method_tag[m] || req->saga_id[1] != ':') {
		/* a request's payload reached the wrong method (or got mangled) */
		atomic_fetch_add(&a->bad, 1);
		rpc_reply_error(
		    reply, RPC_INTERNAL, "bad_payload", "payload does not fit %s", call->method);
		if (req)
			sagas__v1__get_saga_request__free_unpacked(req, NULL);
		return;
	}
	if (m == M_ECHO) {
		rpc_reply_ok(reply, &req->base);
		sagas__v1__get_saga_request__free_unpacked(req, NULL);
		return;
	}
	rpc_held *h = rpc_hold(call);
	if (h == NULL) {
		atomic_fetch_add(&a->hold_null, 1);
		rpc_reply_error(reply, RPC_INTERNAL, "hold_refused", "rpc_hold returned NULL");
		sagas__v1__get_saga_request__free_unpacked(req, NULL);
		return;
	}
	if (m == M_HOLD_NOW) {
		rpc_reply r;
		memset(&r, 0, sizeof r);
		rpc_reply_ok(&r, &req->base);
		rpc_held_reply(h, &r);
	} else {
		later *l = calloc(1, sizeof *l);
		if (l == NULL) {
			rpc_reply r;
			memset(&r, 0, sizeof r);
			rpc_reply_error(&r, RPC_INTERNAL, "", "out of memory");
			rpc_held_reply(h, &r);
		} else {
			l->h = h;
			rpc_reply_ok(&l->reply, &req->base);
			l->due_us = mono_us() + rnd() % 3001u; /* 0..3 ms */
			pthread_mutex_lock(&a->mtx);
			l->next = a->list;
			a->list = l;
			pthread_cond_signal(&a->cv);
			pthread_mutex_unlock(&a->mtx);
		}
	}
	sagas__v1__get_saga_request__free_unpacked(req, NULL);
	/* a held call's own reply is dropped: make it one the client would
	 * notice; and now and then dawdle, so the held reply (and the
	 * context's next receive) overtakes the rest of the handler */
	rpc_reply_error(reply, RPC_INTERNAL, "must_be_dropped", "the reply of a held call");
	if (rnd() % 8 == 0)
		sched_yield();
}

static void srv_handle(void *app, void *worker, const rpc_request *call, rpc_reply *reply)
{
	(void)worker;
	serve_one(app, call, reply);
}

static void srv_handle_batch(
    void *app, void *worker, const rpc_request *calls, rpc_reply *replies, size_t n)
{
	(void)worker;
	srv_app *a = app;
	atomic_fetch_add(&a->batches, 1);
	atomic_fetch_add(&a->batched_calls, (long)n);
	for (size_t i = 0; i < n; i++)
		serve_one(a, &calls[i], &replies[i]);
}

/* ---- clients ---- */

typedef struct hold_run hold_run;

typedef struct call_rec {
	hold_run *run;
	char id[256];
	int method;
	atomic_int done;
} call_rec;

struct hold_run {
	nng_mtx *mtx;
	nng_cv *cv;
	long inflight;
	long ok, wrong_payload, bad_code, twice, code_count[17];
	char first_bad[1024];
};

static void call_done(void *arg, const rpc_result *res)
{
	call_rec *c = arg;
	hold_run *r = c->run;
	int was = atomic_fetch_add(&c->done, 1);
	bool match = false;
	if (was == 0 && res->code == RPC_OK) {
		Sagas__V1__GetSagaRequest *got
		    = sagas__v1__get_saga_request__unpack(NULL, res->payload_len, res->payload);
		match = got != NULL && strcmp(got->saga_id, c->id) == 0;
		if (got)
			sagas__v1__get_saga_request__free_unpacked(got, NULL);
	}
	nng_mtx_lock(r->mtx);
	if (was != 0) {
		r->twice++;
	} else if (res->code != RPC_OK) {
		r->bad_code++;
		if (res->code >= 0 && res->code <= 16)
			r->code_count[res->code]++;
		if (r->first_bad[0] == '\0')
			snprintf(r->first_bad, sizeof r->first_bad, "%s %.40s: %s %s (%s)",
			    method_name[c->method], c->id, rpc_code_name(res->code), res->reason,
			    res->message);
	} else if (!match) {
		r->wrong_payload++;
		if (r->first_bad[0] == '\0')
			snprintf(r->first_bad, sizeof r->first_bad, "%s %.40s: another payload",
			    method_name[c->method], c->id);
	} else {
		r->ok++;
	}
	if (was == 0)
		r->inflight--;
	nng_cv_wake(r->cv);
	nng_mtx_unlock(r->mtx);
}

/* The test server with `ops` (unit_server.h), its URL in `url`. */
static rpc_server *start_server(const rpc_server_ops *ops, srv_app *a, char *url, size_t urlsz)
{
	return unit_server_start(ops, a, SRV_WORKERS, SRV_CONTEXTS, url, urlsz);
}

typedef struct stopper {
	rpc_server *srv;
	atomic_bool done;
} stopper;

static void stopper_main(void *arg)
{
	stopper *st = arg;
	rpc_server_stop(st->srv);
	atomic_store(&st->done, true);
}

static void run_hold(bool batch)
{
	long total = env_long("HOLD_CALLS", 20000);
	long max_inflight = env_long("HOLD_INFLIGHT", 500);
	/* static: reachable from nng and replier threads until the end */
	static srv_app a;
	memset(&a, 0, sizeof a);
	pthread_condattr_t ca;
	assert_int_equal(pthread_condattr_init(&ca), 0);
	assert_int_equal(pthread_condattr_setclock(&ca, CLOCK_MONOTONIC), 0);
	assert_int_equal(pthread_cond_init(&a.cv, &ca), 0);
	pthread_condattr_destroy(&ca);
	assert_int_equal(pthread_mutex_init(&a.mtx, NULL), 0);
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&a.repliers[i], NULL, replier_main, &a), 0);

	rpc_server_ops ops = {
	    .handle = srv_handle,
	    .handle_batch = batch ? srv_handle_batch : NULL,
	};
	char url[64];
	rpc_server *srv = start_server(&ops, &a, url, sizeof url);

	rpc_client *cl[NCLIENTS];
	for (int i = 0; i < NCLIENTS; i++)
		assert_int_equal(rpc_client_open(&cl[i], url, NULL), 0);

	static hold_run r;
	memset(&r, 0, sizeof r);
	assert_int_equal(nng_mtx_alloc(&r.mtx), 0);
	assert_int_equal(nng_cv_alloc(&r.cv, r.mtx), 0);
	call_rec *recs = calloc((size_t)total, sizeof *recs);
	assert_non_null(recs);
	long sent[M_COUNT] = {0};

	int64_t t0 = clock_mono_ms();
	for (long i = 0; i < total;) {
		nng_mtx_lock(r.mtx);
		while (r.inflight >= max_inflight)
			nng_cv_until(r.cv, nng_clock() + 100);
		long room = max_inflight - r.inflight;
		if (room > total - i)
			room = total - i;
		r.inflight += room;
		nng_mtx_unlock(r.mtx);
		for (long k = 0; k < room; k++, i++) {
			call_rec *c = &recs[i];
			c->run = &r;
			c->method = (int)(rnd() % M_COUNT);
			/* unique, and of varying length (up to ~200 bytes) */
			int pad = (int)(rnd() % 160);
			snprintf(c->id, sizeof c->id, "%c:%s:%ld:%.*s", method_tag[c->method],
			    batch ? "batch" : "single", i, pad,
			    "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
			    "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
			    "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ");
			sent[c->method]++;
			Sagas__V1__GetSagaRequest req = SAGAS__V1__GET_SAGA_REQUEST__INIT;
			req.saga_id = c->id;
			int rc = rpc_call_async(cl[i % NCLIENTS], method_name[c->method], &req.base,
			    CALL_TIMEOUT, call_done, c);
			assert_int_equal(rc, 0);
		}
	}
	/* every call completes */
	nng_mtx_lock(r.mtx);
	int64_t wait_end = clock_mono_ms() + 3 * CALL_TIMEOUT;
	while (r.inflight > 0 && clock_mono_ms() < wait_end)
		nng_cv_until(r.cv, nng_clock() + 100);
	long left = r.inflight;
	nng_mtx_unlock(r.mtx);
	int64_t took = clock_mono_ms() - t0;

	fprintf(stderr,
	    "hold (%s): %ld calls (%ld Echo, %ld HoldNow, %ld HoldLater) in %" PRId64
	    " ms: %ld OK with their payload, %ld another payload, %ld not OK, %ld twice, %ld "
	    "left; handlers saw %ld/%ld/%ld, %ld bad, %ld hold refused, %ld unknown; %ld "
	    "batches of %.1f calls on average\n",
	    batch ? "handle_batch" : "handle", total, sent[M_ECHO], sent[M_HOLD_NOW],
	    sent[M_HOLD_LATER], took, r.ok, r.wrong_payload, r.bad_code, r.twice, left,
	    atomic_load(&a.seen[M_ECHO]), atomic_load(&a.seen[M_HOLD_NOW]),
	    atomic_load(&a.seen[M_HOLD_LATER]), atomic_load(&a.bad), atomic_load(&a.hold_null),
	    atomic_load(&a.unknown), atomic_load(&a.batches),
	    atomic_load(&a.batches)
	        ? (double)atomic_load(&a.batched_calls) / (double)atomic_load(&a.batches)
	        : 0.0);
	if (r.first_bad[0] != '\0')
		fprintf(stderr, "hold: first failure: %s\n", r.first_bad);
	for (int code = 1; code <= 16; code++)
		if (r.code_count[code] > 0)
			fprintf(
			    stderr, "hold:   %ld x %s\n", r.code_count[code], rpc_code_name(code));

	assert_int_equal(left, 0);
	assert_int_equal(r.twice, 0);
	assert_int_equal(r.bad_code, 0);
	assert_int_equal(r.wrong_payload, 0);
	assert_int_equal(r.ok, total);
	/* the handlers saw each call once, with its own method's payload */
	for (int m = 0; m < M_COUNT; m++)
		assert_int_equal(atomic_load(&a.seen[m]), sent[m]);
	assert_int_equal(atomic_load(&a.bad), 0);
	assert_int_equal(atomic_load(&a.hold_null), 0);
	assert_int_equal(atomic_load(&a.unknown), 0);
	if (batch)
		assert_true(atomic_load(&a.batches) > 0);
	else
		assert_int_equal(atomic_load(&a.batches), 0);

	/* the repliers are idle (every held call was answered): stop them, as
	 * rpc_held_reply must not run after rpc_server_stop */
	pthread_mutex_lock(&a.mtx);
	assert_null(a.list);
	a.stop = true;
	pthread_cond_broadcast(&a.cv);
	pthread_mutex_unlock(&a.mtx);
	for (int i = 0; i < 2; i++)
		pthread_join(a.repliers[i], NULL);

	/* rpc_server_stop returns (watched: a hang fails the test instead of
	 * running into ctest's timeout) */
	static stopper st;
	st.srv = srv;
	atomic_store(&st.done, false);
	nng_thread *stop_thr = NULL;
	assert_int_equal(nng_thread_create(&stop_thr, stopper_main, &st), 0);
	int64_t stop_end = clock_mono_ms() + 15000;
	while (!atomic_load(&st.done) && clock_mono_ms() < stop_end)
		nng_msleep(10);
	if (!atomic_load(&st.done))
		fail_msg("rpc_server_stop did not return within 15 s");
	nng_thread_destroy(stop_thr);

	for (int i = 0; i < NCLIENTS; i++)
		rpc_client_close(cl[i]);
	free(recs);
	nng_cv_free(r.cv);
	nng_mtx_free(r.mtx);
	pthread_cond_destroy(&a.cv);
	pthread_mutex_destroy(&a.mtx);
}

/* The crash signals' handlers from before cmocka's: cmocka catches a
 * SIGSEGV and longjmps back into the test, which from a server thread ends
 * the process with status 255 and no word; with these back a crash is
 * reported as one (ctest "SEGFAULT", or ASan's report with its stack). */
static const int crash_signals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE};
static struct sigaction crash_actions[sizeof crash_signals / sizeof crash_signals[0]];

static void restore_crash_handlers(void)
{
	for (size_t i = 0; i < sizeof crash_signals / sizeof crash_signals[0]; i++)
		sigaction(crash_signals[i], &crash_actions[i], NULL);
}

static void test_hold_handle(void **state)
{
	(void)state;
	restore_crash_handlers();
	run_hold(false);
}

static void test_hold_handle_batch(void **state)
{
	(void)state;
	restore_crash_handlers();
	run_hold(true);
}

int main(void)
{
	for (size_t i = 0; i < sizeof crash_signals / sizeof crash_signals[0]; i++)
		sigaction(crash_signals[i], NULL, &crash_actions[i]);
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_hold_handle),
	    cmocka_unit_test(test_hold_handle_batch),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
