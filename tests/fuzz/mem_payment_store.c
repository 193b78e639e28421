/* mem_payment_store: services/payment/store.h in memory, for fuzz_payment
 * (the real handlers.c over no database). The pure payment_decide decides,
 * as in the real store; records, accounts and deposits live in small
 * arrays, reset with each store. Customer "ali" has 500.00 from the start.
 * Only for fuzzing: no locking, no fast path, no fault points. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pg.h"
#include "store.h"

#define MEM_MAX 16

struct payment_store {
	struct {
		char saga_id[VALID_UUID_LEN + 1];
		payment_record rec;
	} recs[MEM_MAX];
	size_t nrec;
	struct {
		char customer[PAYMENT_CUSTOMER_MAX + 1];
		int64_t balance;
	} accts[MEM_MAX];
	size_t nacct;
	struct {
		char id[VALID_UUID_LEN + 1];
		char customer[PAYMENT_CUSTOMER_MAX + 1];
		int64_t amount, balance;
	} deps[MEM_MAX];
	size_t ndep;
};

int payment_store_migrate(const char *conninfo, int64_t wait_ms)
{
	(void)conninfo;
	(void)wait_ms;
	return 0;
}

int payment_store_open(payment_store **out, const char *conninfo, int64_t wait_ms, valcache *cache)
{
	(void)conninfo;
	(void)wait_ms;
	(void)cache;
	payment_store *s = calloc(1, sizeof *s);
	if (s == NULL)
		return -ENOMEM;
	snprintf(s->accts[0].customer, sizeof s->accts[0].customer, "ali");
	s->accts[0].balance = 50000;
	s->nacct = 1;
	*out = s;
	return 0;
}

void payment_store_fast_counts(const payment_store *s, uint64_t *fast, uint64_t *fast_failed)
{
	(void)s;
	*fast = *fast_failed = 0;
}

void payment_store_close(payment_store *s)
{
	free(s);
}

static int mem_acct(payment_store *s, const char *customer)
{
	for (size_t i = 0; i < s->nacct; i++)
		if (strcmp(s->accts[i].customer, customer) == 0)
			return (int)i;
	return -1;
}

int payment_store_apply(payment_store *s, const char *saga_id, const payment_cmd *cmd,
    payment_outcome *out, int64_t *balance)
{
	size_t r = 0;
	while (r < s->nrec && strcmp(s->recs[r].saga_id, saga_id) != 0)
		r++;
	if (r == s->nrec) {
		if (s->nrec == MEM_MAX)
			return PG_ERR_OTHER;
		snprintf(s->recs[r].saga_id, sizeof s->recs[r].saga_id, "%s", saga_id);
		s->recs[r].rec = (payment_record) {.status = PAYMENT_NONE};
	}
	int a = mem_acct(s, cmd->customer);
	payment_account acct = {.exists = a >= 0, .balance = a >= 0 ? s->accts[a].balance : 0};
	payment_decide(&s->recs[r].rec, &acct, cmd, out);
	if (out->write_record) {
		s->recs[r].rec = out->record;
		if (r == s->nrec)
			s->nrec++;
	}
	if (out->write_account && a >= 0)
		s->accts[a].balance = out->balance;
	*balance = a >= 0 ? s->accts[a].balance : 0;
	return 0;
}

int payment_store_apply_batch(payment_store *s, payment_batch_cmd *cmds, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		int rc = payment_store_apply(
		    s, cmds[i].saga_id, &cmds[i].cmd, &cmds[i].out, &cmds[i].balance);
		if (rc != 0)
			return rc;
	}
	return 0;
}

int payment_store_deposit(payment_store *s, const char *customer, int64_t amount,
    const char *deposit_id, int64_t *balance, bool *duplicate)
{
	*duplicate = false;
	bool keyed = deposit_id != NULL && *deposit_id != '\0';
	for (size_t i = 0; keyed && i < s->ndep; i++) {
		if (strcmp(s->deps[i].id, deposit_id) != 0)
			continue;
		*balance = s->deps[i].balance;
		if (strcmp(s->deps[i].customer, customer) != 0 || s->deps[i].amount != amount)
			return -EEXIST;
		*duplicate = true;
		return 0;
	}
	int a = mem_acct(s, customer);
	if (a < 0) {
		if (s->nacct == MEM_MAX)
			return PG_ERR_OTHER;
		a = (int)s->nacct++;
		snprintf(s->accts[a].customer, sizeof s->accts[a].customer, "%s", customer);
		s->accts[a].balance = 0;
	}
	if (s->accts[a].balance > VALID_AMOUNT_MAX - amount)
		return -ERANGE;
	s->accts[a].balance += amount;
	*balance = s->accts[a].balance;
	if (keyed && s->ndep < MEM_MAX) {
		size_t d = s->ndep++;
		snprintf(s->deps[d].id, sizeof s->deps[d].id, "%s", deposit_id);
		snprintf(s->deps[d].customer, sizeof s->deps[d].customer, "%s", customer);
		s->deps[d].amount = amount;
		s->deps[d].balance = *balance;
	}
	return 0;
}

int payment_store_list(payment_store *s, bool include_charges, int32_t limit, payment_listing *out)
{
	memset(out, 0, sizeof *out);
	if (limit < 0 || limit > PAYMENT_LIST_LIMIT_MAX)
		return -EINVAL;
	out->accounts = calloc(s->nacct + 1, sizeof *out->accounts);
	out->charges = calloc(s->nrec + 1, sizeof *out->charges);
	if (out->accounts == NULL || out->charges == NULL) {
		payment_listing_free(out);
		return -ENOMEM;
	}
	for (size_t i = 0; i < s->nacct; i++) {
		snprintf(out->accounts[i].customer, sizeof out->accounts[i].customer, "%s",
		    s->accts[i].customer);
		out->accounts[i].balance = s->accts[i].balance;
	}
	out->n_accounts = s->nacct;
	out->total_charges = (int64_t)s->nrec;
	for (size_t i = 0; include_charges && i < s->nrec && (int32_t)i < limit; i++) {
		payment_charge_row *c = &out->charges[i];
		snprintf(c->saga_id, sizeof c->saga_id, "%s", s->recs[i].saga_id);
		snprintf(c->customer, sizeof c->customer, "%s", s->recs[i].rec.customer);
		c->amount = s->recs[i].rec.amount;
		c->status = s->recs[i].rec.status;
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
