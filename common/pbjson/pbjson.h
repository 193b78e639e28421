/* pbjson: proto3's JSON mapping (https://protobuf.dev/programming-guides/proto3/#json),
 * driven by protobuf-c's descriptors, on jansson. Used by the HTTP gateway
 * (gatewayd, docs/protocol.md "The HTTP API").
 *
 * Message -> JSON: every field under its lowerCamelCase JSON name (as
 * protoc's json_name: "saga_id" -> "sagaId"), a field at its default (0,
 * false, "", no bytes, an unset message, an empty repeated field) omitted;
 * int64, uint64 (and their fixed/sint forms) as decimal strings, other
 * integers as numbers; enums by value name ("SAGA_STATE_COMPLETED"), by
 * number when the value is not in the enum; bytes as base64; repeated
 * fields as arrays; messages as objects.
 *
 * JSON -> message: an object whose keys are a field's proto name
 * ("saga_id") or JSON name ("sagaId"), each once; null leaves a field at
 * its default. Integers as numbers (an integral real such as 3.0 too) or
 * decimal strings ("12"), within the field's range; enums by value name or
 * by a number the enum defines; bools as true/false; strings as strings;
 * bytes as base64 (standard or URL-safe, padding optional); messages as
 * objects; repeated fields as arrays. Anything else (an unknown key, a
 * wrong type, a number out of range, a non-integer for an integer field) is
 * refused with an error naming the field's path as the client wrote it
 * ("order.qty", "sagas[2].sagaId").
 *
 * Thread-safe: no state.
 */
#ifndef SAGA_PBJSON_H
#define SAGA_PBJSON_H

#include <stddef.h>

#include <jansson.h>
#include <protobuf-c/protobuf-c.h>

/* The size of an error buffer that holds any pbjson error. */
#define PBJSON_ERR_MAX 512

/* pbjson_json_name writes the JSON name of the proto field name `name`
 * (borrowed) into buf (len bytes, cut when short): underscores dropped, the
 * letter after one upper-cased ("created_unix_ms" -> "createdUnixMs").
 * Returns buf. */
const char *pbjson_json_name(const char *name, char *buf, size_t len);

/* pbjson_to_json converts `msg` (borrowed) to a JSON object as above.
 * Returns a new reference (the caller json_decref's it), or NULL when out
 * of memory or when a string field is not valid UTF-8 (then `err`, len
 * bytes, names the field; `err` may be NULL). */
json_t *pbjson_to_json(const ProtobufCMessage *msg, char *err, size_t len);

/* pbjson_from_json makes a new message of type `desc` from `json`
 * (borrowed; must be an object) as above. Returns the message, malloc'd
 * with every string, array and sub-message it holds (the caller frees it
 * with protobuf_c_message_free_unpacked(msg, NULL)), or NULL with a
 * one-line reason in `err` (len bytes, PBJSON_ERR_MAX is enough) that
 * starts with the field's path ("order.qty: 1.5 is not an integer") or,
 * for a top level that is not an object, "the body: ...". Out of memory
 * is "out of memory". */
ProtobufCMessage *pbjson_from_json(
    const ProtobufCMessageDescriptor *desc, const json_t *json, char *err, size_t len);

/* pbjson_set_text sets the singular scalar or enum field `name` (its proto
 * or JSON name; borrowed) of `msg` (a message from pbjson_from_json or one
 * whose strings are malloc'd or the descriptor's defaults) from the text
 * `text` (borrowed), as a query parameter gives it: integers as decimal
 * text, bools as true/false (or 1/0), enums by value name, by the name
 * without the enum's prefix ("COMPLETED" for SAGA_STATE_COMPLETED) or by
 * number, strings as they are (copied; the old malloc'd value freed).
 * Returns 0, or -1 with a reason in `err` that starts with `name` (an
 * unknown field, a repeated or message field, a bad value). */
int pbjson_set_text(
    ProtobufCMessage *msg, const char *name, const char *text, char *err, size_t len);

#endif
