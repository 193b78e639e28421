/* handlers: the payment participant's admin methods (Deposit,
 * ListAccounts); its saga commands are served by the participant kit
 * (service.c). */
#include "handlers.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "pkit.h"
#include "sagas/v1/payment.pb-c.h"
#include "store.h"
#include "valid.h"

static void payment_deposit(pkit_store *st, const rpc_request *call, rpc_reply *r)
{
	Sagas__V1__DepositRequest *req = (Sagas__V1__DepositRequest *)rpc_unpack(
	    &sagas__v1__deposit_request__descriptor, call, r);
	if (req == NULL)
		return;
	if (!pkit_check_name(r, "customer", req->customer)
	    || !pkit_check_range(r, "amount", req->amount, 1, VALID_AMOUNT_MAX, "minor units"))
		goto out_free;
	if (req->deposit_id[0] != '\0' && !valid_uuid(req->deposit_id)) {
		rpc_reply_error(r, RPC_INVALID_ARGUMENT, "bad_field",
		    "invalid deposit_id: not a canonical UUID");
		goto out_free;
	}
	int64_t balance = 0;
	int err = 0;
	payment_deposit_result res = payment_store_deposit(
	    st, req->customer, req->amount, req->deposit_id, &balance, &err);
	switch (res) {
	case PAYMENT_DEPOSIT_ADDED:
	case PAYMENT_DEPOSIT_DUPLICATE:
		break;
	case PAYMENT_DEPOSIT_KEY_MISMATCH:
		rpc_reply_error(r, RPC_ALREADY_EXISTS, "key_mismatch",
		    "deposit_id %s was used with another customer or amount", req->deposit_id);
		goto out_free;
	case PAYMENT_DEPOSIT_OVER_CAP:
		rpc_reply_error(r, RPC_OUT_OF_RANGE, "balance_overflow",
		    "the balance would exceed the cap of %lld minor units",
		    (long long)VALID_AMOUNT_MAX);
		goto out_free;
	case PAYMENT_DEPOSIT_ERROR:
		pkit_store_failed(r, err, "deposit", NULL);
		goto out_free;
	}
	bool duplicate = res == PAYMENT_DEPOSIT_DUPLICATE;
	if (duplicate)
		log_info(NULL,
		    "deposit customer=%s amount=%" PRId64
		    " deposit_id=%s: a duplicate, nothing added "
		    "(balance after the first: %" PRId64 ")",
		    req->customer, req->amount, req->deposit_id, balance);
	else
		log_info(NULL, "deposit customer=%s amount=%" PRId64 "%s%s: balance %" PRId64,
		    req->customer, req->amount, req->deposit_id[0] ? " deposit_id=" : "",
		    req->deposit_id, balance);
	Sagas__V1__DepositReply rep = SAGAS__V1__DEPOSIT_REPLY__INIT;
	rep.balance = balance;
	rep.duplicate = duplicate;
	rpc_reply_ok(r, &rep.base);
out_free:
	sagas__v1__deposit_request__free_unpacked(req, NULL);
}

static void payment_list(pkit_store *st, const rpc_request *call, rpc_reply *r)
{
	bool include;
	int32_t limit;
	if (!pkit_list_request(&sagas__v1__list_accounts_request__descriptor, "include_charges",
	        PAYMENT_LIST_LIMIT_DEFAULT, PAYMENT_LIST_LIMIT_MAX, call, &include, &limit, r))
		return;

	payment_listing l;
	int rc = payment_store_list(st, include, limit, &l);
	if (rc != 0) {
		pkit_store_failed(r, rc, "list accounts", NULL);
		return;
	}
	Sagas__V1__Account *accts = calloc(l.n_accounts + 1, sizeof *accts);
	Sagas__V1__Account **acct_ptrs = calloc(l.n_accounts + 1, sizeof *acct_ptrs);
	Sagas__V1__Charge *charges = calloc(l.n_charges + 1, sizeof *charges);
	Sagas__V1__Charge **charge_ptrs = calloc(l.n_charges + 1, sizeof *charge_ptrs);
	if (accts == NULL || acct_ptrs == NULL || charges == NULL || charge_ptrs == NULL) {
		pkit_store_failed(r, -ENOMEM, "list accounts", NULL);
		goto out_free;
	}
	Sagas__V1__ListAccountsReply rep = SAGAS__V1__LIST_ACCOUNTS_REPLY__INIT;
	for (size_t i = 0; i < l.n_accounts; i++) {
		Sagas__V1__Account init = SAGAS__V1__ACCOUNT__INIT;
		accts[i] = init;
		accts[i].customer = l.accounts[i].customer;
		accts[i].balance = l.accounts[i].balance;
		accts[i].charged_count = l.accounts[i].charged_count;
		accts[i].charged_amount = l.accounts[i].charged_amount;
		acct_ptrs[i] = &accts[i];
	}
	rep.n_accounts = l.n_accounts;
	rep.accounts = acct_ptrs;
	rep.total_charges = l.total_charges;
	rep.refunded_charges = l.refunded_charges;
	size_t bytes = sagas__v1__list_accounts_reply__get_packed_size(&rep) + 2;
	size_t n = 0;
	for (; n < l.n_charges; n++) {
		Sagas__V1__Charge init = SAGAS__V1__CHARGE__INIT;
		charges[n] = init;
		charges[n].saga_id = l.charges[n].saga_id;
		charges[n].customer = l.charges[n].customer;
		charges[n].amount = l.charges[n].amount;
		charges[n].status = (Sagas__V1__ChargeStatus)l.charges[n].status;
		if (!pkit_page_fits(&bytes, &charges[n].base))
			break;
		charge_ptrs[n] = &charges[n];
	}
	rep.n_charges = n;
	rep.charges = charge_ptrs;
	rep.charges_truncated = l.charges_truncated || n < l.n_charges;
	rpc_reply_ok(r, &rep.base);
out_free:
	free(accts);
	free(acct_ptrs);
	free(charges);
	free(charge_ptrs);
	payment_listing_free(&l);
}

const pkit_other_method payment_admin_methods[PAYMENT_ADMIN_METHODS] = {
    {METHOD_Payment_Deposit, payment_deposit},
    {METHOD_Payment_ListAccounts, payment_list},
};

/* What a batch frame may carry: the saga commands (small replies), the
 * table's BATCH rows (methods.h). */
static const char *const payment_batch_methods[] = {METHODS_Payment(METHOD_BATCH_PATH) NULL};

const rpc_server_ops payment_rpc_ops = PKIT_RPC_OPS(payment_batch_methods);
