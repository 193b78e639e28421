/* Unit tests of hotel_decide() (tests/participants/hotel/hotel_logic.h): every
 * branch of the hotel participant's pure decision, with exact codes, reasons,
 * statuses, records and rooms free. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "hotel_logic.h"
#include "status.h"

static pkit_record rec_of(hotel_status st, const char *room, int64_t nights)
{
	pkit_record r = {.status = st, .num = {nights}};
	snprintf(r.text[0], sizeof r.text[0], "%s", room);
	return r;
}

static const pkit_record no_rec = {.status = HOTEL_NONE};

static pkit_args args(hotel_op op, const char *room, int64_t nights)
{
	return (pkit_args) {.op = op, .text = {room}, .num = {nights}};
}

/* decide: hotel_decide of (rec, a row of `free` rooms or none, op room nights) */
static pkit_outcome decide(const pkit_record *rec, bool exists, int64_t free, hotel_op op,
    const char *room, int64_t nights)
{
	const pkit_row row = {.exists = exists, .value = free};
	const pkit_args a = args(op, room, nights);
	pkit_outcome o;
	hotel_decide(rec, &row, &a, &o);
	return o;
}

static void expect(const pkit_outcome *o, int code, const char *reason, int reply_status)
{
	assert_int_equal(o->code, code);
	assert_string_equal(o->reason, reason);
	assert_int_equal(o->reply_status, reply_status);
}

static void expect_record(const pkit_outcome *o, hotel_status st, const char *room, int64_t n)
{
	assert_true(o->write_record);
	assert_int_equal(o->record.status, st);
	assert_string_equal(o->record.text[0], room);
	assert_int_equal(o->record.num[0], n);
}

static void expect_nothing_written(const pkit_outcome *o)
{
	assert_false(o->write_record);
	assert_false(o->write_row);
}

/* a new hold takes one room, whatever the nights; the last one too */
static void test_hold_new(void **state)
{
	(void)state;
	pkit_outcome o = decide(&no_rec, true, 3, HOTEL_OP_HOLD, "DLX", 4);
	expect(&o, RPC_OK, "", HOTEL_HELD);
	expect_record(&o, HOTEL_HELD, "DLX", 4);
	assert_true(o.write_row);
	assert_int_equal(o.value, 2);
	o = decide(&no_rec, true, 1, HOTEL_OP_HOLD, "DLX", 1);
	assert_true(o.write_row);
	assert_int_equal(o.value, 0);
}

/* refusals are recorded, and take nothing */
static void test_hold_refused(void **state)
{
	(void)state;
	pkit_outcome o = decide(&no_rec, true, 0, HOTEL_OP_HOLD, "DLX", 1);
	expect(&o, RPC_FAILED_PRECONDITION, REASON_NO_VACANCY, HOTEL_NO_VACANCY);
	expect_record(&o, HOTEL_NO_VACANCY, "DLX", 1);
	assert_false(o.write_row);
	o = decide(&no_rec, false, 0, HOTEL_OP_HOLD, "SUITE", 2);
	expect(&o, RPC_NOT_FOUND, REASON_UNKNOWN_ROOM, HOTEL_UNKNOWN_ROOM);
	expect_record(&o, HOTEL_UNKNOWN_ROOM, "SUITE", 2);
	assert_false(o.write_row);
}

/* rule 2: a duplicate is answered as first, from its record */
static void test_hold_duplicate(void **state)
{
	(void)state;
	static const struct {
		hotel_status rec;
		int code;
		const char *reason;
		int reply;
	} cases[] = {
	    {HOTEL_HELD, RPC_OK, "", HOTEL_HELD},
	    {HOTEL_FREED, RPC_OK, "", HOTEL_HELD}, /* held, since freed: its answer was OK */
	    {HOTEL_NO_VACANCY, RPC_FAILED_PRECONDITION, REASON_NO_VACANCY, HOTEL_NO_VACANCY},
	    {HOTEL_UNKNOWN_ROOM, RPC_NOT_FOUND, REASON_UNKNOWN_ROOM, HOTEL_UNKNOWN_ROOM},
	    {HOTEL_TOMBSTONE, RPC_ABORTED, REASON_TOMBSTONE, HOTEL_TOMBSTONE}, /* rule 5 */
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		const pkit_record r = rec_of(cases[i].rec, "DLX", 2);
		pkit_outcome o = decide(&r, true, 5, HOTEL_OP_HOLD, "DLX", 2);
		expect(&o, cases[i].code, cases[i].reason, cases[i].reply);
		expect_nothing_written(&o);
	}
}

/* rule 6: the same saga with another room or other nights; a tombstone
 * refuses the late hold whatever its arguments (rule 5) */
static void test_key_mismatch(void **state)
{
	(void)state;
	const pkit_record held = rec_of(HOTEL_HELD, "DLX", 2);
	pkit_outcome o = decide(&held, true, 5, HOTEL_OP_HOLD, "DLX", 3);
	expect(&o, RPC_ALREADY_EXISTS, REASON_KEY_MISMATCH, HOTEL_HELD);
	expect_nothing_written(&o);
	o = decide(&held, true, 5, HOTEL_OP_FREE, "KING", 2);
	expect(&o, RPC_ALREADY_EXISTS, REASON_KEY_MISMATCH, HOTEL_HELD);
	expect_nothing_written(&o);
	const pkit_record tomb = rec_of(HOTEL_TOMBSTONE, "DLX", 2);
	o = decide(&tomb, true, 5, HOTEL_OP_HOLD, "KING", 9);
	expect(&o, RPC_ABORTED, REASON_TOMBSTONE, HOTEL_TOMBSTONE);
	expect_nothing_written(&o);
}

/* the compensation: a held room back once; copies and refused holds
 * answered from the record; first, a tombstone (rule 5) */
static void test_free_room(void **state)
{
	(void)state;
	const pkit_record held = rec_of(HOTEL_HELD, "DLX", 2);
	pkit_outcome o = decide(&held, true, 4, HOTEL_OP_FREE, "DLX", 2);
	expect(&o, RPC_OK, "", HOTEL_FREED);
	expect_record(&o, HOTEL_FREED, "DLX", 2);
	assert_true(o.write_row);
	assert_int_equal(o.value, 5);
	static const hotel_status recorded[]
	    = {HOTEL_FREED, HOTEL_NO_VACANCY, HOTEL_UNKNOWN_ROOM, HOTEL_TOMBSTONE};
	for (size_t i = 0; i < sizeof recorded / sizeof recorded[0]; i++) {
		const pkit_record r = rec_of(recorded[i], "DLX", 2);
		o = decide(&r, true, 4, HOTEL_OP_FREE, "DLX", 2);
		expect(&o, RPC_OK, "", (int)recorded[i]);
		expect_nothing_written(&o);
	}
	o = decide(&no_rec, false, 0, HOTEL_OP_FREE, "DLX", 2);
	expect(&o, RPC_OK, "", HOTEL_TOMBSTONE);
	expect_record(&o, HOTEL_TOMBSTONE, "DLX", 2);
	assert_false(o.write_row);
}

static void test_status_names(void **state)
{
	(void)state;
	for (int s = HOTEL_HELD; s <= HOTEL_TOMBSTONE; s++)
		assert_int_equal(hotel_status_parse(hotel_status_name(s)), s);
	assert_string_equal(hotel_status_name(HOTEL_FREED), "FREED");
	assert_string_equal(hotel_status_name(99), "NONE");
	assert_int_equal(hotel_status_parse("RESERVED"), HOTEL_NONE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_hold_new),
	    cmocka_unit_test(test_hold_refused),
	    cmocka_unit_test(test_hold_duplicate),
	    cmocka_unit_test(test_key_mismatch),
	    cmocka_unit_test(test_free_room),
	    cmocka_unit_test(test_status_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
