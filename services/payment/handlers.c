#include "handlers.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "payment_logic.h"
#include "pg.h"
#include "sagas/v1/payment.pb-c.h"
#include "store.h"
#include "valid.h"

/* ---- validation at the edge: bad input changes nothing ---- */

static bool payment_check_saga_id(rpc_reply *r, const char *s)
{
	if (valid_uuid(s))
		return true;
	rpc_reply_error(
	    r, RPC_INVALID_ARGUMENT, "bad_field", "invalid saga_id: not a canonical UUID");
	return false;
}

static bool payment_check_customer(rpc_reply *r, const char *s)
{
	if (valid_name(s))
		return true;
	rpc_reply_error(r, RPC_INVALID_ARGUMENT, "bad_field",
	    "invalid customer: must be 1..%d bytes of UTF-8 without control characters",
	    VALID_NAME_MAX);
	return false;
}

static bool payment_check_amount(rpc_reply *r, int64_t v)
{
	if (v >= 1 && v <= VALID_AMOUNT_MAX)
		return true;
	rpc_reply_error(r, RPC_INVALID_ARGUMENT, "bad_field",
	    "invalid amount: %" PRId64 " minor units is outside 1..%lld", v,
	    (long long)VALID_AMOUNT_MAX);
	return false;
}

static void payment_malformed(rpc_reply *r, const char *what)
{
	rpc_reply_error(r, RPC_INVALID_ARGUMENT, "malformed_payload", "could not decode %s", what);
}

/* payment_store_failed answers a store error. A database failure is
 * reported as such, never as a business refusal, so the orchestrator
 * retries. */
static void payment_store_failed(rpc_reply *r, int rc, const char *what, const char *saga_id)
{
	switch (rc) {
	case PG_ERR_CONNECTION:
		rpc_reply_error(r, RPC_UNAVAILABLE, "database_unavailable",
		    "could not %s: database unavailable", what);
		break;
	case PG_ERR_INJECTED:
		rpc_reply_error(r, RPC_UNAVAILABLE, "fault_injected",
		    "could not %s: injected failure before commit", what);
		break;
	case PG_ERR_RETRY:
		rpc_reply_error(r, RPC_UNAVAILABLE, "database_busy",
		    "could not %s: too many concurrent attempts", what);
		break;
	case -ENOMEM:
		rpc_reply_error(
		    r, RPC_INTERNAL, "out_of_memory", "could not %s: out of memory", what);
		break;
	default:
		rpc_reply_error(r, RPC_INTERNAL, "database_error",
		    "could not %s: internal database error", what);
		break;
	}
	log_warn(saga_id, "could not %s: %s", what, r->reason);
}

/* payment_refusal answers a refusal decided by payment_decide(). */
static void payment_refusal(
    rpc_reply *r, const payment_outcome *o, const char *what, const char *customer)
{
	if (strcmp(o->reason, REASON_PAYMENT_DECLINED) == 0)
		rpc_reply_error(r, o->code, o->reason, "could not %s: insufficient funds", what);
	else if (strcmp(o->reason, REASON_UNKNOWN_ACCOUNT) == 0)
		rpc_reply_error(
		    r, o->code, o->reason, "could not %s: unknown account \"%s\"", what, customer);
	else if (strcmp(o->reason, REASON_TOMBSTONE) == 0)
		rpc_reply_error(
		    r, o->code, o->reason, "could not %s: the saga was already compensated", what);
	else if (strcmp(o->reason, REASON_KEY_MISMATCH) == 0)
		rpc_reply_error(r, o->code, o->reason,
		    "could not %s: saga id already used with another customer or amount", what);
	else
		rpc_reply_error(r, o->code, o->reason, "could not %s: %s", what, o->reason);
}

/* payment_log_outcome logs a decided command: what changed at info, a
 * duplicate answered from the record at debug. */
static void payment_log_outcome(const char *saga_id, const char *op, const payment_cmd *cmd,
    const payment_outcome *o, int64_t balance)
{
	enum log_level lvl = o->write_record ? LOG_LEVEL_INFO : LOG_LEVEL_DEBUG;
	log_msg(lvl, saga_id, "%s customer=%s amount=%" PRId64 ": %s%s%s, balance %" PRId64 "%s",
	    op, cmd->customer, cmd->amount, payment_status_name(o->reply_status),
	    *o->reason ? " " : "", o->reason, balance, o->write_record ? "" : " (from record)");
}

/* ---- methods ---- */

/* A decoded ChargePayment or RefundPayment: what the store applies. */
typedef struct payment_call {
	Sagas__V1__ChargePaymentRequest *charge; /* one of the two is set */
	Sagas__V1__RefundPaymentRequest *refund;
	const char *saga_id; /* borrowed from the request */
	payment_cmd cmd;
} payment_call;

/* payment_parse decodes and checks a ChargePayment (op PAYMENT_OP_CHARGE) or
 * RefundPayment payload into *c. Returns false with the error in `r` (and
 * nothing to free) when the payload is malformed or a field is invalid. */
static bool payment_parse(const rpc_request *call, payment_op op, payment_call *c, rpc_reply *r)
{
	const char *what
	    = op == PAYMENT_OP_CHARGE ? "ChargePaymentRequest" : "RefundPaymentRequest";
	const ProtobufCMessage *base;
	const char *saga_id, *customer;
	int64_t amount;
	memset(c, 0, sizeof *c);
	if (op == PAYMENT_OP_CHARGE) {
		c->charge = sagas__v1__charge_payment_request__unpack(
		    NULL, call->payload_len, call->payload);
		if (c->charge == NULL)
			goto malformed;
		base = &c->charge->base;
		saga_id = c->charge->saga_id;
		customer = c->charge->customer;
		amount = c->charge->amount;
	} else {
		c->refund = sagas__v1__refund_payment_request__unpack(
		    NULL, call->payload_len, call->payload);
		if (c->refund == NULL)
			goto malformed;
		base = &c->refund->base;
		saga_id = c->refund->saga_id;
		customer = c->refund->customer;
		amount = c->refund->amount;
	}
	if (!valid_pb_exact(base, call->payload_len)) {
		rpc_reply_error(r, RPC_INVALID_ARGUMENT, "malformed_payload",
		    "could not decode %s: not a canonical encoding " VALID_CANONICAL_HINT, what);
		goto out_free;
	}
	if (!payment_check_saga_id(r, saga_id) || !payment_check_customer(r, customer)
	    || !payment_check_amount(r, amount))
		goto out_free;
	c->saga_id = saga_id;
	c->cmd = (payment_cmd) {.op = op, .customer = customer, .amount = amount};
	return true;
malformed:
	payment_malformed(r, what);
	return false;
out_free:
	sagas__v1__charge_payment_request__free_unpacked(c->charge, NULL);
	sagas__v1__refund_payment_request__free_unpacked(c->refund, NULL);
	memset(c, 0, sizeof *c);
	return false;
}

static void payment_call_free(payment_call *c)
{
	if (c->charge)
		sagas__v1__charge_payment_request__free_unpacked(c->charge, NULL);
	if (c->refund)
		sagas__v1__refund_payment_request__free_unpacked(c->refund, NULL);
	memset(c, 0, sizeof *c);
}

/* payment_answer fills the reply of an applied command: store error `rc`,
 * or the committed outcome `o` with the account's `balance` (minor units)
 * after it. */
static void payment_answer(
    const payment_call *c, int rc, const payment_outcome *o, int64_t balance, rpc_reply *r)
{
	bool charge = c->cmd.op == PAYMENT_OP_CHARGE;
	const char *what = charge ? "charge payment" : "refund payment";
	if (rc != 0) {
		payment_store_failed(r, rc, what, c->saga_id);
		return;
	}
	payment_log_outcome(c->saga_id, charge ? "charge" : "refund", &c->cmd, o, balance);
	if (o->code != RPC_OK) {
		payment_refusal(r, o, what, c->cmd.customer);
		return;
	}
	if (charge) {
		Sagas__V1__ChargePaymentReply rep = SAGAS__V1__CHARGE_PAYMENT_REPLY__INIT;
		rep.status = (Sagas__V1__ChargeStatus)o->reply_status;
		rep.balance = balance;
		rpc_reply_ok(r, &rep.base);
	} else {
		Sagas__V1__RefundPaymentReply rep = SAGAS__V1__REFUND_PAYMENT_REPLY__INIT;
		rep.status = (Sagas__V1__ChargeStatus)o->reply_status;
		rpc_reply_ok(r, &rep.base);
	}
}

/* payment_command serves one ChargePayment or RefundPayment alone: its own
 * transaction (payment_store_apply). */
static void payment_command(payment_store *st, const rpc_request *call, payment_op op, rpc_reply *r)
{
	payment_call c;
	if (!payment_parse(call, op, &c, r))
		return;
	payment_outcome o;
	int64_t balance = 0;
	int rc = payment_store_apply(st, c.saga_id, &c.cmd, &o, &balance);
	payment_answer(&c, rc, &o, balance, r);
	payment_call_free(&c);
}

static void payment_charge(payment_store *st, const rpc_request *call, rpc_reply *r)
{
	payment_command(st, call, PAYMENT_OP_CHARGE, r);
}

static void payment_refund(payment_store *st, const rpc_request *call, rpc_reply *r)
{
	payment_command(st, call, PAYMENT_OP_REFUND, r);
}

static void payment_deposit(payment_store *st, const rpc_request *call, rpc_reply *r)
{
	Sagas__V1__DepositRequest *req
	    = sagas__v1__deposit_request__unpack(NULL, call->payload_len, call->payload);
	if (req == NULL) {
		payment_malformed(r, "DepositRequest");
		return;
	}
	if (!valid_pb_exact(&req->base, call->payload_len)) {
		rpc_reply_error(r, RPC_INVALID_ARGUMENT, "malformed_payload",
		    "could not decode DepositRequest: not a canonical "
		    "encoding " VALID_CANONICAL_HINT);
		goto out_free;
	}
	if (!payment_check_customer(r, req->customer) || !payment_check_amount(r, req->amount))
		goto out_free;
	if (req->deposit_id[0] != '\0' && !valid_uuid(req->deposit_id)) {
		rpc_reply_error(r, RPC_INVALID_ARGUMENT, "bad_field",
		    "invalid deposit_id: not a canonical UUID");
		goto out_free;
	}
	int64_t balance = 0;
	bool duplicate = false;
	int rc = payment_store_deposit(
	    st, req->customer, req->amount, req->deposit_id, &balance, &duplicate);
	if (rc == -EEXIST) {
		rpc_reply_error(r, RPC_ALREADY_EXISTS, "key_mismatch",
		    "deposit_id %s was used with another customer or amount", req->deposit_id);
		goto out_free;
	}
	if (rc == -ERANGE) {
		rpc_reply_error(r, RPC_OUT_OF_RANGE, "balance_overflow",
		    "the balance would exceed the cap of %lld minor units",
		    (long long)VALID_AMOUNT_MAX);
		goto out_free;
	}
	if (rc != 0) {
		payment_store_failed(r, rc, "deposit", NULL);
		goto out_free;
	}
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

static void payment_list(payment_store *st, const rpc_request *call, rpc_reply *r)
{
	Sagas__V1__ListAccountsRequest *req
	    = sagas__v1__list_accounts_request__unpack(NULL, call->payload_len, call->payload);
	if (req == NULL) {
		payment_malformed(r, "ListAccountsRequest");
		return;
	}
	if (!valid_pb_exact(&req->base, call->payload_len)) {
		rpc_reply_error(r, RPC_INVALID_ARGUMENT, "malformed_payload",
		    "could not decode ListAccountsRequest: not a canonical "
		    "encoding " VALID_CANONICAL_HINT);
		sagas__v1__list_accounts_request__free_unpacked(req, NULL);
		return;
	}
	bool include = req->include_charges;
	int32_t limit = req->limit;
	sagas__v1__list_accounts_request__free_unpacked(req, NULL);
	if (limit < 0 || limit > PAYMENT_LIST_LIMIT_MAX) {
		rpc_reply_error(r, RPC_INVALID_ARGUMENT, "bad_field",
		    "invalid limit: %" PRId32 " is outside 0..%d", limit, PAYMENT_LIST_LIMIT_MAX);
		return;
	}
	if (limit == 0)
		limit = PAYMENT_LIST_LIMIT_DEFAULT;

	payment_listing l;
	int rc = payment_store_list(st, include, limit, &l);
	if (rc != 0) {
		payment_store_failed(r, rc, "list accounts", NULL);
		return;
	}
	Sagas__V1__Account *accts = calloc(l.n_accounts + 1, sizeof *accts);
	Sagas__V1__Account **acct_ptrs = calloc(l.n_accounts + 1, sizeof *acct_ptrs);
	Sagas__V1__Charge *charges = calloc(l.n_charges + 1, sizeof *charges);
	Sagas__V1__Charge **charge_ptrs = calloc(l.n_charges + 1, sizeof *charge_ptrs);
	if (accts == NULL || acct_ptrs == NULL || charges == NULL || charge_ptrs == NULL) {
		payment_store_failed(r, -ENOMEM, "list accounts", NULL);
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
	/* rows are added while the reply stays within its byte budget (a
	 * page of long customer names could otherwise pass the frame limit) */
	size_t bytes = sagas__v1__list_accounts_reply__get_packed_size(&rep) + 2;
	size_t n = 0;
	for (; n < l.n_charges; n++) {
		Sagas__V1__Charge init = SAGAS__V1__CHARGE__INIT;
		charges[n] = init;
		charges[n].saga_id = l.charges[n].saga_id;
		charges[n].customer = l.charges[n].customer;
		charges[n].amount = l.charges[n].amount;
		charges[n].status = (Sagas__V1__ChargeStatus)l.charges[n].status;
		/* tag + length prefix (<= 2 bytes for a row) + the row */
		bytes += 3 + sagas__v1__charge__get_packed_size(&charges[n]);
		if (bytes > RPC_REPLY_BUDGET)
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

#define PAYMENT_CHARGE_METHOD "/sagas.v1.Payment/ChargePayment"
#define PAYMENT_REFUND_METHOD "/sagas.v1.Payment/RefundPayment"

typedef struct payment_method {
	const char *name;
	void (*fn)(payment_store *st, const rpc_request *call, rpc_reply *r);
} payment_method;

static const payment_method payment_methods[] = {
    {PAYMENT_CHARGE_METHOD, payment_charge},
    {PAYMENT_REFUND_METHOD, payment_refund},
    {"/sagas.v1.Payment/Deposit", payment_deposit},
    {"/sagas.v1.Payment/ListAccounts", payment_list},
};

static void payment_handle(void *app, void *worker, const rpc_request *call, rpc_reply *reply)
{
	for (size_t i = 0; i < sizeof payment_methods / sizeof payment_methods[0]; i++) {
		if (strcmp(call->method, payment_methods[i].name) == 0) {
			payment_methods[i].fn(worker, call, reply);
			return;
		}
	}
	/* the method name came off the wire: bounded in the message */
	rpc_reply_error(
	    reply, RPC_UNIMPLEMENTED, "unknown_method", "unknown method \"%s\"", call->method);
}

/* payment_handle_batch serves calls that arrived together: their
 * ChargePayment and RefundPayment commands in one transaction
 * (payment_store_apply_batch), in arrival order, and the rest one by one.
 * When the batch cannot commit (bad data, a database error), each command
 * is applied alone, so one bad command fails only its own call. */
static void payment_handle_batch(
    void *app, void *worker, const rpc_request *calls, rpc_reply *replies, size_t n)
{
	payment_store *st = worker;
	payment_call cs[RPC_BATCH_MAX];
	payment_batch_cmd cmds[RPC_BATCH_MAX];
	size_t at[RPC_BATCH_MAX], m = 0;
	for (size_t i = 0; i < n; i++) {
		payment_op op = strcmp(calls[i].method, PAYMENT_CHARGE_METHOD) == 0
		    ? PAYMENT_OP_CHARGE
		    : strcmp(calls[i].method, PAYMENT_REFUND_METHOD) == 0 ? PAYMENT_OP_REFUND
		                                                          : 0;
		if (op == 0) {
			payment_handle(app, worker, &calls[i], &replies[i]);
			continue;
		}
		if (!payment_parse(&calls[i], op, &cs[m], &replies[i]))
			continue;
		cmds[m] = (payment_batch_cmd) {.saga_id = cs[m].saga_id, .cmd = cs[m].cmd};
		at[m++] = i;
	}
	if (m == 0)
		return;
	int rc = m > 1 ? payment_store_apply_batch(st, cmds, m) : -1;
	if (m > 1 && rc != 0)
		log_warn(NULL,
		    "a batch of %zu payment commands could not commit (%d): applying each alone", m,
		    rc);
	for (size_t k = 0; k < m; k++) {
		int one = rc == PG_ERR_CONNECTION ? rc : 0; /* no database: all fail alike */
		if (rc != 0 && rc != PG_ERR_CONNECTION)     /* each command alone, in order */
			one = payment_store_apply(
			    st, cmds[k].saga_id, &cmds[k].cmd, &cmds[k].out, &cmds[k].balance);
		payment_answer(&cs[k], one, &cmds[k].out, cmds[k].balance, &replies[at[k]]);
		payment_call_free(&cs[k]);
	}
}

static int payment_worker_init(void *app, void **worker)
{
	const payment_app *a = app;
	payment_store *st = NULL;
	int rc = payment_store_open(&st, a->conninfo, a->connect_wait_ms, a->cache);
	if (rc != 0)
		return rc;
	*worker = st;
	return 0;
}

static void payment_worker_fini(void *app, void *worker)
{
	(void)app;
	uint64_t fast = 0, fell_back = 0;
	if (worker != NULL)
		payment_store_fast_counts(worker, &fast, &fell_back);
	participant_log_fast_counts(fast, fell_back);
	payment_store_close(worker);
}

/* What a batch frame may carry: the saga commands (small replies). */
static const char *const payment_batch_methods[]
    = {PAYMENT_CHARGE_METHOD, PAYMENT_REFUND_METHOD, NULL};

const rpc_server_ops payment_rpc_ops = {
    .batch_methods = payment_batch_methods,
    .worker_init = payment_worker_init,
    .worker_fini = payment_worker_fini,
    .handle = payment_handle,
    .handle_batch = payment_handle_batch,
};
