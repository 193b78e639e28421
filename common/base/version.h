/* version: what a program, a Health reply and a database say of the build
 * (docs/operations.md, "Upgrading").
 */
#ifndef SAGA_VERSION_H
#define SAGA_VERSION_H

#include <stdbool.h>
#include <stdio.h>

/* The project version ("0.1.0", CMakeLists.txt) and the git commit the
 * build comes from (12 hex digits, "-dirty" when the checkout had
 * uncommitted changes, "unknown" outside git); generated at every build
 * (cmake/version.cmake). Static storage. */
extern const char saga_version[];
extern const char saga_commit[];

/* version_print writes the one line every program answers to --version:
 * "<prog> <version> (commit <commit>)\n", to `out`. */
void version_print(FILE *out, const char *prog);

/* version_is_flag is true when `arg` is "--version" (what every program
 * accepts, exit 0 after version_print). */
bool version_is_flag(const char *arg);

#endif
