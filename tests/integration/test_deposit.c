/* Deposit's idempotency key (proto/sagas/v1/payment.proto, Deposit): a keyed
 * deposit adds once however often it is sent, also when the duplicates race;
 * the same key with another customer or amount is refused and changes
 * nothing; a malformed key is refused naming the field; a deposit the cap
 * refused leaves no record; a deposit without a key adds every time (old
 * clients). Balances are read back with ListAccounts. Run by with_stack.sh,
 * which sets PAYMENT_URL. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "rpc.h"
#include "sagas/v1/payment.pb-c.h"
#include "valid.h"

#define DEPOSIT "/sagas.v1.Payment/Deposit"

static rpc_client *open_client(void)
{
	const char *url = getenv("PAYMENT_URL");
	assert_non_null(url);
	rpc_client *c = NULL;
	rpc_client_opts o = {.resend_ms = 0};
	assert_int_equal(rpc_client_open(&c, url, &o), 0);
	return c;
}

typedef struct deposit_result {
	int code;
	char reason[RPC_REASON_MAX];
	int64_t balance;
	bool duplicate;
} deposit_result;

/* deposit sends one Deposit (`id` NULL: no key) and returns its outcome */
static deposit_result deposit(rpc_client *c, const char *customer, int64_t amount, const char *id)
{
	Sagas__V1__DepositRequest req = SAGAS__V1__DEPOSIT_REQUEST__INIT;
	req.customer = (char *)customer;
	req.amount = amount;
	if (id != NULL)
		req.deposit_id = (char *)id;
	rpc_result res;
	assert_int_equal(rpc_call(c, DEPOSIT, &req.base, 5000, &res), 0);
	assert_false(res.transport);
	deposit_result out = {.code = res.code, .balance = -1};
	snprintf(out.reason, sizeof out.reason, "%s", res.reason);
	if (res.code == RPC_OK) {
		Sagas__V1__DepositReply *rep
		    = sagas__v1__deposit_reply__unpack(NULL, res.payload_len, res.payload);
		assert_non_null(rep);
		out.balance = rep->balance;
		out.duplicate = rep->duplicate;
		sagas__v1__deposit_reply__free_unpacked(rep, NULL);
	}
	rpc_result_clear(&res);
	return out;
}

/* balance_of reads `customer`'s balance with ListAccounts; -1 when absent */
static int64_t balance_of(rpc_client *c, const char *customer)
{
	Sagas__V1__ListAccountsRequest req = SAGAS__V1__LIST_ACCOUNTS_REQUEST__INIT;
	rpc_result res;
	assert_int_equal(rpc_call(c, "/sagas.v1.Payment/ListAccounts", &req.base, 5000, &res), 0);
	assert_int_equal(res.code, RPC_OK);
	Sagas__V1__ListAccountsReply *rep
	    = sagas__v1__list_accounts_reply__unpack(NULL, res.payload_len, res.payload);
	assert_non_null(rep);
	int64_t b = -1;
	for (size_t i = 0; i < rep->n_accounts; i++)
		if (strcmp(rep->accounts[i]->customer, customer) == 0)
			b = rep->accounts[i]->balance;
	sagas__v1__list_accounts_reply__free_unpacked(rep, NULL);
	rpc_result_clear(&res);
	return b;
}

static void test_keyed_adds_once(void **st)
{
	(void)st;
	rpc_client *c = open_client();
	const char *id = "d0000000-0000-4000-8000-000000000001";
	deposit_result r = deposit(c, "dk", 10000, id);
	assert_int_equal(r.code, RPC_OK);
	assert_false(r.duplicate);
	assert_int_equal(r.balance, 10000);
	for (int i = 0; i < 3; i++) {
		r = deposit(c, "dk", 10000, id);
		assert_int_equal(r.code, RPC_OK);
		assert_true(r.duplicate);
		assert_int_equal(r.balance, 10000);
	}
	/* a second key adds; the first one's duplicate still answers what was
	 * recorded right after it, not the balance now */
	r = deposit(c, "dk", 250, "d0000000-0000-4000-8000-000000000002");
	assert_int_equal(r.code, RPC_OK);
	assert_false(r.duplicate);
	assert_int_equal(r.balance, 10250);
	r = deposit(c, "dk", 10000, id);
	assert_true(r.duplicate);
	assert_int_equal(r.balance, 10000);
	assert_int_equal(balance_of(c, "dk"), 10250);
	rpc_client_close(c);
}

static void test_key_mismatch_changes_nothing(void **st)
{
	(void)st;
	rpc_client *c = open_client();
	const char *id = "d0000000-0000-4000-8000-000000000003";
	assert_int_equal(deposit(c, "dm", 500, id).code, RPC_OK);
	deposit_result r = deposit(c, "dm", 501, id); /* another amount */
	assert_int_equal(r.code, RPC_ALREADY_EXISTS);
	assert_string_equal(r.reason, "key_mismatch");
	r = deposit(c, "dm2", 500, id); /* another customer */
	assert_int_equal(r.code, RPC_ALREADY_EXISTS);
	assert_string_equal(r.reason, "key_mismatch");
	assert_int_equal(balance_of(c, "dm"), 500);
	assert_int_equal(balance_of(c, "dm2"), -1);
	rpc_client_close(c);
}

static void test_bad_key_refused(void **st)
{
	(void)st;
	rpc_client *c = open_client();
	const char *bad[] = {"not-a-uuid", "D0000000-0000-4000-8000-000000000004",
	    "d0000000-0000-4000-8000-00000000000", "d0000000000040008000000000000004"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		deposit_result r = deposit(c, "db", 100, bad[i]);
		assert_int_equal(r.code, RPC_INVALID_ARGUMENT);
		assert_string_equal(r.reason, "bad_field");
	}
	assert_int_equal(balance_of(c, "db"), -1);
	rpc_client_close(c);
}

static void test_cap_leaves_no_record(void **st)
{
	(void)st;
	rpc_client *c = open_client();
	const char *id = "d0000000-0000-4000-8000-000000000005";
	assert_int_equal(deposit(c, "dc", VALID_AMOUNT_MAX, NULL).code, RPC_OK);
	deposit_result r = deposit(c, "dc", 1, id);
	assert_int_equal(r.code, RPC_OUT_OF_RANGE);
	assert_string_equal(r.reason, "balance_overflow");
	assert_int_equal(balance_of(c, "dc"), VALID_AMOUNT_MAX);
	/* refused, so not recorded: the key is still free for another deposit */
	r = deposit(c, "dc2", 7, id);
	assert_int_equal(r.code, RPC_OK);
	assert_false(r.duplicate);
	assert_int_equal(r.balance, 7);
	rpc_client_close(c);
}

static void test_unkeyed_adds_every_time(void **st)
{
	(void)st;
	rpc_client *c = open_client();
	for (int i = 1; i <= 3; i++) {
		deposit_result r = deposit(c, "du", 100, NULL);
		assert_int_equal(r.code, RPC_OK);
		assert_false(r.duplicate);
		assert_int_equal(r.balance, 100 * i);
	}
	assert_int_equal(balance_of(c, "du"), 300);
	rpc_client_close(c);
}

#define RACERS 8

typedef struct racer {
	pthread_barrier_t *go;
	const char *customer;
	const char *id;
	int64_t amount;
	deposit_result r;
} racer;

static void *race(void *arg)
{
	racer *x = arg;
	rpc_client *c = open_client();
	(void)balance_of(c, x->customer); /* connected before the start */
	pthread_barrier_wait(x->go);
	x->r = deposit(c, x->customer, x->amount, x->id);
	rpc_client_close(c);
	return NULL;
}

/* concurrent duplicates: one adds, the others are answered as duplicates
 * with the same balance (the record's primary key serialises them). From
 * the fifth round on the amount is over half the cap, so a duplicate
 * that waited for the first one's row lock sees a balance that its own add
 * would take past the cap: it is still a duplicate, not OUT_OF_RANGE. */
static void test_concurrent_duplicates(void **st)
{
	(void)st;
	for (int round = 0; round < 12; round++) {
		int64_t amount = round < 4 ? 700 : VALID_AMOUNT_MAX / 10 * 6;
		char customer[16], id[VALID_UUID_LEN + 1];
		snprintf(customer, sizeof customer, "dr%d", round);
		snprintf(id, sizeof id, "d0000000-0000-4000-8000-0000000001%02d", round);
		pthread_barrier_t go;
		pthread_barrier_init(&go, NULL, RACERS);
		racer x[RACERS];
		pthread_t t[RACERS];
		for (int i = 0; i < RACERS; i++) {
			x[i]
			    = (racer) {.go = &go, .customer = customer, .id = id, .amount = amount};
			assert_int_equal(pthread_create(&t[i], NULL, race, &x[i]), 0);
		}
		int firsts = 0;
		for (int i = 0; i < RACERS; i++) {
			pthread_join(t[i], NULL);
			assert_int_equal(x[i].r.code, RPC_OK);
			assert_int_equal(x[i].r.balance, amount);
			firsts += !x[i].r.duplicate;
		}
		pthread_barrier_destroy(&go);
		assert_int_equal(firsts, 1);
		rpc_client *c = open_client();
		assert_int_equal(balance_of(c, customer), amount);
		rpc_client_close(c);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_keyed_adds_once),
	    cmocka_unit_test(test_key_mismatch_changes_nothing),
	    cmocka_unit_test(test_bad_key_refused),
	    cmocka_unit_test(test_cap_leaves_no_record),
	    cmocka_unit_test(test_unkeyed_adds_every_time),
	    cmocka_unit_test(test_concurrent_duplicates),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
