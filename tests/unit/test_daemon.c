/* The stop watchdog (common/daemon.c, daemon_stop_watchdog), each case in a
 * child process whose stderr goes to a temporary file:
 *
 *   - a stop that hangs (the child sleeps 5 s after starting a 100 ms
 *     watchdog, as nng_close does in nng issue #1543) ends with exit status
 *     0 and the error line naming the bound, not with the child's own 7;
 *   - a process that ends before the bound ends as it chose (status 7), with
 *     no line;
 *   - a bound of 0 starts no watchdog: the child ends as it chose.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "daemon.h"
#include "log.h"

/* The child's own exit status, which the watchdog must override (0). */
#define CHILD_OWN_STATUS 7

/* run_child forks a child that logs to a temporary file, starts a watchdog
 * of `bound_ms` and then sleeps `sleep_ms` before exiting with
 * CHILD_OWN_STATUS. Returns the child's exit status and copies what it
 * wrote to stderr into `out` (room for `len` bytes). */
static int run_child(int64_t bound_ms, int sleep_ms, char *out, size_t len)
{
	FILE *cap = tmpfile();
	assert_non_null(cap);
	fflush(stderr);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(fileno(cap), STDERR_FILENO);
		log_init("test_daemon", LOG_LEVEL_INFO);
		if (daemon_stop_watchdog(bound_ms) != 0)
			_exit(99);
		usleep((useconds_t)sleep_ms * 1000);
		_exit(CHILD_OWN_STATUS);
	}
	int status = 0;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	rewind(cap);
	size_t got = fread(out, 1, len - 1, cap);
	out[got] = '\0';
	fclose(cap);
	return WEXITSTATUS(status);
}

static void test_hung_stop_is_ended(void **state)
{
	(void)state;
	char err[4096];
	assert_int_equal(run_child(100, 5000, err, sizeof err), 0);
	assert_non_null(
	    strstr(err, "test_daemon ERROR: could not stop within 100 ms (stop-timeout)"));
}

static void test_stop_before_the_bound_keeps_its_status(void **state)
{
	(void)state;
	char err[4096];
	assert_int_equal(run_child(5000, 0, err, sizeof err), CHILD_OWN_STATUS);
	assert_string_equal(err, "");
}

static void test_zero_is_no_bound(void **state)
{
	(void)state;
	char err[4096];
	assert_int_equal(run_child(0, 300, err, sizeof err), CHILD_OWN_STATUS);
	assert_string_equal(err, "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_hung_stop_is_ended),
	    cmocka_unit_test(test_stop_before_the_bound_keeps_its_status),
	    cmocka_unit_test(test_zero_is_no_bound),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
