/* fuzz_parsers: the text parsers that read what a caller sends (valid.h):
 * UUIDs, names, UTF-8, money. Properties: nothing crashes; money that
 * parses formats back to text that parses to the same value, in range; a
 * UUID that passes is 36 bytes; a UTF-8 copy of valid text stays valid and
 * fits. Input: one selector byte, then the text. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "valid.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_input in = {data, size};
	uint8_t sel = fuzz_byte(&in);
	char *s = malloc(in.n + 1);
	if (s == NULL)
		return 0;
	memcpy(s, in.p, in.n);
	s[in.n] = '\0';
	switch (sel % 4) {
	case 0: {
		int64_t v = -1;
		int rc = money_parse(s, sel & 4, &v);
		fuzz_check(rc == 0 || rc == -EINVAL || rc == -ERANGE, "money_parse's return");
		if (rc == 0) {
			fuzz_check(
			    v >= ((sel & 4) ? 0 : 1) && v <= VALID_AMOUNT_MAX, "money in range");
			char buf[32];
			int64_t back = -1;
			fuzz_check(
			    money_parse(money_format(v, buf, sizeof buf), sel & 4, &back) == 0
			        && back == v,
			    "money formats back to itself");
		}
		break;
	}
	case 1:
		if (valid_uuid(s))
			fuzz_check(strlen(s) == VALID_UUID_LEN, "a valid uuid is 36 bytes");
		break;
	case 2:
		if (valid_name(s))
			fuzz_check(strlen(s) >= 1 && strlen(s) <= VALID_NAME_MAX
			        && valid_utf8(s, strlen(s)),
			    "a valid name is 1..64 bytes of UTF-8");
		break;
	default: {
		size_t len = strlen(s);
		bool ok = valid_utf8(s, len);
		char dst[17];
		size_t room = 1 + sel % 16;
		size_t got = valid_utf8_copy(dst, room, s);
		fuzz_check(got < room && dst[got] == '\0', "the copy fits");
		if (ok)
			fuzz_check(valid_utf8(dst, got), "a copy of UTF-8 is UTF-8");
		/* the terminal escaping: UTF-8 with no control byte, whatever
		 * the input, and the length snprintf would give */
		char esc[512];
		size_t n = valid_escape(esc, sizeof esc, s);
		if (n < sizeof esc) {
			fuzz_check(strlen(esc) == n, "the escape's length is returned");
			fuzz_check(valid_utf8(esc, n), "an escape is UTF-8");
			for (size_t i = 0; i < n; i++)
				fuzz_check((unsigned char)esc[i] >= 0x20 && esc[i] != 0x7f,
				    "an escape holds no control byte");
		}
		break;
	}
	}
	free(s);
	return 0;
}
