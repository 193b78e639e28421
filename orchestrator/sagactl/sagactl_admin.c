/* sagactl_admin.c: the admin verbs of the participants (stock set and list,
 * deposit, accounts, shipments) and the test and health verbs of every
 * service (fault set and clear, probe, retention) (sagactl.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "methods.h"
#include "sagactl.h"

#include "sagas/v1/admin.pb-c.h"
#include "sagas/v1/health.pb-c.h"

int ctl_stock_set(ctl_ctx *c, char **args)
{
	int rc = ctl_parse_name(c, "SKU", args[0]);
	if (rc != 0)
		return rc;
	int64_t on_hand = 0;
	int err = ctl_parse_int(args[1], 0, INT64_MAX, &on_hand);
	if (err != 0)
		return ctl_usage(
		    c->cmd, "invalid ON_HAND \"%s\": expected a whole number >= 0", args[1]);
	Sagas__V1__SetStockRequest req = SAGAS__V1__SET_STOCK_REQUEST__INIT;
	req.sku = args[0];
	req.on_hand = on_hand;
	rpc_result res;
	rc = ctl_call(c, CTL_SVC_STOCK, METHOD_PATH(METHOD_Stock_SetStock), &req.base, "set stock",
	    c->o.timeout_ms, false, &res);
	if (rc != 0)
		return rc;
	Sagas__V1__SetStockReply *rep
	    = sagas__v1__set_stock_reply__unpack(NULL, res.payload_len, res.payload);
	rpc_result_clear(&res);
	if (rep == NULL)
		return ctl_bad_reply(c, CTL_SVC_STOCK, "SetStock");
	if (c->o.json) {
		rc = ctl_json_print(
		    json_pack("{s:s, s:I}", "sku", args[0], "on_hand", (json_int_t)rep->on_hand));
	} else {
		printf("%s on hand: %" PRId64 "\n", ctl_esc(args[0]), (int64_t)rep->on_hand);
		rc = CTL_EXIT_OK;
	}
	sagas__v1__set_stock_reply__free_unpacked(rep, NULL);
	return rc;
}

/* ctl_list_stock calls ListStock: the per-sku summary and, when
 * `reservations`, at most `limit` reservation rows, newest first. Returns 0
 * and *out (free it), or an exit code after printing an error. */
int ctl_list_stock(ctl_ctx *c, bool reservations, int64_t limit, Sagas__V1__ListStockReply **out)
{
	Sagas__V1__ListStockRequest req = SAGAS__V1__LIST_STOCK_REQUEST__INIT;
	req.include_reservations = reservations;
	req.limit = reservations ? (int32_t)limit : 0;
	rpc_result res;
	int rc = ctl_call(c, CTL_SVC_STOCK, METHOD_PATH(METHOD_Stock_ListStock), &req.base,
	    "list stock", c->o.timeout_ms, false, &res);
	if (rc != 0)
		return rc;
	*out = sagas__v1__list_stock_reply__unpack(NULL, res.payload_len, res.payload);
	rpc_result_clear(&res);
	if (*out == NULL)
		return ctl_bad_reply(c, CTL_SVC_STOCK, "ListStock");
	return 0;
}

/* ctl_stock_item_json is the shape of one sku in `stock list` and `report`. */
json_t *ctl_stock_item_json(const Sagas__V1__StockItem *it)
{
	return json_pack("{s:s, s:I, s:i, s:I}", "sku", it->sku, "on_hand", (json_int_t)it->on_hand,
	    "live_reservations", (int)it->live_reservations, "reserved_qty",
	    (json_int_t)it->reserved_qty);
}

/* ctl_stock_table adds the sku table of `rep` to stdout. */
int ctl_stock_table(const Sagas__V1__ListStockReply *rep)
{
	static const char *const head[] = {"sku", "on_hand", "live_reservations", "reserved_qty"};
	ctl_table t = {.ncols = CTL_NELEM(head), .head = head, .align = "lrrr"};
	for (size_t i = 0; i < rep->n_items; i++) {
		const Sagas__V1__StockItem *it = rep->items[i];
		char oh[24], lr[16], rq[24];
		snprintf(oh, sizeof oh, "%" PRId64, (int64_t)it->on_hand);
		snprintf(lr, sizeof lr, "%d", (int)it->live_reservations);
		snprintf(rq, sizeof rq, "%" PRId64, (int64_t)it->reserved_qty);
		ctl_table_row(&t, it->sku, oh, lr, rq);
	}
	return ctl_table_done(&t);
}

int ctl_stock_list(ctl_ctx *c, char **args)
{
	Sagas__V1__ListStockReply *rep = NULL;
	int rc = ctl_list_stock(c, c->o.reservations, c->o.limit, &rep);
	if (rc != 0)
		return rc;
	if (c->o.json) {
		json_t *items = json_array(), *resv = c->o.reservations ? json_array() : NULL;
		bool ok = items != NULL && (!c->o.reservations || resv != NULL);
		for (size_t i = 0; ok && i < rep->n_items; i++)
			ok = ctl_json_append(items, ctl_stock_item_json(rep->items[i]));
		for (size_t i = 0; ok && resv != NULL && i < rep->n_reservations; i++) {
			const Sagas__V1__Reservation *r = rep->reservations[i];
			ok = ctl_json_append(resv,
			    json_pack("{s:s, s:s, s:i, s:s}", "saga_id", r->saga_id, "sku", r->sku,
			        "qty", (int)r->qty, "status",
			        ctl_reservation_status_name(r->status)));
		}
		json_t *out = NULL;
		if (ok && resv != NULL)
			out = json_pack("{s:o, s:o, s:b}", "stock", items, "reservations", resv,
			    "reservations_truncated", (int)rep->reservations_truncated);
		else if (ok)
			out = json_pack("{s:o}", "stock", items);
		else {
			json_decref(items);
			json_decref(resv);
		}
		rc = ctl_json_print(out);
		goto out_free_rep;
	}
	rc = ctl_stock_table(rep);
	if (rc == 0 && c->o.reservations) {
		static const char *const head[] = {"saga_id", "sku", "qty", "status"};
		ctl_table t = {.ncols = CTL_NELEM(head), .head = head, .align = "llrl"};
		for (size_t i = 0; i < rep->n_reservations; i++) {
			const Sagas__V1__Reservation *r = rep->reservations[i];
			char qty[16];
			snprintf(qty, sizeof qty, "%d", (int)r->qty);
			ctl_table_row(
			    &t, r->saga_id, r->sku, qty, ctl_reservation_status_name(r->status));
		}
		printf("\n");
		rc = ctl_table_done(&t);
		if (rc == 0)
			ctl_truncated_note(rep->reservations_truncated, rep->n_reservations);
	}
out_free_rep:
	sagas__v1__list_stock_reply__free_unpacked(rep, NULL);
	return rc;
}

int ctl_deposit(ctl_ctx *c, char **args)
{
	int rc;
	int64_t amount = 0;
	if ((rc = ctl_parse_name(c, "CUSTOMER", args[0])) != 0
	    || (rc = ctl_parse_amount(c, args[1], &amount)) != 0)
		return rc;
	char id[VALID_UUID_LEN + 1];
	if ((rc = ctl_key(c, id)) != 0)
		return rc;
	Sagas__V1__DepositRequest req = SAGAS__V1__DEPOSIT_REQUEST__INIT;
	req.customer = args[0];
	req.amount = amount;
	req.deposit_id = id;
	rpc_result res;
	/* keyed, so a transient failure (no reply, UNAVAILABLE) is re-sent with
	 * the same id, as StartSaga is: it adds once */
	int tries = 0;
	rc = ctl_call_keyed(c, CTL_SVC_PAYMENT, METHOD_PATH(METHOD_Payment_Deposit), &req.base,
	    "deposit", c->o.timeout_ms, &res, &tries);
	if (rc != 0) {
		if (c->transient)
			fprintf(stderr,
			    "hint: the deposit id was %s; the same command with --id %s retries it "
			    "safely (it adds at most once)\n",
			    ctl_esc(id), ctl_esc(id));
		return rc;
	}
	Sagas__V1__DepositReply *rep
	    = sagas__v1__deposit_reply__unpack(NULL, res.payload_len, res.payload);
	rpc_result_clear(&res);
	if (rep == NULL)
		return ctl_bad_reply(c, CTL_SVC_PAYMENT, "Deposit");
	char a[32], b[32];
	ctl_key_use use = ctl_key_use_of(c, rep->duplicate, tries);
	if (c->o.json) {
		rc = ctl_json_print(json_pack("{s:s, s:s, s:I, s:s, s:I, s:s, s:b, s:b, s:i}",
		    "deposit_id", id, "customer", args[0], "amount_minor", (json_int_t)amount,
		    "amount", ctl_money(amount, a), "balance_minor", (json_int_t)rep->balance,
		    "balance", ctl_money(rep->balance, b), "duplicate", rep->duplicate ? 1 : 0,
		    "added", use == CTL_KEY_NEW || use == CTL_KEY_OURS, "tries", tries));
	} else if (use == CTL_KEY_OURS) {
		printf("deposited %s to %s; balance after it %s (deposit %s; the first reply was "
		       "lost, and the call re-sent with its id found it applied)\n",
		    ctl_money(amount, a), ctl_esc(args[0]), ctl_money(rep->balance, b),
		    ctl_esc(id));
		rc = CTL_EXIT_OK;
	} else if (use == CTL_KEY_MAYBE) {
		printf(
		    "deposit %s is applied (%s to %s), once: the call re-sent after a lost reply "
		    "found it applied by this command's first try or an earlier call with this "
		    "--id; balance after it %s\n",
		    ctl_esc(id), ctl_money(amount, a), ctl_esc(args[0]),
		    ctl_money(rep->balance, b));
		rc = CTL_EXIT_OK;
	} else if (use == CTL_KEY_OLD) {
		printf("deposit %s was already applied (%s to %s): nothing added; balance after it "
		       "%s\n",
		    ctl_esc(id), ctl_money(amount, a), ctl_esc(args[0]),
		    ctl_money(rep->balance, b));
		rc = CTL_EXIT_OK;
	} else {
		printf("deposited %s to %s; balance %s (deposit %s)\n", ctl_money(amount, a),
		    ctl_esc(args[0]), ctl_money(rep->balance, b), ctl_esc(id));
		rc = CTL_EXIT_OK;
	}
	sagas__v1__deposit_reply__free_unpacked(rep, NULL);
	return rc;
}

/* ctl_list_accounts calls ListAccounts: every account with its aggregates
 * and, when `charges`, at most `limit` charge rows, newest first. Returns 0
 * and *out (free it), or an exit code after printing an error. */
int ctl_list_accounts(ctl_ctx *c, bool charges, int64_t limit, Sagas__V1__ListAccountsReply **out)
{
	Sagas__V1__ListAccountsRequest req = SAGAS__V1__LIST_ACCOUNTS_REQUEST__INIT;
	req.include_charges = charges;
	req.limit = charges ? (int32_t)limit : 0;
	rpc_result res;
	int rc = ctl_call(c, CTL_SVC_PAYMENT, METHOD_PATH(METHOD_Payment_ListAccounts), &req.base,
	    "list accounts", c->o.timeout_ms, false, &res);
	if (rc != 0)
		return rc;
	*out = sagas__v1__list_accounts_reply__unpack(NULL, res.payload_len, res.payload);
	rpc_result_clear(&res);
	if (*out == NULL)
		return ctl_bad_reply(c, CTL_SVC_PAYMENT, "ListAccounts");
	return 0;
}

/* ctl_accounts_json appends the accounts of `rep` to `accounts` and, when
 * `charges` is not NULL, its charge rows to `charges`; false on failure. */
bool ctl_accounts_json(const Sagas__V1__ListAccountsReply *rep, json_t *accounts, json_t *charges)
{
	bool ok = accounts != NULL;
	for (size_t i = 0; ok && i < rep->n_accounts; i++) {
		const Sagas__V1__Account *a = rep->accounts[i];
		char b[32], ca[32];
		ok = ctl_json_append(accounts,
		    json_pack("{s:s, s:I, s:s, s:i, s:I, s:s}", "customer", a->customer,
		        "balance_minor", (json_int_t)a->balance, "balance",
		        ctl_money(a->balance, b), "charged_count", (int)a->charged_count,
		        "charged_amount_minor", (json_int_t)a->charged_amount, "charged_amount",
		        ctl_money(a->charged_amount, ca)));
	}
	for (size_t i = 0; ok && charges != NULL && i < rep->n_charges; i++) {
		const Sagas__V1__Charge *ch = rep->charges[i];
		char m[32];
		ok = ctl_json_append(charges,
		    json_pack("{s:s, s:s, s:I, s:s, s:s}", "saga_id", ch->saga_id, "customer",
		        ch->customer, "amount_minor", (json_int_t)ch->amount, "amount",
		        ctl_money(ch->amount, m), "status", ctl_charge_status_name(ch->status)));
	}
	return ok;
}

/* ctl_accounts_tables prints the account table of `rep` and, when
 * `charges`, its charge rows. */
int ctl_accounts_tables(const Sagas__V1__ListAccountsReply *rep, bool charges)
{
	static const char *const ahead[] = {"customer", "balance", "charged", "charged_amount"};
	ctl_table t = {.ncols = CTL_NELEM(ahead), .head = ahead, .align = "lrrr"};
	for (size_t i = 0; i < rep->n_accounts; i++) {
		const Sagas__V1__Account *a = rep->accounts[i];
		char b[32], n[16], ca[32];
		snprintf(n, sizeof n, "%d", (int)a->charged_count);
		ctl_table_row(
		    &t, a->customer, ctl_money(a->balance, b), n, ctl_money(a->charged_amount, ca));
	}
	int rc = ctl_table_done(&t);
	if (rc != 0 || !charges)
		return rc;
	static const char *const chead[] = {"saga_id", "customer", "amount", "status"};
	ctl_table u = {.ncols = CTL_NELEM(chead), .head = chead, .align = "llrl"};
	for (size_t i = 0; i < rep->n_charges; i++) {
		const Sagas__V1__Charge *ch = rep->charges[i];
		char m[32];
		ctl_table_row(&u, ch->saga_id, ch->customer, ctl_money(ch->amount, m),
		    ctl_charge_status_name(ch->status));
	}
	printf("\n");
	rc = ctl_table_done(&u);
	if (rc == 0)
		ctl_truncated_note(rep->charges_truncated, rep->n_charges);
	return rc;
}

int ctl_accounts(ctl_ctx *c, char **args)
{
	Sagas__V1__ListAccountsReply *rep = NULL;
	int rc = ctl_list_accounts(c, c->o.charges, c->o.limit, &rep);
	if (rc != 0)
		return rc;
	if (c->o.json) {
		json_t *accounts = json_array(), *charges = c->o.charges ? json_array() : NULL;
		bool ok = (!c->o.charges || charges != NULL)
		    && ctl_accounts_json(rep, accounts, charges);
		if (ok && charges != NULL) {
			rc = ctl_json_print(json_pack("{s:o, s:o, s:b}", "accounts", accounts,
			    "charges", charges, "charges_truncated", (int)rep->charges_truncated));
		} else if (ok) {
			rc = ctl_json_print(json_pack("{s:o}", "accounts", accounts));
		} else {
			json_decref(accounts);
			json_decref(charges);
			rc = ctl_json_print(NULL);
		}
	} else {
		rc = ctl_accounts_tables(rep, c->o.charges);
	}
	sagas__v1__list_accounts_reply__free_unpacked(rep, NULL);
	return rc;
}

/* ctl_list_shipments calls ListShipments with its rows: the count of every
 * shipment and at most `limit` rows, newest first. */
int ctl_list_shipments(ctl_ctx *c, int64_t limit, Sagas__V1__ListShipmentsReply **out)
{
	Sagas__V1__ListShipmentsRequest req = SAGAS__V1__LIST_SHIPMENTS_REQUEST__INIT;
	req.include_shipments = true;
	req.limit = (int32_t)limit;
	rpc_result res;
	int rc = ctl_call(c, CTL_SVC_SHIPPING, METHOD_PATH(METHOD_Shipping_ListShipments),
	    &req.base, "list shipments", c->o.timeout_ms, false, &res);
	if (rc != 0)
		return rc;
	*out = sagas__v1__list_shipments_reply__unpack(NULL, res.payload_len, res.payload);
	rpc_result_clear(&res);
	if (*out == NULL)
		return ctl_bad_reply(c, CTL_SVC_SHIPPING, "ListShipments");
	return 0;
}

/* ctl_shipments_json appends the shipment rows of `rep` to `rows`. */
bool ctl_shipments_json(const Sagas__V1__ListShipmentsReply *rep, json_t *rows)
{
	bool ok = rows != NULL;
	for (size_t i = 0; ok && i < rep->n_shipments; i++) {
		const Sagas__V1__Shipment *sh = rep->shipments[i];
		char at[32];
		ok = ctl_json_append(rows,
		    json_pack("{s:s, s:s, s:s, s:i, s:s, s:I, s:s}", "saga_id", sh->saga_id,
		        "customer", sh->customer, "sku", sh->sku, "qty", (int)sh->qty, "status",
		        ctl_shipment_status_name(sh->status), "created_unix_ms",
		        (json_int_t)sh->created_unix_ms, "created_at",
		        ctl_iso_ms(sh->created_unix_ms, at, sizeof at)));
	}
	return ok;
}

/* ctl_shipments_table prints "shipments: TOTAL", the rows of `rep` and the
 * truncation note. */
int ctl_shipments_table(const Sagas__V1__ListShipmentsReply *rep)
{
	static const char *const head[]
	    = {"saga_id", "customer", "sku", "qty", "status", "created_at"};
	ctl_table t = {.ncols = CTL_NELEM(head), .head = head, .align = "lllrll"};
	for (size_t i = 0; i < rep->n_shipments; i++) {
		const Sagas__V1__Shipment *sh = rep->shipments[i];
		char qty[16], at[32];
		snprintf(qty, sizeof qty, "%d", (int)sh->qty);
		ctl_table_row(&t, sh->saga_id, sh->customer, sh->sku, qty,
		    ctl_shipment_status_name(sh->status),
		    ctl_iso_ms(sh->created_unix_ms, at, sizeof at));
	}
	printf("shipments: %" PRId64 "\n", (int64_t)rep->total);
	int rc = ctl_table_done(&t);
	if (rc == 0)
		ctl_truncated_note(rep->shipments_truncated, rep->n_shipments);
	return rc;
}

/* ctl_shipments: `sagactl shipments`, the shipments of shippingd. */
int ctl_shipments(ctl_ctx *c, char **args)
{
	Sagas__V1__ListShipmentsReply *rep = NULL;
	int rc = ctl_list_shipments(c, c->o.limit, &rep);
	if (rc != 0)
		return rc;
	if (c->o.json) {
		json_t *rows = json_array();
		if (ctl_shipments_json(rep, rows)) {
			rc = ctl_json_print(
			    json_pack("{s:I, s:o, s:b}", "total", (json_int_t)rep->total,
			        "shipments", rows, "truncated", (int)rep->shipments_truncated));
		} else {
			json_decref(rows);
			rc = ctl_json_print(NULL);
		}
	} else {
		rc = ctl_shipments_table(rep);
	}
	sagas__v1__list_shipments_reply__free_unpacked(rep, NULL);
	return rc;
}

/* The fault kinds of `fault set`, as sagas.v1.FaultKind names them. */
static const struct {
	const char *name;
	Sagas__V1__FaultKind kind;
} ctl_fault_kinds[] = {
    {"delay", SAGAS__V1__FAULT_KIND__FAULT_KIND_DELAY},
    {"drop_reply", SAGAS__V1__FAULT_KIND__FAULT_KIND_DROP_REPLY},
    {"unavailable", SAGAS__V1__FAULT_KIND__FAULT_KIND_UNAVAILABLE},
    {"exit_after_commit", SAGAS__V1__FAULT_KIND__FAULT_KIND_EXIT_AFTER_COMMIT},
    {"fail_before_commit", SAGAS__V1__FAULT_KIND__FAULT_KIND_FAIL_BEFORE_COMMIT},
    {"exit_after_send", SAGAS__V1__FAULT_KIND__FAULT_KIND_EXIT_AFTER_SEND},
    {"drop_request", SAGAS__V1__FAULT_KIND__FAULT_KIND_DROP_REQUEST},
    {"duplicate_reply", SAGAS__V1__FAULT_KIND__FAULT_KIND_DUPLICATE_REPLY},
};

/* ctl_parse_service reads SERVICE into *out; returns 0 or a usage exit code. */
static int ctl_parse_service(ctl_ctx *c, const char *text, ctl_svc *out)
{
	for (int i = 0; i < CTL_SVC_COUNT; i++) {
		if (strcmp(text, ctl_svc_names[i]) == 0) {
			*out = (ctl_svc)i;
			return 0;
		}
	}
	return ctl_usage(c->cmd,
	    "invalid SERVICE \"%s\": expected one of orchestrator, stock, payment, shipping", text);
}

/* ctl_parse_fault_kind reads KIND into *out; returns 0 or a usage exit code. */
static int ctl_parse_fault_kind(ctl_ctx *c, const char *text, Sagas__V1__FaultKind *out)
{
	for (size_t i = 0; i < CTL_NELEM(ctl_fault_kinds); i++) {
		if (strcmp(text, ctl_fault_kinds[i].name) == 0) {
			*out = ctl_fault_kinds[i].kind;
			return 0;
		}
	}
	return ctl_usage(c->cmd,
	    "invalid KIND \"%s\": expected one of delay, drop_reply, unavailable, "
	    "exit_after_commit, fail_before_commit, exit_after_send, drop_request, "
	    "duplicate_reply",
	    text);
}

int ctl_fault_set(ctl_ctx *c, char **args)
{
	ctl_svc svc = CTL_SVC_ORCHESTRATOR;
	Sagas__V1__FaultKind kind = SAGAS__V1__FAULT_KIND__FAULT_KIND_UNSPECIFIED;
	int rc;
	if ((rc = ctl_parse_service(c, args[0], &svc)) != 0
	    || (rc = ctl_parse_fault_kind(c, args[1], &kind)) != 0)
		return rc;
	if (c->o.method[0] != '\0' && !valid_name(c->o.method))
		return ctl_usage(c->cmd,
		    "invalid --method \"%s\": expected a short method or command name, e.g. "
		    "ReserveStock (1..%d bytes of UTF-8 without control characters)",
		    c->o.method, VALID_NAME_MAX);
	Sagas__V1__SetFaultRequest req = SAGAS__V1__SET_FAULT_REQUEST__INIT;
	req.kind = kind;
	req.method = c->o.method;
	req.delay_ms = c->o.delay_ms;
	req.count = (int32_t)c->o.count;
	rpc_result res;
	rc = ctl_call(c, svc, METHOD_PATH(METHOD_Admin_SetFault), &req.base, "set fault",
	    c->o.timeout_ms, false, &res);
	if (rc != 0)
		return rc;
	Sagas__V1__SetFaultReply *rep
	    = sagas__v1__set_fault_reply__unpack(NULL, res.payload_len, res.payload);
	rpc_result_clear(&res);
	if (rep == NULL)
		return ctl_bad_reply(c, svc, "SetFault");
	if (c->o.json) {
		rc = ctl_json_print(json_pack("{s:s, s:s, s:s, s:I, s:I}", "service",
		    ctl_svc_names[svc], "kind", args[1], "method", c->o.method, "count",
		    (json_int_t)c->o.count, "delay_ms", (json_int_t)c->o.delay_ms));
	} else {
		char times[48];
		if (c->o.count == 0)
			snprintf(times, sizeof times, "every matching call");
		else
			snprintf(times, sizeof times, "the next %" PRId64 " matching call%s",
			    c->o.count, c->o.count == 1 ? "" : "s");
		printf("armed %s on %s for %s%s: fires on %s", ctl_esc(args[1]), ctl_svc_names[svc],
		    c->o.method[0] ? "method " : "every method", ctl_esc(c->o.method), times);
		if (kind == SAGAS__V1__FAULT_KIND__FAULT_KIND_DELAY)
			printf(", holding each %" PRId64 " ms", c->o.delay_ms);
		printf("\n");
		rc = CTL_EXIT_OK;
	}
	sagas__v1__set_fault_reply__free_unpacked(rep, NULL);
	return rc;
}

int ctl_fault_clear(ctl_ctx *c, char **args)
{
	ctl_svc svc = CTL_SVC_ORCHESTRATOR;
	int rc = ctl_parse_service(c, args[0], &svc);
	if (rc != 0)
		return rc;
	Sagas__V1__ClearFaultsRequest req = SAGAS__V1__CLEAR_FAULTS_REQUEST__INIT;
	rpc_result res;
	rc = ctl_call(c, svc, METHOD_PATH(METHOD_Admin_ClearFaults), &req.base, "clear faults",
	    c->o.timeout_ms, false, &res);
	if (rc != 0)
		return rc;
	Sagas__V1__ClearFaultsReply *rep
	    = sagas__v1__clear_faults_reply__unpack(NULL, res.payload_len, res.payload);
	rpc_result_clear(&res);
	if (rep == NULL)
		return ctl_bad_reply(c, svc, "ClearFaults");
	if (c->o.json) {
		rc = ctl_json_print(
		    json_pack("{s:s, s:b}", "service", ctl_svc_names[svc], "cleared", 1));
	} else {
		printf("cleared every fault on %s\n", ctl_svc_names[svc]);
		rc = CTL_EXIT_OK;
	}
	sagas__v1__clear_faults_reply__free_unpacked(rep, NULL);
	return rc;
}

/* ctl_probe asks SERVICE's Health/Check: exit 0 when SERVING, 1 otherwise
 * (NOT_SERVING, unreachable, timed out, any error). */
int ctl_probe(ctl_ctx *c, char **args)
{
	ctl_svc svc = CTL_SVC_ORCHESTRATOR;
	int rc = ctl_parse_service(c, args[0], &svc);
	if (rc != 0)
		return rc;
	/* the service by name: any daemon answers the empty name, so a URL of
	 * another daemon would pass (its NOT_FOUND unknown_service says so) */
	static const char *const names[CTL_SVC_COUNT]
	    = {"sagas.v1.Orchestrator", "sagas.v1.Stock", "sagas.v1.Payment", "sagas.v1.Shipping"};
	Sagas__V1__HealthCheckRequest req = SAGAS__V1__HEALTH_CHECK_REQUEST__INIT;
	req.service = (char *)names[svc];
	rpc_result res;
	rc = ctl_call(c, svc, METHOD_PATH(METHOD_Health_Check), &req.base, "check health",
	    c->o.timeout_ms, false, &res);
	if (rc != 0)
		return rc;
	Sagas__V1__HealthCheckResponse *rep
	    = sagas__v1__health_check_response__unpack(NULL, res.payload_len, res.payload);
	rpc_result_clear(&res);
	if (rep == NULL)
		return ctl_bad_reply(c, svc, "Health/Check");
	const char *status = ctl_serving_status_name((int)rep->status);
	if (c->o.json) {
		rc = ctl_json_print(json_pack("{s:s, s:s, s:s, s:s}", "service", ctl_svc_names[svc],
		    "status", status, "version", rep->version, "commit", rep->commit));
	} else {
		printf("%s %s\n", ctl_svc_names[svc], status);
		rc = CTL_EXIT_OK;
	}
	if (rc == CTL_EXIT_OK
	    && rep->status
	        != SAGAS__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__SERVING_STATUS_SERVING)
		rc = CTL_EXIT_ERROR;
	sagas__v1__health_check_response__free_unpacked(rep, NULL);
	return rc;
}

int ctl_retention(ctl_ctx *c, char **args)
{
	(void)args;
	int svc = 0;
	while (svc < CTL_SVC_COUNT && strcmp(c->o.target, ctl_svc_names[svc]) != 0)
		svc++;
	if (svc == CTL_SVC_COUNT)
		return ctl_usage(c->cmd,
		    "invalid --target \"%s\": expected one of orchestrator, stock, payment, "
		    "shipping",
		    c->o.target);
	int rc;
	Sagas__V1__RunRetentionRequest req = SAGAS__V1__RUN_RETENTION_REQUEST__INIT;
	req.dry_run = c->o.dry_run;
	rpc_result res;
	rc = ctl_call(c, (ctl_svc)svc, METHOD_PATH(METHOD_Admin_RunRetention), &req.base,
	    c->o.dry_run ? "count what retention would delete" : "run retention", c->o.timeout_ms,
	    false, &res);
	if (rc != 0)
		return rc;
	Sagas__V1__RunRetentionReply *rep
	    = sagas__v1__run_retention_reply__unpack(NULL, res.payload_len, res.payload);
	rpc_result_clear(&res);
	if (rep == NULL)
		return ctl_bad_reply(c, (ctl_svc)svc, "RunRetention");
	if (c->o.json) {
		json_t *j = json_pack("{s:s, s:b, s:s, s:I, s:s, s:I}", "service",
		    ctl_svc_names[svc], "dry_run", rep->dry_run, "table", rep->table, "deleted",
		    (json_int_t)rep->deleted, "other_table", rep->other_table, "other_deleted",
		    (json_int_t)rep->other_deleted);
		if (j != NULL && rep->ids_table[0] != '\0') { /* the orchestrator's (R5) */
			json_object_set_new(j, "ids_table", json_string(rep->ids_table));
			json_object_set_new(j, "ids_deleted", json_integer(rep->ids_deleted));
		}
		rc = ctl_json_print(j);
	} else {
		printf("%s %" PRId64 " %s", rep->dry_run ? "dry run: would delete" : "deleted",
		    rep->deleted, ctl_esc(rep->table));
		if (rep->other_table[0] != '\0')
			printf(" and %" PRId64 " %s rows", rep->other_deleted,
			    ctl_esc(rep->other_table));
		if (rep->ids_deleted > 0)
			printf("; %s %" PRId64 " saga ids (%s: none of them is refused any more)",
			    rep->dry_run ? "would forget" : "forgot", rep->ids_deleted,
			    ctl_esc(rep->ids_table));
		printf("\n");
		rc = CTL_EXIT_OK;
	}
	sagas__v1__run_retention_reply__free_unpacked(rep, NULL);
	return rc;
}
