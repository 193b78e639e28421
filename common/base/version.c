#include "version.h"

#include <string.h>

void version_print(FILE *out, const char *prog)
{
	fprintf(out, "%s %s (commit %s)\n", prog, saga_version, saga_commit);
}

bool version_is_flag(const char *arg)
{
	return arg != NULL && strcmp(arg, "--version") == 0;
}
