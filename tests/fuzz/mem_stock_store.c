/* mem_stock_store: the stock participant's own statements (SetStock,
 * ListStock of services/stock/store.h) in memory, over the in-memory kit
 * store (mem_pkit_store.c), for fuzz_stock. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mem_store.h"
#include "pg.h"
#include "store.h"

int stock_store_set(stock_store *s, const char *sku, int64_t on_hand)
{
	int64_t *v = mem_row(s, sku, true);
	if (v == NULL)
		return PG_ERR_OTHER;
	*v = on_hand;
	return 0;
}

int stock_store_list(stock_store *s, bool include_reservations, int32_t limit, stock_listing *out)
{
	memset(out, 0, sizeof *out);
	if (limit < 0 || limit > STOCK_LIST_LIMIT_MAX)
		return -EINVAL;
	const char *key = NULL, *id = NULL;
	const pkit_record *rec = NULL;
	int64_t value = 0;
	size_t nrow = mem_rows(s, &key, &value, MEM_MAX);
	size_t nrec = mem_records(s, &id, &rec, MEM_MAX);
	out->items = calloc(nrow + 1, sizeof *out->items);
	out->reservations = calloc(nrec + 1, sizeof *out->reservations);
	if (out->items == NULL || out->reservations == NULL) {
		stock_listing_free(out);
		return -ENOMEM;
	}
	for (size_t i = 0; i < nrow; i++) {
		mem_rows(s, &key, &value, i);
		snprintf(out->items[i].sku, sizeof out->items[i].sku, "%s", key);
		out->items[i].on_hand = value;
	}
	out->n_items = nrow;
	for (size_t i = 0; include_reservations && i < nrec && (int32_t)i < limit; i++) {
		mem_records(s, &id, &rec, i);
		stock_reservation_row *r = &out->reservations[i];
		snprintf(r->saga_id, sizeof r->saga_id, "%s", id);
		snprintf(r->sku, sizeof r->sku, "%s", rec->text[0]);
		r->qty = (int32_t)rec->num[0];
		r->status = (stock_status)rec->status;
		out->n_reservations++;
	}
	return 0;
}

void stock_listing_free(stock_listing *l)
{
	free(l->items);
	free(l->reservations);
	memset(l, 0, sizeof *l);
}
