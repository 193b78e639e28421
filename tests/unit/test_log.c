/* Logging (common/base/log.c): stderr is redirected to a temporary file and read
 * back.
 *
 *   - a line outside log_hold is written at once, whole, in the house format
 *     ("<time>Z <prog> LOG: saga=<id> <text>"); a text with newlines (libpq's
 *     messages) is still one line;
 *   - lines between log_hold and log_release are not written until the
 *     release, then all of them, in order; holds nest (only the outer release
 *     writes);
 *   - a warning while held is written at once, after the lines held before it;
 *   - more held lines than the 4 KiB buffer: nothing is lost or reordered;
 *   - a level below the minimum is never written, held or not.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "log.h"

static FILE *capture;
static int real_stderr = -1;

/* written returns what stderr has received so far (static buffer). */
static const char *written(void)
{
	static char buf[65536];
	fflush(capture);
	long n = ftell(capture);
	assert_true(n >= 0 && n < (long)sizeof buf);
	rewind(capture);
	size_t got = fread(buf, 1, (size_t)n, capture);
	buf[got] = '\0';
	fseek(capture, 0, SEEK_END);
	return buf;
}

static int setup(void **state)
{
	(void)state;
	capture = tmpfile();
	real_stderr = dup(STDERR_FILENO);
	if (capture == NULL || real_stderr < 0 || dup2(fileno(capture), STDERR_FILENO) < 0)
		return -1;
	log_init("testprog", LOG_LEVEL_INFO);
	return 0;
}

static int count_lines(const char *s)
{
	int n = 0;
	for (; *s; s++)
		n += *s == '\n';
	return n;
}

static void test_plain_line(void **state)
{
	(void)state;
	size_t before = strlen(written());
	log_info("0b5e4b5a-1c1d-4e7e-9a55-000000000001", "started: %s orders %d", "ali", 2);
	const char *w = written() + before;
	assert_non_null(strstr(w,
	    "Z testprog LOG: saga=0b5e4b5a-1c1d-4e7e-9a55-000000000001 "
	    "started: ali orders 2\n"));
	assert_int_equal(count_lines(w), 1);
}

/* libpq's error messages end in a newline and may hold more */
static void test_multiline_text_is_one_line(void **state)
{
	(void)state;
	size_t before = strlen(written());
	log_error(NULL, "could not connect: %s",
	    "connection refused\n\tIs the server running on that host?\n");
	const char *w = written() + before;
	assert_int_equal(count_lines(w), 1);
	assert_non_null(strstr(w,
	    "ERROR: could not connect: connection refused  Is the server running on "
	    "that host?\n"));
}

static void test_held_until_release(void **state)
{
	(void)state;
	size_t before = strlen(written());
	log_hold();
	log_info(NULL, "held one");
	log_hold(); /* nested */
	log_info(NULL, "held two");
	log_release();
	assert_int_equal(strlen(written()), before); /* inner release writes nothing */
	log_info(NULL, "held three");
	log_debug(NULL, "below the minimum");
	assert_int_equal(strlen(written()), before);
	log_release();
	const char *w = written() + before;
	assert_int_equal(count_lines(w), 3);
	const char *a = strstr(w, "held one"), *b = strstr(w, "held two"),
	           *c = strstr(w, "held three");
	assert_true(a && b && c && a < b && b < c);
	assert_null(strstr(w, "below the minimum"));
}

static void test_warning_not_held(void **state)
{
	(void)state;
	size_t before = strlen(written());
	log_hold();
	log_info(NULL, "before the warning");
	log_warn(NULL, "the warning");
	const char *w = written() + before;
	assert_int_equal(count_lines(w), 2);
	assert_true(strstr(w, "before the warning") < strstr(w, "WARNING: the warning"));
	log_info(NULL, "after the warning");
	assert_int_equal(count_lines(written() + before), 2);
	log_release();
	assert_int_equal(count_lines(written() + before), 3);
}

static void test_more_than_the_buffer(void **state)
{
	(void)state;
	size_t before = strlen(written());
	log_hold();
	for (int i = 0; i < 200; i++) /* ~70 bytes each: several buffers */
		log_info(NULL, "line %03d of a long batch", i);
	log_release();
	const char *w = written() + before;
	assert_int_equal(count_lines(w), 200);
	const char *p = w;
	for (int i = 0; i < 200; i++) {
		char want[40];
		snprintf(want, sizeof want, "line %03d of a long batch\n", i);
		const char *q = strstr(p, want);
		assert_non_null(q);
		p = q + 1;
	}
}

/* teardown gives stderr back and passes on what was not a log line
 * (cmocka's messages about a failed assertion). */
static int teardown(void **state)
{
	(void)state;
	fflush(stderr);
	dup2(real_stderr, STDERR_FILENO);
	rewind(capture);
	char line[2048];
	while (fgets(line, sizeof line, capture) != NULL)
		if (strstr(line, "Z testprog ") == NULL)
			fputs(line, stderr);
	fclose(capture);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_plain_line),
	    cmocka_unit_test(test_multiline_text_is_one_line),
	    cmocka_unit_test(test_held_until_release),
	    cmocka_unit_test(test_warning_not_held),
	    cmocka_unit_test(test_more_than_the_buffer),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
