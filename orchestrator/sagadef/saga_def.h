/* saga_def: saga definitions as data (docs/saga-definitions.md, section 1).
 * A definition file (YAML 1.2 or JSON) is read with libfyaml into the plain
 * structs below and checked against every rule of "Validation at start":
 * the table of methods (common/authz/methods.h) and protoc-c's descriptors
 * of the input and request messages. Every refusal is one line,
 * "FILE:LINE:COLUMN: PATH: message". Pure but for saga_def_read's file read;
 * orchestratord loads its definitions with it (orchestrator/core/orch_defs.h).
 */
#ifndef SAGA_DEF_H
#define SAGA_DEF_H

#include <stddef.h>
#include <stdint.h>

#include <protobuf-c/protobuf-c.h>

#include "methods.h"
#include "saga_flow.h"

/* SAGA_DEF_FORMAT is the one `format:` this build reads. */
#define SAGA_DEF_FORMAT 1
/* SAGA_DEF_DEFAULT: a deadline or retry value left to the daemon's option
 * (--step-timeout, --backoff-base, --backoff-cap, --attention-after). */
#define SAGA_DEF_DEFAULT (-1)
/* SAGA_DEF_MAX_STEPS: the steps of all types of one file, at most. */
#define SAGA_DEF_MAX_STEPS 64
/* SAGA_DEF_MAX_NAMED: the participants, and the saga types, of one file,
 * at most (each). */
#define SAGA_DEF_MAX_NAMED 64
/* SAGA_DEF_MAX_FILE: a definition file's size in bytes, at most (a
 * definition is a few KB). */
#define SAGA_DEF_MAX_FILE (1u << 20)
/* the longest name (type, step, state, participant, field) accepted */
#define SAGA_DEF_NAME_MAX 64

/* A step's kind (docs/saga-semantics.md, "Terms"). */
enum saga_step_kind {
	SAGA_STEP_COMPENSABLE,
	SAGA_STEP_PIVOT,
	SAGA_STEP_RETRIABLE,
};

/* Where a node was in the file: 1-based line and column. */
typedef struct saga_def_pos {
	int line;
	int column;
} saga_def_pos;

/* The positions a step keeps for its errors (saga_def_step.at). */
enum saga_def_at {
	SAGA_AT_STEP, /* the step's mapping */
	SAGA_AT_NAME,
	SAGA_AT_STATE,
	SAGA_AT_COMPENSATING,
	SAGA_AT_PARTICIPANT,
	SAGA_AT_COMMAND,
	SAGA_AT_COMPENSATION,
	SAGA_AT_KIND,
	SAGA_AT_DEADLINE,
	SAGA_AT_INPUT,
	SAGA_AT_COUNT
};

/* One request field of a command, and where its value comes from: a field
 * of the saga's input message (`from`) or a constant (`constant`, its
 * text); exactly one of the two is set. */
typedef struct saga_def_map {
	char *field;
	char *from;
	char *constant;
	saga_def_pos at;  /* the key */
	saga_def_pos vat; /* the value */
} saga_def_map;

/* A participant: a key of `participants`. */
typedef struct saga_def_participant {
	char *name;    /* "stock" */
	char *service; /* "sagas.v1.Stock" */
	char *urls;    /* the option naming its URL list: "--stock" */
	saga_def_pos at;
	saga_def_pos service_at;
} saga_def_participant;

typedef struct saga_def_step {
	char *name;
	char *group;        /* the group's name, or NULL for a step alone */
	char *state;        /* while it runs; default NAME upper-cased */
	char *compensating; /* while compensated; default NAME_UNDO */
	char *participant;
	enum method_id command;
	enum method_id compensation; /* METHOD_NONE: none */
	enum saga_step_kind kind;
	int64_t deadline_ms;     /* SAGA_DEF_DEFAULT: --step-timeout */
	int64_t retry_base_ms;   /* SAGA_DEF_DEFAULT: --backoff-base */
	int64_t retry_cap_ms;    /* SAGA_DEF_DEFAULT: --backoff-cap */
	int64_t attention_after; /* SAGA_DEF_DEFAULT: --attention-after */
	saga_def_map *input;     /* sorted by field */
	size_t ninput;
	char path[96]; /* "sagas.order.steps[2]" */
	saga_def_pos at[SAGA_AT_COUNT];
} saga_def_step;

typedef struct saga_def_type {
	char *name;      /* "order" */
	char *input;     /* "sagas.v1.Order" */
	char *completed; /* the terminal states' names */
	char *cancelled;
	const ProtobufCMessageDescriptor *input_desc;
	saga_def_step *steps; /* in order; a group's members are consecutive */
	size_t nsteps;
	saga_def_pos at, input_at, completed_at, cancelled_at;
} saga_def_type;

/* A loaded file: its participants and saga types. */
typedef struct saga_defs {
	int format;
	char *file; /* the name errors give */
	saga_def_participant *participants;
	size_t nparticipants;
	saga_def_type *types;
	size_t ntypes;
} saga_defs;

/* saga_def_parse reads a definition from `text` (`len` bytes, need not be
 * NUL-terminated; YAML 1.2 or JSON), named `name` in errors, and checks it
 * (saga_def_validate). Returns 0 and sets *out to a new saga_defs (the
 * caller frees it with saga_defs_free); or returns -1, leaves *out NULL
 * and writes one line "NAME:LINE:COLUMN: PATH: message" (or
 * "NAME:LINE:COLUMN: message" for a syntax error) into err (errlen bytes,
 * truncated, always NUL-terminated when errlen > 0). A second YAML
 * document, a key twice in one mapping, and more than SAGA_DEF_MAX_NAMED
 * participants or saga types are refused. Pure, thread-safe. */
int saga_def_parse(
    const char *text, size_t len, const char *name, saga_defs **out, char *err, size_t errlen);

/* saga_def_read reads the file at `path` whole: *text (malloc'd, the
 * caller frees it; NUL-terminated, *len bytes before the NUL). Returns 0,
 * or -1 with "PATH: is a directory", "PATH: larger than 1 MiB ..." (past
 * SAGA_DEF_MAX_FILE) or "PATH: strerror" in err. */
int saga_def_read(const char *path, char **text, size_t *len, char *err, size_t errlen);

/* saga_def_load is saga_def_parse on the file at `path` (named `path` in
 * errors). A file that cannot be read is an error "PATH: strerror"; one
 * larger than SAGA_DEF_MAX_FILE is "PATH: larger than 1 MiB ...". */
int saga_def_load(const char *path, saga_defs **out, char *err, size_t errlen);

/* saga_def_validate checks a parsed definition against every rule of
 * "Validation at start" (saga_def_parse calls it). Returns 0, or -1 with
 * the first refusal in err as above. It fills each type's input_desc. */
int saga_def_validate(saga_defs *defs, char *err, size_t errlen);

/* saga_def_version writes the SHA-256 of the canonical serialisation of
 * type `t` (a type of a validated saga_defs) into out (32 bytes) and, when
 * hex is not NULL, its lowercase hex into hex (65 bytes, NUL-terminated).
 * The serialisation is of the parsed values (comments, key order, JSON or
 * YAML do not change it). Returns 0, or -1 when out of memory. */
int saga_def_version(
    const saga_defs *defs, const saga_def_type *t, unsigned char out[32], char hex[65]);

/* saga_def_flow fills *out with type `t` (of a validated saga_defs) as a
 * flow of saga_flow_transition (saga_flow.h): per step its kind, whether it
 * has a compensation and a deadline (every step but a retriable one), its
 * own deadline_ms and retry values (0 where the daemon's options apply), its
 * group's number (0, 1, ... in order; -1 alone). The step names are borrowed from `t`,
 * valid while its saga_defs is. Returns 0, or -1 (and *out unusable) when
 * `t` has more than SAGA_FLOW_MAX_STEPS steps or is not a flow that
 * saga_flow_valid accepts (validation refuses those first). */
int saga_def_flow(const saga_def_type *t, saga_flow *out);

/* saga_def_state_name is the state name a saga of type `t` (as flow `f`,
 * from saga_def_flow) has at `pos`: the terminal states' names, else the
 * stage's first step's `state` (forward) or `compensating`; NULL for a
 * position the flow does not have. Borrowed from `t`. The rule: a group's
 * stage is named by its first member (docs/saga-definitions.md). */
const char *saga_def_state_name(
    const saga_def_type *t, const saga_flow *f, const saga_flow_pos *pos);

/* saga_def_table writes type `t`'s state table (a validated saga_defs'
 * type) as Markdown to *out (malloc'd, NUL-terminated, the caller frees):
 * a header, one row per stage forward (in order) and per stage with a
 * compensation compensating (last first), then the terminal states. Each
 * cell is what saga_flow_transition (the engine's own transition) does at
 * that position with every member's success, a definitive refusal of the
 * first member, the step deadline passed, and an operator's cancel (rule
 * 11: refused past the pivot): docs/saga-states.md's table.
 * Returns 0, or -1 (out of memory, or `t` not a valid flow; *out NULL). */
int saga_def_table(const saga_def_type *t, char **out);

/* A link orchestratord has to a participant: the option naming its URL
 * list, without "--" ("stock"), and the service it serves there
 * ("sagas.v1.Stock"; NULL for a link of --links, which serves the
 * service its participant declares). */
typedef struct saga_def_link {
	const char *option;
	const char *service;
} saga_def_link;

/* saga_def_order_links: the links this build's orchestratord has
 * (--stock, --payment, --shipping), in the order of its options. */
#define SAGA_DEF_ORDER_NLINKS 3
extern const saga_def_link saga_def_order_links[SAGA_DEF_ORDER_NLINKS];

/* saga_def_link_of is the index in links (nlinks of them) of participant
 * p's `urls` option, or -1 when none is that option. */
int saga_def_link_of(const saga_def_participant *p, const saga_def_link *links, size_t nlinks);

/* SAGA_DEF_RUN_TYPES: the saga types one file may hold for orchestratord. */
#define SAGA_DEF_RUN_TYPES 16

/* saga_def_runnable checks that this build's orchestratord runs the
 * validated `d` (saga_def_order.c): 1 to SAGA_DEF_RUN_TYPES types, each of
 * any input message of proto/sagas/v1 (the type named `order`, if any,
 * takes sagas.v1.Order, StartSaga's typed input, and is the order saga:
 * its flow, step names, state names and terminal names are the API's
 * SagaState), and every step's participant on
 * one of `links` (nlinks) that serves its service (a link whose service is
 * NULL, one of orchestratord --links, serves any). Returns 0, or -1 with
 * one line in err ("FILE: PATH: why"). Pure. Used by orchestratord at start
 * and by `sagactl definitions check`. */
int saga_def_runnable(
    const saga_defs *d, const saga_def_link *links, size_t nlinks, char *err, size_t errlen);

/* saga_def_input_check checks `in` (n bytes, borrowed), the input a
 * StartSaga gives a saga of type `t` (of a validated saga_defs), and writes
 * its canonical encoding (protobuf-c's packing of the decoded message:
 * fields in number order, defaults omitted) into out (outlen bytes) and
 * its length into *nout, so that one input given twice compares equal byte
 * for byte (rule 6). The rules (docs/saga-definitions.md, "A saga's
 * input"): it decodes as t's input message exactly (valid_pb_exact: no
 * string cut at a NUL byte, no overlong varint, no field given twice),
 * with no field that message does not have; every string is valid UTF-8;
 * every field a step of t maps (`from`) is set: a string 1..64 bytes
 * without control characters (valid_name), an integer of 32 bits 1..10^6
 * and of 64 bits 1..10^15 (the protocol's counts and amounts, valid.h:
 * what the participants take), bytes not empty, a message present, a
 * repeated field not empty; the encoding fits outlen. Returns 0, or -1
 * with one line in err (errlen bytes, NUL-terminated), "invalid
 * input.FIELD: missing", "invalid input.FIELD: must be ..." or "invalid
 * input: ...". Pure, thread-safe. */
int saga_def_input_check(const saga_def_type *t, const uint8_t *in, size_t n, uint8_t *out,
    size_t outlen, size_t *nout, char *err, size_t errlen);

/* saga_def_input_msg is saga_def_input_check on a decoded message `m`
 * (borrowed; of t's input, e.g. from pbjson_from_json), which it does not
 * change. A message of another type is refused "invalid input: not a T". */
int saga_def_input_msg(const saga_def_type *t, const ProtobufCMessage *m, uint8_t *out,
    size_t outlen, size_t *nout, char *err, size_t errlen);

/* saga_def_kind_name is "compensable", "pivot" or "retriable" (static). */
const char *saga_def_kind_name(enum saga_step_kind kind);

/* saga_def_find_participant returns the participant named `name`, or NULL. */
const saga_def_participant *saga_def_find_participant(const saga_defs *defs, const char *name);

/* saga_defs_free frees defs and everything it owns; NULL is allowed. */
void saga_defs_free(saga_defs *defs);

#endif
