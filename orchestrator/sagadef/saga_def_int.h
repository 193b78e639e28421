/* saga_def_int: what the parts of saga_def share (not for other folders). */
#ifndef SAGA_DEF_INT_H
#define SAGA_DEF_INT_H

#include <libfyaml.h>
#include <stdbool.h>
#include <stdint.h>

#include "saga_def.h"
#include "saga_def_cmd.h"

/* A walk of one document: the name errors give, where they go, and the
 * definitions being filled. */
typedef struct sd_ctx {
	const char *file;
	char *err;
	size_t errlen;
	saga_defs *d;
} sd_ctx;

/* sd_err writes "FILE:LINE:COLUMN: PATH: message" into err (errlen bytes,
 * truncated, NUL-terminated); path may be NULL (no "PATH: "). */
void sd_err(char *err, size_t errlen, const char *file, saga_def_pos at, const char *path,
    const char *fmt, ...) __attribute__((format(printf, 6, 7)));

/* sd_refuse writes a message of no position (orchestratord's refusals of
 * a valid file, a plan's errors) into err as sd_err does; returns -1. */
int sd_refuse(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* sd_lower_name is true when s matches [a-z][a-z0-9_]* and is at most
 * SAGA_DEF_NAME_MAX bytes; sd_upper_name the same for [A-Z][A-Z0-9_]*. */
bool sd_lower_name(const char *s);
bool sd_upper_name(const char *s);

/* ---- saga_def_node.c: the walk's helpers; each error is written into c's
 * err as by sd_err, at the node's position (sd_pos), and -1 returned ---- */

/* sd_key_of: the key whose value is the node n in its parent mapping, or
 * NULL (the root, a sequence's item). */
struct fy_node *sd_key_of(struct fy_node *n);
/* sd_pos: a node's position (1:1 when it has none). */
saga_def_pos sd_pos(struct fy_node *n);
/* sd_fail: the error msg at node n, under `path` (may be NULL). */
int sd_fail(sd_ctx *c, struct fy_node *n, const char *path, const char *msg);
/* sd_dup: "duplicate key" at key k. */
int sd_dup(sd_ctx *c, struct fy_node *k);
/* sd_oom: "out of memory" at 1:1. */
int sd_oom(sd_ctx *c);
/* sd_keys checks that `map` is a mapping whose keys are all in `keys`
 * (NULL-terminated, at most 32), each at most once, and sets vals[i] to the
 * value of keys[i] (NULL when absent). Returns 0 or -1. */
int sd_keys(sd_ctx *c, struct fy_node *map, const char *path, const char *const *keys,
    struct fy_node **vals);
/* sd_str duplicates the scalar `n` into *out (malloc'd, the caller's); a
 * NULL node is "missing" (at `parent`) when required, else *out is NULL. */
int sd_str(sd_ctx *c, struct fy_node *n, struct fy_node *parent, const char *path, bool required,
    char **out);
/* sd_int_or reads a positive integer (at most 10^12) from the scalar n;
 * `what` is the error's text. sd_int: with "a positive integer expected". */
int sd_int_or(sd_ctx *c, struct fy_node *n, const char *path, int64_t *out, const char *what);
int sd_int(sd_ctx *c, struct fy_node *n, const char *path, int64_t *out);
/* sd_upper: NAME upper-cased with `suffix` appended (malloc'd), or NULL. */
char *sd_upper(const char *name, const char *suffix);

/* sd_root walks the document's root mapping into c->d (saga_def_parse.c).
 * Returns 0 or -1 with the error. */
int sd_root(sd_ctx *c, struct fy_node *root);

/* sd_message_find returns the descriptor of the project's message whose
 * full name is `name` ("sagas.v1.Order"), or NULL. */
const ProtobufCMessageDescriptor *sd_message_find(const char *name);

/* sd_engine_field: a request field the engine sets itself (saga_id,
 * saga_started_unix_ms), which a mapping may not name. */
bool sd_engine_field(const char *name);

/* How a constant's text fits a field: it does, it is not of the field's
 * kind (a word for an int32), or it is a number out of the type's range. */
enum sd_fit { SD_FITS, SD_NOT_A, SD_RANGE };

/* sd_const_value reads a constant's text for a field of f's type: the one
 * reading the validation judges and the plans send (saga_def_cmd.c). A
 * string or bytes is `text` itself (borrowed); a bool "true" or "false";
 * a number whole and decimal, nothing around it, an optional sign ("-" out
 * of an unsigned type's range). Returns how it fits, and on SD_FITS sets
 * the member of *out (may be NULL) of f's type. Repeated fields, messages,
 * enums, floats take no constant (SD_NOT_A). */
enum sd_fit sd_const_value(const ProtobufCFieldDescriptor *f, char *text, saga_def_value *out);

/* sd_same_type: fields a and b hold the same kind of value (type, label,
 * message or enum type), so an input field may fill a request field. */
bool sd_same_type(const ProtobufCFieldDescriptor *a, const ProtobufCFieldDescriptor *b);

/* sd_map_of: step s's mapping of request field `field`, or NULL. */
const saga_def_map *sd_map_of(const saga_def_step *s, const char *field);

/* sd_request_of returns the request message of method `id`, or NULL. */
const ProtobufCMessageDescriptor *sd_request_of(enum method_id id);

/* A growing text: `p` malloc'd (the owner frees it), `n` bytes used of
 * `cap`; `oom` once an allocation failed, after which sd_add does nothing. */
typedef struct sd_buf {
	char *p;
	size_t n, cap;
	bool oom;
} sd_buf;

/* sd_add appends printf(fmt, ...) to b (NUL-terminated), growing it; on
 * failure sets b->oom (the text so far stays). */
void sd_add(sd_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
