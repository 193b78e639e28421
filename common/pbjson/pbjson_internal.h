/* pbjson_internal: what pbjson.c (message -> JSON) and pbjson_parse.c
 * (JSON -> message) share and no other module may use. */
#ifndef SAGA_PBJSON_INTERNAL_H
#define SAGA_PBJSON_INTERNAL_H

#include <protobuf-c/protobuf-c.h>
#include <stddef.h>

/* the deepest nesting of messages followed (the orchestrator's is 3) */
#define PBJSON_DEPTH_MAX 32
/* the longest path kept for an error */
#define PBJSON_PATH_MAX 256

/* pbjson_err writes "path: reason" (or just the reason with no path). */
void pbjson_err(char *err, size_t len, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* pbjson_path_join writes a + sep + b into dst (PBJSON_PATH_MAX bytes, cut
 * when long); sep is left out when a is empty and sep is ".". */
void pbjson_path_join(char *dst, const char *a, const char *sep, const char *b);

/* pbjson_field_size is the bytes one value of type `t` takes in a message. */
size_t pbjson_field_size(ProtobufCType t);

/* pbjson_field_at is the address of field `f`'s storage in `msg`. */
void *pbjson_field_at(const ProtobufCMessage *msg, const ProtobufCFieldDescriptor *f);

#endif
