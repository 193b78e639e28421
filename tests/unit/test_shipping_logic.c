/* Unit tests of shipping_decide(): every branch of the shipping
 * participant's pure decision (the retriable step ShipOrder), with exact
 * codes, reasons, statuses and records. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "shipping_logic.h"
#include "status.h"

static const shipping_cmd ship_ali
    = {.op = SHIPPING_OP_SHIP, .customer = "ali", .sku = "A1", .qty = 2};

static shipping_record shipped(const char *customer, const char *sku, int32_t qty)
{
	shipping_record r = {.status = SHIPPING_SHIPPED, .qty = qty};
	strcpy(r.customer, customer);
	strcpy(r.sku, sku);
	return r;
}

/* no record: the shipment is created, OK SHIPPED */
static void test_first_ship_creates(void **state)
{
	(void)state;
	const shipping_record none = {.status = SHIPPING_NONE};
	shipping_outcome o;
	shipping_decide(&none, &ship_ali, &o);
	assert_int_equal(o.code, RPC_OK);
	assert_string_equal(o.reason, "");
	assert_int_equal(o.reply_status, SHIPPING_SHIPPED);
	assert_true(o.write_record);
	assert_int_equal(o.record.status, SHIPPING_SHIPPED);
	assert_string_equal(o.record.customer, "ali");
	assert_string_equal(o.record.sku, "A1");
	assert_int_equal(o.record.qty, 2);
}

/* rule 2: a duplicate is answered from the record and writes nothing */
static void test_duplicate_from_record(void **state)
{
	(void)state;
	shipping_record r = shipped("ali", "A1", 2);
	shipping_outcome o;
	shipping_decide(&r, &ship_ali, &o);
	assert_int_equal(o.code, RPC_OK);
	assert_string_equal(o.reason, "");
	assert_int_equal(o.reply_status, SHIPPING_SHIPPED);
	assert_false(o.write_record);
}

/* rule 6: the same saga id with another customer, sku or qty is refused
 * and writes nothing */
static void test_key_mismatch(void **state)
{
	(void)state;
	const shipping_record others[]
	    = {shipped("sara", "A1", 2), shipped("ali", "B2", 2), shipped("ali", "A1", 3)};
	for (size_t i = 0; i < sizeof others / sizeof others[0]; i++) {
		shipping_outcome o;
		shipping_decide(&others[i], &ship_ali, &o);
		assert_int_equal(o.code, RPC_ALREADY_EXISTS);
		assert_string_equal(o.reason, REASON_KEY_MISMATCH);
		assert_int_equal(o.reply_status, SHIPPING_SHIPPED);
		assert_false(o.write_record);
	}
}

static void test_status_names(void **state)
{
	(void)state;
	assert_string_equal(shipping_status_name(SHIPPING_SHIPPED), "SHIPPED");
	assert_string_equal(shipping_status_name(SHIPPING_NONE), "NONE");
	assert_int_equal(shipping_status_parse("SHIPPED"), SHIPPING_SHIPPED);
	assert_int_equal(shipping_status_parse("shipped"), SHIPPING_NONE);
	assert_int_equal(shipping_status_parse(""), SHIPPING_NONE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_first_ship_creates),
	    cmocka_unit_test(test_duplicate_from_record),
	    cmocka_unit_test(test_key_mismatch),
	    cmocka_unit_test(test_status_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
