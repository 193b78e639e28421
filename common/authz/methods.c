/* methods: the table of methods as data, and its lookup (methods.h). Pure:
 * no I/O, no state. */
#include "methods.h"

#include <string.h>

#define METHOD_IS_BATCH true
#define METHOD_IS_ALONE false

const method_row method_table[METHOD_COUNT] = {
#define METHOD_TABLE_ROW(S, N, r, b, verb, hpath)                                                  \
	[METHOD_##S##_##N] = {METHOD_PATH_OF(S, N), #S, #N, (r), METHOD_IS_##b, (verb), (hpath)},
    METHODS(METHOD_TABLE_ROW)
#undef METHOD_TABLE_ROW
};

enum method_id method_find(const char *path)
{
	if (path == NULL)
		return METHOD_NONE;
	for (int i = 0; i < METHOD_COUNT; i++)
		if (strcmp(method_table[i].path, path) == 0)
			return (enum method_id)i;
	return METHOD_NONE;
}
