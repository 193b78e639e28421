/* sagactl_report.c: `sagactl report`, the state of the system from every
 * service (orchestrator, stock, payment, shipping), with counts (sagactl.h). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "sagactl.h"

/* The replies `report` shows, one of each service. */
typedef struct ctl_report_data {
	Sagas__V1__ListSagasReply *sagas;
	Sagas__V1__ListStockReply *stock;
	Sagas__V1__ListAccountsReply *acc;
	Sagas__V1__ListShipmentsReply *ship;
} ctl_report_data;

/* Counts shown by `report`. */
typedef struct ctl_summary {
	int64_t by_state[SAGA_STATE_LAST + 1];
	int64_t sagas, attention, skus, live_reservations, accounts, charges, charged, refunded;
	int64_t shipments;
	bool truncated;
} ctl_summary;

static void ctl_summarize(ctl_summary *m, const ctl_report_data *d)
{
	const Sagas__V1__ListSagasReply *sagas = d->sagas;
	const Sagas__V1__ListStockReply *stock = d->stock;
	const Sagas__V1__ListAccountsReply *acc = d->acc;
	memset(m, 0, sizeof *m);
	m->sagas = (int64_t)sagas->n_sagas;
	/* cut at the limit asked for, or earlier by the server to fit its
	 * reply in one frame (ListSagasReply.truncated) */
	m->truncated = sagas->truncated || sagas->n_sagas >= CTL_LIST_LIMIT_MAX;
	for (size_t i = 0; i < sagas->n_sagas; i++) {
		unsigned st = (unsigned)sagas->sagas[i]->state;
		if (st <= SAGA_STATE_LAST)
			m->by_state[st]++;
		if (sagas->sagas[i]->attention)
			m->attention++;
	}
	m->skus = (int64_t)stock->n_items;
	for (size_t i = 0; i < stock->n_items; i++)
		m->live_reservations += stock->items[i]->live_reservations;
	/* from the services' aggregates, not the (bounded) rows: exact
	 * however many sagas were recorded */
	m->accounts = (int64_t)acc->n_accounts;
	m->charges = acc->total_charges;
	for (size_t i = 0; i < acc->n_accounts; i++)
		m->charged += acc->accounts[i]->charged_count;
	m->refunded = acc->refunded_charges;
	m->shipments = d->ship->total;
}

static json_t *ctl_summary_json(const ctl_summary *m)
{
	return json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, "
	                 "s:I, s:I, s:b}",
	    "sagas", (json_int_t)m->sagas, "reserving",
	    (json_int_t)m->by_state[SAGA_STATE_RESERVING], "charging",
	    (json_int_t)m->by_state[SAGA_STATE_CHARGING], "shipping",
	    (json_int_t)m->by_state[SAGA_STATE_SHIPPING], "completed",
	    (json_int_t)m->by_state[SAGA_STATE_COMPLETED], "refunding",
	    (json_int_t)m->by_state[SAGA_STATE_REFUNDING], "releasing",
	    (json_int_t)m->by_state[SAGA_STATE_RELEASING], "cancelled",
	    (json_int_t)m->by_state[SAGA_STATE_CANCELLED], "attention", (json_int_t)m->attention,
	    "skus", (json_int_t)m->skus, "live_reservations", (json_int_t)m->live_reservations,
	    "accounts", (json_int_t)m->accounts, "charges", (json_int_t)m->charges, "charged",
	    (json_int_t)m->charged, "refunded", (json_int_t)m->refunded, "shipments",
	    (json_int_t)m->shipments, "truncated", (int)m->truncated);
}

static int ctl_report_json(const ctl_report_data *d, const ctl_summary *m)
{
	const Sagas__V1__ListSagasReply *sagas = d->sagas;
	const Sagas__V1__ListStockReply *stock = d->stock;
	const Sagas__V1__ListAccountsReply *acc = d->acc;
	json_t *js = json_array(), *jst = json_array(), *ja = json_array(), *jc = json_array();
	json_t *jsh = json_array();
	bool ok = js != NULL && jst != NULL;
	for (size_t i = 0; ok && i < sagas->n_sagas; i++)
		ok = ctl_json_append(js, ctl_saga_json(sagas->sagas[i]));
	for (size_t i = 0; ok && i < stock->n_items; i++)
		ok = ctl_json_append(jst, ctl_stock_item_json(stock->items[i]));
	ok = ok && ctl_accounts_json(acc, ja, jc) && ctl_shipments_json(d->ship, jsh);
	if (!ok) {
		json_decref(js);
		json_decref(jst);
		json_decref(ja);
		json_decref(jc);
		json_decref(jsh);
		return ctl_json_print(NULL);
	}
	/* "shipments" has the shape of `sagactl shipments --json` */
	return ctl_json_print(json_pack("{s:o, s:o, s:o, s:o, s:b, s:{s:I, s:o, s:b}, s:o}",
	    "sagas", js, "stock", jst, "accounts", ja, "charges", jc, "charges_truncated",
	    (int)acc->charges_truncated, "shipments", "total", (json_int_t)d->ship->total,
	    "shipments", jsh, "truncated", (int)d->ship->shipments_truncated, "summary",
	    ctl_summary_json(m)));
}

static int ctl_report_human(const ctl_report_data *d, const ctl_summary *m)
{
	const Sagas__V1__ListSagasReply *sagas = d->sagas;
	static const char *const head[]
	    = {"saga_id", "customer", "sku", "qty", "amount", "state", "reason", "attention"};
	ctl_table t = {.ncols = CTL_NELEM(head), .head = head, .align = "lllrrlll"};
	for (size_t i = 0; i < sagas->n_sagas; i++) {
		const Sagas__V1__Saga *s = sagas->sagas[i];
		char qty[16], amount[32];
		snprintf(qty, sizeof qty, "%d", (int)s->order->qty);
		ctl_table_row(&t, s->saga_id, s->order->customer, s->order->sku, qty,
		    ctl_money(s->order->amount, amount), saga_state_name((saga_state)s->state),
		    s->reason, s->attention ? "yes" : "");
	}
	if (m->truncated)
		printf("sagas (truncated: the newest %lld only)\n", (long long)m->sagas);
	else
		printf("sagas\n");
	int rc = ctl_table_done(&t);
	if (rc != 0)
		return rc;
	printf("\nstock\n");
	if ((rc = ctl_stock_table(d->stock)) != 0)
		return rc;
	printf("\naccounts and charges\n");
	if ((rc = ctl_accounts_tables(d->acc, true)) != 0)
		return rc;
	printf("\n");
	if ((rc = ctl_shipments_table(d->ship)) != 0)
		return rc;
	static const char *const shead[] = {"count", "value"};
	ctl_table u = {.ncols = CTL_NELEM(shead), .head = shead, .align = "lr"};
	struct {
		const char *name;
		int64_t v;
	} rows[] = {
	    {"sagas", m->sagas},
	    {"reserving", m->by_state[SAGA_STATE_RESERVING]},
	    {"charging", m->by_state[SAGA_STATE_CHARGING]},
	    {"shipping", m->by_state[SAGA_STATE_SHIPPING]},
	    {"completed", m->by_state[SAGA_STATE_COMPLETED]},
	    {"refunding", m->by_state[SAGA_STATE_REFUNDING]},
	    {"releasing", m->by_state[SAGA_STATE_RELEASING]},
	    {"cancelled", m->by_state[SAGA_STATE_CANCELLED]},
	    {"attention", m->attention},
	    {"live_reservations", m->live_reservations},
	    {"charges", m->charges},
	    {"charged", m->charged},
	    {"refunded", m->refunded},
	    {"shipments", m->shipments},
	};
	for (size_t i = 0; i < CTL_NELEM(rows); i++) {
		char v[24];
		snprintf(v, sizeof v, "%" PRId64, rows[i].v);
		ctl_table_row(&u, rows[i].name, v);
	}
	printf("\nsummary\n");
	return ctl_table_done(&u);
}

int ctl_report(ctl_ctx *c, char **args)
{
	ctl_report_data d = {0};
	int rc = ctl_list_sagas(c, SAGA_STATE_UNSPECIFIED, CTL_LIST_LIMIT_MAX, false, &d.sagas);
	if (rc != 0)
		return rc;
	if ((rc = ctl_list_stock(c, false, 0, &d.stock)) != 0)
		goto out_free_sagas;
	if ((rc = ctl_list_accounts(c, true, c->o.limit, &d.acc)) != 0)
		goto out_free_stock;
	if ((rc = ctl_list_shipments(c, c->o.limit, &d.ship)) != 0)
		goto out_free_acc;
	ctl_summary m;
	ctl_summarize(&m, &d);
	if (c->o.json)
		rc = ctl_report_json(&d, &m);
	else
		rc = ctl_report_human(&d, &m);
	sagas__v1__list_shipments_reply__free_unpacked(d.ship, NULL);
out_free_acc:
	sagas__v1__list_accounts_reply__free_unpacked(d.acc, NULL);
out_free_stock:
	sagas__v1__list_stock_reply__free_unpacked(d.stock, NULL);
out_free_sagas:
	sagas__v1__list_sagas_reply__free_unpacked(d.sagas, NULL);
	return rc;
}
