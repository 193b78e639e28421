/* checks: the invariants sagabench checks at the end of a run, against
 * the participants' listings (bench_check). */
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "bench.h"
#include "sagas/v1/orchestrator.pb-c.h"
#include "sagas/v1/payment.pb-c.h"
#include "sagas/v1/stock.pb-c.h"

/* cut_note writes into `buf` (`size` bytes) the note a check adds when an
 * admin list stopped at one reply's size (`truncated`) after `rows` rows,
 * or "" when it is whole. */
static void cut_note(char *buf, size_t size, bool truncated, size_t rows)
{
	if (truncated)
		snprintf(buf, size,
		    " (the list stopped at one reply's size, after %zu rows: the newest checked)",
		    rows);
	else
		buf[0] = '\0';
}

static void add_check(bench *b, const char *name, bool ok, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void add_check(bench *b, const char *name, bool ok, const char *fmt, ...)
{
	check *c = &b->checks[b->nchecks++];
	c->name = name;
	c->ok = ok;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(c->detail, sizeof c->detail, fmt, ap);
	va_end(ap);
}

/* the slot of a saga id of this run, or -1 */
static long slot_of(const bench *b, const char *id)
{
	unsigned hi;
	unsigned long long lo;
	if (strlen(id) != 36 || sscanf(id, "%8x", &hi) != 1 || hi != b->run_hi)
		return -1;
	if (sscanf(id + 24, "%12llx", &lo) != 1 || lo >= (unsigned long long)opt.n)
		return -1;
	return (long)lo;
}

static bool starts_with(const char *s, const char *p)
{
	return strncmp(s, p, strlen(p)) == 0;
}

/* check_stock checks the stock against ListStock: conserved per sku, the
 * live reservations those of the COMPLETED sagas. */
static void check_stock(bench *b)
{
	const char *tag = b->tag;
	Sagas__V1__ListStockRequest m = SAGAS__V1__LIST_STOCK_REQUEST__INIT;
	m.include_reservations = true;
	m.limit = 10000;
	rpc_result res;
	call_sync(
	    b->stock, "checking stock (ListStock)", "/sagas.v1.Stock/ListStock", &m.base, &res);
	Sagas__V1__ListStockReply *r
	    = sagas__v1__list_stock_reply__unpack(NULL, res.payload_len, res.payload);
	if (!r)
		die(3, "ListStock: malformed reply");
	int64_t sum_live = 0, sum_rq = 0, conserve_bad = 0, seen = 0;
	char first_bad[120] = "";
	for (size_t k = 0; k < r->n_items; k++) {
		Sagas__V1__StockItem *it = r->items[k];
		if (!starts_with(it->sku, tag))
			continue;
		seen++;
		int64_t init = 0;
		long idx;
		char oos[64];
		snprintf(oos, sizeof oos, "%s-oos", tag);
		if (strcmp(it->sku, oos) == 0)
			init = 0;
		else if (sscanf(it->sku + strlen(tag), "-sku-%ld", &idx) == 1 && idx >= 0
		    && idx < opt.skus)
			init = b->sku_init[idx];
		if (it->on_hand + it->reserved_qty != init) {
			if (!conserve_bad++)
				snprintf(first_bad, sizeof first_bad,
				    "%s: on_hand %" PRId64 " + reserved %" PRId64 " != %" PRId64,
				    it->sku, it->on_hand, it->reserved_qty, init);
		}
		sum_live += it->live_reservations;
		sum_rq += it->reserved_qty;
	}
	add_check(b, "stock conserved (on_hand + reserved == seeded, per sku)",
	    conserve_bad == 0 && seen == opt.skus + 1, "%" PRId64 " skus%s%s", seen,
	    conserve_bad ? "; " : "", first_bad);
	add_check(b, "live reservations == COMPLETED",
	    sum_live == b->completed && sum_rq == b->completed * (int64_t)opt.qty,
	    "%" PRId64 " live reservations (qty %" PRId64 "), %ld completed", sum_live, sum_rq,
	    b->completed);
	long live_not_completed = 0, live_checked = 0;
	for (size_t k = 0; k < r->n_reservations; k++) {
		Sagas__V1__Reservation *v = r->reservations[k];
		if (v->status != SAGAS__V1__RESERVATION_STATUS__RESERVATION_STATUS_RESERVED)
			continue;
		long i = slot_of(b, v->saga_id);
		if (i < 0)
			continue;
		live_checked++;
		if (b->slots[i].phase != P_DONE || b->slots[i].state != ST_COMPLETED)
			live_not_completed++;
	}
	char cut[96];
	cut_note(cut, sizeof cut, r->reservations_truncated, r->n_reservations);
	add_check(b, "no live reservation of a saga not COMPLETED", live_not_completed == 0,
	    "%ld of %ld live reservations listed belong to a saga not COMPLETED%s",
	    live_not_completed, live_checked, cut);
	sagas__v1__list_stock_reply__free_unpacked(r, NULL);
	rpc_result_clear(&res);
}

/* account_init is what account `a` of this run was seeded with. */
static int64_t account_init(const bench *b, const Sagas__V1__Account *a)
{
	int64_t init = 0;
	long idx;
	char broke[64];
	snprintf(broke, sizeof broke, "%s-broke", b->tag);
	if (strcmp(a->customer, broke) == 0)
		init = b->broke_init;
	else if (sscanf(a->customer + strlen(b->tag), "-cust-%ld", &idx) == 1 && idx >= 0
	    && idx < opt.customers)
		init = b->cust_init[idx];
	return init;
}

/* check_accounts checks the money against ListAccounts: conserved per
 * account, the charges those of the COMPLETED sagas. */
static void check_accounts(bench *b)
{
	Sagas__V1__ListAccountsRequest m = SAGAS__V1__LIST_ACCOUNTS_REQUEST__INIT;
	m.include_charges = true;
	m.limit = 10000;
	rpc_result res;
	call_sync(b->pay, "checking accounts (ListAccounts)", "/sagas.v1.Payment/ListAccounts",
	    &m.base, &res);
	Sagas__V1__ListAccountsReply *r
	    = sagas__v1__list_accounts_reply__unpack(NULL, res.payload_len, res.payload);
	if (!r)
		die(3, "ListAccounts: malformed reply");
	int64_t charged = 0, seen = 0, bad = 0;
	long listing_quirk = 0;
	char first_bad[140] = "";
	for (size_t k = 0; k < r->n_accounts; k++) {
		Sagas__V1__Account *a = r->accounts[k];
		if (!starts_with(a->customer, b->tag))
			continue;
		seen++;
		int64_t init = account_init(b, a);
		int64_t charged_amount = a->charged_amount;
		if (a->charged_count == 0 && charged_amount == INT64_MAX) {
			/* paymentd's ListAccounts reports least(NULL, max) for an
			 * account without charges: read it as 0, say so */
			charged_amount = 0;
			listing_quirk++;
		}
		if (a->balance + charged_amount != init && !bad++)
			snprintf(first_bad, sizeof first_bad,
			    "%s: balance %" PRId64 " + charged %" PRId64 " != %" PRId64,
			    a->customer, a->balance, charged_amount, init);
		charged += a->charged_count;
	}
	add_check(b, "money conserved (balance + charged == deposited, per account)",
	    bad == 0 && seen == opt.customers + 1, "%" PRId64 " accounts%s%s", seen,
	    bad ? "; " : "", first_bad);
	if (listing_quirk)
		fprintf(stderr,
		    "sagabench: note: ListAccounts reported charged_amount %" PRId64
		    " for %ld account(s) without charges (read as 0)\n",
		    (int64_t)INT64_MAX, listing_quirk);
	add_check(b, "COMPLETED == CHARGED", charged == b->completed,
	    "%" PRId64 " charged, %ld completed", charged, b->completed);
	long charged_not_completed = 0, listed = 0;
	for (size_t k = 0; k < r->n_charges; k++) {
		Sagas__V1__Charge *ch = r->charges[k];
		if (ch->status != SAGAS__V1__CHARGE_STATUS__CHARGE_STATUS_CHARGED)
			continue;
		long i = slot_of(b, ch->saga_id);
		if (i < 0)
			continue;
		listed++;
		if (b->slots[i].phase != P_DONE || b->slots[i].state != ST_COMPLETED)
			charged_not_completed++;
	}
	char cut[96];
	cut_note(cut, sizeof cut, r->charges_truncated, r->n_charges);
	add_check(b, "no live charge of a saga not COMPLETED", charged_not_completed == 0,
	    "%ld of %ld charges listed belong to a saga not COMPLETED%s", charged_not_completed,
	    listed, cut);
	sagas__v1__list_accounts_reply__free_unpacked(r, NULL);
	rpc_result_clear(&res);
}

void bench_check(bench *b)
{
	long bad_kind_outcomes = 0;
	for (long i = 0; i < opt.n; i++) {
		saga_slot *s = &b->slots[i];
		if (s->phase != P_DONE)
			continue;
		if (s->kind != K_GOOD && s->state == ST_COMPLETED)
			bad_kind_outcomes++;
	}
	check_stock(b);
	check_accounts(b);
	add_check(b, "every saga ended",
	    b->unfinished == 0 && b->n_failed_start == 0 && !b->timed_out,
	    "%ld unfinished, %ld refused at start%s%s", b->unfinished, b->n_failed_start,
	    b->n_failed_start ? ", last: " : "", b->n_failed_start ? b->last_start_error : "");
	/* a good order may be cancelled (a step deadline under overload); a
	 * failing one must never complete */
	add_check(b, "no failing order completed", bad_kind_outcomes == 0,
	    "%ld out-of-stock/declined orders completed; %ld good orders cancelled (deadlines)",
	    bad_kind_outcomes, b->cancelled_other);
	b->all_ok = true;
	for (int k = 0; k < b->nchecks; k++)
		b->all_ok = b->all_ok && b->checks[k].ok;
}
