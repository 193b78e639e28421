/* saga_def_int: what the parts of saga_def share (not for other folders). */
#ifndef SAGA_DEF_INT_H
#define SAGA_DEF_INT_H

#include <stdbool.h>

#include "saga_def.h"

/* sd_err writes "FILE:LINE:COLUMN: PATH: message" into err (errlen bytes,
 * truncated, NUL-terminated); path may be NULL (no "PATH: "). */
void sd_err(char *err, size_t errlen, const char *file, saga_def_pos at, const char *path,
    const char *fmt, ...) __attribute__((format(printf, 6, 7)));

/* sd_lower_name is true when s matches [a-z][a-z0-9_]* and is at most
 * SAGA_DEF_NAME_MAX bytes; sd_upper_name the same for [A-Z][A-Z0-9_]*. */
bool sd_lower_name(const char *s);
bool sd_upper_name(const char *s);

/* sd_message_find returns the descriptor of the project's message whose
 * full name is `name` ("sagas.v1.Order"), or NULL. */
const ProtobufCMessageDescriptor *sd_message_find(const char *name);

/* sd_request_of returns the request message of method `id`, or NULL. */
const ProtobufCMessageDescriptor *sd_request_of(enum method_id id);

#endif
