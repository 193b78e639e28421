/* mem_stock_store: services/stock/store.h in memory, for fuzz_stock (the
 * real handlers.c over no database). The pure stock_decide decides, as in
 * the real store; records and rows live in small arrays, reset with each
 * store. Sku "A1" exists from the start with 10 units. Only for fuzzing:
 * no locking, no fast path, no fault points. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pg.h"
#include "store.h"

#define MEM_MAX 16

struct stock_store {
	struct {
		char saga_id[VALID_UUID_LEN + 1];
		stock_record rec;
	} recs[MEM_MAX];
	size_t nrec;
	struct {
		char sku[STOCK_SKU_MAX + 1];
		int64_t on_hand;
	} rows[MEM_MAX];
	size_t nrow;
};

int stock_store_migrate(const char *conninfo, int64_t wait_ms)
{
	(void)conninfo;
	(void)wait_ms;
	return 0;
}

int stock_store_open(stock_store **out, const char *conninfo, int64_t wait_ms, valcache *cache)
{
	(void)conninfo;
	(void)wait_ms;
	(void)cache;
	stock_store *s = calloc(1, sizeof *s);
	if (s == NULL)
		return -ENOMEM;
	snprintf(s->rows[0].sku, sizeof s->rows[0].sku, "A1");
	s->rows[0].on_hand = 10;
	s->nrow = 1;
	*out = s;
	return 0;
}

void stock_store_fast_counts(const stock_store *s, uint64_t *fast, uint64_t *fast_failed)
{
	(void)s;
	*fast = *fast_failed = 0;
}

void stock_store_close(stock_store *s)
{
	free(s);
}

static int mem_row(stock_store *s, const char *sku)
{
	for (size_t i = 0; i < s->nrow; i++)
		if (strcmp(s->rows[i].sku, sku) == 0)
			return (int)i;
	return -1;
}

int stock_store_apply(
    stock_store *s, const char *saga_id, const stock_cmd *cmd, stock_outcome *out, int64_t *on_hand)
{
	size_t r = 0;
	while (r < s->nrec && strcmp(s->recs[r].saga_id, saga_id) != 0)
		r++;
	if (r == s->nrec) {
		if (s->nrec == MEM_MAX)
			return PG_ERR_OTHER;
		snprintf(s->recs[r].saga_id, sizeof s->recs[r].saga_id, "%s", saga_id);
		s->recs[r].rec = (stock_record) {.status = STOCK_NONE};
	}
	int w = mem_row(s, cmd->sku);
	stock_row row = {.exists = w >= 0, .on_hand = w >= 0 ? s->rows[w].on_hand : 0};
	stock_decide(&s->recs[r].rec, &row, cmd, out);
	if (out->write_record) {
		s->recs[r].rec = out->record;
		if (r == s->nrec)
			s->nrec++;
	}
	if (out->write_row && w >= 0)
		s->rows[w].on_hand = out->on_hand;
	*on_hand = w >= 0 ? s->rows[w].on_hand : 0;
	return 0;
}

int stock_store_apply_batch(stock_store *s, stock_batch_cmd *cmds, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		int rc = stock_store_apply(
		    s, cmds[i].saga_id, &cmds[i].cmd, &cmds[i].out, &cmds[i].on_hand);
		if (rc != 0)
			return rc;
	}
	return 0;
}

int stock_store_set(stock_store *s, const char *sku, int64_t on_hand)
{
	int w = mem_row(s, sku);
	if (w < 0) {
		if (s->nrow == MEM_MAX)
			return PG_ERR_OTHER;
		w = (int)s->nrow++;
		snprintf(s->rows[w].sku, sizeof s->rows[w].sku, "%s", sku);
	}
	s->rows[w].on_hand = on_hand;
	return 0;
}

int stock_store_list(stock_store *s, bool include_reservations, int32_t limit, stock_listing *out)
{
	memset(out, 0, sizeof *out);
	if (limit < 0 || limit > STOCK_LIST_LIMIT_MAX)
		return -EINVAL;
	out->items = calloc(s->nrow + 1, sizeof *out->items);
	out->reservations = calloc(s->nrec + 1, sizeof *out->reservations);
	if (out->items == NULL || out->reservations == NULL) {
		stock_listing_free(out);
		return -ENOMEM;
	}
	for (size_t i = 0; i < s->nrow; i++) {
		snprintf(out->items[i].sku, sizeof out->items[i].sku, "%s", s->rows[i].sku);
		out->items[i].on_hand = s->rows[i].on_hand;
	}
	out->n_items = s->nrow;
	for (size_t i = 0; include_reservations && i < s->nrec && (int32_t)i < limit; i++) {
		stock_reservation_row *r = &out->reservations[i];
		snprintf(r->saga_id, sizeof r->saga_id, "%s", s->recs[i].saga_id);
		snprintf(r->sku, sizeof r->sku, "%s", s->recs[i].rec.sku);
		r->qty = s->recs[i].rec.qty;
		r->status = s->recs[i].rec.status;
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
