/* report: sagabench's figures (outcomes, latencies, --log) and its report,
 * as text or --json; the scripts in bench/ parse both, so their format is fixed. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

void bench_log_open(bench *b)
{
	if (opt.log_path && !(b->logf = fopen(opt.log_path, "w")))
		die(2, "cannot write --log %s: %s", opt.log_path, strerror(errno));
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

static double pct(const int64_t *v, size_t n, double p)
{
	if (n == 0)
		return 0;
	size_t k = (size_t)ceil(p / 100.0 * (double)n);
	if (k < 1)
		k = 1;
	if (k > n)
		k = n;
	return (double)v[k - 1];
}

/* figures_log_close closes --log: a log that could not be written is
 * reported now, and makes the exit status 3 unless an invariant failed (1
 * wins) */
static void figures_log_close(bench *b)
{
	if (b->logf) {
		bool bad = ferror(b->logf) != 0;
		if (fclose(b->logf) != 0 || bad) {
			fprintf(stderr, "sagabench: cannot write --log %s: %s\n", opt.log_path,
			    bad ? "write error" : strerror(errno));
			b->log_failed = true;
		}
		b->logf = NULL;
	}
}

void bench_figures(bench *b)
{
	int64_t last_end = b->t0;
	b->lat = calloc((size_t)opt.n, sizeof *b->lat);
	b->clat = calloc((size_t)opt.n, sizeof *b->clat);
	if (b->logf)
		fprintf(b->logf,
		    "# start_ms latency_ms state saga_id (the run began at unix ms %" PRId64 ")\n",
		    b->t0_wall_ms);
	for (long i = 0; i < opt.n; i++) {
		saga_slot *s = &b->slots[i];
		if (s->phase != P_DONE) {
			if (s->phase != P_FAILED && s->phase != P_IDLE)
				b->unfinished++;
			continue;
		}
		if (b->logf)
			fprintf(b->logf, "%.3f %.3f %s %s\n", (double)(s->t_sent_us - b->t0) / 1e3,
			    (double)(s->t_end_us - s->t_sent_us) / 1e3,
			    s->state == ST_COMPLETED ? "COMPLETED" : "CANCELLED", s->id);
		if (s->state == ST_COMPLETED)
			b->completed++;
		else {
			b->cancelled++;
			if (s->kind == K_OOS)
				b->cancelled_oos++;
			else if (s->kind == K_DECLINE)
				b->cancelled_decline++;
			else
				b->cancelled_other++;
		}
		b->lat[b->nl++] = s->t_end_us - s->t_sent_us;
		if (s->t_commit_wall > 0)
			b->clat[b->ncl++] = (s->t_commit_wall - s->t_sent_wall) * 1000;
		if (s->t_end_us > last_end)
			last_end = s->t_end_us;
		b->polls_done_sagas += s->polls;
	}
	figures_log_close(b);
	qsort(b->lat, b->nl, sizeof *b->lat, cmp_i64);
	qsort(b->clat, b->ncl, sizeof *b->clat, cmp_i64);
	b->elapsed = (double)(last_end - b->t0) / 1e6;
	b->sps = b->elapsed > 0 ? (double)(b->completed + b->cancelled) / b->elapsed : 0;
	b->cps = b->elapsed > 0 ? (double)b->completed / b->elapsed : 0;
}

/* report_detect names how the ends were seen. */
static const char *report_detect(void)
{
	return opt.detect == DETECT_POLL ? "GetSaga per saga in flight"
	    : opt.detect == DETECT_WAIT  ? "WaitSaga per saga in flight"
	                                 : "StartSaga with wait_ms, then WaitSaga";
}

/* report_polls_per is the polls per ended saga. */
static double report_polls_per(const bench *b)
{
	return (b->completed + b->cancelled)
	    ? (double)b->polls_done_sagas / (double)(b->completed + b->cancelled)
	    : 0;
}

static void report_json(const bench *b)
{
	const int64_t *lat = b->lat, *clat = b->clat;
	size_t nl = b->nl, ncl = b->ncl;
	printf("{\"label\":\"%s\",\"sagas\":%ld,\"concurrency\":%ld,\"rate\":%.3f,\"mix\":%."
	       "3f,"
	       "\"detect\":\"%s\",\"poll_ms\":%.3f,\"poll_window\":%ld,\"polls_per_s\":%.1f,"
	       "\"polls_per_saga\":%.2f,"
	       "\"elapsed_s\":%.3f,\"sagas_per_s\":%.1f,\"completed_per_s\":%.1f,"
	       "\"latency_ms\":{\"p50\":%.3f,\"p90\":%.3f,\"p99\":%.3f,\"max\":%.3f},"
	       "\"commit_latency_ms\":{\"p50\":%.0f,\"p90\":%.0f,\"p99\":%.0f,\"max\":%.0f},"
	       "\"outcomes\":{\"completed\":%ld,\"cancelled\":%ld,\"cancelled_out_of_stock\":%"
	       "ld,"
	       "\"cancelled_declined\":%ld,\"cancelled_other\":%ld,\"unfinished\":%ld,"
	       "\"refused\":%ld},\"start_retries\":%ld,\"poll_errors\":%ld,"
	       "\"invariants_ok\":%s,\"checks\":[",
	    opt.label, b->n_started, opt.c, opt.rate, opt.mix, report_detect(), opt.poll_ms,
	    opt.poll_window, b->elapsed > 0 ? (double)b->n_polls / b->elapsed : 0,
	    report_polls_per(b), b->elapsed, b->sps, b->cps, pct(lat, nl, 50) / 1e3,
	    pct(lat, nl, 90) / 1e3, pct(lat, nl, 99) / 1e3, nl ? (double)lat[nl - 1] / 1e3 : 0,
	    pct(clat, ncl, 50) / 1e3, pct(clat, ncl, 90) / 1e3, pct(clat, ncl, 99) / 1e3,
	    ncl ? (double)clat[ncl - 1] / 1e3 : 0, b->completed, b->cancelled, b->cancelled_oos,
	    b->cancelled_decline, b->cancelled_other, b->unfinished, b->n_failed_start,
	    b->n_start_retries, b->n_poll_errors, b->all_ok ? "true" : "false");
	for (int k = 0; k < b->nchecks; k++)
		printf("%s{\"name\":\"%s\",\"ok\":%s,\"detail\":\"%s\"}", k ? "," : "",
		    b->checks[k].name, b->checks[k].ok ? "true" : "false", b->checks[k].detail);
	printf("]}\n");
}

static void report_text(const bench *b)
{
	const int64_t *lat = b->lat, *clat = b->clat;
	size_t nl = b->nl, ncl = b->ncl;
	printf("sagabench %s%s%s\n", opt.label, opt.label[0] ? ": " : "", b->tag);
	if (opt.rate > 0)
		printf("  load        open loop, %.1f sagas/s arrival, at most %ld in "
		       "flight, %ld sagas, mix %.2f\n",
		    opt.rate, opt.c, b->n_started, opt.mix);
	else
		printf("  load        closed loop, concurrency %ld, %ld sagas, mix %.2f\n", opt.c,
		    b->n_started, opt.mix);
	printf("  end seen by %s every %.2f ms, at most %ld at once (%.2f polls per saga, "
	       "%.0f polls/s)\n",
	    report_detect(), opt.poll_ms, opt.poll_window, report_polls_per(b),
	    b->elapsed > 0 ? (double)b->n_polls / b->elapsed : 0);
	printf("  throughput  %.1f sagas/s ended (%.1f completed/s) in %.2f s\n", b->sps, b->cps,
	    b->elapsed);
	printf("  latency ms  p50 %.2f  p90 %.2f  p99 %.2f  max %.2f  (StartSaga sent -> "
	       "terminal state observed)\n",
	    pct(lat, nl, 50) / 1e3, pct(lat, nl, 90) / 1e3, pct(lat, nl, 99) / 1e3,
	    nl ? (double)lat[nl - 1] / 1e3 : 0);
	printf("  commit ms   p50 %.0f  p90 %.0f  p99 %.0f  max %.0f  (StartSaga sent -> "
	       "terminal row's updated_at, ms resolution)\n",
	    pct(clat, ncl, 50) / 1e3, pct(clat, ncl, 90) / 1e3, pct(clat, ncl, 99) / 1e3,
	    ncl ? (double)clat[ncl - 1] / 1e3 : 0);
	printf("  outcomes    %ld COMPLETED, %ld CANCELLED (%ld out of stock, %ld "
	       "declined, %ld other), %ld unfinished, %ld refused; %ld StartSaga re-sent\n",
	    b->completed, b->cancelled, b->cancelled_oos, b->cancelled_decline, b->cancelled_other,
	    b->unfinished, b->n_failed_start, b->n_start_retries);
	printf("  invariants\n");
	for (int k = 0; k < b->nchecks; k++)
		printf("    %-4s %s: %s\n", b->checks[k].ok ? "ok" : "FAIL", b->checks[k].name,
		    b->checks[k].detail);
}

void bench_report(const bench *b)
{
	if (opt.json)
		report_json(b);
	else
		report_text(b);
	if (!b->all_ok) {
		fprintf(stderr, "sagabench: INVARIANT FAILED:");
		for (int k = 0; k < b->nchecks; k++)
			if (!b->checks[k].ok)
				fprintf(
				    stderr, " [%s: %s]", b->checks[k].name, b->checks[k].detail);
		fprintf(stderr, "\n");
	}
}

int bench_status(const bench *b)
{
	if (b->timed_out || b->unfinished || b->log_failed)
		return b->all_ok ? 3 : 1;
	return b->all_ok ? 0 : 1;
}
