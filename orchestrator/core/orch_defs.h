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
	int32_t id;                /* saga_definitions.id; 0: the built-in order
	                              saga of sagas started before schema 9 */
	char hex[65];              /* the order type's version, hex SHA-256 */
	saga_defs *defs;           /* owned */
	const saga_def_type *type; /* the type, in defs */
	saga_flow flow;            /* its flow, with each step's own
	                              deadline_ms and retry (saga_def_flow;
	                              names point into defs) */
	saga_def_cmd (*plans)[2];  /* [step][phase]: each step's command
	                              (SAGA_FLOW_FORWARD) and compensation;
	                              flow.nsteps of them, owned */
	int (*links)[2];           /* [step][phase]: its link (an index of the
	                              names given to orch_defs_load), -1 for
	                              a compensation the step does not have */
} orch_def_version;

typedef struct orch_defs {
	const saga_def_link *links; /* the links it has (option, service),
	                               borrowed; nlinks of them */
	int nlinks;
	char source[PATH_MAX]; /* the file's absolute path, or "built in" */
	char *text;            /* the file's text (stored as the version's body) */
	size_t text_len;
	nng_mtx *mtx; /* guards n, v[] past the file's and failed[] while running */
	size_t n;
	size_t nfile;                       /* v[0 .. nfile-1] are the file's types, in its order:
	                                       new sagas of a type start under its (orch_defs_start) */
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

/* orch_defs_start is the version new sagas of type `type` start under
 * (the file's; its id set by orch_defs_sync), or NULL when the file has no
 * such type. o's: valid until orch_defs_free. Thread-safe. */
const orch_def_version *orch_defs_start(const orch_defs *o, const char *type);

/* orch_defs_version returns version `def_id`, loading it as
 * orch_defs_plan says (`conn` the caller's, NULL: no read); NULL when it
 * cannot run here or cannot be read now (logged as there). The version is
 * o's: valid until orch_defs_free, never changed. Thread-safe. */
const orch_def_version *orch_defs_version(orch_defs *o, PGconn *conn, int32_t def_id);

/* orch_defs_first_deadline_ms returns the shortest deadline (ms) a new
 * saga's first step has under any version served now (its own deadline_ms,
 * or p's step_timeout_ms); INT64_MAX with no version. Thread-safe. */
int64_t orch_defs_first_deadline_ms(orch_defs *o, const saga_policy *p);

/* orch_def_plan returns the plan of step `step`'s command (phase
 * SAGA_FLOW_FORWARD) or compensation in version `v` and sets *link to its
 * link; NULL for a step out of range or a compensation it does not have.
 * The plan is v's. Pure. */
const saga_def_cmd *orch_def_plan(
    const orch_def_version *v, int32_t step, saga_flow_phase phase, int *link);

/* orch_def_pos maps a saga's state name `state` (sagas.state) and its
 * group's `members` to its position in v's flow (docs/saga-definitions.md,
 * section 2: a stage is named by its first member's `state`, or
 * `compensating`; the terminal positions by the type's `completed` and
 * `cancelled`). Returns false for a name v does not have. Pure. */
bool orch_def_pos(
    const orch_def_version *v, const char *state, uint64_t members, saga_flow_pos *out);

/* orch_def_state is the name of position `pos` of v's flow (the inverse of
 * orch_def_pos; borrowed from v), or NULL for a position out of range. */
const char *orch_def_state(const orch_def_version *v, const saga_flow_pos *pos);

/* orch_def_method is the name of the method of the stage at `pos` (its
 * first member's command or compensation: "ReserveStock"; static), or
 * "none" at a terminal position: the label of the metrics and the logs. */
const char *orch_def_method(const orch_def_version *v, const saga_flow_pos *pos);

/* orch_defs_builtin returns the text of the built-in order.yaml (static,
 * NUL-terminated). */
const char *orch_defs_builtin(void);

/* orch_defs_free frees what orch_defs_load and the others made; o itself
 * is the caller's. */
void orch_defs_free(orch_defs *o);

#endif
