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

/* valid_name is true when `s` is a name that shows as what it is (sku and
 * customer; saga-semantics.md, "Money and input"): 1..VALID_NAME_MAX bytes
 * of valid UTF-8 with no control character (C0, DEL, C1), no bidirectional
 * formatting character (Unicode's Bidi_Control: U+061C, U+200E, U+200F,
 * U+202A..U+202E, U+2066..U+2069, which reorder what is shown: "gnp.exe"
 * shown as "exe.png") and at least one character that shows something
 * (valid_visible), no character that shows nothing anywhere in it
 * (Default_Ignorable_Code_Point: zero-width spaces and joiners, soft hyphen,
 * variation selectors, tags...) and no line or paragraph separator, and in
 * Unicode's NFC (one spelling of what shows alike). NULL is false. Every
 * caller refuses with the one message VALID_NAME_RULE. */
bool valid_name(const char *s);

/* What valid_name asks, for error messages ("invalid sku: must be "
 * VALID_NAME_RULE). */
#define VALID_NAME_RULE                                                                            \
	"1..64 bytes of UTF-8 with a visible character and no control or bidirectional "           \
	"formatting characters, no invisible characters, in Unicode's composed form (NFC)"

/* valid_note is true when `s` is a line of free text an operator writes (a
 * reason kept in the audit trail and shown in logs, terminals and the
 * console): 1..`max` bytes of UTF-8 with a visible character (valid_visible),
 * no control character (C0, a tab too, DEL, C1), no bidirectional control,
 * no line or paragraph separator. Spaces are fine. */
bool valid_note(const char *s, size_t max);
#define VALID_NOTE_RULE                                                                            \
	"printable UTF-8 on one line with a visible character (no control, bidirectional or "      \
	"line-separator characters)"

/* valid_visible is true when code point `uc` shows something on its own:
 * not white space (White_Space), not a default-ignorable one (zero-width
 * spaces and joiners U+200B..U+200D, U+2060, U+FEFF, variation selectors,
 * Hangul fillers, tags...), not a combining mark (general category M,
 * drawn on the character before it), not U+2800 (a blank braille
 * pattern). Unicode properties from libunistring. */
bool valid_visible(uint32_t uc);

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

/* valid_escape writes the string `src` into `dst` (`size` bytes; nothing
 * when size is 0, else always NUL-terminated) as text that a terminal
 * shows as it is: the one function behind every human-readable output of
 * a text that came from elsewhere (a server's reason or message, a name:
 * sagactl's tables and lines). Escaped (shown here as printed): a
 * backslash doubled, TAB, LF and CR as \t, \n and \r, every other C0
 * control and DEL as \xNN (hex), a C1 control (U+0080..U+009F), a
 * bidirectional control (Bidi_Control: U+061C, U+200E, U+200F,
 * U+202A..U+202E, U+2066..U+2069) and U+2028, U+2029 as \uXXXX, a byte
 * that is not part of well-formed UTF-8 as \xNN. Everything else is copied. Returns the length of
 * the whole escaped text (without the NUL), as snprintf does: the copy was cut (at a character's
 * edge) when it is >= size. */
size_t valid_escape(char *dst, size_t size, const char *src);

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
