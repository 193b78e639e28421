/* test_pkit_decide: the participant kit's decision (services/kit/pkit_decide.c)
 * on the real stock service's descriptor: rule R5 of
 * docs/saga-semantics.md (a saga is its id and its start) in front of the
 * service's own rules 2, 5 and 6. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "pkit.h"
#include "service.h"
#include "status.h"
#include "stock_logic.h"

#define OLD 1700000000000LL /* the first saga's start (ms) */
#define NEW 1700700000000LL /* a later saga's, same id */

static pkit_record reserved(int64_t started)
{
	pkit_record r = {.status = STOCK_RESERVED, .num = {2}, .started = started};
	strcpy(r.text[0], "K1");
	return r;
}

static pkit_outcome decide(const pkit_record *rec, int64_t on_hand, int op, int64_t started)
{
	const pkit_row row = {.exists = true, .value = on_hand};
	const pkit_args a = {.op = op, .text = {"K1"}, .num = {2}, .started = started};
	pkit_outcome o;
	pkit_decide(&stock_service, rec, &row, &a, &o);
	return o;
}

/* another start: refused, nothing written, for the step and the
 * compensation alike, whatever the record's status */
static void test_other_start_refused(void **st)
{
	(void)st;
	const int statuses[]
	    = {STOCK_RESERVED, STOCK_RELEASED, STOCK_TOMBSTONE, STOCK_OUT_OF_STOCK};
	for (size_t i = 0; i < sizeof statuses / sizeof statuses[0]; i++) {
		pkit_record rec = reserved(OLD);
		rec.status = statuses[i];
		for (int op = STOCK_OP_RESERVE; op <= STOCK_OP_RELEASE; op++) {
			pkit_outcome o = decide(&rec, 8, op, NEW);
			assert_int_equal(o.code, RPC_FAILED_PRECONDITION);
			assert_string_equal(o.reason, REASON_SAGA_ID_REUSED);
			assert_false(o.write_record);
			assert_false(o.write_row);
			assert_int_equal(o.record.started, OLD); /* named in the message */
		}
	}
}

/* the same start: the service's rules, as before R5 */
static void test_same_start_is_the_service(void **st)
{
	(void)st;
	pkit_record rec = reserved(OLD);
	pkit_outcome o = decide(&rec, 8, STOCK_OP_RESERVE, OLD); /* a duplicate */
	assert_int_equal(o.code, RPC_OK);
	assert_false(o.write_record);
	assert_false(o.write_row);
	o = decide(&rec, 8, STOCK_OP_RELEASE, OLD); /* its compensation */
	assert_int_equal(o.code, RPC_OK);
	assert_true(o.write_record);
	assert_int_equal(o.record.status, STOCK_RELEASED);
	assert_int_equal(o.record.started, OLD); /* a record keeps its start */
	assert_true(o.write_row);
	assert_int_equal(o.value, 10);
}

/* a new record takes its command's start; a tombstone too (rule 5) */
static void test_new_record_takes_the_start(void **st)
{
	(void)st;
	const pkit_record none = {.status = 0};
	pkit_outcome o = decide(&none, 8, STOCK_OP_RESERVE, NEW);
	assert_int_equal(o.code, RPC_OK);
	assert_true(o.write_record);
	assert_int_equal(o.record.started, NEW);
	assert_int_equal(o.value, 6);
	o = decide(&none, 8, STOCK_OP_RELEASE, NEW);
	assert_true(o.write_record);
	assert_int_equal(o.record.status, STOCK_TOMBSTONE);
	assert_int_equal(o.record.started, NEW);
}

/* a record made before R5 (start unknown, 0) matches a command whose
 * start is at most its making plus the skew (its own saga's), refuses a
 * later one (a new saga with its id), and keeps its unknown start when
 * written; one of unknown making (0) matches any */
static void test_legacy_record(void **st)
{
	(void)st;
	pkit_record rec = reserved(0);
	rec.made_ms = OLD + 3600000; /* made an hour into its saga */
	const pkit_row row = {.exists = true, .value = 8};
	pkit_args a = {.op = STOCK_OP_RELEASE, .text = {"K1"}, .num = {2}, .skew_ms = 300000};
	pkit_outcome o;
	a.started = OLD; /* its own saga */
	pkit_decide(&stock_service, &rec, &row, &a, &o);
	assert_int_equal(o.code, RPC_OK);
	assert_int_equal(o.record.status, STOCK_RELEASED);
	assert_int_equal(o.record.started, 0);
	a.started = rec.made_ms + 300000 + 1000; /* the edge: skew and slack */
	pkit_decide(&stock_service, &rec, &row, &a, &o);
	assert_int_equal(o.code, RPC_OK);
	a.started = rec.made_ms + 300000 + 1001; /* later: another saga */
	pkit_decide(&stock_service, &rec, &row, &a, &o);
	assert_int_equal(o.code, RPC_FAILED_PRECONDITION);
	assert_string_equal(o.reason, REASON_SAGA_ID_REUSED);
	assert_false(o.write_record);
	assert_false(o.write_row);
	assert_int_equal(o.record.made_ms, rec.made_ms);
	a.started = NEW;
	a.op = STOCK_OP_RESERVE;
	pkit_decide(&stock_service, &rec, &row, &a, &o);
	assert_string_equal(o.reason, REASON_SAGA_ID_REUSED);
	rec.made_ms = 0; /* unknown: the in-memory stores */
	o = decide(&rec, 8, STOCK_OP_RELEASE, NEW);
	assert_int_equal(o.code, RPC_OK);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_other_start_refused),
	    cmocka_unit_test(test_same_start_is_the_service),
	    cmocka_unit_test(test_new_record_takes_the_start),
	    cmocka_unit_test(test_legacy_record),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
