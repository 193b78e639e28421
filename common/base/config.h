/* config: one declarative table of options read in layers (house style):
 * defaults, then a file (`--config FILE` or the table's file env), then the
 * environment, then the command line. Later layers win.
 *
 * A table row names a long flag, an environment variable, a type, a default
 * (as text), bounds for integers and the offset of the field it fills in the
 * caller's struct. Not thread-safe (uses getopt_long); call from main.
 */
#ifndef SAGA_CONFIG_H
#define SAGA_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define CONFIG_STR_MAX 512 /* bytes of a string option, with the NUL */

enum config_type {
	CONFIG_INT,  /* field is int64_t; bounds checked */
	CONFIG_STR,  /* field is char[CONFIG_STR_MAX] */
	CONFIG_BOOL, /* field is bool; a flag on the command line, or
	                true/false/1/0/yes/no in a file or the environment */
};

typedef struct config_opt {
	const char *name; /* long flag without dashes, and the key in a file */
	const char *env;  /* environment variable, or NULL for none */
	enum config_type type;
	const char *def;  /* default as text; NULL means "" / 0 / false */
	int64_t min, max; /* inclusive bounds for CONFIG_INT */
	size_t offset;    /* offsetof(the caller's struct, field) */
	const char *help; /* one line for --help */
	const char *unit; /* e.g. "ms", shown in --help; may be NULL */
} config_opt;

enum {
	CONFIG_DONE_HELP = 1, /* --help or --version was printed: exit 0 */
};

/* config_load fills `target` from the table `opts` (n rows).
 * `usage` is the synopsis line and `summary` a paragraph for --help.
 * `file_env` names the environment variable of a config file (may be NULL);
 * `--config FILE` overrides it. Files hold `name = value` lines, `#` comments.
 * On return *first_arg (if not NULL) is the index of the first positional
 * argument in argv; without it, positional arguments are a usage error.
 * Returns 0; CONFIG_DONE_HELP after printing help (or, for --version, the
 * version line of the first word of `usage`) to stdout; or -EINVAL after
 * printing an error naming the option (and source) to stderr (exit 2). */
int config_load(const config_opt *opts, size_t n, void *target, int argc, char **argv,
    const char *usage, const char *summary, const char *file_env, int *first_arg);

/* config_error prints "PROGRAM: error: " and then `fmt` formatted as printf
 * does (the caller ends it with a newline) to stderr, PROGRAM being the
 * running program's name (stockd, sagactl, ...), so that an error in a log
 * that several daemons share names its daemon. */
void config_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* config_print_help writes the options table to `out` as --help shows it. */
void config_print_help(
    FILE *out, const config_opt *opts, size_t n, const char *usage, const char *summary);

#endif
