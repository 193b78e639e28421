/* config_load's integers and its error lines (common/base/config.c): an integer
 * is an optional '-' and digits with nothing around them, from the command
 * line and the environment alike (strtoll alone would take " 5" and "+5");
 * a file's values are trimmed first; every error line starts with the
 * program's name, and nothing is filled in from a refused value. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "config.h"

typedef struct opts {
	int64_t n;
} opts;

static const config_opt table[] = {
    {"n", "TEST_CONFIG_N", CONFIG_INT, "7", -100, 100, offsetof(opts, n), "a number", NULL},
};

/* load_argv runs config_load on argv (argc entries, argv[0] the program)
 * with stderr captured into err (at most len bytes); returns its result,
 * with *out filled */
static int load_argv(int argc, char **argv, opts *out, char *err, size_t len)
{
	fflush(stderr);
	int saved = dup(2);
	FILE *tmp = tmpfile();
	assert_non_null(tmp);
	dup2(fileno(tmp), 2);
	memset(out, 0, sizeof *out);
	int rc = config_load(table, 1, out, argc, argv, "usage", "summary", NULL, NULL);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	rewind(tmp);
	size_t got = fread(err, 1, len - 1, tmp);
	err[got] = '\0';
	fclose(tmp);
	return rc;
}

/* load runs config_load with `--n=ARG` (arg NULL: no argument) */
static int load(const char *arg, opts *out, char *err, size_t len)
{
	char a0[] = "test_config", a1[64];
	char *argv[] = {a0, a1, NULL};
	int argc = 1;
	if (arg != NULL) {
		snprintf(a1, sizeof a1, "--n=%s", arg);
		argc = 2;
	}
	return load_argv(argc, argv, out, err, len);
}

/* load_file writes `text` to a temporary file and loads it with
 * `flag` ("--config" as its own word, or another spelling) */
static int load_file(
    const char *text, const char *flag, opts *out, char *err, size_t len, char path[64])
{
	snprintf(path, 64, "/tmp/test_config.XXXXXX");
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	char a0[] = "test_config", a1[80], a2[64];
	snprintf(a1, sizeof a1, "%s", flag);
	snprintf(a2, sizeof a2, "%s", path);
	char *argv[] = {a0, a1, a2, NULL};
	int rc = load_argv(3, argv, out, err, len);
	unlink(path);
	return rc;
}

static void test_plain_integers(void **st)
{
	(void)st;
	opts o;
	char err[512];
	const struct {
		const char *in;
		int64_t want;
	} ok[] = {{"5", 5}, {"-3", -3}, {"0", 0}, {"100", 100}, {"-100", -100}, {"007", 7}};
	for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
		assert_int_equal(load(ok[i].in, &o, err, sizeof err), 0);
		assert_int_equal(o.n, ok[i].want);
		assert_string_equal(err, "");
	}
	assert_int_equal(load(NULL, &o, err, sizeof err), 0);
	assert_int_equal(o.n, 7); /* the default */
}

static void test_not_integers(void **st)
{
	(void)st;
	opts o;
	char err[512], want[256];
	const char *bad[] = {" 5", "+5", "5 ", "", "-", "--5", "0x5", "5.0", "1e2", "\t5", "- 5"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		assert_int_equal(load(bad[i], &o, err, sizeof err), -EINVAL);
		snprintf(want, sizeof want,
		    "test_config: error: invalid value for n (from --n): \"%s\" is not an "
		    "integer\n",
		    bad[i]);
		assert_string_equal(err, want);
	}
	assert_int_equal(load("99999999999999999999", &o, err, sizeof err), -EINVAL);
	assert_string_equal(err,
	    "test_config: error: invalid value for n (from --n): "
	    "99999999999999999999 is outside -100..100\n");
}

static void test_out_of_range(void **st)
{
	(void)st;
	opts o;
	char err[512];
	assert_int_equal(load("101", &o, err, sizeof err), -EINVAL);
	assert_string_equal(
	    err, "test_config: error: invalid value for n (from --n): 101 is outside -100..100\n");
}

static void test_environment_too(void **st)
{
	(void)st;
	opts o;
	char err[512];
	setenv("TEST_CONFIG_N", " 3", 1);
	assert_int_equal(load(NULL, &o, err, sizeof err), -EINVAL);
	assert_string_equal(err,
	    "test_config: error: invalid value for n (from TEST_CONFIG_N): "
	    "\" 3\" is not an integer\n");
	setenv("TEST_CONFIG_N", "-4", 1);
	assert_int_equal(load(NULL, &o, err, sizeof err), 0);
	assert_int_equal(o.n, -4);
	unsetenv("TEST_CONFIG_N");
}

static void test_files(void **st)
{
	(void)st;
	opts o;
	char err[512], path[64], want[256];
	/* values are trimmed, comments and blank lines skipped, a BOM too */
	assert_int_equal(
	    load_file("\xef\xbb\xbf# c\n\n  n =  12 \n", "--config", &o, err, sizeof err, path), 0);
	assert_int_equal(o.n, 12);
	assert_string_equal(err, "");
	/* the line and the file are named */
	assert_int_equal(
	    load_file("# c\nn = 200\n", "--config", &o, err, sizeof err, path), -EINVAL);
	snprintf(want, sizeof want,
	    "test_config: error: invalid value for n (from %s:2): 200 is outside -100..100\n",
	    path);
	assert_string_equal(err, want);
	/* a line longer than the buffer is refused, not read as two lines */
	char longline[1024];
	memset(longline, 'x', sizeof longline);
	memcpy(longline, "# ", 2);
	snprintf(longline + 900, sizeof longline - 900, " n = 3\n");
	assert_int_equal(load_file(longline, "--config", &o, err, sizeof err, path), -EINVAL);
	assert_non_null(strstr(err, ":1: line longer than"));
	/* getopt would take --conf for --config, but the file is read only
	 * when the flag is spelled in full */
	assert_int_equal(load_file("n = 5\n", "--conf", &o, err, sizeof err, path), -EINVAL);
	assert_string_equal(
	    err, "test_config: error: option --config must be spelled in full (--config FILE)\n");
	/* a directory */
	char a0[] = "test_config", a1[] = "--config", a2[] = "/tmp";
	char *argv[] = {a0, a1, a2, NULL};
	assert_int_equal(load_argv(3, argv, &o, err, sizeof err), -EINVAL);
	assert_string_equal(
	    err, "test_config: error: could not read config file \"/tmp\": a directory\n");
	/* no value */
	char *argv2[] = {a0, a1, NULL};
	assert_int_equal(load_argv(2, argv2, &o, err, sizeof err), -EINVAL);
	assert_string_equal(err, "test_config: error: option --config needs a value\n");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_plain_integers),
	    cmocka_unit_test(test_not_integers),
	    cmocka_unit_test(test_out_of_range),
	    cmocka_unit_test(test_environment_too),
	    cmocka_unit_test(test_files),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
