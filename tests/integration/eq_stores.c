#include "eq_stores.h"

#include <errno.h>

#include "../../services/payment/service.h"
#include "../../services/stock/service.h"
#include "rpc.h"

int stock_store_migrate(const char *conninfo, int64_t wait_ms)
{
	return pkit_migrate(&stock_service, conninfo, wait_ms);
}

int stock_store_open(stock_store **out, const char *conninfo, int64_t wait_ms, valcache *cache)
{
	return pkit_store_open(out, &stock_service, conninfo, wait_ms, cache);
}

void stock_store_close(stock_store *s)
{
	pkit_store_close(s);
}

void stock_store_fast_counts(const stock_store *s, uint64_t *fast, uint64_t *fast_failed)
{
	pkit_store_fast_counts(s, fast, fast_failed);
}

int stock_store_apply_batch(stock_store *s, stock_batch_cmd *cmds, size_t n)
{
	if (n == 0 || n > RPC_BATCH_MAX)
		return -EINVAL;
	pkit_cmd k[RPC_BATCH_MAX];
	for (size_t i = 0; i < n; i++) {
		k[i] = (pkit_cmd) {.saga_id = cmds[i].saga_id};
		stock_args_of(&cmds[i].cmd, &k[i].args);
	}
	int rc = pkit_store_apply(s, k, n);
	for (size_t i = 0; rc == 0 && i < n; i++) {
		stock_outcome_of(&k[i].out, &cmds[i].out);
		cmds[i].on_hand = k[i].value;
	}
	return rc;
}

int stock_store_apply(
    stock_store *s, const char *saga_id, const stock_cmd *cmd, stock_outcome *out, int64_t *on_hand)
{
	stock_batch_cmd one = {.saga_id = saga_id, .cmd = *cmd};
	int rc = stock_store_apply_batch(s, &one, 1);
	if (rc == 0) {
		*out = one.out;
		*on_hand = one.on_hand;
	}
	return rc;
}

int payment_store_migrate(const char *conninfo, int64_t wait_ms)
{
	return pkit_migrate(&payment_service, conninfo, wait_ms);
}

int payment_store_open(payment_store **out, const char *conninfo, int64_t wait_ms, valcache *cache)
{
	return pkit_store_open(out, &payment_service, conninfo, wait_ms, cache);
}

void payment_store_close(payment_store *s)
{
	pkit_store_close(s);
}

void payment_store_fast_counts(const payment_store *s, uint64_t *fast, uint64_t *fast_failed)
{
	pkit_store_fast_counts(s, fast, fast_failed);
}

int payment_store_apply_batch(payment_store *s, payment_batch_cmd *cmds, size_t n)
{
	if (n == 0 || n > RPC_BATCH_MAX)
		return -EINVAL;
	pkit_cmd k[RPC_BATCH_MAX];
	for (size_t i = 0; i < n; i++) {
		k[i] = (pkit_cmd) {.saga_id = cmds[i].saga_id};
		payment_args_of(&cmds[i].cmd, &k[i].args);
	}
	int rc = pkit_store_apply(s, k, n);
	for (size_t i = 0; rc == 0 && i < n; i++) {
		payment_outcome_of(&k[i].out, &cmds[i].out);
		cmds[i].balance = k[i].value;
	}
	return rc;
}

int payment_store_apply(payment_store *s, const char *saga_id, const payment_cmd *cmd,
    payment_outcome *out, int64_t *balance)
{
	payment_batch_cmd one = {.saga_id = saga_id, .cmd = *cmd};
	int rc = payment_store_apply_batch(s, &one, 1);
	if (rc == 0) {
		*out = one.out;
		*balance = one.balance;
	}
	return rc;
}
