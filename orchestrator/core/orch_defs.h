/* orch_defs: the saga definitions an orchestratord runs
 * (docs/saga-definitions.md, section 2 "Third landing"): its --definitions
 * file, or the order.yaml built in, loaded once at start and turned into a
 * plan per command (saga_def_cmd.h), so that the engine sends what the
 * definition says: the method, the participant and every request field
 * mapped from the saga's input. The engine's transition is still the order
 * saga's (saga_transition over saga_flow_order): a definition is accepted
 * when its `order` type has that flow and is the file's only type, and its
 * steps leave their deadline and retries to the daemon's options (both are
 * the next landings'); anything else refuses the start, saying so.
 */
#ifndef SAGA_ORCH_DEFS_H
#define SAGA_ORCH_DEFS_H

#include <stddef.h>

#include "saga.h"
#include "saga_def.h"
#include "saga_def_cmd.h"

typedef struct orch_defs {
	saga_defs *defs;             /* owned */
	const saga_def_type *order;  /* in defs */
	saga_def_cmd cmds[SAGA_CMD_LAST + 1]; /* by saga_command; [SAGA_CMD_NONE] unused */
	char version[65];            /* the order type's version (hex SHA-256) */
	char source[256];            /* the file's path, or "built in" */
} orch_defs;

/* orch_defs_load loads `file` (NULL: the order.yaml built into this binary)
 * into *o (zeroed first) and checks what this landing runs (above).
 * Returns 0; or -1 with one line in err (errlen bytes, NUL-terminated): the
 * file's own refusal ("FILE:LINE:COLUMN: PATH: message") or what this
 * orchestratord does not run yet. Free with orch_defs_free (also after a
 * failure). */
int orch_defs_load(orch_defs *o, const char *file, char *err, size_t errlen);

/* orch_defs_builtin returns the text of the built-in order.yaml (static,
 * NUL-terminated). */
const char *orch_defs_builtin(void);

/* orch_defs_free frees what orch_defs_load made; o itself is the caller's. */
void orch_defs_free(orch_defs *o);

#endif
