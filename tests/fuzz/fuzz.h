/* fuzz: what the fuzz targets share (docs/testing.md, "Fuzzing").
 *
 * Every target defines LLVMFuzzerTestOneInput (and may define
 * LLVMFuzzerInitialize). Built with clang and -fsanitize=fuzzer (make fuzz)
 * it is a libFuzzer binary; built otherwise (the ordinary and the asan
 * builds) it is linked with replay.c, whose main runs every file of the
 * corpus and regression folders given to it once, so that the suite runs
 * them at every build.
 */
#ifndef SAGA_FUZZ_H
#define SAGA_FUZZ_H

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* fuzz_check aborts, naming `what`, when `ok` is false: a property every
 * input must keep (a reply that decodes, a code in range). libFuzzer
 * records the input as a crash. */
#define fuzz_check(ok, what)                                                                       \
	do {                                                                                       \
		if (!(ok))                                                                         \
			fuzz_fail(__FILE__, __LINE__, (what));                                     \
	} while (0)

_Noreturn void fuzz_fail(const char *file, int line, const char *what);

/* fuzz_input is a reader over the input bytes: the targets take a few
 * bytes for choices (which method, batch or not) before the payload. */
typedef struct fuzz_input {
	const uint8_t *p;
	size_t n;
} fuzz_input;

/* fuzz_byte takes one byte (0 when none is left). */
uint8_t fuzz_byte(fuzz_input *in);

#endif
