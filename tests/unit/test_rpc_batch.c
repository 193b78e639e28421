/* Batches of calls in one frame (rpc_batch_open/add/send, RPC_BATCH_METHOD,
 * common/rpc/rpc_server.c and rpc_client.c; docs/protocol.md "Batches"). An in-process rpc_server
 * (tcp loopback, 2 workers) serves a made-up service with a handle_batch that echoes each call's
 * payload:
 *
 *   - many batches of 1..RPC_BATCH_MAX calls (and some with a call whose
 *     timeout differs, which begins a new frame): every call completes exactly once
 *     with OK and its own payload, and the handler sees each exactly once;
 *     the handler saw batches of more than one call (frames were batched);
 *   - drop_reply armed for one method (fault.h): in a batch of five, the
 *     three other calls answer OK and the two dropped ones end as timed out
 *     (transport, DEADLINE_EXCEEDED), as lone dropped calls do;
 *   - a server with batch_methods refuses a call of another method in a
 *     batch (INVALID_ARGUMENT, alone) and serves it in a plain frame;
 *   - a server whose linger_us asks for 1 s: eight calls sent one by one,
 *     each in its own frame, are served as one batch of eight by one
 *     worker (the others are not woken while it waits), and each is
 *     answered exactly once with its own payload;
 *   - hand-made frames: a batch with no calls, one with more than
 *     RPC_BATCH_CALLS_MAX, a batch inside a batch and a plain call that
 *     carries calls are refused with INVALID_ARGUMENT and
 *     reason bad_field, naming the field "calls".
 */
#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <nng/nng.h>
#include <nng/supplemental/util/platform.h>

#include "fault.h"
#include "rpc.h"
#include "sagas/v1/orchestrator.pb-c.h"
#include "sagas/v1/payment.pb-c.h"
#include "sagas/v1/rpc.pb-c.h"
#include "unit_server.h"

#define CALL_TIMEOUT 10000 /* ms */
#define NCALLS       6000

#define M_ECHO "/t.T/Echo"
#define M_DROP "/t.T/Drop"

static atomic_long seen[NCALLS];  /* handler calls per call number */
static atomic_long batched_calls; /* calls the handler saw in batches of 2 or more */

/* echo serves one call: the reply payload is the request payload */
static void echo(const rpc_request *call, rpc_reply *reply)
{
	Sagas__V1__GetSagaRequest *r
	    = sagas__v1__get_saga_request__unpack(NULL, call->payload_len, call->payload);
	if (r == NULL) {
		rpc_reply_error(reply, RPC_INVALID_ARGUMENT, "malformed_payload", "bad payload");
		return;
	}
	long n = strtol(r->saga_id, NULL, 10);
	if (n >= 0 && n < NCALLS)
		atomic_fetch_add(&seen[n], 1);
	rpc_reply_ok(reply, &r->base);
	sagas__v1__get_saga_request__free_unpacked(r, NULL);
}

static void srv_handle(void *app, void *worker, const rpc_request *call, rpc_reply *reply)
{
	(void)app;
	(void)worker;
	echo(call, reply);
}

static void srv_handle_batch(
    void *app, void *worker, const rpc_request *calls, rpc_reply *replies, size_t n)
{
	(void)app;
	(void)worker;
	if (n > 1)
		atomic_fetch_add(&batched_calls, (long)n);
	for (size_t i = 0; i < n; i++)
		echo(&calls[i], &replies[i]);
}

static const rpc_server_ops ops = {
    .handle = srv_handle,
    .handle_batch = srv_handle_batch,
};

/* The same service, but only Echo may travel in a batch frame. */
static const char *const echo_only[] = {M_ECHO, NULL};
static const rpc_server_ops ops_echo_only = {
    .handle = srv_handle,
    .handle_batch = srv_handle_batch,
    .batch_methods = echo_only,
};

/* A server that waits for more calls (rpc_server_ops.linger_us). */
static atomic_long max_batch;   /* the largest batch handle_batch saw */
static atomic_long linger_asks; /* calls of linger_us */

static void srv_handle_batch_max(
    void *app, void *worker, const rpc_request *calls, rpc_reply *replies, size_t n)
{
	long seen_max = atomic_load(&max_batch);
	while (
	    (long)n > seen_max && !atomic_compare_exchange_weak(&max_batch, &seen_max, (long)n)) { }
	srv_handle_batch(app, worker, calls, replies, n);
}

static int64_t srv_linger_us(void *app, const rpc_linger_frame *frames, size_t n)
{
	(void)app;
	assert_true(n >= 1 && n < RPC_BATCH_MAX);
	for (size_t i = 0; i < n; i++) {
		assert_string_equal(frames[i].method, M_ECHO); /* the frames' methods */
		Sagas__V1__GetSagaRequest *r = sagas__v1__get_saga_request__unpack(
		    NULL, frames[i].payload_len, frames[i].payload);
		assert_non_null(r); /* and payloads */
		sagas__v1__get_saga_request__free_unpacked(r, NULL);
	}
	atomic_fetch_add(&linger_asks, 1);
	return 1000000; /* 1 s: far longer than sending eight frames takes */
}

static const rpc_server_ops ops_linger = {
    .handle = srv_handle,
    .handle_batch = srv_handle_batch_max,
    .linger_us = srv_linger_us,
};

static char url[64];

/* start_server_ops starts the test server with `o` and sets `url`. */
static rpc_server *start_server_ops(const rpc_server_ops *o)
{
	return unit_server_start(o, NULL, 2, 64, url, sizeof url);
}

static rpc_server *start_server(void)
{
	return start_server_ops(&ops);
}

/* One call's outcome, written by its done callback. */
typedef struct outcome {
	atomic_int done; /* times done ran */
	int code;
	bool transport;
	char reason[RPC_REASON_MAX];
	char payload_id[40]; /* the saga_id echoed back */
} outcome;

static outcome outs[NCALLS];
static nng_mtx *mtx;
static nng_cv *cv;
static long finished;

static void on_done(void *arg, const rpc_result *res)
{
	outcome *o = arg;
	o->code = res->code;
	o->transport = res->transport;
	snprintf(o->reason, sizeof o->reason, "%s", res->reason);
	if (res->code == RPC_OK) {
		Sagas__V1__GetSagaRequest *r
		    = sagas__v1__get_saga_request__unpack(NULL, res->payload_len, res->payload);
		if (r != NULL) {
			snprintf(o->payload_id, sizeof o->payload_id, "%s", r->saga_id);
			sagas__v1__get_saga_request__free_unpacked(r, NULL);
		}
	}
	atomic_fetch_add(&o->done, 1);
	nng_mtx_lock(mtx);
	finished++;
	nng_cv_wake(cv);
	nng_mtx_unlock(mtx);
}

static void wait_finished(long n)
{
	nng_mtx_lock(mtx);
	nng_time until = nng_clock() + 30000;
	while (finished < n && nng_clock() < until)
		nng_cv_until(cv, until);
	nng_mtx_unlock(mtx);
}

static void reset(void)
{
	memset(outs, 0, sizeof outs);
	for (int i = 0; i < NCALLS; i++)
		atomic_store(&seen[i], 0);
	atomic_store(&batched_calls, 0);
	finished = 0;
}

/* assert_echoed_once: calls 0 .. n-1 each completed once, OK, with their
 * own payload, and the handler saw each once. */
static void assert_echoed_once(int n)
{
	for (int i = 0; i < n; i++) {
		char want[40];
		snprintf(want, sizeof want, "%d", i);
		assert_int_equal(atomic_load(&outs[i].done), 1);
		assert_int_equal(outs[i].code, RPC_OK);
		assert_string_equal(outs[i].payload_id, want);
		assert_int_equal(atomic_load(&seen[i]), 1);
	}
}

static void add_call(rpc_batch *b, const char *method, int i, int64_t timeout_ms)
{
	char id[40];
	snprintf(id, sizeof id, "%d", i);
	Sagas__V1__GetSagaRequest m = SAGAS__V1__GET_SAGA_REQUEST__INIT;
	m.saga_id = id;
	assert_int_equal(rpc_batch_add(b, method, &m.base, timeout_ms, on_done, &outs[i]), 0);
}

static void test_batches_echo(void **state)
{
	(void)state;
	reset();
	rpc_server *srv = start_server();
	rpc_client *c = NULL;
	assert_int_equal(rpc_client_open(&c, url, NULL), 0);
	unsigned seed = 7;
	int i = 0;
	while (i < NCALLS) {
		rpc_batch *b = rpc_batch_open(c, RPC_BATCH_MAX);
		assert_non_null(b);
		seed = seed * 1103515245u + 12345u;
		int k = 1 + (int)((seed >> 8) % RPC_BATCH_MAX);
		for (int j = 0; j < k && i < NCALLS; j++, i++)
			/* every 97th call has another timeout: it begins a new frame */
			add_call(b, M_ECHO, i, i % 97 == 5 ? CALL_TIMEOUT + 1 : CALL_TIMEOUT);
		rpc_batch_send(b);
	}
	wait_finished(NCALLS);
	assert_echoed_once(NCALLS);
	assert_true(atomic_load(&batched_calls) > 0);
	rpc_client_close(c);
	rpc_server_stop(srv);
}

static void test_batch_with_dropped_calls(void **state)
{
	(void)state;
	reset();
	rpc_server *srv = start_server();
	rpc_client *c = NULL;
	assert_int_equal(rpc_client_open(&c, url, NULL), 0);
	assert_int_equal(fault_arm(FAULT_DROP_REPLY, M_DROP, 0, 2), 0);
	rpc_batch *b = rpc_batch_open(c, RPC_BATCH_MAX);
	assert_non_null(b);
	const char *methods[5] = {M_ECHO, M_DROP, M_ECHO, M_DROP, M_ECHO};
	for (int i = 0; i < 5; i++)
		add_call(b, methods[i], i, 300);
	rpc_batch_send(b);
	wait_finished(5);
	fault_clear();
	for (int i = 0; i < 5; i++) {
		assert_int_equal(atomic_load(&outs[i].done), 1);
		if (strcmp(methods[i], M_DROP) == 0) {
			assert_true(outs[i].transport);
			assert_int_equal(outs[i].code, RPC_DEADLINE_EXCEEDED);
			assert_int_equal(atomic_load(&seen[i]), 1); /* applied, reply lost */
		} else {
			assert_false(outs[i].transport);
			assert_int_equal(outs[i].code, RPC_OK);
			char want[8];
			snprintf(want, sizeof want, "%d", i);
			assert_string_equal(outs[i].payload_id, want);
		}
	}
	rpc_client_close(c);
	rpc_server_stop(srv);
}

/* send_raw sends a hand-made envelope and decodes the reply envelope. */
static Sagas__V1__ReplyEnvelope *send_raw(rpc_client *c, const Sagas__V1__RequestEnvelope *env)
{
	size_t n = sagas__v1__request_envelope__get_packed_size(env);
	uint8_t *buf = malloc(n ? n : 1);
	assert_non_null(buf);
	sagas__v1__request_envelope__pack(env, buf);
	uint8_t *reply = NULL;
	size_t reply_len = 0;
	assert_int_equal(rpc_call_raw(c, buf, n, 5000, &reply, &reply_len), 0);
	free(buf);
	Sagas__V1__ReplyEnvelope *r = sagas__v1__reply_envelope__unpack(NULL, reply_len, reply);
	free(reply);
	assert_non_null(r);
	return r;
}

static void test_bad_batches_refused(void **state)
{
	(void)state;
	reset();
	rpc_server *srv = start_server();
	rpc_client *c = NULL;
	assert_int_equal(rpc_client_open(&c, url, NULL), 0);

	/* a batch without calls */
	Sagas__V1__RequestEnvelope empty = SAGAS__V1__REQUEST_ENVELOPE__INIT;
	empty.method = RPC_BATCH_METHOD;
	empty.request_id = "b1";
	Sagas__V1__ReplyEnvelope *r = send_raw(c, &empty);
	assert_int_equal(r->code, RPC_INVALID_ARGUMENT);
	assert_string_equal(r->reason, "bad_field");
	assert_non_null(strstr(r->message, "calls"));
	assert_string_equal(r->request_id, "b1");
	sagas__v1__reply_envelope__free_unpacked(r, NULL);

	/* a batch of more than RPC_BATCH_CALLS_MAX calls */
	Sagas__V1__RequestEnvelope small = SAGAS__V1__REQUEST_ENVELOPE__INIT;
	small.method = M_ECHO;
	small.request_id = "s";
	Sagas__V1__RequestEnvelope *many[RPC_BATCH_CALLS_MAX + 1];
	for (int i = 0; i <= RPC_BATCH_CALLS_MAX; i++)
		many[i] = &small;
	Sagas__V1__RequestEnvelope big = SAGAS__V1__REQUEST_ENVELOPE__INIT;
	big.method = RPC_BATCH_METHOD;
	big.request_id = "b3";
	big.n_calls = RPC_BATCH_CALLS_MAX + 1;
	big.calls = many;
	r = send_raw(c, &big);
	assert_int_equal(r->code, RPC_INVALID_ARGUMENT);
	assert_string_equal(r->reason, "bad_field");
	assert_non_null(strstr(r->message, "calls"));
	assert_int_equal(r->n_replies, 0);
	sagas__v1__reply_envelope__free_unpacked(r, NULL);

	/* a batch inside a batch, next to a good call */
	Sagas__V1__RequestEnvelope inner = SAGAS__V1__REQUEST_ENVELOPE__INIT;
	inner.method = RPC_BATCH_METHOD;
	inner.request_id = "i1";
	Sagas__V1__GetSagaRequest m = SAGAS__V1__GET_SAGA_REQUEST__INIT;
	m.saga_id = "9";
	uint8_t pbuf[64];
	size_t plen = sagas__v1__get_saga_request__pack(&m, pbuf);
	Sagas__V1__RequestEnvelope good = SAGAS__V1__REQUEST_ENVELOPE__INIT;
	good.method = M_ECHO;
	good.request_id = "g1";
	good.payload.data = pbuf;
	good.payload.len = plen;
	Sagas__V1__RequestEnvelope *calls[2] = {&inner, &good};
	Sagas__V1__RequestEnvelope outer = SAGAS__V1__REQUEST_ENVELOPE__INIT;
	outer.method = RPC_BATCH_METHOD;
	outer.request_id = "b2";
	outer.n_calls = 2;
	outer.calls = calls;
	r = send_raw(c, &outer);
	assert_int_equal(r->code, RPC_OK);
	assert_int_equal(r->n_replies, 2);
	assert_string_equal(r->replies[0]->request_id, "i1");
	assert_int_equal(r->replies[0]->code, RPC_INVALID_ARGUMENT);
	assert_string_equal(r->replies[0]->reason, "bad_field");
	assert_non_null(strstr(r->replies[0]->message, "calls"));
	assert_string_equal(r->replies[1]->request_id, "g1");
	assert_int_equal(r->replies[1]->code, RPC_OK);
	assert_int_equal(atomic_load(&seen[9]), 1);
	sagas__v1__reply_envelope__free_unpacked(r, NULL);

	/* a plain call that carries calls */
	Sagas__V1__RequestEnvelope *one[1] = {&good};
	Sagas__V1__RequestEnvelope plain = SAGAS__V1__REQUEST_ENVELOPE__INIT;
	plain.method = M_ECHO;
	plain.request_id = "p1";
	plain.payload.data = pbuf;
	plain.payload.len = plen;
	plain.n_calls = 1;
	plain.calls = one;
	r = send_raw(c, &plain);
	assert_int_equal(r->code, RPC_INVALID_ARGUMENT);
	assert_string_equal(r->reason, "bad_field");
	assert_non_null(strstr(r->message, "calls"));
	assert_int_equal(atomic_load(&seen[9]), 1); /* not applied */
	sagas__v1__reply_envelope__free_unpacked(r, NULL);

	rpc_client_close(c);
	rpc_server_stop(srv);
}

/* A server with batch_methods refuses, alone, a call of another method in
 * a batch, and serves the rest. */
static void test_batch_methods(void **state)
{
	(void)state;
	reset();
	rpc_server *srv = start_server_ops(&ops_echo_only);
	rpc_client *c = NULL;
	assert_int_equal(rpc_client_open(&c, url, NULL), 0);
	rpc_batch *b = rpc_batch_open(c, RPC_BATCH_MAX);
	assert_non_null(b);
	add_call(b, M_ECHO, 0, CALL_TIMEOUT);
	add_call(b, M_DROP, 1, CALL_TIMEOUT);
	add_call(b, M_ECHO, 2, CALL_TIMEOUT);
	rpc_batch_send(b);
	wait_finished(3);
	assert_int_equal(outs[0].code, RPC_OK);
	assert_string_equal(outs[0].payload_id, "0");
	assert_int_equal(outs[1].code, RPC_INVALID_ARGUMENT);
	assert_string_equal(outs[1].reason, "bad_field");
	assert_int_equal(atomic_load(&seen[1]), 0); /* not served */
	assert_int_equal(outs[2].code, RPC_OK);
	assert_string_equal(outs[2].payload_id, "2");
	/* the same method alone is served */
	reset();
	char id[8] = "5";
	Sagas__V1__GetSagaRequest m = SAGAS__V1__GET_SAGA_REQUEST__INIT;
	m.saga_id = id;
	rpc_result res;
	assert_int_equal(rpc_call(c, M_DROP, &m.base, CALL_TIMEOUT, &res), 0);
	assert_int_equal(res.code, RPC_OK);
	assert_int_equal(atomic_load(&seen[5]), 1);
	rpc_result_clear(&res);
	rpc_client_close(c);
	rpc_server_stop(srv);
}

static void test_linger_gathers_calls(void **state)
{
	(void)state;
	reset();
	atomic_store(&max_batch, 0);
	atomic_store(&linger_asks, 0);
	rpc_server *srv = start_server_ops(&ops_linger);
	rpc_client *c = NULL;
	assert_int_equal(rpc_client_open(&c, url, NULL), 0);
	for (int i = 0; i < 8; i++) {
		char id[40];
		snprintf(id, sizeof id, "%d", i);
		Sagas__V1__GetSagaRequest m = SAGAS__V1__GET_SAGA_REQUEST__INIT;
		m.saga_id = id;
		assert_int_equal(
		    rpc_call_async(c, M_ECHO, &m.base, CALL_TIMEOUT, on_done, &outs[i]), 0);
	}
	wait_finished(8);
	assert_echoed_once(8);
	assert_int_equal(atomic_load(&max_batch), 8);
	assert_int_equal(atomic_load(&batched_calls), 8);
	assert_true(atomic_load(&linger_asks) >= 1);
	rpc_client_close(c);
	rpc_server_stop(srv);
}

/* The largest legitimate request frame is under RPC_MAX_REQUEST_DEFAULT,
 * the frame limit a server takes by default (docs/protocol.md, "Frame
 * limits"): a batch of RPC_BATCH_CALLS_MAX calls of the biggest participant
 * command (every string at its longest, every number at its widest), and a
 * StartSaga alone. */
static void test_frame_limit(void **state)
{
	(void)state;
	char id[37], customer[65], rid[RPC_REQUEST_ID_MAX + 1];
	memset(id, 'f', 36), id[36] = '\0';
	memset(customer, 'c', 64), customer[64] = '\0';
	memset(rid, 'r', RPC_REQUEST_ID_MAX), rid[RPC_REQUEST_ID_MAX] = '\0';
	Sagas__V1__ChargePaymentRequest ch = SAGAS__V1__CHARGE_PAYMENT_REQUEST__INIT;
	ch.saga_id = id;
	ch.customer = customer;
	ch.amount = 1000000000000000LL;
	uint8_t pay[512];
	size_t plen = sagas__v1__charge_payment_request__pack(&ch, pay);
	static Sagas__V1__RequestEnvelope calls[RPC_BATCH_CALLS_MAX];
	static Sagas__V1__RequestEnvelope *ptrs[RPC_BATCH_CALLS_MAX];
	for (int i = 0; i < RPC_BATCH_CALLS_MAX; i++) {
		sagas__v1__request_envelope__init(&calls[i]);
		calls[i].method = "/sagas.v1.Payment/RefundPayment";
		calls[i].request_id = rid;
		calls[i].timeout_ms = INT64_MAX;
		calls[i].payload.data = pay;
		calls[i].payload.len = plen;
		ptrs[i] = &calls[i];
	}
	Sagas__V1__RequestEnvelope batch = SAGAS__V1__REQUEST_ENVELOPE__INIT;
	batch.method = RPC_BATCH_METHOD;
	batch.request_id = rid;
	batch.timeout_ms = INT64_MAX;
	batch.n_calls = RPC_BATCH_CALLS_MAX;
	batch.calls = ptrs;
	size_t n = sagas__v1__request_envelope__get_packed_size(&batch);
	print_message("largest batch frame: %zu bytes (limit %u)\n", n, RPC_MAX_REQUEST_DEFAULT);
	assert_true(n < RPC_MAX_REQUEST_DEFAULT);

	Sagas__V1__Order o = SAGAS__V1__ORDER__INIT;
	o.customer = customer;
	o.sku = customer;
	o.qty = 1000000;
	o.amount = 1000000000000000LL;
	Sagas__V1__StartSagaRequest st = SAGAS__V1__START_SAGA_REQUEST__INIT;
	st.saga_id = id;
	st.order = &o;
	st.wait_ms = INT32_MAX;
	assert_true(
	    sagas__v1__start_saga_request__get_packed_size(&st) + 256 < RPC_MAX_REQUEST_DEFAULT);
}

int main(void)
{
	if (nng_mtx_alloc(&mtx) != 0 || nng_cv_alloc(&cv, mtx) != 0)
		return 1;
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_batches_echo),
	    cmocka_unit_test(test_batch_with_dropped_calls),
	    cmocka_unit_test(test_bad_batches_refused),
	    cmocka_unit_test(test_batch_methods),
	    cmocka_unit_test(test_linger_gathers_calls),
	    cmocka_unit_test(test_frame_limit),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
