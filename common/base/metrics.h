/* metrics: the process's Prometheus metrics (docs/operations.md, "Metrics"),
 * exposed in the text format 0.0.4 by metrics_http.c on --metrics-listen.
 *
 * A family (one metric name: a counter, a gauge or a histogram, its help
 * text and label names) is registered on first use and lives as long as the
 * process. A series (one set of label values) is found or made by
 * metric_get and never moves or goes away, so a caller may keep the pointer;
 * its updates are relaxed atomics: no lock, no allocation. Finding a series
 * takes the registry's mutex (a hash lookup): hot paths that can keep the
 * pointer should.
 *
 * Labels are bounded by design (docs/operations.md: never a saga id, a
 * customer or a sku); as a second fence a family holds at most
 * METRICS_SERIES_MAX series, and a metric_get past that returns a sink that
 * nobody scrapes and counts the loss in sagas_metrics_series_dropped_total.
 *
 * Counters and histograms start at zero with each process, as Prometheus
 * expects (it reads a drop as a restart).
 */
#ifndef SAGA_METRICS_H
#define SAGA_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define METRICS_SERIES_MAX  256
#define METRICS_LABELS_MAX  4
#define METRICS_BUCKETS_MAX 24

enum metric_type { METRIC_COUNTER, METRIC_GAUGE, METRIC_HISTOGRAM };

/* One family's description; static storage, so that a call site can name
 * it in one place (the `def` of metric_get). */
typedef struct metric_def {
	const char *name; /* "sagas_commands_total": Prometheus naming, base units */
	const char *help; /* one line */
	enum metric_type type;
	const char *labels; /* comma-separated label names ("command,result"), "" or NULL: none */
	const double *buckets; /* a histogram's upper bounds, ascending, without +Inf */
	size_t nbuckets;       /* at most METRICS_BUCKETS_MAX */
} metric_def;

typedef struct metric metric;

/* metric_get returns the series of `def` with label values `values`
 * (as many as def->labels names, in that order; NULL when it has none),
 * registering the family on first use. Values are copied (at most 127 bytes
 * each; longer ones are cut) and escaped at exposition. Never returns NULL:
 * past METRICS_SERIES_MAX series in the family, or out of memory, it
 * returns a sink that is not exposed and counts the loss. Thread-safe. */
metric *metric_get(const metric_def *def, const char *const *values);

/* metric_get1 is metric_get for a family with one label. */
metric *metric_get1(const metric_def *def, const char *value);

/* metric_inc adds 1 to a counter (or a gauge); metric_add adds `n` (>= 0
 * for a counter); metric_set sets a gauge. Thread-safe, lock-free. */
void metric_inc(metric *m);
void metric_add(metric *m, int64_t n);
void metric_set(metric *m, int64_t v);

/* metric_set_f sets a gauge to a float value (a unix time in seconds). */
void metric_set_f(metric *m, double v);

/* metric_observe records one observation `v` (in the family's base unit:
 * seconds, a count) in a histogram. Thread-safe, lock-free. */
void metric_observe(metric *m, double v);

/* metric_value returns a counter's or gauge's value (tests); a histogram's
 * count of observations. */
double metric_value(const metric *m);

/* metrics_hide hides (true) or shows (false) the family `def` in the
 * exposition without forgetting its series: the database gauges of an
 * orchestrator that does not hold the gauge lock. */
void metrics_hide(const metric_def *def, bool hidden);

/* metrics_write writes every family that has a series and is not hidden to
 * `f` in the text format 0.0.4, in registration order. Returns 0, or -EIO
 * when a write failed. Thread-safe (concurrent updates may or may not show). */
int metrics_write(FILE *f);

/* metrics_render returns the exposition as a malloc'd NUL-terminated text
 * (the caller frees it) and its length in *len, or NULL when out of memory. */
char *metrics_render(size_t *len);

/* Common buckets: seconds of a round trip or a commit (0.5 ms .. 10 s). */
#define METRICS_LATENCY_NBUCKETS 14
extern const double METRICS_LATENCY_BUCKETS[METRICS_LATENCY_NBUCKETS];

/* metrics_process_init registers the series every daemon exports from its
 * start: sagas_build_info{daemon,version,commit} 1 and
 * sagas_process_start_time_seconds (now). Call once from main. */
void metrics_process_init(const char *daemon);

#endif
