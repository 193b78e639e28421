/* handlers: the shipping participant's admin method (ListShipments); its
 * saga command is served by the participant kit (service.c). */
#include "handlers.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

#include "pkit.h"
#include "sagas/v1/shipping.pb-c.h"
#include "store.h"

static void shipping_list(pkit_store *st, const rpc_request *call, rpc_reply *r)
{
	bool include;
	int32_t limit;
	if (!pkit_list_request(&sagas__v1__list_shipments_request__descriptor, "include_shipments",
	        SHIPPING_LIST_LIMIT_DEFAULT, SHIPPING_LIST_LIMIT_MAX, call, &include, &limit, r))
		return;

	shipping_listing l;
	int rc = shipping_store_list(st, include, limit, &l);
	if (rc != 0) {
		pkit_store_failed(r, rc, "list shipments", NULL);
		return;
	}
	Sagas__V1__Shipment *rows = calloc(l.n_rows + 1, sizeof *rows);
	Sagas__V1__Shipment **ptrs = calloc(l.n_rows + 1, sizeof *ptrs);
	if (rows == NULL || ptrs == NULL) {
		pkit_store_failed(r, -ENOMEM, "list shipments", NULL);
		goto out_free;
	}
	Sagas__V1__ListShipmentsReply rep = SAGAS__V1__LIST_SHIPMENTS_REPLY__INIT;
	rep.total = l.total;
	size_t bytes = sagas__v1__list_shipments_reply__get_packed_size(&rep) + 2;
	size_t n = 0;
	for (; n < l.n_rows; n++) {
		Sagas__V1__Shipment init = SAGAS__V1__SHIPMENT__INIT;
		rows[n] = init;
		rows[n].saga_id = l.rows[n].saga_id;
		rows[n].customer = l.rows[n].customer;
		rows[n].sku = l.rows[n].sku;
		rows[n].qty = l.rows[n].qty;
		rows[n].status = (Sagas__V1__ShipmentStatus)l.rows[n].status;
		rows[n].created_unix_ms = l.rows[n].created_ms;
		if (!pkit_page_fits(&bytes, &rows[n].base))
			break;
		ptrs[n] = &rows[n];
	}
	rep.n_shipments = n;
	rep.shipments = ptrs;
	rep.shipments_truncated = l.truncated || n < l.n_rows;
	rpc_reply_ok(r, &rep.base);
out_free:
	free(rows);
	free(ptrs);
	shipping_listing_free(&l);
}

const pkit_other_method shipping_admin_methods[SHIPPING_ADMIN_METHODS] = {
    {METHOD_Shipping_ListShipments, shipping_list},
};

/* What a batch frame may carry: the saga command (small replies), the
 * table's BATCH rows (methods.h). */
static const char *const shipping_batch_methods[] = {METHODS_Shipping(METHOD_BATCH_PATH) NULL};

const rpc_server_ops shipping_rpc_ops = PKIT_RPC_OPS(shipping_batch_methods);
