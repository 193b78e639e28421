/* The stop bound (common/daemon/daemon.c, daemon_install_signals), each case in a
 * child process whose stderr goes to a temporary file:
 *
 *   - a stop that hangs (the child blocks 5 s after its SIGTERM, as a thread
 *     in libpq on a stalled link or nng_close in nng issue #1543 does) ends
 *     with exit status 0 and the error line naming the bound, not with the
 *     child's own 7; the bound counts from the signal, not from the install
 *     (the child waits 600 ms before signalling itself: it cannot end
 *     before 600 ms plus the 100 ms bound);
 *   - a process never signalled is left alone, however long it runs;
 *   - a process that ends before the bound ends as it chose (status 7), with
 *     no line;
 *   - a bound of 0 starts no watchdog: the child ends as it chose.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "daemon.h"
#include "log.h"

/* The child's own exit status, which the watchdog must override (0). */
#define CHILD_OWN_STATUS 7

static int64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* run_child forks a child that logs to a temporary file, installs the
 * signals with a bound of `bound_ms`, sleeps `before_ms`, sends itself
 * SIGTERM when `signal_it`, then sleeps `after_ms` (ignoring the stop flag,
 * as a thread blocked in a library would) before exiting with
 * CHILD_OWN_STATUS. Returns the child's exit status, its run time in
 * *took_ms, and copies what it wrote to stderr into `out` (room for `len`
 * bytes). */
static int run_child(int64_t bound_ms, int before_ms, bool signal_it, int after_ms,
    int64_t *took_ms, char *out, size_t len)
{
	FILE *cap = tmpfile();
	assert_non_null(cap);
	fflush(stderr);
	int64_t t0 = mono_ms();
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(fileno(cap), STDERR_FILENO);
		log_init("test_daemon", LOG_LEVEL_INFO);
		if (daemon_install_signals(bound_ms) != 0)
			_exit(99);
		usleep((useconds_t)before_ms * 1000);
		if (signal_it) {
			raise(SIGTERM);
			if (!daemon_should_stop())
				_exit(98);
		}
		usleep((useconds_t)after_ms * 1000);
		_exit(CHILD_OWN_STATUS);
	}
	int status = 0;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	*took_ms = mono_ms() - t0;
	assert_true(WIFEXITED(status));
	rewind(cap);
	size_t got = fread(out, 1, len - 1, cap);
	out[got] = '\0';
	fclose(cap);
	return WEXITSTATUS(status);
}

static void test_hung_stop_is_ended_from_the_signal(void **state)
{
	(void)state;
	char err[4096];
	int64_t took;
	assert_int_equal(run_child(100, 600, true, 5000, &took, err, sizeof err), 0);
	assert_non_null(
	    strstr(err, "test_daemon ERROR: could not stop within 100 ms (stop-timeout)"));
	print_message(
	    "hung stop ended after %lld ms (signal at 600 ms, bound 100 ms)\n", (long long)took);
	assert_true(took >= 700); /* counted from the signal, not the install */
	assert_true(took < 5000); /* ended by the bound, not by the child */
}

static void test_no_signal_no_end(void **state)
{
	(void)state;
	char err[4096];
	int64_t took;
	assert_int_equal(run_child(100, 0, false, 500, &took, err, sizeof err), CHILD_OWN_STATUS);
	assert_string_equal(err, "");
}

static void test_stop_before_the_bound_keeps_its_status(void **state)
{
	(void)state;
	char err[4096];
	int64_t took;
	assert_int_equal(run_child(5000, 0, true, 0, &took, err, sizeof err), CHILD_OWN_STATUS);
	assert_string_equal(err, "");
}

static void test_zero_is_no_bound(void **state)
{
	(void)state;
	char err[4096];
	int64_t took;
	assert_int_equal(run_child(0, 0, true, 300, &took, err, sizeof err), CHILD_OWN_STATUS);
	assert_string_equal(err, "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_hung_stop_is_ended_from_the_signal),
	    cmocka_unit_test(test_no_signal_no_end),
	    cmocka_unit_test(test_stop_before_the_bound_keeps_its_status),
	    cmocka_unit_test(test_zero_is_no_bound),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
