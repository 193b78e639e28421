/* metrics: the registry and the text exposition (metrics.h). */
#include "metrics.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <uthash.h>

#include "version.h"

#define METRICS_FAMILIES_MAX 96
#define METRICS_VALUE_MAX    127

typedef struct family family;

struct metric {
	family *fam;
	char *key; /* the label values joined by \x1f: the hash key */
	char *values[METRICS_LABELS_MAX];
	_Atomic int64_t v;   /* a counter's or an integer gauge's value */
	_Atomic uint64_t fv; /* a float gauge's value (its bits), when is_f */
	atomic_bool is_f;
	_Atomic uint64_t b[METRICS_BUCKETS_MAX + 1]; /* per bucket (not cumulative), +Inf last */
	_Atomic uint64_t sum;                        /* a histogram's sum (double bits) */
	struct metric *next;                         /* in creation order */
	UT_hash_handle hh;
};

struct family {
	const metric_def *def;
	char *labels[METRICS_LABELS_MAX];
	size_t nlabels;
	size_t nseries;
	bool hidden;
	metric *first, *last, *by_key;
};

static pthread_mutex_t metrics_mtx = PTHREAD_MUTEX_INITIALIZER;
static family metrics_fams[METRICS_FAMILIES_MAX];
static size_t metrics_nfams;
/* where the series nobody may see go (over the cap, out of memory) */
static metric metrics_sink;

static const metric_def METRICS_DROPPED = {"sagas_metrics_series_dropped_total",
    "Series not kept because their family reached its cap (a bug: a label that is not bounded)",
    METRIC_COUNTER, "", NULL, 0};

const double METRICS_LATENCY_BUCKETS[METRICS_LATENCY_NBUCKETS]
    = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};

/* metrics_family finds or registers the family of `def` (under metrics_mtx).
 * Returns NULL when the table is full or out of memory. */
static family *metrics_family(const metric_def *def)
{
	for (size_t i = 0; i < metrics_nfams; i++)
		if (metrics_fams[i].def == def)
			return &metrics_fams[i];
	if (metrics_nfams == METRICS_FAMILIES_MAX || def->nbuckets > METRICS_BUCKETS_MAX)
		return NULL;
	family *f = &metrics_fams[metrics_nfams];
	*f = (family) {.def = def};
	const char *p = def->labels ? def->labels : "";
	while (*p != '\0' && f->nlabels < METRICS_LABELS_MAX) {
		size_t n = strcspn(p, ",");
		if ((f->labels[f->nlabels] = strndup(p, n)) == NULL) {
			while (f->nlabels > 0)
				free(f->labels[--f->nlabels]);
			return NULL;
		}
		f->nlabels++;
		p += n + (p[n] == ',');
	}
	metrics_nfams++;
	return f;
}

/* metrics_new_series makes the series `key` of `f` (under metrics_mtx). */
static metric *metrics_new_series(family *f, const char *key, const char *const *values)
{
	metric *m = calloc(1, sizeof *m);
	if (m == NULL || (m->key = strdup(key)) == NULL) {
		free(m);
		return NULL;
	}
	for (size_t i = 0; i < f->nlabels; i++) {
		m->values[i] = strndup(values[i] ? values[i] : "", METRICS_VALUE_MAX);
		if (m->values[i] == NULL) {
			for (size_t j = 0; j < i; j++)
				free(m->values[j]);
			free(m->key);
			free(m);
			return NULL;
		}
	}
	m->fam = f;
	if (f->last)
		f->last->next = m;
	else
		f->first = m;
	f->last = m;
	f->nseries++;
	HASH_ADD_KEYPTR(hh, f->by_key, m->key, strlen(m->key), m);
	return m;
}

metric *metric_get(const metric_def *def, const char *const *values)
{
	char key[METRICS_LABELS_MAX * (METRICS_VALUE_MAX + 1) + 1];
	size_t k = 0;
	pthread_mutex_lock(&metrics_mtx);
	family *f = metrics_family(def);
	metric *m = NULL;
	if (f != NULL) {
		for (size_t i = 0; i < f->nlabels; i++) {
			const char *v = values && values[i] ? values[i] : "";
			size_t n = strnlen(v, METRICS_VALUE_MAX);
			memcpy(key + k, v, n);
			k += n;
			key[k++] = '\x1f';
		}
		key[k] = '\0';
		HASH_FIND(hh, f->by_key, key, k, m);
		if (m == NULL && f->nseries < METRICS_SERIES_MAX)
			m = metrics_new_series(f, key, values);
	}
	bool dropped = m == NULL;
	pthread_mutex_unlock(&metrics_mtx);
	if (!dropped)
		return m;
	if (def != &METRICS_DROPPED)
		metric_inc(metric_get(&METRICS_DROPPED, NULL));
	return &metrics_sink;
}

metric *metric_get1(const metric_def *def, const char *value)
{
	const char *v[1] = {value};
	return metric_get(def, v);
}

void metric_inc(metric *m)
{
	atomic_fetch_add_explicit(&m->v, 1, memory_order_relaxed);
}

void metric_add(metric *m, int64_t n)
{
	atomic_fetch_add_explicit(&m->v, n, memory_order_relaxed);
}

void metric_set(metric *m, int64_t v)
{
	atomic_store_explicit(&m->v, v, memory_order_relaxed);
	atomic_store_explicit(&m->is_f, false, memory_order_relaxed);
}

static uint64_t metrics_bits(double d)
{
	uint64_t u;
	memcpy(&u, &d, sizeof u);
	return u;
}

static double metrics_double(uint64_t u)
{
	double d;
	memcpy(&d, &u, sizeof d);
	return d;
}

void metric_set_f(metric *m, double v)
{
	atomic_store_explicit(&m->fv, metrics_bits(v), memory_order_relaxed);
	atomic_store_explicit(&m->is_f, true, memory_order_relaxed);
}

void metric_observe(metric *m, double v)
{
	const metric_def *d = m->fam ? m->fam->def : NULL;
	size_t i = 0, nb = d ? d->nbuckets : 0;
	while (i < nb && v > d->buckets[i])
		i++;
	atomic_fetch_add_explicit(&m->b[i], 1, memory_order_relaxed);
	uint64_t old = atomic_load_explicit(&m->sum, memory_order_relaxed);
	while (!atomic_compare_exchange_weak_explicit(&m->sum, &old,
	    metrics_bits(metrics_double(old) + v), memory_order_relaxed, memory_order_relaxed)) { }
	atomic_fetch_add_explicit(&m->v, 1, memory_order_relaxed); /* the count */
}

double metric_value(const metric *m)
{
	if (atomic_load_explicit(&m->is_f, memory_order_relaxed))
		return metrics_double(atomic_load_explicit(&m->fv, memory_order_relaxed));
	return (double)atomic_load_explicit(&m->v, memory_order_relaxed);
}

void metrics_hide(const metric_def *def, bool hidden)
{
	pthread_mutex_lock(&metrics_mtx);
	family *f = metrics_family(def);
	if (f)
		f->hidden = hidden;
	pthread_mutex_unlock(&metrics_mtx);
}

/* metrics_escape writes `s` as a label value (`help` false: \\, \" and \n
 * escaped) or a help text (`help`: \\ and \n). */
static void metrics_escape(FILE *f, const char *s, bool help)
{
	for (; *s; s++) {
		if (*s == '\\')
			fputs("\\\\", f);
		else if (*s == '\n')
			fputs("\\n", f);
		else if (*s == '"' && !help)
			fputs("\\\"", f);
		else
			fputc(*s, f);
	}
}

/* metrics_labels writes a series' labels, with `le` (a histogram bucket's
 * bound, NULL for none) last: {a="x",le="0.5"}, nothing when empty. */
static void metrics_labels(FILE *f, const family *fam, const metric *m, const char *le)
{
	if (fam->nlabels == 0 && le == NULL)
		return;
	fputc('{', f);
	for (size_t i = 0; i < fam->nlabels; i++) {
		fprintf(f, "%s%s=\"", i ? "," : "", fam->labels[i]);
		metrics_escape(f, m->values[i], false);
		fputc('"', f);
	}
	if (le)
		fprintf(f, "%sle=\"%s\"", fam->nlabels ? "," : "", le);
	fputc('}', f);
}

/* metrics_fmt writes `d` in the fewest digits that read back as `d`
 * ("0.1", not "0.10000000000000001"), and like Go's strconv 'g' (what
 * Prometheus's own clients write, `le` bounds included): no exponent
 * from 1e-4 to under 1e6 ("10" and "86400", not "1e+01" and "8.64e+04"). */
static const char *metrics_fmt(double d, char *buf, size_t len)
{
	int p = 1;
	for (; p <= 17; p++) {
		snprintf(buf, len, "%.*g", p, d);
		if (strtod(buf, NULL) == d)
			break;
	}
	if (p < 6) /* %g drops the trailing zeros: the same digits, no exponent */
		snprintf(buf, len, "%.6g", d);
	return buf;
}

static void metrics_write_series(FILE *f, const family *fam, const metric *m)
{
	char num[40];
	const metric_def *d = fam->def;
	if (d->type != METRIC_HISTOGRAM) {
		fputs(d->name, f);
		metrics_labels(f, fam, m, NULL);
		if (atomic_load_explicit(&m->is_f, memory_order_relaxed))
			fprintf(f, " %s\n", metrics_fmt(metric_value(m), num, sizeof num));
		else
			fprintf(f, " %lld\n",
			    (long long)atomic_load_explicit(&m->v, memory_order_relaxed));
		return;
	}
	uint64_t cum = 0;
	char le[32];
	for (size_t i = 0; i <= d->nbuckets; i++) {
		cum += atomic_load_explicit(&m->b[i], memory_order_relaxed);
		if (i < d->nbuckets)
			metrics_fmt(d->buckets[i], le, sizeof le);
		else
			snprintf(le, sizeof le, "+Inf");
		fprintf(f, "%s_bucket", d->name);
		metrics_labels(f, fam, m, le);
		fprintf(f, " %llu\n", (unsigned long long)cum);
	}
	fprintf(f, "%s_sum", d->name);
	metrics_labels(f, fam, m, NULL);
	fprintf(f, " %s\n",
	    metrics_fmt(metrics_double(atomic_load_explicit(&m->sum, memory_order_relaxed)), num,
	        sizeof num));
	fprintf(f, "%s_count", d->name);
	metrics_labels(f, fam, m, NULL);
	/* the buckets' total, so that _count equals the +Inf bucket even while
	 * an observation is half recorded */
	fprintf(f, " %llu\n", (unsigned long long)cum);
}

int metrics_write(FILE *f)
{
	static const char *const types[] = {"counter", "gauge", "histogram"};
	pthread_mutex_lock(&metrics_mtx);
	for (size_t i = 0; i < metrics_nfams; i++) {
		const family *fam = &metrics_fams[i];
		if (fam->hidden || fam->first == NULL)
			continue;
		fprintf(f, "# HELP %s ", fam->def->name);
		metrics_escape(f, fam->def->help, true);
		fprintf(f, "\n# TYPE %s %s\n", fam->def->name, types[fam->def->type]);
		for (const metric *m = fam->first; m; m = m->next)
			metrics_write_series(f, fam, m);
	}
	pthread_mutex_unlock(&metrics_mtx);
	return ferror(f) ? -EIO : 0;
}

char *metrics_render(size_t *len)
{
	char *buf = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&buf, &n);
	if (f == NULL)
		return NULL;
	int rc = metrics_write(f);
	if (fclose(f) != 0 || rc != 0) {
		free(buf);
		return NULL;
	}
	*len = n;
	return buf;
}

static const metric_def METRICS_BUILD_INFO = {"sagas_build_info",
    "1, labelled with the daemon and the version and commit it was built from", METRIC_GAUGE,
    "daemon,version,commit", NULL, 0};
static const metric_def METRICS_START_TIME = {"sagas_process_start_time_seconds",
    "When this process started (unix time, seconds)", METRIC_GAUGE, "", NULL, 0};

void metrics_process_init(const char *daemon)
{
	const char *v[3] = {daemon, saga_version, saga_commit};
	metric_set(metric_get(&METRICS_BUILD_INFO, v), 1);
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	metric_set_f(metric_get(&METRICS_START_TIME, NULL), (double)ts.tv_sec + ts.tv_nsec / 1e9);
	/* at 0 from the start, so that rate() sees the first one */
	metric_add(metric_get(&METRICS_DROPPED, NULL), 0);
}
