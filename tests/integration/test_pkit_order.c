/* The participant kit's tests of order (services/kit/pkit.h, pkit_store.c)
 * on real PostgreSQL, with the toy services of pkit_toy.h: a batch locked
 * in key order and decided in arrival order, lost races between two
 * stores, and the lock order that keeps two stores from deadlocking. */
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

/* ---- 4. batches: locked in key order, decided in arrival order ---- */

static void test_batch_order(void **state)
{
	fixture *f = *state;
	saga_id_t id[8];
	for (unsigned i = 0; i < 8; i++)
		make_id(id[i], 4, i);
	pkit_store *s = open_store(f, &toy_service, NULL);

	/* [a, b] on 5: a first; [b, a]: b first. One of the two orders is not
	 * the saga ids' order. */
	for (int rev = 0; rev < 2; rev++) {
		toy_reset(f, "X=5");
		const char *first = rev ? id[1] : id[0], *second = rev ? id[0] : id[1];
		pkit_cmd b[2]
		    = {toy_cmd(first, TOY_OP_TAKE, "X", 3), toy_cmd(second, TOY_OP_TAKE, "X", 3)};
		apply_ok(s, b, 2);
		const want w[] = {{RPC_OK, "", TOY_TAKEN, true, 2},
		    {RPC_FAILED_PRECONDITION, REASON_OUT_OF_STOCK, TOY_SHORT, true, 2}};
		expect_all(rev ? "[b, a]" : "[a, b]", b, w, 2);
		assert_int_equal(row_value(f, "X"), 2);
		assert_string_equal(record_of(f, first), "TAKEN X 3");
		assert_string_equal(record_of(f, second), "SHORT X 3");
	}

	/* mixed ops, saga ids repeated inside the batch, two rows and a
	 * missing one */
	const char *c = id[2], *d = id[3], *e = id[4], *g = id[5], *h = id[6];
	pkit_cmd mixed[] = {
	    toy_cmd(c, TOY_OP_TAKE, "X", 2),
	    toy_cmd(c, TOY_OP_GIVEBACK, "X", 2),
	    toy_cmd(c, TOY_OP_TAKE, "X", 2),
	    toy_cmd(d, TOY_OP_GIVEBACK, "X", 1),
	    toy_cmd(d, TOY_OP_TAKE, "X", 1),
	    toy_cmd(e, TOY_OP_TAKE, "Y", 1),
	    toy_cmd(g, TOY_OP_TAKE, "Y", 1),
	    toy_cmd(e, TOY_OP_GIVEBACK, "Y", 1),
	    toy_cmd(g, TOY_OP_TAKE, "Y", 1),
	    toy_cmd(h, TOY_OP_TAKE, "NOPE", 1),
	    toy_cmd(c, TOY_OP_TAKE, "X", 3),
	};
	const size_t n = sizeof mixed / sizeof mixed[0];
	const want w[] = {
	    {RPC_OK, "", TOY_TAKEN, true, 3},
	    {RPC_OK, "", TOY_RETURNED, true, 5},
	    {RPC_OK, "", TOY_TAKEN, false, 5},
	    {RPC_OK, "", TOY_TOMBSTONE, true, 5},
	    {RPC_ABORTED, REASON_TOMBSTONE, TOY_TOMBSTONE, false, 5},
	    {RPC_OK, "", TOY_TAKEN, true, 0},
	    {RPC_FAILED_PRECONDITION, REASON_OUT_OF_STOCK, TOY_SHORT, true, 0},
	    {RPC_OK, "", TOY_RETURNED, true, 1},
	    {RPC_FAILED_PRECONDITION, REASON_OUT_OF_STOCK, TOY_SHORT, false, 1},
	    {RPC_NOT_FOUND, REASON_UNKNOWN_SKU, TOY_NO_ROW, true, 0},
	    {RPC_ALREADY_EXISTS, REASON_KEY_MISMATCH, TOY_RETURNED, false, 5},
	};
	toy_reset(f, "X=5 Y=1");
	apply_ok(s, mixed, n);
	expect_all("mixed batch", mixed, w, n);
	const char *tables
	    = "SELECT string_agg(status || ' ' || key || ' ' || n, ',' ORDER BY saga_id)"
	      " || ';' || (SELECT string_agg(key || '=' || value, ',' ORDER BY key) FROM toy_rows)"
	      " FROM toy_records";
	char batch_tables[512], single_tables[512];
	db_text(f->admin, tables, NULL, batch_tables, sizeof batch_tables);
	assert_int_equal(row_value(f, "X"), 5);
	assert_int_equal(row_value(f, "Y"), 1);
	assert_string_equal(record_of(f, c), "RETURNED X 2");
	assert_string_equal(record_of(f, d), "TOMBSTONE X 1");
	assert_string_equal(record_of(f, e), "RETURNED Y 1");
	assert_string_equal(record_of(f, g), "SHORT Y 1");
	assert_string_equal(record_of(f, h), "NO_ROW NOPE 1");
	assert_int_equal(record_count(f), 5);

	/* as if each ran alone: the same commands one at a time */
	toy_reset(f, "X=5 Y=1");
	for (size_t i = 0; i < n; i++) {
		mixed[i].out = (pkit_outcome) {0};
		mixed[i].value = -1;
		apply_ok(s, &mixed[i], 1);
	}
	expect_all("the same alone", mixed, w, n);
	db_text(f->admin, tables, NULL, single_tables, sizeof single_tables);
	assert_string_equal(batch_tables, single_tables);

	/* a full batch on one row: the first 100 in arrival order take it */
	toy_reset(f, "W=100");
	static saga_id_t many_ids[RPC_BATCH_MAX];
	static pkit_cmd many[RPC_BATCH_MAX + 1];
	for (unsigned i = 0; i < RPC_BATCH_MAX; i++) {
		make_id(many_ids[i], 40, i);
		many[i] = toy_cmd(many_ids[i], TOY_OP_TAKE, "W", 1);
	}
	many[RPC_BATCH_MAX] = toy_cmd(id[7], TOY_OP_TAKE, "W", 1);
	assert_int_equal(pkit_store_apply(s, many, 0), -EINVAL);
	assert_int_equal(pkit_store_apply(s, many, RPC_BATCH_MAX + 1), -EINVAL);
	assert_int_equal(record_count(f), 0);
	apply_ok(s, many, RPC_BATCH_MAX);
	for (unsigned i = 0; i < RPC_BATCH_MAX; i++) {
		char name[32];
		snprintf(name, sizeof name, "full batch %u", i);
		if (i < 100)
			expect_out(
			    name, &many[i], RPC_OK, "", TOY_TAKEN, true, 100 - 1 - (int64_t)i);
		else
			expect_out(name, &many[i], RPC_FAILED_PRECONDITION, REASON_OUT_OF_STOCK,
			    TOY_SHORT, true, 0);
	}
	assert_int_equal(row_value(f, "W"), 0);
	assert_int_equal(
	    db_int(f->admin, "SELECT count(*) FROM toy_records WHERE status = 'TAKEN'", NULL), 100);
	assert_int_equal(
	    db_int(f->admin, "SELECT count(*) FROM toy_records WHERE status = 'SHORT'", NULL), 28);
	pkit_store_close(s);
}

/* ---- 7. lost races ---- */

#define RACE_SAME 200 /* rounds where both threads take */
#define RACE_MIXED                                                                                 \
	100 /* rounds where one takes and the other gives back,                                    \
	       each thread in turn */
#define RACE_ROUNDS (RACE_SAME + RACE_MIXED)
#define RACE_START  10000

typedef struct racer {
	const char *conninfo;
	valcache *cache; /* its own: two daemons */
	pthread_barrier_t *bar;
	int who;
	saga_id_t *ids;
	pkit_cmd out[RACE_ROUNDS];
	int rc[RACE_ROUNDS];
	int open_rc;
	uint64_t fast, fell_back;
} racer;

static void *race_main(void *arg)
{
	racer *r = arg;
	pkit_store *s = NULL;
	r->open_rc = pkit_store_open(&s, &toy_service, r->conninfo, 5000, r->cache);
	for (size_t i = 0; i < RACE_ROUNDS; i++) {
		int op = i < RACE_SAME || r->who != (int)(i & 1) ? TOY_OP_TAKE : TOY_OP_GIVEBACK;
		r->out[i] = toy_cmd(r->ids[i], op, "R", 1);
		pthread_barrier_wait(r->bar);
		r->rc[i] = s != NULL ? pkit_store_apply(s, &r->out[i], 1) : -1;
	}
	if (s != NULL)
		pkit_store_fast_counts(s, &r->fast, &r->fell_back);
	pkit_store_close(s);
	return NULL;
}

static void test_lost_races(void **state)
{
	fixture *f = *state;
	char start[32];
	snprintf(start, sizeof start, "R=%d", RACE_START);
	toy_reset(f, start);
	static saga_id_t ids[RACE_ROUNDS];
	for (unsigned i = 0; i < RACE_ROUNDS; i++)
		make_id(ids[i], 7, i);
	pthread_barrier_t bar;
	assert_int_equal(pthread_barrier_init(&bar, NULL, 2), 0);
	static racer r[2];
	pthread_t t[2];
	for (int k = 0; k < 2; k++) {
		memset(&r[k], 0, sizeof r[k]);
		r[k] = (racer) {.conninfo = f->conninfo, .bar = &bar, .who = k, .ids = ids};
		assert_int_equal(valcache_new(&r[k].cache, 100), 0);
		assert_int_equal(pthread_create(&t[k], NULL, race_main, &r[k]), 0);
	}
	for (int k = 0; k < 2; k++) {
		assert_int_equal(pthread_join(t[k], NULL), 0);
		assert_int_equal(r[k].open_rc, 0);
	}
	pthread_barrier_destroy(&bar);
	int tombstones = 0;
	for (size_t i = 0; i < RACE_ROUNDS; i++) {
		const pkit_cmd *x = &r[0].out[i], *y = &r[1].out[i];
		if (i >= RACE_SAME && (i & 1) == 0) { /* x the take, y its compensation */
			x = &r[1].out[i];
			y = &r[0].out[i];
		}
		if (r[0].rc[i] != 0 || r[1].rc[i] != 0)
			fail_msg("round %zu: rc %d and %d", i, r[0].rc[i], r[1].rc[i]);
		char what[64];
		if (i < RACE_SAME) {
			/* one wrote, the other was answered from its record */
			int64_t v = RACE_START - 1 - (int64_t)i;
			snprintf(what, sizeof what, "round %zu, thread 0", i);
			expect_out(what, x, RPC_OK, "", TOY_TAKEN, x->out.write_record, v);
			snprintf(what, sizeof what, "round %zu, thread 1", i);
			expect_out(what, y, RPC_OK, "", TOY_TAKEN, y->out.write_record, v);
			if (x->out.write_record == y->out.write_record)
				fail_msg("round %zu: %s wrote the record", i,
				    x->out.write_record ? "both" : "neither");
			assert_string_equal(record_of(f, ids[i]), "TAKEN R 1");
			continue;
		}
		/* a take against its compensation: either order, never both */
		int64_t v = RACE_START - RACE_SAME;
		snprintf(what, sizeof what, "round %zu", i);
		if (y->out.reply_status == TOY_TOMBSTONE) {
			tombstones++;
			expect_out(what, y, RPC_OK, "", TOY_TOMBSTONE, true, v);
			expect_out(what, x, RPC_ABORTED, REASON_TOMBSTONE, TOY_TOMBSTONE, false, v);
			assert_string_equal(record_of(f, ids[i]), "TOMBSTONE R 1");
		} else {
			expect_out(what, x, RPC_OK, "", TOY_TAKEN, true, v - 1);
			expect_out(what, y, RPC_OK, "", TOY_RETURNED, true, v);
			assert_string_equal(record_of(f, ids[i]), "RETURNED R 1");
		}
	}
	assert_int_equal(row_value(f, "R"), RACE_START - RACE_SAME);
	assert_int_equal(record_count(f), RACE_ROUNDS);
	print_message("lost races: %d of %d compensations came first (tombstones); one-round-trip "
	              "path %" PRIu64 "+%" PRIu64 " committed, %" PRIu64 "+%" PRIu64 " fell back\n",
	    tombstones, RACE_MIXED, r[0].fast, r[1].fast, r[0].fell_back, r[1].fell_back);
	for (int k = 0; k < 2; k++)
		valcache_free(r[k].cache);
}

/* ---- 8. lock order ---- */

#define ORDER_ROUNDS 300
#define ORDER_KEYS   4
#define ORDER_START  1000
static const char *const order_keys[ORDER_KEYS] = {"K0", "K1", "K2", "K3"};

typedef struct orderer {
	const char *conninfo;
	valcache *cache; /* shared: two workers of one daemon */
	pthread_barrier_t *bar;
	int who;
	saga_id_t (*ids)[ORDER_KEYS];
	int rc; /* the first error */
	size_t bad_round;
	int open_rc;
	uint64_t fast, fell_back;
} orderer;

static void *order_main(void *arg)
{
	orderer *o = arg;
	pkit_store *s = NULL;
	o->open_rc = pkit_store_open(&s, &toy_service, o->conninfo, 5000, o->cache);
	for (size_t r = 0; r < ORDER_ROUNDS; r++) {
		/* the same commands, thread 1 in the reverse order of thread 0:
		 * a step of each key, then their compensations */
		pkit_cmd take[ORDER_KEYS], back[ORDER_KEYS];
		for (int k = 0; k < ORDER_KEYS; k++) {
			int j = o->who == 0 ? k : ORDER_KEYS - 1 - k;
			take[k] = toy_cmd(o->ids[r][j], TOY_OP_TAKE, order_keys[j], 1 + j);
			back[k] = toy_cmd(o->ids[r][j], TOY_OP_GIVEBACK, order_keys[j], 1 + j);
		}
		pthread_barrier_wait(o->bar);
		int rc = s != NULL ? pkit_store_apply(s, take, ORDER_KEYS) : -1;
		if (rc == 0)
			rc = pkit_store_apply(s, back, ORDER_KEYS);
		if (rc != 0 && o->rc == 0) {
			o->rc = rc;
			o->bad_round = r;
		}
	}
	if (s != NULL)
		pkit_store_fast_counts(s, &o->fast, &o->fell_back);
	pkit_store_close(s);
	return NULL;
}

static void test_lock_order(void **state)
{
	fixture *f = *state;
	char start[128];
	snprintf(start, sizeof start, "K0=%d K1=%d K2=%d K3=%d", ORDER_START, ORDER_START,
	    ORDER_START, ORDER_START);
	toy_reset(f, start);
	static saga_id_t ids[ORDER_ROUNDS][ORDER_KEYS];
	for (unsigned r = 0; r < ORDER_ROUNDS; r++)
		for (unsigned k = 0; k < ORDER_KEYS; k++)
			make_id(ids[r][k], 8, r * ORDER_KEYS + k);
	valcache *cache = NULL;
	assert_int_equal(valcache_new(&cache, 100), 0);
	pthread_barrier_t bar;
	assert_int_equal(pthread_barrier_init(&bar, NULL, 2), 0);
	orderer o[2];
	pthread_t t[2];
	for (int k = 0; k < 2; k++) {
		o[k] = (orderer) {.conninfo = f->conninfo_no_deadlock,
		    .cache = cache,
		    .bar = &bar,
		    .who = k,
		    .ids = ids};
		assert_int_equal(pthread_create(&t[k], NULL, order_main, &o[k]), 0);
	}
	for (int k = 0; k < 2; k++)
		assert_int_equal(pthread_join(t[k], NULL), 0);
	pthread_barrier_destroy(&bar);
	for (int k = 0; k < 2; k++) {
		assert_int_equal(o[k].open_rc, 0);
		if (o[k].rc != 0)
			fail_msg("thread %d, round %zu: %s (%d)", k, o[k].bad_round,
			    pg_err_name(o[k].rc), o[k].rc);
	}
	/* each saga's take came before its compensations: all given back */
	for (int k = 0; k < ORDER_KEYS; k++)
		assert_int_equal(row_value(f, order_keys[k]), ORDER_START);
	assert_int_equal(record_count(f), ORDER_ROUNDS * ORDER_KEYS);
	assert_int_equal(
	    db_int(f->admin, "SELECT count(*) FROM toy_records WHERE status = 'RETURNED'", NULL),
	    ORDER_ROUNDS * ORDER_KEYS);
	print_message("lock order: %d rounds; one-round-trip path %" PRIu64 "+%" PRIu64
	              " committed, %" PRIu64 "+%" PRIu64 " fell back\n",
	    ORDER_ROUNDS, o[0].fast, o[1].fast, o[0].fell_back, o[1].fell_back);
	valcache_free(cache);
}

int main(void)
{
	/* warnings only: the injected faults and lost races log at WARNING */
	log_init("test_pkit_order", LOG_LEVEL_WARN);
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_teardown(test_batch_order, fault_teardown),
	    cmocka_unit_test_teardown(test_lost_races, fault_teardown),
	    cmocka_unit_test_teardown(test_lock_order, fault_teardown),
	};
	return cmocka_run_group_tests(tests, fixture_setup, fixture_teardown);
}
