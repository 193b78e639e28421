/* saga_def_cmd: a step's command, or its compensation, built from the
 * saga's input through the definition's mapping (docs/saga-definitions.md,
 * section 1 "A step's input", section 2 "Third landing"). A plan
 * (saga_def_cmd) is made once per (step, phase) when the definitions are
 * loaded; building a request from it is a few copies per field, with no
 * allocation and no lookup by name, so the engine's cost per command stays
 * that of the hand-written code it replaces. Pure, thread-safe.
 */
#ifndef SAGA_DEF_CMD_H
#define SAGA_DEF_CMD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <protobuf-c/protobuf-c.h>

#include "saga_def.h"

/* SAGA_DEF_CMD_MAX_FIELDS: a request's mapped fields, at most. */
#define SAGA_DEF_CMD_MAX_FIELDS 32
/* SAGA_DEF_REQ_SIZE: the largest request struct (sizeof_message, bytes) a
 * plan accepts; saga_def_req holds one. */
#define SAGA_DEF_REQ_SIZE 512

/* A constant's value for a field of its type (sd_const_value): the member
 * of the field's type is set. */
typedef union saga_def_value {
	int32_t i32;
	int64_t i64;
	uint32_t u32;
	uint64_t u64;
	protobuf_c_boolean b;
	char *s; /* borrowed from the saga_defs */
	ProtobufCBinaryData bin;
} saga_def_value;

/* How one request field is filled: copied from the input field `from`, or
 * (from == NULL) set to the constant `k`, parsed from the definition's
 * text when the plan was made. */
typedef struct saga_def_fill {
	const ProtobufCFieldDescriptor *to;
	const ProtobufCFieldDescriptor *from;
	saga_def_value k;
} saga_def_fill;

/* A plan: the method, its request and how to fill it. Borrows from the
 * saga_defs it was made from (names, constants), which must outlive it. */
typedef struct saga_def_cmd {
	enum method_id method;
	const char *path; /* "/sagas.v1.Stock/ReserveStock" (static) */
	const ProtobufCMessageDescriptor *request;
	const ProtobufCMessageDescriptor *input;
	const ProtobufCFieldDescriptor *saga_id; /* the request's, or NULL */
	const ProtobufCFieldDescriptor *started; /* saga_started_unix_ms, or NULL */
	size_t participant;                      /* index in saga_defs.participants */
	saga_def_fill fill[SAGA_DEF_CMD_MAX_FIELDS];
	size_t nfill;
} saga_def_cmd;

/* Room for one built request, aligned for any of its fields. */
typedef union saga_def_req {
	ProtobufCMessage base;
	max_align_t align;
	unsigned char bytes[SAGA_DEF_REQ_SIZE];
} saga_def_req;

/* saga_def_cmd_make makes the plan of step `step` of type `t` (of the
 * validated `d`): its command (compensation false) or its compensation
 * (true). Returns 0 and fills *out; or -1 with a one-line reason in err
 * (errlen bytes, NUL-terminated): the step has no compensation, the index
 * is out of range, the request is larger than SAGA_DEF_REQ_SIZE or has more
 * than SAGA_DEF_CMD_MAX_FIELDS fields, or a mapping does not fit (which
 * saga_def_validate refuses first). */
int saga_def_cmd_make(const saga_defs *d, const saga_def_type *t, size_t step, bool compensation,
    saga_def_cmd *out, char *err, size_t errlen);

/* saga_def_cmd_build fills *out with the request of plan `c` for the saga
 * `saga_id` started at `started_ms` (Unix ms) whose input is `input` (a
 * message of c->input). Every field not mapped keeps its default. Nothing is
 * copied: *out's strings, bytes and messages point into `input`, `saga_id`
 * and the saga_defs, which must outlive its use (its packing); it needs
 * no freeing. Pure. */
void saga_def_cmd_build(const saga_def_cmd *c, const ProtobufCMessage *input, const char *saga_id,
    int64_t started_ms, saga_def_req *out);

#endif
