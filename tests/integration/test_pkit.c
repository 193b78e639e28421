/* The participant kit's own tests (services/kit/pkit.h, pkit_store.c, pkit_rpc.c)
 * on real PostgreSQL (with_stack.sh exports PG_PORT), with the two toy
 * services of pkit_toy.h: one record per saga id, tombstones, arguments
 * that differ, the one-round-trip path, the fault point, replies only after
 * commit, a service without rows, and the descriptors' check. The tests of
 * order are in test_pkit_order.c, those of retention in
 * test_pkit_retention.c.
 * Every test reads back what the database holds (row values, records and
 * their count) besides the outcomes (code, reason, reply status, value). */
#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>
#include <libpq-fe.h>
#include <pthread.h>

#include "elect.h"
#include "fault.h"
#include "horizon.h"
#include "log.h"
#include "participant.h"
#include "pg.h"
#include "pkit.h"
#include "pkit_toy.h"
#include "retention.h"
#include "rpc.h"
#include "sagas/v1/shipping.pb-c.h"
#include "sagas/v1/stock.pb-c.h"
#include "status.h"
#include "valcache.h"
#include "valid.h"

/* ---- 1. one record per saga id; duplicates answered from it ---- */

static void test_duplicates(void **state)
{
	fixture *f = *state;
	toy_reset(f, "K=10");
	saga_id_t a, b, c;
	make_id(a, 1, 1);
	make_id(b, 1, 2);
	make_id(c, 1, 3);
	pkit_store *s = open_store(f, &toy_service, NULL);

	pkit_cmd x = toy_cmd(a, TOY_OP_TAKE, "K", 2);
	apply_ok(s, &x, 1);
	expect_out("take a", &x, RPC_OK, "", TOY_TAKEN, true, 8);
	x = toy_cmd(a, TOY_OP_TAKE, "K", 2);
	apply_ok(s, &x, 1);
	expect_out("take a again", &x, RPC_OK, "", TOY_TAKEN, false, 8);
	assert_int_equal(row_value(f, "K"), 8); /* changed once */
	assert_string_equal(record_of(f, a), "TAKEN K 2");

	/* a refusal is recorded, and its duplicate refused from the record
	 * even when the row has since grown */
	x = toy_cmd(b, TOY_OP_TAKE, "K", 100);
	apply_ok(s, &x, 1);
	expect_out("take b", &x, RPC_FAILED_PRECONDITION, REASON_OUT_OF_STOCK, TOY_SHORT, true, 8);
	set_row(f, "K", 200);
	x = toy_cmd(b, TOY_OP_TAKE, "K", 100);
	apply_ok(s, &x, 1);
	expect_out("take b again", &x, RPC_FAILED_PRECONDITION, REASON_OUT_OF_STOCK, TOY_SHORT,
	    false, 200);
	assert_int_equal(row_value(f, "K"), 200);
	assert_string_equal(record_of(f, b), "SHORT K 100");

	/* the same for a missing row, which then appears */
	x = toy_cmd(c, TOY_OP_TAKE, "Z", 1);
	apply_ok(s, &x, 1);
	expect_out("take c", &x, RPC_NOT_FOUND, REASON_UNKNOWN_SKU, TOY_NO_ROW, true, 0);
	set_row(f, "Z", 5);
	x = toy_cmd(c, TOY_OP_TAKE, "Z", 1);
	apply_ok(s, &x, 1);
	expect_out("take c again", &x, RPC_NOT_FOUND, REASON_UNKNOWN_SKU, TOY_NO_ROW, false, 5);
	assert_int_equal(row_value(f, "Z"), 5);
	assert_string_equal(record_of(f, c), "NO_ROW Z 1");

	assert_int_equal(record_count(f), 3);
	pkit_store_close(s);
}

/* ---- 2. a compensation that comes first leaves a tombstone ---- */

static void test_tombstone(void **state)
{
	fixture *f = *state;
	toy_reset(f, "K=10");
	saga_id_t t, u, v;
	make_id(t, 2, 1);
	make_id(u, 2, 2);
	make_id(v, 2, 3);
	pkit_store *s = open_store(f, &toy_service, NULL);

	pkit_cmd x = toy_cmd(t, TOY_OP_GIVEBACK, "K", 3);
	apply_ok(s, &x, 1);
	expect_out("give back t first", &x, RPC_OK, "", TOY_TOMBSTONE, true, 10);
	assert_string_equal(record_of(f, t), "TOMBSTONE K 3");
	x = toy_cmd(t, TOY_OP_TAKE, "K", 3);
	apply_ok(s, &x, 1);
	expect_out("take t late", &x, RPC_ABORTED, REASON_TOMBSTONE, TOY_TOMBSTONE, false, 10);
	x = toy_cmd(t, TOY_OP_GIVEBACK, "K", 3);
	apply_ok(s, &x, 1);
	expect_out("give back t again", &x, RPC_OK, "", TOY_TOMBSTONE, false, 10);
	assert_int_equal(row_value(f, "K"), 10);
	assert_string_equal(record_of(f, t), "TOMBSTONE K 3");

	/* the compensation proper gives back once */
	x = toy_cmd(u, TOY_OP_TAKE, "K", 4);
	apply_ok(s, &x, 1);
	expect_out("take u", &x, RPC_OK, "", TOY_TAKEN, true, 6);
	x = toy_cmd(u, TOY_OP_GIVEBACK, "K", 4);
	apply_ok(s, &x, 1);
	expect_out("give back u", &x, RPC_OK, "", TOY_RETURNED, true, 10);
	x = toy_cmd(u, TOY_OP_GIVEBACK, "K", 4);
	apply_ok(s, &x, 1);
	expect_out("give back u again", &x, RPC_OK, "", TOY_RETURNED, false, 10);
	x = toy_cmd(u, TOY_OP_TAKE, "K", 4);
	apply_ok(s, &x, 1);
	expect_out("take u after its give back", &x, RPC_OK, "", TOY_TAKEN, false, 10);
	assert_int_equal(row_value(f, "K"), 10);
	assert_string_equal(record_of(f, u), "RETURNED K 4");

	/* a tombstone needs no row */
	x = toy_cmd(v, TOY_OP_GIVEBACK, "NOPE", 1);
	apply_ok(s, &x, 1);
	expect_out("give back v, no row", &x, RPC_OK, "", TOY_TOMBSTONE, true, 0);
	assert_string_equal(record_of(f, v), "TOMBSTONE NOPE 1");
	assert_int_equal(row_value(f, "NOPE"), -1);
	assert_int_equal(record_count(f), 3);
	pkit_store_close(s);
}

/* ---- 3. the same saga id with other arguments ---- */

/* Rule R5 on real PostgreSQL: a record keeps its saga's start (the
 * one-round-trip path's insert and the locking path's alike); a command of
 * another start with the same saga id is refused saga_id_reused, alone or
 * in a batch beside commands that apply, and changes nothing. */
static void test_saga_identity(void **state)
{
	fixture *f = *state;
	toy_reset(f, "K=10");
	saga_id_t t, u;
	make_id(t, 9, 1);
	make_id(u, 9, 2);
	pkit_store *s = open_store(f, &toy_service, NULL);
	const int64_t S1 = 1700000000000, S2 = 1700700000000;
	pkit_cmd x = toy_cmd(t, TOY_OP_TAKE, "K", 3);
	x.args.started = S1;
	apply_ok(s, &x, 1);
	expect_out("take t", &x, RPC_OK, "", TOY_TAKEN, true, 7);
	assert_int_equal(
	    db_int(f->admin, "SELECT saga_started_ms FROM toy_records WHERE saga_id = $1", t), S1);
	/* another saga with t's id: its step and its compensation refused */
	pkit_cmd y[2] = {toy_cmd(t, TOY_OP_GIVEBACK, "K", 3), toy_cmd(u, TOY_OP_TAKE, "K", 2)};
	y[0].args.started = S2;
	y[1].args.started = S2;
	apply_ok(s, y, 2);
	expect_out("give back t as another saga", &y[0], RPC_FAILED_PRECONDITION,
	    REASON_SAGA_ID_REUSED, TOY_TAKEN, false, 7);
	expect_out("take u beside it", &y[1], RPC_OK, "", TOY_TAKEN, true, 5);
	x = toy_cmd(t, TOY_OP_TAKE, "K", 3);
	x.args.started = S2;
	apply_ok(s, &x, 1);
	expect_out("take t as another saga", &x, RPC_FAILED_PRECONDITION, REASON_SAGA_ID_REUSED,
	    TOY_TAKEN, false, 5);
	assert_string_equal(record_of(f, t), "TAKEN K 3");
	assert_int_equal(row_value(f, "K"), 5);
	/* its own saga's compensation still gives back */
	x = toy_cmd(t, TOY_OP_GIVEBACK, "K", 3);
	x.args.started = S1;
	apply_ok(s, &x, 1);
	expect_out("give back t", &x, RPC_OK, "", TOY_RETURNED, true, 8);
	assert_int_equal(
	    db_int(f->admin, "SELECT saga_started_ms FROM toy_records WHERE saga_id = $1", t), S1);
	pkit_store_close(s);
}

static void test_key_mismatch(void **state)
{
	fixture *f = *state;
	toy_reset(f, "K=10 L=10");
	saga_id_t m;
	make_id(m, 3, 1);
	pkit_store *s = open_store(f, &toy_service, NULL);
	pkit_cmd x = toy_cmd(m, TOY_OP_TAKE, "K", 2);
	apply_ok(s, &x, 1);
	expect_out("take m", &x, RPC_OK, "", TOY_TAKEN, true, 8);
	char before[64], after[64];
	db_text(f->admin, "SELECT updated_at FROM toy_records WHERE saga_id = $1", m, before,
	    sizeof before);

	const struct {
		int op;
		const char *key;
		int64_t n, value;
	} other[] = {
	    {TOY_OP_TAKE, "K", 3, 8},
	    {TOY_OP_TAKE, "L", 2, 10},
	    {TOY_OP_GIVEBACK, "K", 5, 8},
	    {TOY_OP_GIVEBACK, "L", 2, 10},
	};
	for (size_t i = 0; i < sizeof other / sizeof other[0]; i++) {
		x = toy_cmd(m, other[i].op, other[i].key, other[i].n);
		apply_ok(s, &x, 1);
		char what[64];
		snprintf(what, sizeof what, "other arguments %zu", i);
		expect_out(what, &x, RPC_ALREADY_EXISTS, REASON_KEY_MISMATCH, TOY_TAKEN, false,
		    other[i].value);
	}
	assert_int_equal(row_value(f, "K"), 8);
	assert_int_equal(row_value(f, "L"), 10);
	assert_string_equal(record_of(f, m), "TAKEN K 2");
	db_text(f->admin, "SELECT updated_at FROM toy_records WHERE saga_id = $1", m, after,
	    sizeof after);
	assert_string_equal(before, after);
	assert_int_equal(record_count(f), 1);
	pkit_store_close(s);
}

/* ---- 5. the one-round-trip path ---- */

static void test_fast_path(void **state)
{
	fixture *f = *state;
	toy_reset(f, "F=10");
	saga_id_t id[8];
	for (unsigned i = 0; i < 8; i++)
		make_id(id[i], 5, i);
	valcache *cache = NULL;
	assert_int_equal(valcache_new(&cache, 100), 0);
	pkit_store *s = open_store(f, &toy_service, cache);

	/* the cache knows nothing yet: the locking path, which teaches it */
	pkit_cmd x = toy_cmd(id[0], TOY_OP_TAKE, "F", 1);
	apply_ok(s, &x, 1);
	expect_out("take 0", &x, RPC_OK, "", TOY_TAKEN, true, 9);
	expect_counts(s, 0, 0);

	x = toy_cmd(id[1], TOY_OP_TAKE, "F", 2);
	apply_ok(s, &x, 1);
	expect_out("take 1", &x, RPC_OK, "", TOY_TAKEN, true, 7);
	expect_counts(s, 1, 0);
	assert_int_equal(row_value(f, "F"), 7);
	assert_string_equal(record_of(f, id[1]), "TAKEN F 2");

	/* a batch by the one-round-trip path, decided in arrival order */
	pkit_cmd b[2] = {toy_cmd(id[2], TOY_OP_TAKE, "F", 3), toy_cmd(id[3], TOY_OP_TAKE, "F", 5)};
	apply_ok(s, b, 2);
	const want w[] = {{RPC_OK, "", TOY_TAKEN, true, 4},
	    {RPC_FAILED_PRECONDITION, REASON_OUT_OF_STOCK, TOY_SHORT, true, 4}};
	expect_all("fast batch", b, w, 2);
	expect_counts(s, 2, 0);
	assert_int_equal(row_value(f, "F"), 4);
	assert_string_equal(record_of(f, id[3]), "SHORT F 5");

	/* the row changed behind the cache (4 -> 2): the cached guess would
	 * take 3, the truth refuses it */
	set_row(f, "F", 2);
	x = toy_cmd(id[4], TOY_OP_TAKE, "F", 3);
	apply_ok(s, &x, 1);
	expect_out("take 4, stale cache", &x, RPC_FAILED_PRECONDITION, REASON_OUT_OF_STOCK,
	    TOY_SHORT, true, 2);
	expect_counts(s, 2, 1);
	assert_int_equal(row_value(f, "F"), 2);
	assert_string_equal(record_of(f, id[4]), "SHORT F 3");

	/* the locking path taught the cache the true value */
	x = toy_cmd(id[5], TOY_OP_TAKE, "F", 2);
	apply_ok(s, &x, 1);
	expect_out("take 5", &x, RPC_OK, "", TOY_TAKEN, true, 0);
	expect_counts(s, 3, 1);
	assert_int_equal(row_value(f, "F"), 0);

	/* a duplicate of a command the fast path committed: tried, falls
	 * back, answered from the record, the row unchanged */
	x = toy_cmd(id[1], TOY_OP_TAKE, "F", 2);
	apply_ok(s, &x, 1);
	expect_out("take 1 again", &x, RPC_OK, "", TOY_TAKEN, false, 0);
	expect_counts(s, 3, 2);
	assert_int_equal(row_value(f, "F"), 0);

	/* not its op: the locking path, not counted */
	x = toy_cmd(id[1], TOY_OP_GIVEBACK, "F", 2);
	apply_ok(s, &x, 1);
	expect_out("give back 1", &x, RPC_OK, "", TOY_RETURNED, true, 2);
	expect_counts(s, 3, 2);
	assert_int_equal(row_value(f, "F"), 2);
	assert_int_equal(record_count(f), 6);

	/* without a cache, never */
	pkit_store_close(s);
	s = open_store(f, &toy_service, NULL);
	x = toy_cmd(id[6], TOY_OP_TAKE, "F", 1);
	apply_ok(s, &x, 1);
	expect_out("take 6, no cache", &x, RPC_OK, "", TOY_TAKEN, true, 1);
	expect_counts(s, 0, 0);
	assert_int_equal(row_value(f, "F"), 1);
	pkit_store_close(s);
	valcache_free(cache);
}

/* ---- 6. the fault point fail_before_commit ---- */

static void test_fault(void **state)
{
	fixture *f = *state;
	toy_reset(f, "K=10");
	saga_id_t id[8];
	for (unsigned i = 0; i < 8; i++)
		make_id(id[i], 6, i);
	valcache *cache = NULL;
	assert_int_equal(valcache_new(&cache, 100), 0);
	pkit_store *s = open_store(f, &toy_service, cache);
	pkit_cmd x = toy_cmd(id[0], TOY_OP_TAKE, "K", 1);
	apply_ok(s, &x, 1);
	x = toy_cmd(id[1], TOY_OP_TAKE, "K", 1);
	apply_ok(s, &x, 1);
	expect_counts(s, 1, 0); /* the one-round-trip path serves K */
	assert_int_equal(row_value(f, "K"), 8);

	/* armed, the op name is the method's last part: the fast path steps
	 * aside so that the fault point is met */
	assert_int_equal(fault_parse("fail_before_commit:ReserveStock"), 0);
	x = toy_cmd(id[2], TOY_OP_TAKE, "K", 1);
	assert_int_equal(pkit_store_apply(s, &x, 1), PG_ERR_INJECTED);
	expect_counts(s, 1, 0);
	pkit_cmd b[2]
	    = {toy_cmd(id[3], TOY_OP_GIVEBACK, "K", 1), toy_cmd(id[4], TOY_OP_TAKE, "K", 1)};
	assert_int_equal(pkit_store_apply(s, b, 2), PG_ERR_INJECTED);
	assert_int_equal(row_value(f, "K"), 8);
	assert_string_equal(record_of(f, id[2]), "");
	assert_string_equal(record_of(f, id[3]), "");
	assert_string_equal(record_of(f, id[4]), "");
	assert_int_equal(record_count(f), 2);

	/* another op is not failed */
	x = toy_cmd(id[3], TOY_OP_GIVEBACK, "K", 1);
	apply_ok(s, &x, 1);
	expect_out("give back 3", &x, RPC_OK, "", TOY_TOMBSTONE, true, 8);
	assert_string_equal(record_of(f, id[3]), "TOMBSTONE K 1");

	/* cleared, the same command commits */
	fault_clear();
	x = toy_cmd(id[2], TOY_OP_TAKE, "K", 1);
	apply_ok(s, &x, 1);
	expect_out("take 2 after the fault", &x, RPC_OK, "", TOY_TAKEN, true, 7);
	assert_int_equal(row_value(f, "K"), 7);

	/* count=1: one failure, then the same command commits */
	assert_int_equal(fault_parse("fail_before_commit:ReserveStock:count=1"), 0);
	x = toy_cmd(id[5], TOY_OP_TAKE, "K", 1);
	assert_int_equal(pkit_store_apply(s, &x, 1), PG_ERR_INJECTED);
	assert_string_equal(record_of(f, id[5]), "");
	apply_ok(s, &x, 1);
	expect_out("take 5", &x, RPC_OK, "", TOY_TAKEN, true, 6);
	fault_clear();
	assert_int_equal(row_value(f, "K"), 6);
	assert_int_equal(record_count(f), 5);
	pkit_store_close(s);
	valcache_free(cache);
}

/* ---- 9. replies only after commit, through the RPC side ---- */

typedef struct call {
	uint8_t payload[256];
	rpc_request req;
} call;

/* make_call packs a toy request (ReserveStockRequest for Take, the same
 * fields as ReleaseStockRequest for GiveBack) into c. */
static void make_call(call *c, const char *method, const char *saga_id, const char *key, int32_t n)
{
	size_t len;
	if (strcmp(method, TOY_GIVEBACK_METHOD) == 0) {
		Sagas__V1__ReleaseStockRequest q = SAGAS__V1__RELEASE_STOCK_REQUEST__INIT;
		q.saga_id = (char *)saga_id;
		q.sku = (char *)key;
		q.qty = n;
		assert_true(protobuf_c_message_get_packed_size(&q.base) <= sizeof c->payload);
		len = protobuf_c_message_pack(&q.base, c->payload);
	} else {
		Sagas__V1__ReserveStockRequest q = SAGAS__V1__RESERVE_STOCK_REQUEST__INIT;
		q.saga_id = (char *)saga_id;
		q.sku = (char *)key;
		q.qty = n;
		assert_true(protobuf_c_message_get_packed_size(&q.base) <= sizeof c->payload);
		len = protobuf_c_message_pack(&q.base, c->payload);
	}
	c->req = (rpc_request) {.method = method,
	    .request_id = "test",
	    .payload = c->payload,
	    .payload_len = len,
	    .roles = ~0u};
}

/* expect_reply fails unless `r` is code/reason and, when OK, a reply of
 * `method` with this status (and on_hand for Take); frees its payload. */
static void expect_reply(const char *what, rpc_reply *r, const char *method, int code,
    const char *reason, int status, int64_t on_hand)
{
	if (r->code != code || strcmp(r->reason, reason) != 0)
		fail_msg("%s: got code=%d reason=\"%s\" (%s); want code=%d reason=\"%s\"", what,
		    r->code, r->reason, r->message, code, reason);
	if (code != RPC_OK) {
		assert_null(r->payload);
		return;
	}
	int got_status;
	int64_t got_on_hand = on_hand;
	if (strcmp(method, TOY_GIVEBACK_METHOD) == 0) {
		Sagas__V1__ReleaseStockReply *m
		    = sagas__v1__release_stock_reply__unpack(NULL, r->payload_len, r->payload);
		assert_non_null(m);
		got_status = (int)m->status;
		sagas__v1__release_stock_reply__free_unpacked(m, NULL);
	} else {
		Sagas__V1__ReserveStockReply *m
		    = sagas__v1__reserve_stock_reply__unpack(NULL, r->payload_len, r->payload);
		assert_non_null(m);
		got_status = (int)m->status;
		got_on_hand = m->on_hand;
		sagas__v1__reserve_stock_reply__free_unpacked(m, NULL);
	}
	if (got_status != status || got_on_hand != on_hand)
		fail_msg("%s: got status=%d on_hand=%" PRId64 "; want status=%d on_hand=%" PRId64,
		    what, got_status, got_on_hand, status, on_hand);
	free(r->payload);
	r->payload = NULL;
}

static void test_reply_after_commit(void **state)
{
	fixture *f = *state;
	toy_reset(f, "K=10");
	saga_id_t id[8];
	for (unsigned i = 0; i < 8; i++)
		make_id(id[i], 9, i);
	participant_app app = {
	    .conninfo = f->conninfo, .connect_wait_ms = 5000, .cache = NULL, .kit = &toy_service};
	void *worker = NULL;
	assert_int_equal(pkit_worker_init(&app, &worker), 0);

	/* OK: committed when the handler returns, seen from another
	 * connection */
	call c;
	rpc_reply r = {0};
	make_call(&c, TOY_TAKE_METHOD, id[0], "K", 3);
	pkit_handle(&app, worker, &c.req, &r);
	expect_reply("take 0", &r, TOY_TAKE_METHOD, RPC_OK, "", TOY_TAKEN, 7);
	assert_int_equal(row_value(f, "K"), 7);
	assert_string_equal(record_of(f, id[0]), "TAKEN K 3");

	/* armed: UNAVAILABLE and nothing to see; GiveBack is another op */
	assert_int_equal(fault_parse("fail_before_commit:ReserveStock"), 0);
	make_call(&c, TOY_TAKE_METHOD, id[1], "K", 3);
	r = (rpc_reply) {0};
	pkit_handle(&app, worker, &c.req, &r);
	expect_reply("take 1, fault", &r, TOY_TAKE_METHOD, RPC_UNAVAILABLE, "fault_injected", 0, 0);
	assert_int_equal(row_value(f, "K"), 7);
	assert_string_equal(record_of(f, id[1]), "");
	make_call(&c, TOY_GIVEBACK_METHOD, id[2], "K", 1);
	r = (rpc_reply) {0};
	pkit_handle(&app, worker, &c.req, &r);
	expect_reply("give back 2, fault on ReserveStock", &r, TOY_GIVEBACK_METHOD, RPC_OK, "",
	    TOY_TOMBSTONE, 0);
	assert_string_equal(record_of(f, id[2]), "TOMBSTONE K 1");

	/* a batch under the fault: every call UNAVAILABLE, nothing written */
	call cs[8];
	rpc_request reqs[8];
	rpc_reply rs[8];
	make_call(&cs[0], TOY_TAKE_METHOD, id[3], "K", 1);
	make_call(&cs[1], TOY_TAKE_METHOD, id[4], "K", 1);
	for (int i = 0; i < 2; i++)
		reqs[i] = cs[i].req;
	memset(rs, 0, sizeof rs);
	pkit_handle_batch(&app, worker, reqs, rs, 2);
	for (int i = 0; i < 2; i++)
		expect_reply("batch under the fault", &rs[i], TOY_TAKE_METHOD, RPC_UNAVAILABLE,
		    "fault_injected", 0, 0);
	assert_string_equal(record_of(f, id[3]), "");
	assert_string_equal(record_of(f, id[4]), "");
	assert_int_equal(row_value(f, "K"), 7);
	fault_clear();

	/* one failure: the batch fails, then each call alone commits */
	assert_int_equal(fault_parse("fail_before_commit:ReserveStock:count=1"), 0);
	memset(rs, 0, sizeof rs);
	pkit_handle_batch(&app, worker, reqs, rs, 2);
	fault_clear();
	expect_reply("batch, count=1, 3", &rs[0], TOY_TAKE_METHOD, RPC_OK, "", TOY_TAKEN, 6);
	expect_reply("batch, count=1, 4", &rs[1], TOY_TAKE_METHOD, RPC_OK, "", TOY_TAKEN, 5);
	assert_int_equal(row_value(f, "K"), 5);
	assert_string_equal(record_of(f, id[3]), "TAKEN K 1");
	assert_string_equal(record_of(f, id[4]), "TAKEN K 1");

	/* a mixed batch: saga commands in arrival order in one transaction,
	 * bad calls answered alone */
	make_call(&cs[0], TOY_TAKE_METHOD, id[5], "K", 2);
	make_call(&cs[1], TOY_GIVEBACK_METHOD, id[5], "K", 2);
	make_call(&cs[2], TOY_TAKE_METHOD, id[6], "K", 1);
	cs[2].req.payload_len = 2;
	memcpy(cs[2].payload, "\xff\xff", 2);
	make_call(&cs[3], TOY_TAKE_METHOD, "not-a-uuid", "K", 1);
	make_call(&cs[4], "/toy.v1.Toy/Nope", id[6], "K", 1);
	make_call(&cs[5], TOY_TAKE_METHOD, id[0], "K", 3);
	make_call(&cs[6], TOY_TAKE_METHOD, id[7], "K", 6);
	for (int i = 0; i < 7; i++)
		reqs[i] = cs[i].req;
	memset(rs, 0, sizeof rs);
	pkit_handle_batch(&app, worker, reqs, rs, 7);
	expect_reply("mixed 0", &rs[0], TOY_TAKE_METHOD, RPC_OK, "", TOY_TAKEN, 3);
	expect_reply("mixed 1", &rs[1], TOY_GIVEBACK_METHOD, RPC_OK, "", TOY_RETURNED, 0);
	expect_reply(
	    "mixed 2", &rs[2], TOY_TAKE_METHOD, RPC_INVALID_ARGUMENT, "malformed_payload", 0, 0);
	expect_reply("mixed 3", &rs[3], TOY_TAKE_METHOD, RPC_INVALID_ARGUMENT, "bad_field", 0, 0);
	expect_reply("mixed 4", &rs[4], TOY_TAKE_METHOD, RPC_UNIMPLEMENTED, "unknown_method", 0, 0);
	expect_reply("mixed 5", &rs[5], TOY_TAKE_METHOD, RPC_OK, "", TOY_TAKEN, 5);
	expect_reply(
	    "mixed 6", &rs[6], TOY_TAKE_METHOD, RPC_FAILED_PRECONDITION, REASON_OUT_OF_STOCK, 0, 0);
	assert_int_equal(row_value(f, "K"), 5);
	assert_string_equal(record_of(f, id[5]), "RETURNED K 2");
	assert_string_equal(record_of(f, id[6]), "");
	assert_string_equal(record_of(f, id[7]), "SHORT K 6");
	assert_int_equal(record_count(f), 6);
	pkit_worker_fini(&app, worker);
}

/* ---- 10. a service without rows ---- */

static void test_no_rows(void **state)
{
	fixture *f = *state;
	toy_reset(f, "");
	notes_rows_seen = 0;
	saga_id_t id[8];
	for (unsigned i = 0; i < 8; i++)
		make_id(id[i], 10, i);
	pkit_store *s = open_store(f, &notes_service, NULL);
	const char *note_of = "SELECT status || ' ' || who || ' ' || what FROM toy_notes"
	                      " WHERE saga_id = $1";
	char got[256];

	/* new saga ids need no cache: the one-round-trip path */
	pkit_cmd x = note_cmd(id[0], "ann", "box");
	apply_ok(s, &x, 1);
	expect_out("note 0", &x, RPC_OK, "", NOTE_NOTED, true, 0);
	expect_counts(s, 1, 0);
	x = note_cmd(id[0], "ann", "box");
	apply_ok(s, &x, 1);
	expect_out("note 0 again", &x, RPC_OK, "", NOTE_NOTED, false, 0);
	expect_counts(s, 1, 1);
	x = note_cmd(id[0], "ann", "bag");
	apply_ok(s, &x, 1);
	expect_out("note 0, other what", &x, RPC_ALREADY_EXISTS, REASON_KEY_MISMATCH, NOTE_NOTED,
	    false, 0);
	x = note_cmd(id[0], "bob", "box");
	apply_ok(s, &x, 1);
	expect_out(
	    "note 0, other who", &x, RPC_ALREADY_EXISTS, REASON_KEY_MISMATCH, NOTE_NOTED, false, 0);
	db_text(f->admin, note_of, id[0], got, sizeof got);
	assert_string_equal(got, "NOTED ann box");

	pkit_cmd b[3] = {note_cmd(id[1], "a", "b"), note_cmd(id[2], "c", "d")};
	apply_ok(s, b, 2);
	expect_out("batch 1", &b[0], RPC_OK, "", NOTE_NOTED, true, 0);
	expect_out("batch 2", &b[1], RPC_OK, "", NOTE_NOTED, true, 0);
	expect_counts(s, 2, 3); /* the two refused above tried it too */
	b[0] = note_cmd(id[3], "a", "b");
	b[1] = note_cmd(id[3], "a", "b");
	b[2] = note_cmd(id[3], "a", "c");
	apply_ok(s, b, 3); /* a repeated saga id: the locking path */
	expect_out("repeated 0", &b[0], RPC_OK, "", NOTE_NOTED, true, 0);
	expect_out("repeated 1", &b[1], RPC_OK, "", NOTE_NOTED, false, 0);
	expect_out(
	    "repeated 2", &b[2], RPC_ALREADY_EXISTS, REASON_KEY_MISMATCH, NOTE_NOTED, false, 0);
	expect_counts(s, 2, 3);
	db_text(f->admin, note_of, id[3], got, sizeof got);
	assert_string_equal(got, "NOTED a b");

	/* the fault point is met here too (the fast path steps aside) */
	assert_int_equal(fault_parse("fail_before_commit:ShipOrder"), 0);
	x = note_cmd(id[4], "x", "y");
	assert_int_equal(pkit_store_apply(s, &x, 1), PG_ERR_INJECTED);
	fault_clear();
	db_text(f->admin, note_of, id[4], got, sizeof got);
	assert_string_equal(got, "");
	assert_int_equal(db_int(f->admin, "SELECT count(*) FROM toy_notes", NULL), 4);
	pkit_store_close(s);

	/* through the RPC side: created once */
	participant_app app
	    = {.conninfo = f->conninfo, .connect_wait_ms = 5000, .kit = &notes_service};
	void *worker = NULL;
	assert_int_equal(pkit_worker_init(&app, &worker), 0);
	Sagas__V1__ShipOrderRequest q = SAGAS__V1__SHIP_ORDER_REQUEST__INIT;
	q.saga_id = id[5];
	q.customer = (char *)"cy";
	q.sku = (char *)"pen";
	q.qty = 1;
	uint8_t buf[256];
	assert_true(protobuf_c_message_get_packed_size(&q.base) <= sizeof buf);
	rpc_request req = {.method = NOTE_METHOD,
	    .request_id = "test",
	    .payload = buf,
	    .payload_len = protobuf_c_message_pack(&q.base, buf),
	    .roles = ~0u};
	for (int k = 0; k < 2; k++) {
		rpc_reply r = {0};
		pkit_handle(&app, worker, &req, &r);
		assert_int_equal(r.code, RPC_OK);
		Sagas__V1__ShipOrderReply *m
		    = sagas__v1__ship_order_reply__unpack(NULL, r.payload_len, r.payload);
		assert_non_null(m);
		assert_int_equal(m->status, NOTE_NOTED);
		assert_int_equal(m->created, k == 0);
		sagas__v1__ship_order_reply__free_unpacked(m, NULL);
		free(r.payload);
	}
	pkit_worker_fini(&app, worker);
	db_text(f->admin, note_of, id[5], got, sizeof got);
	assert_string_equal(got, "NOTED cy pen");
	assert_int_equal(db_int(f->admin, "SELECT count(*) FROM toy_notes", NULL), 5);
	assert_int_equal(notes_rows_seen, 0);
}

/* 11. the descriptors are checked against their messages: the toys pass;
 * a field the request lacks, a reply field of the wrong type, or more texts
 * than the kit holds are refused (a daemon then refuses to start) */
static void test_service_check(void **state)
{
	(void)state;
	assert_true(pkit_service_check(&toy_service));
	assert_true(pkit_service_check(&notes_service));
	pkit_method m = toy_methods[0];
	pkit_service v = toy_service;
	v.methods = &m;
	v.n_methods = 1;
	m.fields[0].name = "nope";
	assert_false(pkit_service_check(&v));
	m = toy_methods[0];
	m.reply_value = "status"; /* an enum: a number, allowed */
	assert_true(pkit_service_check(&v));
	m.reply_created = "on_hand"; /* not a bool */
	assert_false(pkit_service_check(&v));
	m = toy_methods[0];
	m.fields[1] = (pkit_field) {"sku", true, 0, 0, NULL};
	m.fields[2] = (pkit_field) {"sku", true, 0, 0, NULL};
	m.n_fields = 3; /* three texts */
	assert_false(pkit_service_check(&v));
}

int main(void)
{
	/* warnings only: the injected faults and lost races log at WARNING */
	log_init("test_pkit", LOG_LEVEL_WARN);
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_teardown(test_duplicates, fault_teardown),
	    cmocka_unit_test_teardown(test_tombstone, fault_teardown),
	    cmocka_unit_test_teardown(test_key_mismatch, fault_teardown),
	    cmocka_unit_test_teardown(test_saga_identity, fault_teardown),
	    cmocka_unit_test_teardown(test_fast_path, fault_teardown),
	    cmocka_unit_test_teardown(test_fault, fault_teardown),
	    cmocka_unit_test_teardown(test_reply_after_commit, fault_teardown),
	    cmocka_unit_test_teardown(test_no_rows, fault_teardown),
	    cmocka_unit_test(test_service_check),
	};
	return cmocka_run_group_tests(tests, fixture_setup, fixture_teardown);
}
