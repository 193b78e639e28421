/* store_defs: the saga_definitions table (schema version 9; orch_defs.h):
 * every version of a definition that sagas started with, and which of them
 * unfinished sagas need. */
#ifndef SAGA_STORE_DEFS_H
#define SAGA_STORE_DEFS_H

#include <libpq-fe.h>
#include <stddef.h>
#include <stdint.h>

/* store_def_put stores a version (hex: 64 lowercase hex digits of its
 * SHA-256), its type, the file's text (body, NUL-terminated) and where it
 * came from (source), unless that version is stored already, and sets *id
 * to its saga_definitions.id either way. Returns 0 or a negative enum
 * pg_err. */
int store_def_put(PGconn *conn, const char *hex, const char *type, const char *body,
    const char *source, int32_t *id);

/* store_def_get reads version `id`: *hex (65 bytes, the caller's) and
 * *body (malloc'd, the caller frees it). Returns 0, -ENOENT when there is
 * no such id, -ENOMEM, or a negative enum pg_err. */
int store_def_get(PGconn *conn, int32_t id, char hex[65], char **body);

/* One version unfinished sagas need (store_defs_needed). */
typedef struct store_def_need {
	int32_t def_id;   /* 0: sagas started before schema version 9 */
	int64_t sagas;    /* how many unfinished sagas name it */
	char saga_id[40]; /* one of them (the least) */
} store_def_need;

/* store_defs_needed fills need (cap entries) with the versions unfinished
 * sagas name, and *n with how many there are (may exceed cap: the rest are
 * not filled). Returns 0 or a negative enum pg_err. A start's one query:
 * it reads every unfinished row (the sweep's indexes). */
int store_defs_needed(PGconn *conn, store_def_need *need, size_t cap, size_t *n);

#endif
