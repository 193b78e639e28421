#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "fuzz.h"

/* stderr as it was before libFuzzer closed it (-close_fd_mask, which
 * quiets what the code under test prints): where fuzz_fail writes */
static int fuzz_err_fd = 2;

__attribute__((constructor)) static void fuzz_keep_stderr(void)
{
	int fd = dup(2);
	if (fd >= 0)
		fuzz_err_fd = fd;
}

void fuzz_fail(const char *file, int line, const char *what)
{
	dprintf(fuzz_err_fd, "%s:%d: fuzz property broken: %s\n", file, line, what);
	abort();
}

uint8_t fuzz_byte(fuzz_input *in)
{
	if (in->n == 0)
		return 0;
	in->n--;
	return *in->p++;
}
