/* Unit tests of stock_decide(): every branch of the stock participant's pure
 * decisions, with exact codes, reasons, statuses and on-hand numbers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "status.h"
#include "stock_logic.h"

static stock_record rec_of(stock_status st, const char *sku, int32_t qty)
{
	stock_record r = {.status = st, .qty = qty};
	strcpy(r.sku, sku);
	return r;
}

static const stock_record no_rec = {.status = STOCK_NONE};

/* expect_no_writes: a refusal or a duplicate changes nothing */
static void expect_no_writes(const stock_outcome *o)
{
	assert_false(o->write_record);
	assert_false(o->write_row);
}

static void expect_record(const stock_outcome *o, stock_status st, const char *sku, int32_t qty)
{
	assert_true(o->write_record);
	assert_int_equal(o->record.status, st);
	assert_string_equal(o->record.sku, sku);
	assert_int_equal(o->record.qty, qty);
}

/* ---- first ReserveStock for a saga ---- */

static void test_reserve_new_enough_stock(void **state)
{
	stock_row row = {.exists = true, .on_hand = 5};
	stock_cmd cmd = {.op = STOCK_OP_RESERVE, .sku = "A1", .qty = 2};
	stock_outcome o;
	stock_decide(&no_rec, &row, &cmd, &o);
	assert_int_equal(o.code, RPC_OK);
	assert_string_equal(o.reason, "");
	assert_int_equal(o.reply_status, STOCK_RESERVED);
	expect_record(&o, STOCK_RESERVED, "A1", 2);
	assert_true(o.write_row);
	assert_int_equal(o.on_hand, 3);
}

static void test_reserve_new_exactly_all_stock(void **state)
{
	stock_row row = {.exists = true, .on_hand = 7};
	stock_cmd cmd = {.op = STOCK_OP_RESERVE, .sku = "A1", .qty = 7};
	stock_outcome o;
	stock_decide(&no_rec, &row, &cmd, &o);
	assert_int_equal(o.code, RPC_OK);
	assert_int_equal(o.reply_status, STOCK_RESERVED);
	expect_record(&o, STOCK_RESERVED, "A1", 7);
	assert_true(o.write_row);
	assert_int_equal(o.on_hand, 0);
}

static void test_reserve_new_out_of_stock(void **state)
{
	stock_row row = {.exists = true, .on_hand = 5};
	stock_cmd cmd = {.op = STOCK_OP_RESERVE, .sku = "A1", .qty = 10};
	stock_outcome o;
	stock_decide(&no_rec, &row, &cmd, &o);
	assert_int_equal(o.code, RPC_FAILED_PRECONDITION);
	assert_string_equal(o.reason, REASON_OUT_OF_STOCK);
	assert_string_equal(o.reason, "out_of_stock");
	assert_int_equal(o.reply_status, STOCK_OUT_OF_STOCK);
	/* the refusal is recorded so a duplicate gets the same answer */
	expect_record(&o, STOCK_OUT_OF_STOCK, "A1", 10);
	assert_false(o.write_row);
}

static void test_reserve_new_out_of_stock_by_one(void **state)
{
	stock_row row = {.exists = true, .on_hand = 0};
	stock_cmd cmd = {.op = STOCK_OP_RESERVE, .sku = "A1", .qty = 1};
	stock_outcome o;
	stock_decide(&no_rec, &row, &cmd, &o);
	assert_int_equal(o.code, RPC_FAILED_PRECONDITION);
	assert_string_equal(o.reason, "out_of_stock");
	expect_record(&o, STOCK_OUT_OF_STOCK, "A1", 1);
	assert_false(o.write_row);
}

static void test_reserve_new_unknown_sku(void **state)
{
	stock_row row = {.exists = false};
	stock_cmd cmd = {.op = STOCK_OP_RESERVE, .sku = "ZZ", .qty = 1};
	stock_outcome o;
	stock_decide(&no_rec, &row, &cmd, &o);
	assert_int_equal(o.code, RPC_NOT_FOUND);
	assert_string_equal(o.reason, "unknown_sku");
	assert_int_equal(o.reply_status, STOCK_UNKNOWN_SKU);
	expect_record(&o, STOCK_UNKNOWN_SKU, "ZZ", 1);
	assert_false(o.write_row);
}

/* ---- first ReleaseStock for a saga: early compensation ---- */

static void test_release_new_records_tombstone(void **state)
{
	stock_row row = {.exists = true, .on_hand = 5};
	stock_cmd cmd = {.op = STOCK_OP_RELEASE, .sku = "A1", .qty = 2};
	stock_outcome o;
	stock_decide(&no_rec, &row, &cmd, &o);
	assert_int_equal(o.code, RPC_OK);
	assert_string_equal(o.reason, "");
	assert_int_equal(o.reply_status, STOCK_TOMBSTONE);
	expect_record(&o, STOCK_TOMBSTONE, "A1", 2);
	/* nothing was reserved, so nothing is given back */
	assert_false(o.write_row);
}

static void test_release_new_unknown_sku_still_tombstone(void **state)
{
	stock_row row = {.exists = false};
	stock_cmd cmd = {.op = STOCK_OP_RELEASE, .sku = "ZZ", .qty = 3};
	stock_outcome o;
	stock_decide(&no_rec, &row, &cmd, &o);
	assert_int_equal(o.code, RPC_OK);
	assert_int_equal(o.reply_status, STOCK_TOMBSTONE);
	expect_record(&o, STOCK_TOMBSTONE, "ZZ", 3);
	assert_false(o.write_row);
}

/* ---- ReserveStock with a record: duplicates and the late step ---- */

static void test_reserve_after_tombstone_aborted(void **state)
{
	stock_record rec = rec_of(STOCK_TOMBSTONE, "A1", 2);
	stock_row row = {.exists = true, .on_hand = 5};
	stock_cmd cmd = {.op = STOCK_OP_RESERVE, .sku = "A1", .qty = 2};
	stock_outcome o;
	stock_decide(&rec, &row, &cmd, &o);
	assert_int_equal(o.code, RPC_ABORTED);
	assert_string_equal(o.reason, "tombstone");
	assert_int_equal(o.reply_status, STOCK_TOMBSTONE);
	expect_no_writes(&o);
}

static void test_reserve_after_tombstone_other_args_still_aborted(void **state)
{
	/* the tombstone wins over the argument check: the late step is
	 * refused as late, whatever it carries */
	stock_record rec = rec_of(STOCK_TOMBSTONE, "A1", 2);
	stock_row row = {.exists = true, .on_hand = 5};
	stock_cmd cmd = {.op = STOCK_OP_RESERVE, .sku = "B2", .qty = 9};
	stock_outcome o;
	stock_decide(&rec, &row, &cmd, &o);
	assert_int_equal(o.code, RPC_ABORTED);
	assert_string_equal(o.reason, "tombstone");
	assert_int_equal(o.reply_status, STOCK_TOMBSTONE);
	expect_no_writes(&o);
}

static void test_reserve_duplicate_of_reserved(void **state)
{
	stock_record rec = rec_of(STOCK_RESERVED, "A1", 2);
	stock_row row = {.exists = true, .on_hand = 3};
	stock_cmd cmd = {.op = STOCK_OP_RESERVE, .sku = "A1", .qty = 2};
	stock_outcome o;
	stock_decide(&rec, &row, &cmd, &o);
	assert_int_equal(o.code, RPC_OK);
	assert_string_equal(o.reason, "");
	assert_int_equal(o.reply_status, STOCK_RESERVED);
	/* exactly-once effect: the duplicate reserves nothing more */
	expect_no_writes(&o);
}

static void test_reserve_duplicate_of_released(void **state)
{
	stock_record rec = rec_of(STOCK_RELEASED, "A1", 2);
	stock_row row = {.exists = true, .on_hand = 5};
	stock_cmd cmd = {.op = STOCK_OP_RESERVE, .sku = "A1", .qty = 2};
	stock_outcome o;
	stock_decide(&rec, &row, &cmd, &o);
	/* the recorded reply of the step was OK RESERVED */
	assert_int_equal(o.code, RPC_OK);
	assert_string_equal(o.reason, "");
	assert_int_equal(o.reply_status, STOCK_RESERVED);
	expect_no_writes(&o);
}

static void test_reserve_duplicate_of_out_of_stock(void **state)
{
	/* even if stock arrived since, the recorded refusal is the answer */
	stock_record rec = rec_of(STOCK_OUT_OF_STOCK, "A1", 10);
	stock_row row = {.exists = true, .on_hand = 100};
	stock_cmd cmd = {.op = STOCK_OP_RESERVE, .sku = "A1", .qty = 10};
	stock_outcome o;
	stock_decide(&rec, &row, &cmd, &o);
	assert_int_equal(o.code, RPC_FAILED_PRECONDITION);
	assert_string_equal(o.reason, "out_of_stock");
	assert_int_equal(o.reply_status, STOCK_OUT_OF_STOCK);
	expect_no_writes(&o);
}

static void test_reserve_duplicate_of_unknown_sku(void **state)
{
	/* even if the sku was created since */
	stock_record rec = rec_of(STOCK_UNKNOWN_SKU, "ZZ", 1);
	stock_row row = {.exists = true, .on_hand = 100};
	stock_cmd cmd = {.op = STOCK_OP_RESERVE, .sku = "ZZ", .qty = 1};
	stock_outcome o;
	stock_decide(&rec, &row, &cmd, &o);
	assert_int_equal(o.code, RPC_NOT_FOUND);
	assert_string_equal(o.reason, "unknown_sku");
	assert_int_equal(o.reply_status, STOCK_UNKNOWN_SKU);
	expect_no_writes(&o);
}

static void test_reserve_key_mismatch_sku(void **state)
{
	stock_record rec = rec_of(STOCK_RESERVED, "A1", 2);
	stock_row row = {.exists = true, .on_hand = 5};
	stock_cmd cmd = {.op = STOCK_OP_RESERVE, .sku = "B2", .qty = 2};
	stock_outcome o;
	stock_decide(&rec, &row, &cmd, &o);
	assert_int_equal(o.code, RPC_ALREADY_EXISTS);
	assert_string_equal(o.reason, "key_mismatch");
	assert_int_equal(o.reply_status, STOCK_RESERVED);
	expect_no_writes(&o);
}

static void test_reserve_key_mismatch_qty(void **state)
{
	stock_record rec = rec_of(STOCK_OUT_OF_STOCK, "A1", 10);
	stock_row row = {.exists = true, .on_hand = 5};
	stock_cmd cmd = {.op = STOCK_OP_RESERVE, .sku = "A1", .qty = 1};
	stock_outcome o;
	stock_decide(&rec, &row, &cmd, &o);
	assert_int_equal(o.code, RPC_ALREADY_EXISTS);
	assert_string_equal(o.reason, "key_mismatch");
	assert_int_equal(o.reply_status, STOCK_OUT_OF_STOCK);
	expect_no_writes(&o);
}

static void test_reserve_key_mismatch_sku_prefix(void **state)
{
	/* a prefix of the recorded sku is another sku */
	stock_record rec = rec_of(STOCK_RESERVED, "A10", 2);
	stock_row row = {.exists = true, .on_hand = 5};
	stock_cmd cmd = {.op = STOCK_OP_RESERVE, .sku = "A1", .qty = 2};
	stock_outcome o;
	stock_decide(&rec, &row, &cmd, &o);
	assert_int_equal(o.code, RPC_ALREADY_EXISTS);
	assert_string_equal(o.reason, "key_mismatch");
	expect_no_writes(&o);
}

/* ---- ReleaseStock with a record ---- */

static void test_release_reserved_gives_units_back(void **state)
{
	stock_record rec = rec_of(STOCK_RESERVED, "A1", 2);
	stock_row row = {.exists = true, .on_hand = 3};
	stock_cmd cmd = {.op = STOCK_OP_RELEASE, .sku = "A1", .qty = 2};
	stock_outcome o;
	stock_decide(&rec, &row, &cmd, &o);
	assert_int_equal(o.code, RPC_OK);
	assert_string_equal(o.reason, "");
	assert_int_equal(o.reply_status, STOCK_RELEASED);
	expect_record(&o, STOCK_RELEASED, "A1", 2);
	assert_true(o.write_row);
	assert_int_equal(o.on_hand, 5);
}

static void test_release_reserved_from_zero(void **state)
{
	stock_record rec = rec_of(STOCK_RESERVED, "A1", 1000000);
	stock_row row = {.exists = true, .on_hand = 0};
	stock_cmd cmd = {.op = STOCK_OP_RELEASE, .sku = "A1", .qty = 1000000};
	stock_outcome o;
	stock_decide(&rec, &row, &cmd, &o);
	assert_int_equal(o.code, RPC_OK);
	assert_int_equal(o.reply_status, STOCK_RELEASED);
	assert_true(o.write_row);
	assert_int_equal(o.on_hand, 1000000);
}

static void test_release_duplicate_of_released(void **state)
{
	stock_record rec = rec_of(STOCK_RELEASED, "A1", 2);
	stock_row row = {.exists = true, .on_hand = 5};
	stock_cmd cmd = {.op = STOCK_OP_RELEASE, .sku = "A1", .qty = 2};
	stock_outcome o;
	stock_decide(&rec, &row, &cmd, &o);
	assert_int_equal(o.code, RPC_OK);
	assert_string_equal(o.reason, "");
	assert_int_equal(o.reply_status, STOCK_RELEASED);
	/* the units went back once */
	expect_no_writes(&o);
}

static void test_release_duplicate_of_tombstone(void **state)
{
	stock_record rec = rec_of(STOCK_TOMBSTONE, "A1", 2);
	stock_row row = {.exists = true, .on_hand = 5};
	stock_cmd cmd = {.op = STOCK_OP_RELEASE, .sku = "A1", .qty = 2};
	stock_outcome o;
	stock_decide(&rec, &row, &cmd, &o);
	assert_int_equal(o.code, RPC_OK);
	assert_string_equal(o.reason, "");
	assert_int_equal(o.reply_status, STOCK_TOMBSTONE);
	expect_no_writes(&o);
}

static void test_release_after_out_of_stock(void **state)
{
	stock_record rec = rec_of(STOCK_OUT_OF_STOCK, "A1", 10);
	stock_row row = {.exists = true, .on_hand = 5};
	stock_cmd cmd = {.op = STOCK_OP_RELEASE, .sku = "A1", .qty = 10};
	stock_outcome o;
	stock_decide(&rec, &row, &cmd, &o);
	/* a compensation succeeds and reports the recorded refusal */
	assert_int_equal(o.code, RPC_OK);
	assert_string_equal(o.reason, "");
	assert_int_equal(o.reply_status, STOCK_OUT_OF_STOCK);
	expect_no_writes(&o);
}

static void test_release_after_unknown_sku(void **state)
{
	stock_record rec = rec_of(STOCK_UNKNOWN_SKU, "ZZ", 1);
	stock_row row = {.exists = false};
	stock_cmd cmd = {.op = STOCK_OP_RELEASE, .sku = "ZZ", .qty = 1};
	stock_outcome o;
	stock_decide(&rec, &row, &cmd, &o);
	assert_int_equal(o.code, RPC_OK);
	assert_string_equal(o.reason, "");
	assert_int_equal(o.reply_status, STOCK_UNKNOWN_SKU);
	expect_no_writes(&o);
}

static void test_release_key_mismatch(void **state)
{
	stock_record rec = rec_of(STOCK_RESERVED, "A1", 2);
	stock_row row = {.exists = true, .on_hand = 3};
	stock_cmd cmd = {.op = STOCK_OP_RELEASE, .sku = "A1", .qty = 3};
	stock_outcome o;
	stock_decide(&rec, &row, &cmd, &o);
	assert_int_equal(o.code, RPC_ALREADY_EXISTS);
	assert_string_equal(o.reason, "key_mismatch");
	assert_int_equal(o.reply_status, STOCK_RESERVED);
	/* the reservation stays: a mismatched release gives nothing back */
	expect_no_writes(&o);
}

static void test_release_tombstone_key_mismatch(void **state)
{
	stock_record rec = rec_of(STOCK_TOMBSTONE, "A1", 2);
	stock_row row = {.exists = true, .on_hand = 3};
	stock_cmd cmd = {.op = STOCK_OP_RELEASE, .sku = "B2", .qty = 2};
	stock_outcome o;
	stock_decide(&rec, &row, &cmd, &o);
	assert_int_equal(o.code, RPC_ALREADY_EXISTS);
	assert_string_equal(o.reason, "key_mismatch");
	assert_int_equal(o.reply_status, STOCK_TOMBSTONE);
	expect_no_writes(&o);
}

/* ---- a whole life: reserve, duplicate, release, duplicate, late reserve */

static void test_sequence_conserves_stock(void **state)
{
	stock_record rec = no_rec;
	stock_row row = {.exists = true, .on_hand = 5};
	stock_cmd reserve = {.op = STOCK_OP_RESERVE, .sku = "A1", .qty = 2};
	stock_cmd release = {.op = STOCK_OP_RELEASE, .sku = "A1", .qty = 2};
	stock_cmd *seq[] = {&reserve, &reserve, &release, &release, &reserve};
	int codes[] = {RPC_OK, RPC_OK, RPC_OK, RPC_OK, RPC_OK};
	stock_status replies[]
	    = {STOCK_RESERVED, STOCK_RESERVED, STOCK_RELEASED, STOCK_RELEASED, STOCK_RESERVED};
	int64_t on_hand[] = {3, 3, 5, 5, 5};
	for (size_t i = 0; i < sizeof seq / sizeof seq[0]; i++) {
		stock_outcome o;
		stock_decide(&rec, &row, seq[i], &o);
		assert_int_equal(o.code, codes[i]);
		assert_int_equal(o.reply_status, replies[i]);
		if (o.write_record)
			rec = o.record;
		if (o.write_row)
			row.on_hand = o.on_hand;
		assert_int_equal(row.on_hand, on_hand[i]);
	}
	assert_int_equal(rec.status, STOCK_RELEASED);
}

/* ---- names ---- */

static void test_status_names(void **state)
{
	assert_string_equal(stock_status_name(STOCK_NONE), "NONE");
	assert_string_equal(stock_status_name(STOCK_RESERVED), "RESERVED");
	assert_string_equal(stock_status_name(STOCK_OUT_OF_STOCK), "OUT_OF_STOCK");
	assert_string_equal(stock_status_name(STOCK_UNKNOWN_SKU), "UNKNOWN_SKU");
	assert_string_equal(stock_status_name(STOCK_RELEASED), "RELEASED");
	assert_string_equal(stock_status_name(STOCK_TOMBSTONE), "TOMBSTONE");
	assert_string_equal(stock_status_name((stock_status)6), "NONE");
	assert_string_equal(stock_status_name((stock_status)-1), "NONE");
}

static void test_status_parse(void **state)
{
	for (int s = STOCK_RESERVED; s <= STOCK_TOMBSTONE; s++)
		assert_int_equal(stock_status_parse(stock_status_name((stock_status)s)), s);
	assert_int_equal(stock_status_parse("NONE"), STOCK_NONE);
	assert_int_equal(stock_status_parse(""), STOCK_NONE);
	assert_int_equal(stock_status_parse("reserved"), STOCK_NONE);
	assert_int_equal(stock_status_parse("RESERVED "), STOCK_NONE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_reserve_new_enough_stock),
	    cmocka_unit_test(test_reserve_new_exactly_all_stock),
	    cmocka_unit_test(test_reserve_new_out_of_stock),
	    cmocka_unit_test(test_reserve_new_out_of_stock_by_one),
	    cmocka_unit_test(test_reserve_new_unknown_sku),
	    cmocka_unit_test(test_release_new_records_tombstone),
	    cmocka_unit_test(test_release_new_unknown_sku_still_tombstone),
	    cmocka_unit_test(test_reserve_after_tombstone_aborted),
	    cmocka_unit_test(test_reserve_after_tombstone_other_args_still_aborted),
	    cmocka_unit_test(test_reserve_duplicate_of_reserved),
	    cmocka_unit_test(test_reserve_duplicate_of_released),
	    cmocka_unit_test(test_reserve_duplicate_of_out_of_stock),
	    cmocka_unit_test(test_reserve_duplicate_of_unknown_sku),
	    cmocka_unit_test(test_reserve_key_mismatch_sku),
	    cmocka_unit_test(test_reserve_key_mismatch_qty),
	    cmocka_unit_test(test_reserve_key_mismatch_sku_prefix),
	    cmocka_unit_test(test_release_reserved_gives_units_back),
	    cmocka_unit_test(test_release_reserved_from_zero),
	    cmocka_unit_test(test_release_duplicate_of_released),
	    cmocka_unit_test(test_release_duplicate_of_tombstone),
	    cmocka_unit_test(test_release_after_out_of_stock),
	    cmocka_unit_test(test_release_after_unknown_sku),
	    cmocka_unit_test(test_release_key_mismatch),
	    cmocka_unit_test(test_release_tombstone_key_mismatch),
	    cmocka_unit_test(test_sequence_conserves_stock),
	    cmocka_unit_test(test_status_names),
	    cmocka_unit_test(test_status_parse),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
