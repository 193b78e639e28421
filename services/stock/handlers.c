/* handlers: the stock participant's admin methods (SetStock, ListStock);
 * its saga commands are served by the participant kit (service.c). */
#include "handlers.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "pkit.h"
#include "sagas/v1/stock.pb-c.h"
#include "store.h"
#include "valid.h"

static void stock_set(pkit_store *st, const rpc_request *call, rpc_reply *r)
{
	Sagas__V1__SetStockRequest *req = (Sagas__V1__SetStockRequest *)rpc_unpack(
	    &sagas__v1__set_stock_request__descriptor, call, r);
	if (req == NULL)
		return;
	if (!pkit_check_name(r, "sku", req->sku)
	    || !pkit_check_range(r, "on_hand", req->on_hand, 0, VALID_AMOUNT_MAX, NULL))
		goto out_free;
	int rc = stock_store_set(st, req->sku, req->on_hand);
	if (rc != 0) {
		pkit_store_failed(r, rc, "set stock", NULL);
		goto out_free;
	}
	log_info(NULL, "set stock sku=%s on hand %" PRId64, req->sku, req->on_hand);
	Sagas__V1__SetStockReply rep = SAGAS__V1__SET_STOCK_REPLY__INIT;
	rep.on_hand = req->on_hand;
	rpc_reply_ok(r, &rep.base);
out_free:
	sagas__v1__set_stock_request__free_unpacked(req, NULL);
}

static void stock_list(pkit_store *st, const rpc_request *call, rpc_reply *r)
{
	bool include;
	int32_t limit;
	if (!pkit_list_request(&sagas__v1__list_stock_request__descriptor, "include_reservations",
	        STOCK_LIST_LIMIT_DEFAULT, STOCK_LIST_LIMIT_MAX, call, &include, &limit, r))
		return;

	stock_listing l;
	int rc = stock_store_list(st, include, limit, &l);
	if (rc != 0) {
		pkit_store_failed(r, rc, "list stock", NULL);
		return;
	}
	Sagas__V1__StockItem *items = calloc(l.n_items + 1, sizeof *items);
	Sagas__V1__StockItem **item_ptrs = calloc(l.n_items + 1, sizeof *item_ptrs);
	Sagas__V1__Reservation *recs = calloc(l.n_reservations + 1, sizeof *recs);
	Sagas__V1__Reservation **rec_ptrs = calloc(l.n_reservations + 1, sizeof *rec_ptrs);
	if (items == NULL || item_ptrs == NULL || recs == NULL || rec_ptrs == NULL) {
		pkit_store_failed(r, -ENOMEM, "list stock", NULL);
		goto out_free;
	}
	Sagas__V1__ListStockReply rep = SAGAS__V1__LIST_STOCK_REPLY__INIT;
	for (size_t i = 0; i < l.n_items; i++) {
		Sagas__V1__StockItem init = SAGAS__V1__STOCK_ITEM__INIT;
		items[i] = init;
		items[i].sku = l.items[i].sku;
		items[i].on_hand = l.items[i].on_hand;
		items[i].live_reservations = l.items[i].live_reservations;
		items[i].reserved_qty = l.items[i].reserved_qty;
		item_ptrs[i] = &items[i];
	}
	rep.n_items = l.n_items;
	rep.items = item_ptrs;
	size_t bytes = sagas__v1__list_stock_reply__get_packed_size(&rep) + 2;
	size_t n = 0;
	for (; n < l.n_reservations; n++) {
		Sagas__V1__Reservation init = SAGAS__V1__RESERVATION__INIT;
		recs[n] = init;
		recs[n].saga_id = l.reservations[n].saga_id;
		recs[n].sku = l.reservations[n].sku;
		recs[n].qty = l.reservations[n].qty;
		recs[n].status = (Sagas__V1__ReservationStatus)l.reservations[n].status;
		if (!pkit_page_fits(&bytes, &recs[n].base))
			break;
		rec_ptrs[n] = &recs[n];
	}
	rep.n_reservations = n;
	rep.reservations = rec_ptrs;
	rep.reservations_truncated = l.reservations_truncated || n < l.n_reservations;
	rpc_reply_ok(r, &rep.base);
out_free:
	free(items);
	free(item_ptrs);
	free(recs);
	free(rec_ptrs);
	stock_listing_free(&l);
}

const pkit_other_method stock_admin_methods[STOCK_ADMIN_METHODS] = {
    {METHOD_Stock_SetStock, stock_set},
    {METHOD_Stock_ListStock, stock_list},
};

/* What a batch frame may carry: the saga commands (small replies), the
 * table's BATCH rows (methods.h). */
static const char *const stock_batch_methods[] = {METHODS_Stock(METHOD_BATCH_PATH) NULL};

const rpc_server_ops stock_rpc_ops = PKIT_RPC_OPS(stock_batch_methods);
