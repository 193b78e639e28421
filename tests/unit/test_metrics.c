/* The metrics registry, its exposition and the /metrics listener
 * (common/base/metrics.c, common/http/metrics_http.c):
 *
 *   - counters, gauges and histograms print in the text format 0.0.4 with
 *     their HELP and TYPE once, series in creation order, histogram buckets
 *     cumulative with +Inf, _sum and _count;
 *   - label values are escaped (\\, \", \n); a series is found again by its
 *     values, never made twice;
 *   - a family past METRICS_SERIES_MAX series drops the rest into a sink and
 *     counts them in sagas_metrics_series_dropped_total;
 *   - a hidden family is not printed and comes back as it was;
 *   - --metrics-listen values: loopback http, https anywhere, each bad one
 *     refused with its own reason (127.evil.example is not loopback);
 *   - the listener answers GET /metrics (200, the exposition), 404 elsewhere
 *     and 405 to POST, and a port taken is -EADDRINUSE;
 *   - past 8 connections from one address new ones are closed; past 16 in
 *     all new ones wait in the kernel's backlog until some close.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "http_test.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "metrics.h"
#include "metrics_http.h"

static const metric_def T_COUNTER
    = {"t_requests_total", "Requests", METRIC_COUNTER, "method,code", NULL, 0};
static const metric_def T_GAUGE = {"t_open", "Open things", METRIC_GAUGE, "", NULL, 0};
static const double T_BUCKETS[] = {0.1, 1};
static const metric_def T_HIST
    = {"t_seconds", "Durations\nin seconds", METRIC_HISTOGRAM, "kind", T_BUCKETS, 2};
static const metric_def T_MANY = {"t_many_total", "Many", METRIC_COUNTER, "id", NULL, 0};
static const double T_WIDE_BUCKETS[] = {0.0005, 10, 300, 86400, 1e6};
static const metric_def T_WIDE
    = {"t_wide_seconds", "Wide", METRIC_HISTOGRAM, "", T_WIDE_BUCKETS, 5};

static char *render(void)
{
	size_t n = 0;
	char *t = metrics_render(&n);
	assert_non_null(t);
	assert_int_equal(strlen(t), n);
	return t;
}

static void test_exposition(void **state)
{
	(void)state;
	const char *a[2] = {"Get", "OK"}, *b[2] = {"Get", "NOT_FOUND"};
	metric *ok = metric_get(&T_COUNTER, a);
	metric_inc(ok);
	metric_add(metric_get(&T_COUNTER, a), 2); /* the same series again */
	assert_ptr_equal(metric_get(&T_COUNTER, a), ok);
	metric_inc(metric_get(&T_COUNTER, b));
	metric_set(metric_get(&T_GAUGE, NULL), -4);
	metric *h = metric_get1(&T_HIST, "x\"y\\z\nw");
	metric_observe(h, 0.05);
	metric_observe(h, 0.1); /* le is inclusive */
	metric_observe(h, 0.5);
	metric_observe(h, 7);
	assert_true(metric_value(ok) == 3.0);
	char *t = render();
	assert_non_null(strstr(t,
	    "# HELP t_requests_total Requests\n"
	    "# TYPE t_requests_total counter\n"
	    "t_requests_total{method=\"Get\",code=\"OK\"} 3\n"
	    "t_requests_total{method=\"Get\",code=\"NOT_FOUND\"} 1\n"));
	assert_non_null(strstr(t, "# TYPE t_open gauge\nt_open -4\n"));
	assert_non_null(strstr(t,
	    "# HELP t_seconds Durations\\nin seconds\n"
	    "# TYPE t_seconds histogram\n"
	    "t_seconds_bucket{kind=\"x\\\"y\\\\z\\nw\",le=\"0.1\"} 2\n"
	    "t_seconds_bucket{kind=\"x\\\"y\\\\z\\nw\",le=\"1\"} 3\n"
	    "t_seconds_bucket{kind=\"x\\\"y\\\\z\\nw\",le=\"+Inf\"} 4\n"
	    "t_seconds_sum{kind=\"x\\\"y\\\\z\\nw\"} 7.65\n"
	    "t_seconds_count{kind=\"x\\\"y\\\\z\\nw\"} 4\n"));
	/* bounds and values as Prometheus's clients write them (Go's 'g'):
	 * "10" and "86400", not "1e+01" and "8.64e+04" */
	metric *w = metric_get(&T_WIDE, NULL);
	metric_observe(w, 20);
	free(t);
	t = render();
	assert_non_null(strstr(t,
	    "t_wide_seconds_bucket{le=\"0.0005\"} 0\n"
	    "t_wide_seconds_bucket{le=\"10\"} 0\n"
	    "t_wide_seconds_bucket{le=\"300\"} 1\n"
	    "t_wide_seconds_bucket{le=\"86400\"} 1\n"
	    "t_wide_seconds_bucket{le=\"1e+06\"} 1\n"
	    "t_wide_seconds_bucket{le=\"+Inf\"} 1\n"
	    "t_wide_seconds_sum 20\n"));
	/* HELP and TYPE once per family */
	assert_null(strstr(strstr(t, "# TYPE t_requests_total") + 1, "# TYPE t_requests_total"));
	free(t);
}

static void test_cap_and_hide(void **state)
{
	(void)state;
	char id[16];
	for (int i = 0; i < METRICS_SERIES_MAX + 10; i++) {
		snprintf(id, sizeof id, "s%d", i);
		metric_inc(metric_get1(&T_MANY, id));
	}
	char *t = render();
	assert_non_null(strstr(t, "t_many_total{id=\"s255\"} 1\n"));
	assert_null(strstr(t, "t_many_total{id=\"s256\"}"));
	assert_non_null(strstr(t, "sagas_metrics_series_dropped_total 10\n"));
	free(t);
	metrics_hide(&T_MANY, true);
	t = render();
	assert_null(strstr(t, "t_many_total"));
	free(t);
	metrics_hide(&T_MANY, false);
	t = render();
	assert_non_null(strstr(t, "t_many_total{id=\"s0\"} 1\n"));
	free(t);
}

static void test_url_check(void **state)
{
	(void)state;
	bool tls = true;
	char why[512];
	static const char *const good[]
	    = {"", "http://127.0.0.1:9470", "http://127.1.2.3:1/", "http://[::1]:9470",
	        "http://localhost:9470", "https://0.0.0.0:9470", "https://metrics.example:443"};
	for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
		assert_int_equal(metrics_url_check(good[i], &tls, why, sizeof why), 0);
		assert_true(tls == (strncmp(good[i], "https", 5) == 0));
	}
	static const struct {
		const char *url, *why;
	} bad[] = {
	    {"http://0.0.0.0:9470", "plain HTTP on an address other hosts can reach"},
	    {"http://127.evil.example:9470", "plain HTTP on an address other hosts can reach"},
	    {"http://10.0.0.1:9470", "plain HTTP"},
	    {"tcp://127.0.0.1:9470", "the scheme must be"},
	    {"http://127.0.0.1", "the port must be given"},
	    {"http://127.0.0.1:0", "the port must be given"},
	    {"http://127.0.0.1:+9470", "the port must be given"},
	    {"http://127.0.0.1: 9470", "the port must be given"},
	    {"http://127.0.0.1:65536", "the port must be given"},
	    {"http://127.0.0.1:9470/metrics", "give no path"},
	    {"http://127.0.0.1:9470/?a=b", "give no path"},
	    {"http://u:p@127.0.0.1:9470", "no user part"},
	    {"127.0.0.1:9470", "not a URL"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		why[0] = '\0';
		assert_int_equal(metrics_url_check(bad[i].url, &tls, why, sizeof why), -EINVAL);
		if (strstr(why, bad[i].why) == NULL)
			fail_msg("%s: \"%s\" lacks \"%s\"", bad[i].url, why, bad[i].why);
	}
}

static void test_listener(void **state)
{
	(void)state;
	char url[64], err[512];
	int port = free_port();
	snprintf(url, sizeof url, "http://127.0.0.1:%d", port);
	metric_set(metric_get(&T_GAUGE, NULL), 11);
	assert_int_equal(metrics_http_start(url, NULL, NULL, err, sizeof err), 0);
	char req[256];
#define REQ(fmt) (snprintf(req, sizeof req, fmt, port), req)
	char *r = http(port, REQ("GET /metrics HTTP/1.0\r\nHost: 127.0.0.1:%d\r\n\r\n"));
	assert_non_null(strstr(r, "HTTP/1.0 200") ?: strstr(r, "HTTP/1.1 200"));
	assert_non_null(strstr(r, "Content-Type: text/plain; version=0.0.4"));
	assert_non_null(strstr(r, "\nt_open 11\n"));
	free(r);
	r = http(port, REQ("GET /other HTTP/1.0\r\nHost: localhost:%d\r\n\r\n"));
	assert_non_null(strstr(r, " 404 "));
	free(r);
	r = http(
	    port, REQ("POST /metrics HTTP/1.0\r\nHost: [::1]:%d\r\nContent-Length: 0\r\n\r\n"));
	assert_non_null(strstr(r, " 405 "));
	free(r);
	/* DNS rebinding: a page's name, no Host at all: 421, not scraped */
	r = http(port, REQ("GET /metrics HTTP/1.1\r\nHost: evil.example:%d\r\n\r\n"));
	assert_non_null(strstr(r, "HTTP/1.1 421 "));
	assert_null(strstr(r, "t_open"));
	free(r);
	r = http(port, "GET /metrics HTTP/1.0\r\n\r\n");
	assert_non_null(strstr(r, " 421 "));
	free(r);
	r = http(port, REQ("GET /metrics HTTP/1.0\r\nHost: 127.0.0.1:%d\r\n\r\n"));
	assert_non_null(strstr(r, "sagas_metrics_scrapes_total 1\n"));
	assert_non_null(
	    strstr(r, "sagas_http_refusals_total{listener=\"metrics\",reason=\"host\"} 2\n"));
	assert_non_null(
	    strstr(r, "sagas_http_refusals_total{listener=\"metrics\",reason=\"origin\"} 0\n"));
	free(r);
#undef REQ
	metrics_http_stop();
	/* a port taken by someone else */
	int s = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET,
	    .sin_port = htons((uint16_t)port),
	    .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	int one = 1;
	setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	assert_int_equal(bind(s, (struct sockaddr *)&a, sizeof a), 0);
	assert_int_equal(listen(s, 1), 0);
	assert_int_equal(metrics_http_start(url, NULL, NULL, err, sizeof err), -EADDRINUSE);
	assert_non_null(strstr(err, url));
	close(s);
	/* https without a TLS configuration: refused, never plain */
	snprintf(url, sizeof url, "https://127.0.0.1:%d", free_port());
	assert_int_not_equal(metrics_http_start(url, NULL, NULL, err, sizeof err), 0);
}

/* connect_from: a connection to the listener's port from the loopback
 * address 127.0.0.`last` (bound as the source). */
static int connect_from(int port, int last)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in src = {
	    .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK - 1 + (unsigned)last)};
	assert_int_equal(bind(fd, (struct sockaddr *)&src, sizeof src), 0);
	struct sockaddr_in a = {.sin_family = AF_INET,
	    .sin_port = htons((uint16_t)port),
	    .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
	return fd;
}

/* count_closed: how many of fds[n] the server has closed (a read gives 0
 * at once), polled for up to 5 s until `want` are. */
static int count_closed(const int *fds, int n, int want)
{
	int closed = 0;
	for (int tries = 0; tries < 50 && closed < want; tries++) {
		usleep(100 * 1000);
		closed = 0;
		for (int i = 0; i < n; i++) {
			struct timeval tv = {0, 1000};
			setsockopt(fds[i], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
			char c;
			if (read(fds[i], &c, 1) == 0)
				closed++;
		}
	}
	return closed;
}

/* page_has: polls the rendered page for up to 5 s for `line`. */
static bool page_has(const char *line)
{
	for (int tries = 0; tries < 50; tries++) {
		char *t = render();
		bool has = strstr(t, line) != NULL;
		free(t);
		if (has)
			return true;
		usleep(100 * 1000);
	}
	return false;
}

/* test_connection_cap: the listener keeps at most 8 connections from one
 * address and 16 in all. 10 from 127.0.0.1: 2 closed at once; 8 from
 * 127.0.0.2: 16 open; a scrape from 127.0.0.3 is not taken (it waits in the
 * kernel's backlog: no descriptor, no memory of the daemon's) until the
 * others close, then it is answered. */
static void test_connection_cap(void **state)
{
	(void)state;
	char url[64], err[512];
	int port = free_port();
	snprintf(url, sizeof url, "http://127.0.0.1:%d", port);
	assert_int_equal(metrics_http_start(url, NULL, NULL, err, sizeof err), 0);
	int fds[18];
	for (int i = 0; i < 10; i++)
		fds[i] = connect_from(port, 1);
	assert_int_equal(count_closed(fds, 10, 2), 2);
	for (int i = 10; i < 18; i++)
		fds[i] = connect_from(port, 2);
	assert_true(page_has("\nsagas_metrics_connections 16\n"));
	int late = connect_from(port, 3);
	char req[128];
	snprintf(req, sizeof req, "GET /metrics HTTP/1.0\r\nHost: 127.0.0.1:%d\r\n\r\n", port);
	assert_int_equal(write(late, req, strlen(req)), (ssize_t)strlen(req));
	struct timeval tv = {1, 0};
	setsockopt(late, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	char buf[64];
	assert_int_equal(read(late, buf, sizeof buf), -1); /* not taken within 1 s */
	for (int i = 0; i < 18; i++)
		close(fds[i]);
	tv.tv_sec = 5;
	setsockopt(late, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	ssize_t n = read(late, buf, sizeof buf - 1);
	assert_true(n > 12);
	buf[n] = '\0';
	assert_non_null(strstr(buf, " 200 "));
	close(late);
	metrics_http_stop();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_exposition),
	    cmocka_unit_test(test_cap_and_hide),
	    cmocka_unit_test(test_url_check),
	    cmocka_unit_test(test_listener),
	    cmocka_unit_test(test_connection_cap),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
