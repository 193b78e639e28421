/* gateway_console: the web console's static files (orchestrator/gatewayd/console/),
 * embedded into gatewayd at build time (orchestrator/CMakeLists.txt writes
 * console_files.h: one array per file and the table of their names). */
#include <string.h>

#include "gateway.h"

/* One embedded file. */
typedef struct gw_console_file {
	const char *name; /* "index.html" */
	const char *data; /* its bytes (followed by a NUL) */
	size_t len;       /* without the NUL */
} gw_console_file;

#include "console_files.h"

/* gw_content_type is the Content-Type of a file name by its extension. */
static const char *gw_content_type(const char *name)
{
	static const struct {
		const char *ext, *type;
	} types[] = {
	    {".html", "text/html; charset=utf-8"},
	    {".js", "text/javascript; charset=utf-8"},
	    {".css", "text/css; charset=utf-8"},
	    {".json", "application/json"},
	    {".svg", "image/svg+xml"},
	    {".png", "image/png"},
	    {".ico", "image/x-icon"},
	    {".txt", "text/plain; charset=utf-8"},
	};
	const char *dot = strrchr(name, '.');
	for (size_t i = 0; dot != NULL && i < sizeof types / sizeof types[0]; i++)
		if (strcmp(dot, types[i].ext) == 0)
			return types[i].type;
	return "application/octet-stream";
}

const char *gw_console_find(const char *name, size_t *len, const char **type)
{
	for (size_t i = 0; gw_console_files[i].name != NULL; i++) {
		if (strcmp(gw_console_files[i].name, name) != 0)
			continue;
		*len = gw_console_files[i].len;
		*type = gw_content_type(name);
		return gw_console_files[i].data;
	}
	return NULL;
}
