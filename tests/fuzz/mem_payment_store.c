/* mem_payment_store: the payment participant's own statements (Deposit,
 * ListAccounts of services/payment/store.h) in memory, over the in-memory
 * kit store (mem_pkit_store.c), for fuzz_payment. Keyed deposits are
 * remembered in a small array. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mem_store.h"
#include "pg.h"
#include "store.h"

static struct {
	char id[VALID_UUID_LEN + 1];
	char customer[PAYMENT_CUSTOMER_MAX + 1];
	int64_t amount, balance;
} deps[MEM_MAX];
static size_t ndep;
static const payment_store *deps_of; /* the store the deposits belong to */

payment_deposit_result payment_store_deposit(payment_store *s, const char *customer, int64_t amount,
    const char *deposit_id, int64_t *balance, int *err)
{
	if (deps_of != s) { /* a new store: no deposits yet */
		deps_of = s;
		ndep = 0;
	}
	*err = 0;
	bool keyed = deposit_id != NULL && *deposit_id != '\0';
	for (size_t i = 0; keyed && i < ndep; i++) {
		if (strcmp(deps[i].id, deposit_id) != 0)
			continue;
		*balance = deps[i].balance;
		if (strcmp(deps[i].customer, customer) != 0 || deps[i].amount != amount)
			return PAYMENT_DEPOSIT_KEY_MISMATCH;
		return PAYMENT_DEPOSIT_DUPLICATE;
	}
	int64_t *acct = mem_row(s, customer, true);
	if (acct == NULL) {
		*err = PG_ERR_OTHER;
		return PAYMENT_DEPOSIT_ERROR;
	}
	if (*acct > VALID_AMOUNT_MAX - amount)
		return PAYMENT_DEPOSIT_OVER_CAP;
	*acct += amount;
	*balance = *acct;
	if (keyed && ndep < MEM_MAX) {
		size_t d = ndep++;
		snprintf(deps[d].id, sizeof deps[d].id, "%s", deposit_id);
		snprintf(deps[d].customer, sizeof deps[d].customer, "%s", customer);
		deps[d].amount = amount;
		deps[d].balance = *balance;
	}
	return PAYMENT_DEPOSIT_ADDED;
}

int payment_store_list(payment_store *s, bool include_charges, int32_t limit, payment_listing *out)
{
	memset(out, 0, sizeof *out);
	if (limit < 0 || limit > PAYMENT_LIST_LIMIT_MAX)
		return -EINVAL;
	const char *key = NULL, *id = NULL;
	const pkit_record *rec = NULL;
	int64_t value = 0;
	size_t nrow = mem_rows(s, &key, &value, MEM_MAX);
	size_t nrec = mem_records(s, &id, &rec, MEM_MAX);
	out->accounts = calloc(nrow + 1, sizeof *out->accounts);
	out->charges = calloc(nrec + 1, sizeof *out->charges);
	if (out->accounts == NULL || out->charges == NULL) {
		payment_listing_free(out);
		return -ENOMEM;
	}
	for (size_t i = 0; i < nrow; i++) {
		mem_rows(s, &key, &value, i);
		snprintf(out->accounts[i].customer, sizeof out->accounts[i].customer, "%s", key);
		out->accounts[i].balance = value;
	}
	out->n_accounts = nrow;
	out->total_charges = (int64_t)nrec;
	for (size_t i = 0; include_charges && i < nrec && (int32_t)i < limit; i++) {
		mem_records(s, &id, &rec, i);
		payment_charge_row *c = &out->charges[i];
		snprintf(c->saga_id, sizeof c->saga_id, "%s", id);
		snprintf(c->customer, sizeof c->customer, "%s", rec->text[0]);
		c->amount = rec->num[0];
		c->status = (payment_status)rec->status;
		out->n_charges++;
	}
	return 0;
}

void payment_listing_free(payment_listing *l)
{
	free(l->accounts);
	free(l->charges);
	memset(l, 0, sizeof *l);
}
