/* mem_store: what the in-memory kit store (mem_pkit_store.c) lends to the
 * in-memory versions of the services' own statements (mem_stock_store.c,
 * mem_payment_store.c), for fuzzing. */
#ifndef SAGA_FUZZ_MEM_STORE_H
#define SAGA_FUZZ_MEM_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pkit.h"

/* The most records and rows of one store. */
#define MEM_MAX 16

/* mem_row returns the value of row `key` (created at 0 when `create` and
 * there is room), or NULL. */
int64_t *mem_row(pkit_store *s, const char *key, bool create);

/* mem_rows returns how many rows there are and, when i is below that, the
 * i-th in *key and *value. mem_records does the same for the records. */
size_t mem_rows(pkit_store *s, const char **key, int64_t *value, size_t i);
size_t mem_records(pkit_store *s, const char **saga_id, const pkit_record **rec, size_t i);

#endif
