#define _GNU_SOURCE /* program_invocation_short_name */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "version.h"

void config_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "%s: error: ", program_invocation_short_name);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
}

/* config_set parses `value` into the field of row `o`; `source` names where
 * the value came from for the error message. */
static int config_set(const config_opt *o, void *target, const char *value, const char *source)
{
	char *field = (char *)target + o->offset;
	switch (o->type) {
	case CONFIG_INT: {
		char *end = NULL;
		errno = 0;
		long long v = strtoll(value, &end, 10);
		/* strtoll also takes leading white space and a '+': a value is
		 * an optional '-' and digits, nothing else */
		bool plain = value[0] == '-' ? isdigit((unsigned char)value[1])
		                             : isdigit((unsigned char)value[0]);
		if (errno == ERANGE && plain && *end == '\0') {
			config_error("invalid value for %s (from %s): %s is outside %" PRId64
			             "..%" PRId64 "\n",
			    o->name, source, value, o->min, o->max);
			return -EINVAL;
		}
		if (errno != 0 || end == value || *end != '\0' || !plain) {
			config_error("invalid value for %s (from %s): \"%s\" is not an integer\n",
			    o->name, source, value);
			return -EINVAL;
		}
		if (v < o->min || v > o->max) {
			config_error("invalid value for %s (from %s): %lld is outside %" PRId64
			             "..%" PRId64 "\n",
			    o->name, source, v, o->min, o->max);
			return -EINVAL;
		}
		*(int64_t *)(void *)field = v;
		return 0;
	}
	case CONFIG_STR:
		if (strlen(value) >= CONFIG_STR_MAX) {
			config_error("invalid value for %s (from %s): longer than %d bytes\n",
			    o->name, source, CONFIG_STR_MAX - 1);
			return -EINVAL;
		}
		strcpy(field, value);
		return 0;
	case CONFIG_BOOL:
		if (!strcmp(value, "1") || !strcmp(value, "true") || !strcmp(value, "yes")
		    || !strcmp(value, "on")) {
			*(bool *)(void *)field = true;
		} else if (!strcmp(value, "0") || !strcmp(value, "false") || !strcmp(value, "no")
		    || !strcmp(value, "off") || !strcmp(value, "")) {
			*(bool *)(void *)field = false;
		} else {
			config_error("invalid value for %s (from %s): \"%s\" is not a boolean\n",
			    o->name, source, value);
			return -EINVAL;
		}
		return 0;
	}
	return -EINVAL;
}

static const config_opt *config_find(const config_opt *opts, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(opts[i].name, name) == 0)
			return &opts[i];
	return NULL;
}

static char *config_trim(char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	char *e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\n' || e[-1] == '\r'))
		*--e = '\0';
	return s;
}

static int config_read_file(const config_opt *opts, size_t n, void *target, const char *path)
{
	FILE *f = fopen(path, "r");
	if (f == NULL) {
		config_error("could not open config file \"%s\": %s\n", path, strerror(errno));
		return -EINVAL;
	}
	struct stat st;
	if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
		config_error("could not read config file \"%s\": a directory\n", path);
		fclose(f);
		return -EINVAL;
	}
	char line[CONFIG_STR_MAX + 128];
	int lineno = 0, rc = 0;
	while (rc == 0 && fgets(line, sizeof line, f) != NULL) {
		lineno++;
		size_t len = strlen(line);
		if (len == sizeof line - 1 && line[len - 1] != '\n' && !feof(f)) {
			config_error(
			    "%s:%d: line longer than %zu bytes\n", path, lineno, sizeof line - 2);
			rc = -EINVAL;
			break;
		}
		char *s = line;
		if (lineno == 1 && (unsigned char)s[0] == 0xEF && (unsigned char)s[1] == 0xBB
		    && (unsigned char)s[2] == 0xBF)
			s += 3; /* a UTF-8 byte order mark, as some editors write */
		s = config_trim(s);
		if (*s == '\0' || *s == '#')
			continue;
		char *eq = strchr(s, '=');
		if (eq == NULL) {
			config_error("%s:%d: expected name = value\n", path, lineno);
			rc = -EINVAL;
			break;
		}
		*eq = '\0';
		char *key = config_trim(s), *val = config_trim(eq + 1);
		const config_opt *o = config_find(opts, n, key);
		if (o == NULL) {
			config_error("%s:%d: unknown option \"%s\"\n", path, lineno, key);
			rc = -EINVAL;
			break;
		}
		char src[64];
		snprintf(src, sizeof src, "%.40s:%d", path, lineno);
		rc = config_set(o, target, val, src);
	}
	fclose(f);
	return rc;
}

void config_print_help(
    FILE *out, const config_opt *opts, size_t n, const char *usage, const char *summary)
{
	fprintf(out, "usage: %s\n\n%s\n\noptions:\n", usage, summary);
	for (size_t i = 0; i < n; i++) {
		const config_opt *o = &opts[i];
		char flag[96];
		if (o->type == CONFIG_BOOL)
			snprintf(flag, sizeof flag, "--%s", o->name);
		else
			snprintf(flag, sizeof flag, "--%s %s", o->name,
			    o->unit ? o->unit : (o->type == CONFIG_INT ? "N" : "TEXT"));
		fprintf(out, "  %-30s %s", flag, o->help);
		if (o->type == CONFIG_INT && o->def && *o->def)
			fprintf(
			    out, " (%" PRId64 "..%" PRId64 ", default %s)", o->min, o->max, o->def);
		else if (o->def && *o->def)
			fprintf(out, " (default %s)", o->def);
		if (o->env)
			fprintf(out, " [env %s]", o->env);
		fputc('\n', out);
	}
	fprintf(out, "  %-30s %s\n", "--config FILE", "read name = value lines from FILE");
	fprintf(out, "  %-30s %s\n", "-h, --help", "show this help and exit");
	fprintf(out, "  %-30s %s\n", "--version", "show the version and commit and exit");
}

/* config_ambiguous says on stderr, and returns true, when the word `bad`
 * ("--i" or "--i=x") is a prefix of two or more of the long options `lo`
 * (ended by a NULL name): "ambiguous option "--i": --id or --input". */
static bool config_ambiguous(const struct option *lo, const char *bad)
{
	if (strncmp(bad, "--", 2) != 0)
		return false;
	size_t len = strcspn(bad + 2, "=");
	if (len == 0)
		return false;
	char names[256] = "";
	int hits = 0;
	for (const struct option *o = lo; o->name != NULL; o++) {
		if (strncmp(o->name, bad + 2, len) != 0)
			continue;
		size_t used = strlen(names);
		snprintf(
		    names + used, sizeof names - used, "%s--%s", hits > 0 ? " or " : "", o->name);
		hits++;
	}
	if (hits < 2)
		return false;
	config_error("ambiguous option \"%.*s\": %s\n", (int)(len + 2), bad, names);
	return true;
}

/* config_apply_argv applies the command line `argv` (`argc` words) to
 * `target` by the `n` options `opts` (config_load's layer 4), leaving optind
 * at the first word that is not an option. Returns 0, -EINVAL (said on
 * stderr) or -ENOMEM. */
static int config_apply_argv(const config_opt *opts, size_t n, void *target, int argc, char **argv)
{
	struct option *lo = calloc(n + 3, sizeof *lo);
	if (lo == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		lo[i].name = opts[i].name;
		lo[i].has_arg = opts[i].type == CONFIG_BOOL ? optional_argument : required_argument;
		lo[i].val = 256 + (int)i;
	}
	lo[n].name = "config";
	lo[n].has_arg = required_argument;
	lo[n].val = 255;
	lo[n + 1].name = "help";
	lo[n + 1].val = 'h';
	int rc = 0;
	optind = 1;
	opterr = 0;
	for (;;) {
		int idx = 0;
		int c = getopt_long(argc, argv, "h", lo, &idx);
		if (c == -1)
			break;
		if (c == 255) {
			/* read above only when spelled in full: getopt also takes
			 * --conf and --config's other prefixes */
			if (strcmp(argv[optind - 1], "--config") != 0
			    && strncmp(argv[optind - 1], "--config=", 9) != 0
			    && !(optind >= 2 && strcmp(argv[optind - 2], "--config") == 0)) {
				config_error(
				    "option --config must be spelled in full (--config FILE)\n");
				rc = -EINVAL;
				break;
			}
			continue;
		}
		if (c == '?' || c == ':') {
			const char *bad = argv[optind - 1];
			if (optopt >= 256 && (size_t)(optopt - 256) < n)
				config_error(
				    "option --%s needs a value\n", opts[optopt - 256].name);
			else if (optopt == 255)
				config_error("option --config needs a value\n");
			else if (!config_ambiguous(lo, bad))
				config_error("unknown option \"%s\"\n", bad);
			rc = -EINVAL;
			break;
		}
		if (c >= 256) {
			const config_opt *o = &opts[c - 256];
			const char *v = optarg;
			if (o->type == CONFIG_BOOL && v == NULL)
				v = "true";
			char src[80];
			snprintf(src, sizeof src, "--%s", o->name);
			if (config_set(o, target, v, src) != 0) {
				rc = -EINVAL;
				break;
			}
		}
	}
	free(lo);
	return rc;
}

int config_load(const config_opt *opts, size_t n, void *target, int argc, char **argv,
    const char *usage, const char *summary, const char *file_env, int *first_arg)
{
	/* layer 1: defaults */
	for (size_t i = 0; i < n; i++) {
		const char *d = opts[i].def ? opts[i].def : (opts[i].type == CONFIG_STR ? "" : "0");
		if (config_set(&opts[i], target, d, "default") != 0)
			return -EINVAL; /* a bad table is a programmer error */
	}
	/* the file and --help are found before the other flags are applied */
	const char *file = file_env ? getenv(file_env) : NULL;
	int file_flags = 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			config_print_help(stdout, opts, n, usage, summary);
			return CONFIG_DONE_HELP;
		}
		if (version_is_flag(argv[i])) {
			/* the program's name is the first word of its usage */
			int len = (int)strcspn(usage, " ");
			char prog[64];
			snprintf(prog, sizeof prog, "%.*s", len, usage);
			version_print(stdout, prog);
			return CONFIG_DONE_HELP;
		}
		if (!strcmp(argv[i], "--"))
			break;
		if (!strcmp(argv[i], "--config") && i + 1 < argc)
			file = argv[i + 1];
		else if (!strncmp(argv[i], "--config=", 9))
			file = argv[i] + 9;
		else
			continue;
		if (*file == '\0') {
			config_error("option --config needs a value\n");
			return -EINVAL;
		}
		if (file_flags++ > 0) {
			config_error("option --config given more than once\n");
			return -EINVAL;
		}
	}
	/* layer 2: file */
	if (file && *file && config_read_file(opts, n, target, file) != 0)
		return -EINVAL;
	/* layer 3: environment */
	for (size_t i = 0; i < n; i++) {
		const char *v = opts[i].env ? getenv(opts[i].env) : NULL;
		if (v != NULL && config_set(&opts[i], target, v, opts[i].env) != 0)
			return -EINVAL;
	}
	/* layer 4: command line */
	int rc = config_apply_argv(opts, n, target, argc, argv);
	if (rc != 0)
		return rc;
	if (first_arg != NULL) {
		*first_arg = optind;
	} else if (optind < argc) {
		config_error("unexpected argument \"%s\"\n", argv[optind]);
		return -EINVAL;
	}
	return 0;
}
