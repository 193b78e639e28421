/* valid: input validation at the edge, and money text (saga-semantics.md,
 * "Money and input"). Every function is pure and thread-safe. */
#ifndef SAGA_VALID_H
#define SAGA_VALID_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <protobuf-c/protobuf-c.h>

#define VALID_NAME_MAX   64                 /* bytes, for sku and customer */
#define VALID_QTY_MAX    1000000            /* units */
#define VALID_AMOUNT_MAX 1000000000000000LL /* minor units (10^15) */
#define VALID_UUID_LEN   36                 /* canonical text, without the NUL */

/* valid_uuid is true when `s` is a canonical lowercase UUID (36 chars,
 * 8-4-4-4-12 hex digits). */
bool valid_uuid(const char *s);

/* valid_name is true when `s` is 1..VALID_NAME_MAX bytes of valid UTF-8 with
 * no control characters, C0 or C1 (used for sku and customer). */
bool valid_name(const char *s);

/* valid_utf8 is true when the `len` bytes at `s` are valid UTF-8 (RFC 3629:
 * no overlongs, no surrogates, nothing past U+10FFFF). */
bool valid_utf8(const char *s, size_t len);

/* valid_utf8_copy copies into `dst` (`size` bytes, >= 1) the longest
 * prefix of the string `src` that fits with its NUL and does not end inside
 * a multi-byte character, so that a text cut to fit (an error message, a
 * reason) stays valid UTF-8: the one place where texts for the wire, and
 * texts from a peer, are cut (a protobuf string must be UTF-8; Python's
 * decoder rejects the whole reply otherwise). A `src` that is not UTF-8
 * keeps its ASCII and has every other byte as '?'. Returns the bytes copied
 * (without the NUL). */
size_t valid_utf8_copy(char *dst, size_t size, const char *src);

/* money_parse reads a decimal amount in major units with at most two
 * fraction digits ("12", "12.5", "12.50") into minor units (*out, e.g. 1250).
 * Strict: no sign, no exponent, no spaces, no more than two decimals, at
 * least one digit before the point, result in 1..VALID_AMOUNT_MAX unless
 * `allow_zero` (then 0 is accepted too).
 * Returns 0, or -EINVAL for bad text, -ERANGE for an out-of-range value. */
int money_parse(const char *text, bool allow_zero, int64_t *out);

/* money_format writes minor units as "123.45" (negative as "-1.05") into
 * buf (at least 32 bytes). Returns buf. */
char *money_format(int64_t minor, char *buf, size_t len);

/* valid_pb_exact is true when `msg`, just unpacked from `wire_len` bytes,
 * packs back to exactly that many bytes. A string with a NUL byte inside is
 * cut short by protobuf-c's unpacking ("A1\0x" reads as "A1"), overlong
 * varints shrink: both are refused this way instead of applied as something
 * the sender did not write. Encoders of every language produce the
 * canonical form, and unknown fields are kept, so newer clients pass. */
bool valid_pb_exact(const ProtobufCMessage *msg, size_t wire_len);

/* valid_pb_nesting is true unless the protobuf wire bytes `buf` (len bytes)
 * nest the length-delimited field number `field` more than `max_depth`
 * levels deep (a message inside the message inside ... the top one), read
 * without unpacking, with a recursion bounded by max_depth. protobuf-c's
 * unpacker recurses once per level of a recursive message (RequestEnvelope
 * .calls, ReplyEnvelope.replies), so a frame of 30 KB nesting 9,000 levels
 * overflowed the stack of the thread decoding it: callers check this first
 * and refuse the frame. Malformed bytes pass (the unpacker refuses them). */
bool valid_pb_nesting(const uint8_t *buf, size_t len, uint32_t field, int max_depth);

/* saga_id_new writes a new random (version 4) UUID, canonical lowercase, into
 * out (at least 37 bytes). Uses libuuid. */
void saga_id_new(char out[VALID_UUID_LEN + 1]);

/* What a payload refused by valid_pb_exact may have done wrong, for the
 * error message: "... not a canonical encoding " VALID_CANONICAL_HINT. */
#define VALID_CANONICAL_HINT                                                                       \
	"(a NUL byte in a string, a field sent twice or with its default value, an "               \
	"overlong number?)"

#endif
