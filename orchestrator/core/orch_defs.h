/* orch_defs: the saga definitions an orchestratord runs
 * (docs/saga-definitions.md, section 2 "Third landing"): its --definitions
 * file, or the order.yaml built in, loaded once at start and turned into a
 * plan per command (saga_def_cmd.h), so that the engine sends what the
 * definition says: the method, the participant and every request field
 * mapped from the saga's input.
 *
 * Versions: each saga row names the version of the definition it started
 * with (sagas.def_id, an id of table saga_definitions, which keeps every
 * version's text; schema version 9). An orchestratord stores its file's
 * version at start and serves every version an unfinished saga needs, read
 * back from that table (orch_defs_sync, and orch_defs_plan for a version
 * another orchestrator stored later), so a saga finishes under the
 * definition it started with, on any orchestrator (Conductor #987). A saga
 * started before schema 9 (def_id NULL, read as 0) is the order saga as
 * this binary builds it in.
 *
 * What this landing runs: saga_def_order_runnable (saga_def.h): the order
 * saga with its flow and names, its commands' mappings free, its
 * participants on the daemon's links. A file that is not refuses the start;
 * a stored version that is not (another build's, a bad row) leaves the
 * sagas that need it waiting for an orchestratord that runs it, logged.
 */
#ifndef SAGA_ORCH_DEFS_H
#define SAGA_ORCH_DEFS_H

#include <libpq-fe.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include <nng/nng.h>
#include <nng/supplemental/util/platform.h>

#include "saga.h"
#include "saga_def.h"
#include "saga_def_cmd.h"
#include "saga_flow.h"

/* ORCH_DEFS_MAX: the versions one orchestratord serves at once, at most
 * (a few KB each; a restart loads only those unfinished sagas need). */
#define ORCH_DEFS_MAX 256
/* ORCH_DEFS_FAILED: the versions that could not be loaded that it
 * remembers, so that their sagas wait without a read of the table each
 * time and each is logged once a minute. */
#define ORCH_DEFS_FAILED 16
/* ORCH_DEFS_RETRY_MS: how long a version that could not be loaded is left
 * before it is read again (ms); the log line comes at most as often. */
#define ORCH_DEFS_RETRY_MS 60000

/* ORCH_LINKS_MAX: the participants' links (URL options) it has, at most. */
#define ORCH_LINKS_MAX 8

/* One version of the definitions, with a plan per command. */
typedef struct orch_def_version {
	int32_t id;                           /* saga_definitions.id; 0: the built-in order
	                                         saga of sagas started before schema 9 */
	char hex[65];                         /* the order type's version, hex SHA-256 */
	saga_defs *defs;                      /* owned */
	const saga_def_type *order;           /* in defs */
	saga_def_cmd cmds[SAGA_CMD_LAST + 1]; /* by saga_command */
	int link[SAGA_CMD_LAST + 1];          /* each command's link (an index
	                                         of the names given to
	                                         orch_defs_load) */
	saga_flow flow;                       /* the order type's flow, with
	                                         each step's own deadline_ms and
	                                         retry (saga_def_flow; names
	                                         point into defs) */
} orch_def_version;

typedef struct orch_defs {
	const saga_def_link *links; /* the links it has (option, service),
	                               borrowed; nlinks of them */
	int nlinks;
	char source[PATH_MAX]; /* the file's absolute path, or "built in" */
	char *text;            /* the file's text (stored as the version's body) */
	size_t text_len;
	nng_mtx *mtx; /* guards n, v[] past the first and failed[] while running */
	size_t n;     /* v[0] is the file's: new sagas start under it */
	orch_def_version *v[ORCH_DEFS_MAX]; /* owned; entries below n never change */
	struct {
		int32_t id;
		int64_t at_ms; /* clock_mono_ms of the last try (and its log line) */
	} failed[ORCH_DEFS_FAILED];
} orch_defs;

/* orch_defs_load loads `file` (NULL: the order.yaml built into this binary)
 * as *o's first version (o zeroed first), its commands going to `links`
 * (nlinks <= ORCH_LINKS_MAX: the options and their services, borrowed for
 * o's life; orchestratord's are saga_def_order_links), and checks that this orchestratord runs it
 * (above). Returns 0; or -1 with one line in err (errlen bytes,
 * NUL-terminated): the file's own refusal ("FILE:LINE:COLUMN: PATH:
 * message") or what this orchestratord does not run. Its id is 0 until
 * orch_defs_sync stores it. Free with orch_defs_free (also after a
 * failure). */
int orch_defs_load(orch_defs *o, const char *file, const saga_def_link *links, int nlinks,
    char *err, size_t errlen);

/* orch_defs_sync stores the first version in saga_definitions (once: a
 * version stored already keeps its id) and loads every version an
 * unfinished saga names, from that table, on `conn` (schema 9 applied). A
 * version that cannot run here (another build's, a row missing or not
 * readable, past ORCH_DEFS_MAX) is logged as an error with its count of
 * sagas and one saga id, and those sagas wait: the start goes on (one bad
 * row must not stop every orchestrator). Returns 0, or PG_ERR_* (pg.h) for
 * a database failure. */
int orch_defs_sync(orch_defs *o, PGconn *conn);

/* orch_defs_current is the id new sagas start under (v[0]'s, set by
 * orch_defs_sync). */
int32_t orch_defs_current(const orch_defs *o);

/* orch_defs_version returns version `def_id`, loading it as
 * orch_defs_plan says (`conn` the caller's, NULL: no read); NULL when it
 * cannot run here or cannot be read now (logged as there). The version is
 * o's: valid until orch_defs_free, never changed. Thread-safe. */
const orch_def_version *orch_defs_version(orch_defs *o, PGconn *conn, int32_t def_id);

/* orch_defs_first_deadline_ms returns the shortest deadline (ms) a new
 * saga's first step has under any version served now (its own deadline_ms,
 * or p's step_timeout_ms); INT64_MAX with no version. Thread-safe. */
int64_t orch_defs_first_deadline_ms(orch_defs *o, const saga_policy *p);

/* orch_defs_plan returns the plan of command `cmd` of version `def_id` and
 * sets *link to its link; a version not loaded yet (another orchestrator
 * stored it after this one started) is read from saga_definitions on
 * `conn` (the caller's) and loaded. Returns NULL when the version cannot
 * run here or cannot be read now (logged, and not read again, for
 * ORCH_DEFS_RETRY_MS per version): the saga waits, leased as it is, for a
 * later try or another orchestratord.
 * Thread-safe. */
const saga_def_cmd *orch_defs_plan(
    orch_defs *o, PGconn *conn, int32_t def_id, saga_command cmd, int *link);

/* orch_defs_builtin returns the text of the built-in order.yaml (static,
 * NUL-terminated). */
const char *orch_defs_builtin(void);

/* orch_defs_free frees what orch_defs_load and the others made; o itself
 * is the caller's. */
void orch_defs_free(orch_defs *o);

#endif
