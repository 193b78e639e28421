/* sagabench: throughput and latency of the saga system, end to end.
 *
 * Seeds stock and accounts through the admin RPCs, starts N order sagas
 * (StartSaga, each with its own uuid) at a fixed concurrency C (closed loop)
 * or at a fixed arrival rate R (open loop), learns each saga's end from
 * the StartSaga reply itself (wait_ms; --detect wait: WaitSaga, poll:
 * GetSaga polling), and prints sagas/s, the
 * end-to-end latency distribution, the outcome counts and the invariants
 * checked at the end. Exits 1 when an invariant fails, 2 on usage errors,
 * 3 when the run itself could not be done (daemons unreachable, sagas that
 * never ended).
 *
 * Every call is asynchronous (rpc_call_async: one nng context per call in
 * flight); the callbacks only queue results, one thread decides.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "bench.h"

void die(int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "sagabench: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	exit(code);
}

int64_t now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int64_t wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int main(int argc, char **argv)
{
	static bench b;
	bench_options(argc, argv);
	bench_log_open(&b);
	bench_init(&b);
	bench_connect(&b);
	bench_plan(&b);
	bench_seed(&b);
	bench_run(&b);
	bench_figures(&b);
	bench_check(&b);
	bench_report(&b);
	int status = bench_status(&b);
	bench_close(&b);
	return status;
}
