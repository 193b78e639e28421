/* Unit tests of payment_decide(): every branch of the payment participant's
 * pure decisions, with exact codes, reasons, statuses and balances (minor
 * units). Numbers follow the seed lab: ali 500.00, sara 20.00. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "payment_logic.h"
#include "status.h"

static payment_record rec_of(payment_status st, const char *customer, int64_t amount)
{
	payment_record r = {.status = st, .amount = amount};
	strcpy(r.customer, customer);
	return r;
}

static const payment_record no_rec = {.status = PAYMENT_NONE};

/* expect_no_writes: a refusal or a duplicate changes nothing */
static void expect_no_writes(const payment_outcome *o)
{
	assert_false(o->write_record);
	assert_false(o->write_account);
}

static void expect_record(
    const payment_outcome *o, payment_status st, const char *customer, int64_t amount)
{
	assert_true(o->write_record);
	assert_int_equal(o->record.status, st);
	assert_string_equal(o->record.customer, customer);
	assert_int_equal(o->record.amount, amount);
}

/* ---- first ChargePayment for a saga ---- */

static void test_charge_new_enough_funds(void **state)
{
	payment_account acct = {.exists = true, .balance = 50000};
	payment_cmd cmd = {.op = PAYMENT_OP_CHARGE, .customer = "ali", .amount = 20000};
	payment_outcome o;
	payment_decide(&no_rec, &acct, &cmd, &o);
	assert_int_equal(o.code, RPC_OK);
	assert_string_equal(o.reason, "");
	assert_int_equal(o.reply_status, PAYMENT_CHARGED);
	expect_record(&o, PAYMENT_CHARGED, "ali", 20000);
	assert_true(o.write_account);
	assert_int_equal(o.balance, 30000);
}

static void test_charge_new_exactly_the_balance(void **state)
{
	payment_account acct = {.exists = true, .balance = 2000};
	payment_cmd cmd = {.op = PAYMENT_OP_CHARGE, .customer = "sara", .amount = 2000};
	payment_outcome o;
	payment_decide(&no_rec, &acct, &cmd, &o);
	assert_int_equal(o.code, RPC_OK);
	assert_int_equal(o.reply_status, PAYMENT_CHARGED);
	expect_record(&o, PAYMENT_CHARGED, "sara", 2000);
	assert_true(o.write_account);
	assert_int_equal(o.balance, 0);
}

static void test_charge_new_declined(void **state)
{
	payment_account acct = {.exists = true, .balance = 2000};
	payment_cmd cmd = {.op = PAYMENT_OP_CHARGE, .customer = "sara", .amount = 10000};
	payment_outcome o;
	payment_decide(&no_rec, &acct, &cmd, &o);
	assert_int_equal(o.code, RPC_FAILED_PRECONDITION);
	assert_string_equal(o.reason, REASON_PAYMENT_DECLINED);
	assert_string_equal(o.reason, "payment_declined");
	assert_int_equal(o.reply_status, PAYMENT_DECLINED);
	/* the refusal is recorded so a duplicate gets the same answer */
	expect_record(&o, PAYMENT_DECLINED, "sara", 10000);
	assert_false(o.write_account);
}

static void test_charge_new_declined_by_one_minor_unit(void **state)
{
	payment_account acct = {.exists = true, .balance = 1999};
	payment_cmd cmd = {.op = PAYMENT_OP_CHARGE, .customer = "sara", .amount = 2000};
	payment_outcome o;
	payment_decide(&no_rec, &acct, &cmd, &o);
	assert_int_equal(o.code, RPC_FAILED_PRECONDITION);
	assert_string_equal(o.reason, "payment_declined");
	expect_record(&o, PAYMENT_DECLINED, "sara", 2000);
	assert_false(o.write_account);
}

static void test_charge_new_unknown_account(void **state)
{
	payment_account acct = {.exists = false};
	payment_cmd cmd = {.op = PAYMENT_OP_CHARGE, .customer = "nobody", .amount = 100};
	payment_outcome o;
	payment_decide(&no_rec, &acct, &cmd, &o);
	assert_int_equal(o.code, RPC_NOT_FOUND);
	assert_string_equal(o.reason, "unknown_account");
	assert_int_equal(o.reply_status, PAYMENT_UNKNOWN_ACCOUNT);
	expect_record(&o, PAYMENT_UNKNOWN_ACCOUNT, "nobody", 100);
	assert_false(o.write_account);
}

static void test_charge_new_largest_amount(void **state)
{
	payment_account acct = {.exists = true, .balance = 1000000000000000LL};
	payment_cmd cmd
	    = {.op = PAYMENT_OP_CHARGE, .customer = "ali", .amount = 1000000000000000LL};
	payment_outcome o;
	payment_decide(&no_rec, &acct, &cmd, &o);
	assert_int_equal(o.code, RPC_OK);
	expect_record(&o, PAYMENT_CHARGED, "ali", 1000000000000000LL);
	assert_int_equal(o.balance, 0);
}

/* ---- first RefundPayment for a saga: early compensation ---- */

static void test_refund_new_records_tombstone(void **state)
{
	payment_account acct = {.exists = true, .balance = 50000};
	payment_cmd cmd = {.op = PAYMENT_OP_REFUND, .customer = "ali", .amount = 20000};
	payment_outcome o;
	payment_decide(&no_rec, &acct, &cmd, &o);
	assert_int_equal(o.code, RPC_OK);
	assert_string_equal(o.reason, "");
	assert_int_equal(o.reply_status, PAYMENT_TOMBSTONE);
	expect_record(&o, PAYMENT_TOMBSTONE, "ali", 20000);
	/* nothing was charged, so nothing is given back */
	assert_false(o.write_account);
}

static void test_refund_new_unknown_account_still_tombstone(void **state)
{
	payment_account acct = {.exists = false};
	payment_cmd cmd = {.op = PAYMENT_OP_REFUND, .customer = "nobody", .amount = 300};
	payment_outcome o;
	payment_decide(&no_rec, &acct, &cmd, &o);
	assert_int_equal(o.code, RPC_OK);
	assert_int_equal(o.reply_status, PAYMENT_TOMBSTONE);
	expect_record(&o, PAYMENT_TOMBSTONE, "nobody", 300);
	assert_false(o.write_account);
}

/* ---- ChargePayment with a record: duplicates and the late step ---- */

static void test_charge_after_tombstone_aborted(void **state)
{
	payment_record rec = rec_of(PAYMENT_TOMBSTONE, "ali", 20000);
	payment_account acct = {.exists = true, .balance = 50000};
	payment_cmd cmd = {.op = PAYMENT_OP_CHARGE, .customer = "ali", .amount = 20000};
	payment_outcome o;
	payment_decide(&rec, &acct, &cmd, &o);
	assert_int_equal(o.code, RPC_ABORTED);
	assert_string_equal(o.reason, "tombstone");
	assert_int_equal(o.reply_status, PAYMENT_TOMBSTONE);
	expect_no_writes(&o);
}

static void test_charge_after_tombstone_other_args_still_aborted(void **state)
{
	/* the tombstone wins over the argument check */
	payment_record rec = rec_of(PAYMENT_TOMBSTONE, "ali", 20000);
	payment_account acct = {.exists = true, .balance = 50000};
	payment_cmd cmd = {.op = PAYMENT_OP_CHARGE, .customer = "sara", .amount = 1};
	payment_outcome o;
	payment_decide(&rec, &acct, &cmd, &o);
	assert_int_equal(o.code, RPC_ABORTED);
	assert_string_equal(o.reason, "tombstone");
	assert_int_equal(o.reply_status, PAYMENT_TOMBSTONE);
	expect_no_writes(&o);
}

static void test_charge_duplicate_of_charged(void **state)
{
	payment_record rec = rec_of(PAYMENT_CHARGED, "ali", 20000);
	payment_account acct = {.exists = true, .balance = 30000};
	payment_cmd cmd = {.op = PAYMENT_OP_CHARGE, .customer = "ali", .amount = 20000};
	payment_outcome o;
	payment_decide(&rec, &acct, &cmd, &o);
	assert_int_equal(o.code, RPC_OK);
	assert_string_equal(o.reason, "");
	assert_int_equal(o.reply_status, PAYMENT_CHARGED);
	/* exactly-once effect: the duplicate charges nothing more */
	expect_no_writes(&o);
}

static void test_charge_duplicate_of_refunded(void **state)
{
	payment_record rec = rec_of(PAYMENT_REFUNDED, "ali", 20000);
	payment_account acct = {.exists = true, .balance = 50000};
	payment_cmd cmd = {.op = PAYMENT_OP_CHARGE, .customer = "ali", .amount = 20000};
	payment_outcome o;
	payment_decide(&rec, &acct, &cmd, &o);
	/* the recorded reply of the step was OK CHARGED */
	assert_int_equal(o.code, RPC_OK);
	assert_string_equal(o.reason, "");
	assert_int_equal(o.reply_status, PAYMENT_CHARGED);
	expect_no_writes(&o);
}

static void test_charge_duplicate_of_declined(void **state)
{
	/* even if money arrived since, the recorded refusal is the answer */
	payment_record rec = rec_of(PAYMENT_DECLINED, "sara", 10000);
	payment_account acct = {.exists = true, .balance = 900000};
	payment_cmd cmd = {.op = PAYMENT_OP_CHARGE, .customer = "sara", .amount = 10000};
	payment_outcome o;
	payment_decide(&rec, &acct, &cmd, &o);
	assert_int_equal(o.code, RPC_FAILED_PRECONDITION);
	assert_string_equal(o.reason, "payment_declined");
	assert_int_equal(o.reply_status, PAYMENT_DECLINED);
	expect_no_writes(&o);
}

static void test_charge_duplicate_of_unknown_account(void **state)
{
	/* even if the account was opened since */
	payment_record rec = rec_of(PAYMENT_UNKNOWN_ACCOUNT, "nobody", 100);
	payment_account acct = {.exists = true, .balance = 900000};
	payment_cmd cmd = {.op = PAYMENT_OP_CHARGE, .customer = "nobody", .amount = 100};
	payment_outcome o;
	payment_decide(&rec, &acct, &cmd, &o);
	assert_int_equal(o.code, RPC_NOT_FOUND);
	assert_string_equal(o.reason, "unknown_account");
	assert_int_equal(o.reply_status, PAYMENT_UNKNOWN_ACCOUNT);
	expect_no_writes(&o);
}

static void test_charge_key_mismatch_customer(void **state)
{
	payment_record rec = rec_of(PAYMENT_CHARGED, "ali", 20000);
	payment_account acct = {.exists = true, .balance = 2000};
	payment_cmd cmd = {.op = PAYMENT_OP_CHARGE, .customer = "sara", .amount = 20000};
	payment_outcome o;
	payment_decide(&rec, &acct, &cmd, &o);
	assert_int_equal(o.code, RPC_ALREADY_EXISTS);
	assert_string_equal(o.reason, "key_mismatch");
	assert_int_equal(o.reply_status, PAYMENT_CHARGED);
	expect_no_writes(&o);
}

static void test_charge_key_mismatch_amount(void **state)
{
	payment_record rec = rec_of(PAYMENT_DECLINED, "sara", 10000);
	payment_account acct = {.exists = true, .balance = 2000};
	payment_cmd cmd = {.op = PAYMENT_OP_CHARGE, .customer = "sara", .amount = 1000};
	payment_outcome o;
	payment_decide(&rec, &acct, &cmd, &o);
	assert_int_equal(o.code, RPC_ALREADY_EXISTS);
	assert_string_equal(o.reason, "key_mismatch");
	assert_int_equal(o.reply_status, PAYMENT_DECLINED);
	expect_no_writes(&o);
}

static void test_charge_key_mismatch_customer_prefix(void **state)
{
	/* a prefix of the recorded customer is another customer */
	payment_record rec = rec_of(PAYMENT_CHARGED, "alice", 20000);
	payment_account acct = {.exists = true, .balance = 50000};
	payment_cmd cmd = {.op = PAYMENT_OP_CHARGE, .customer = "ali", .amount = 20000};
	payment_outcome o;
	payment_decide(&rec, &acct, &cmd, &o);
	assert_int_equal(o.code, RPC_ALREADY_EXISTS);
	assert_string_equal(o.reason, "key_mismatch");
	expect_no_writes(&o);
}

/* ---- RefundPayment with a record ---- */

static void test_refund_charged_gives_money_back(void **state)
{
	payment_record rec = rec_of(PAYMENT_CHARGED, "ali", 20000);
	payment_account acct = {.exists = true, .balance = 30000};
	payment_cmd cmd = {.op = PAYMENT_OP_REFUND, .customer = "ali", .amount = 20000};
	payment_outcome o;
	payment_decide(&rec, &acct, &cmd, &o);
	assert_int_equal(o.code, RPC_OK);
	assert_string_equal(o.reason, "");
	assert_int_equal(o.reply_status, PAYMENT_REFUNDED);
	expect_record(&o, PAYMENT_REFUNDED, "ali", 20000);
	assert_true(o.write_account);
	assert_int_equal(o.balance, 50000);
}

static void test_refund_charged_from_zero(void **state)
{
	payment_record rec = rec_of(PAYMENT_CHARGED, "sara", 2000);
	payment_account acct = {.exists = true, .balance = 0};
	payment_cmd cmd = {.op = PAYMENT_OP_REFUND, .customer = "sara", .amount = 2000};
	payment_outcome o;
	payment_decide(&rec, &acct, &cmd, &o);
	assert_int_equal(o.code, RPC_OK);
	assert_int_equal(o.reply_status, PAYMENT_REFUNDED);
	assert_true(o.write_account);
	assert_int_equal(o.balance, 2000);
}

static void test_refund_duplicate_of_refunded(void **state)
{
	payment_record rec = rec_of(PAYMENT_REFUNDED, "ali", 20000);
	payment_account acct = {.exists = true, .balance = 50000};
	payment_cmd cmd = {.op = PAYMENT_OP_REFUND, .customer = "ali", .amount = 20000};
	payment_outcome o;
	payment_decide(&rec, &acct, &cmd, &o);
	assert_int_equal(o.code, RPC_OK);
	assert_string_equal(o.reason, "");
	assert_int_equal(o.reply_status, PAYMENT_REFUNDED);
	/* the money went back once */
	expect_no_writes(&o);
}

static void test_refund_duplicate_of_tombstone(void **state)
{
	payment_record rec = rec_of(PAYMENT_TOMBSTONE, "ali", 20000);
	payment_account acct = {.exists = true, .balance = 50000};
	payment_cmd cmd = {.op = PAYMENT_OP_REFUND, .customer = "ali", .amount = 20000};
	payment_outcome o;
	payment_decide(&rec, &acct, &cmd, &o);
	assert_int_equal(o.code, RPC_OK);
	assert_string_equal(o.reason, "");
	assert_int_equal(o.reply_status, PAYMENT_TOMBSTONE);
	expect_no_writes(&o);
}

static void test_refund_after_declined(void **state)
{
	payment_record rec = rec_of(PAYMENT_DECLINED, "sara", 10000);
	payment_account acct = {.exists = true, .balance = 2000};
	payment_cmd cmd = {.op = PAYMENT_OP_REFUND, .customer = "sara", .amount = 10000};
	payment_outcome o;
	payment_decide(&rec, &acct, &cmd, &o);
	/* a compensation succeeds and reports the recorded refusal */
	assert_int_equal(o.code, RPC_OK);
	assert_string_equal(o.reason, "");
	assert_int_equal(o.reply_status, PAYMENT_DECLINED);
	expect_no_writes(&o);
}

static void test_refund_after_unknown_account(void **state)
{
	payment_record rec = rec_of(PAYMENT_UNKNOWN_ACCOUNT, "nobody", 100);
	payment_account acct = {.exists = false};
	payment_cmd cmd = {.op = PAYMENT_OP_REFUND, .customer = "nobody", .amount = 100};
	payment_outcome o;
	payment_decide(&rec, &acct, &cmd, &o);
	assert_int_equal(o.code, RPC_OK);
	assert_string_equal(o.reason, "");
	assert_int_equal(o.reply_status, PAYMENT_UNKNOWN_ACCOUNT);
	expect_no_writes(&o);
}

static void test_refund_key_mismatch(void **state)
{
	payment_record rec = rec_of(PAYMENT_CHARGED, "ali", 20000);
	payment_account acct = {.exists = true, .balance = 30000};
	payment_cmd cmd = {.op = PAYMENT_OP_REFUND, .customer = "ali", .amount = 30000};
	payment_outcome o;
	payment_decide(&rec, &acct, &cmd, &o);
	assert_int_equal(o.code, RPC_ALREADY_EXISTS);
	assert_string_equal(o.reason, "key_mismatch");
	assert_int_equal(o.reply_status, PAYMENT_CHARGED);
	/* the charge stays: a mismatched refund gives nothing back */
	expect_no_writes(&o);
}

static void test_refund_tombstone_key_mismatch(void **state)
{
	payment_record rec = rec_of(PAYMENT_TOMBSTONE, "ali", 20000);
	payment_account acct = {.exists = true, .balance = 50000};
	payment_cmd cmd = {.op = PAYMENT_OP_REFUND, .customer = "sara", .amount = 20000};
	payment_outcome o;
	payment_decide(&rec, &acct, &cmd, &o);
	assert_int_equal(o.code, RPC_ALREADY_EXISTS);
	assert_string_equal(o.reason, "key_mismatch");
	assert_int_equal(o.reply_status, PAYMENT_TOMBSTONE);
	expect_no_writes(&o);
}

/* ---- a whole life: charge, duplicate, refund, duplicate, late charge ---- */

static void test_sequence_conserves_money(void **state)
{
	payment_record rec = no_rec;
	payment_account acct = {.exists = true, .balance = 50000};
	payment_cmd charge = {.op = PAYMENT_OP_CHARGE, .customer = "ali", .amount = 20000};
	payment_cmd refund = {.op = PAYMENT_OP_REFUND, .customer = "ali", .amount = 20000};
	payment_cmd *seq[] = {&charge, &charge, &refund, &refund, &charge};
	payment_status replies[] = {
	    PAYMENT_CHARGED, PAYMENT_CHARGED, PAYMENT_REFUNDED, PAYMENT_REFUNDED, PAYMENT_CHARGED};
	int64_t balance[] = {30000, 30000, 50000, 50000, 50000};
	for (size_t i = 0; i < sizeof seq / sizeof seq[0]; i++) {
		payment_outcome o;
		payment_decide(&rec, &acct, seq[i], &o);
		assert_int_equal(o.code, RPC_OK);
		assert_int_equal(o.reply_status, replies[i]);
		if (o.write_record)
			rec = o.record;
		if (o.write_account)
			acct.balance = o.balance;
		assert_int_equal(acct.balance, balance[i]);
	}
	assert_int_equal(rec.status, PAYMENT_REFUNDED);
}

/* ---- names ---- */

static void test_status_names(void **state)
{
	assert_string_equal(payment_status_name(PAYMENT_NONE), "NONE");
	assert_string_equal(payment_status_name(PAYMENT_CHARGED), "CHARGED");
	assert_string_equal(payment_status_name(PAYMENT_DECLINED), "DECLINED");
	assert_string_equal(payment_status_name(PAYMENT_UNKNOWN_ACCOUNT), "UNKNOWN_ACCOUNT");
	assert_string_equal(payment_status_name(PAYMENT_REFUNDED), "REFUNDED");
	assert_string_equal(payment_status_name(PAYMENT_TOMBSTONE), "TOMBSTONE");
	assert_string_equal(payment_status_name((payment_status)6), "NONE");
	assert_string_equal(payment_status_name((payment_status)-1), "NONE");
}

static void test_status_parse(void **state)
{
	for (int s = PAYMENT_CHARGED; s <= PAYMENT_TOMBSTONE; s++)
		assert_int_equal(payment_status_parse(payment_status_name((payment_status)s)), s);
	assert_int_equal(payment_status_parse("NONE"), PAYMENT_NONE);
	assert_int_equal(payment_status_parse(""), PAYMENT_NONE);
	assert_int_equal(payment_status_parse("charged"), PAYMENT_NONE);
	assert_int_equal(payment_status_parse("CHARGED "), PAYMENT_NONE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_charge_new_enough_funds),
	    cmocka_unit_test(test_charge_new_exactly_the_balance),
	    cmocka_unit_test(test_charge_new_declined),
	    cmocka_unit_test(test_charge_new_declined_by_one_minor_unit),
	    cmocka_unit_test(test_charge_new_unknown_account),
	    cmocka_unit_test(test_charge_new_largest_amount),
	    cmocka_unit_test(test_refund_new_records_tombstone),
	    cmocka_unit_test(test_refund_new_unknown_account_still_tombstone),
	    cmocka_unit_test(test_charge_after_tombstone_aborted),
	    cmocka_unit_test(test_charge_after_tombstone_other_args_still_aborted),
	    cmocka_unit_test(test_charge_duplicate_of_charged),
	    cmocka_unit_test(test_charge_duplicate_of_refunded),
	    cmocka_unit_test(test_charge_duplicate_of_declined),
	    cmocka_unit_test(test_charge_duplicate_of_unknown_account),
	    cmocka_unit_test(test_charge_key_mismatch_customer),
	    cmocka_unit_test(test_charge_key_mismatch_amount),
	    cmocka_unit_test(test_charge_key_mismatch_customer_prefix),
	    cmocka_unit_test(test_refund_charged_gives_money_back),
	    cmocka_unit_test(test_refund_charged_from_zero),
	    cmocka_unit_test(test_refund_duplicate_of_refunded),
	    cmocka_unit_test(test_refund_duplicate_of_tombstone),
	    cmocka_unit_test(test_refund_after_declined),
	    cmocka_unit_test(test_refund_after_unknown_account),
	    cmocka_unit_test(test_refund_key_mismatch),
	    cmocka_unit_test(test_refund_tombstone_key_mismatch),
	    cmocka_unit_test(test_sequence_conserves_money),
	    cmocka_unit_test(test_status_names),
	    cmocka_unit_test(test_status_parse),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
