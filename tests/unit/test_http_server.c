/* http_server (common/http/http_server.h), the listener of /metrics and of
 * gatewayd: the handler sees the method, the decoded path, the body, the
 * query parameters (decoded, in order) and the headers; a body past
 * max_body is 413 without the handler, declared (Content-Length) or sent
 * chunked; status 0 closes the connection without an answer; two servers
 * run at once; https without its files is refused. Names (http_names.h,
 * DNS rebinding): the Host and Origin matching, and over the wire a foreign
 * Host (421), no Host (421) and a POST from a foreign Origin (403) never
 * reach the handler and are counted. A path with a '%' (%2F, %00, any) is
 * 400 bad_path without the handler, counted; the query may have escapes.
 * A connection past conns_per_ip is closed and counted (conn_cap), and its
 * address is served again once one of its connections closes. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "http_test.h"

#include "http_names.h"
#include "http_server.h"
#include "metrics.h"

static int add_param(void *arg, const char *k, const char *v)
{
	char *out = arg;
	size_t at = strlen(out);
	snprintf(out + at, 256 - at, "[%s=%s]", k, v);
	return 0;
}

/* echo: answers "METHOD PATH body=N q=[k=v]... x=HEADER" as text, or
 * closes for the path /close. */
static void echo(void *arg, const http_request *req, http_reply *rep)
{
	int *calls = arg;
	(*calls)++;
	if (strcmp(req->path, "/close") == 0)
		return;
	char q[256] = "";
	http_request_query(req, add_param, q);
	const char *x = http_request_header(req, "x-test");
	char *body = malloc(1024);
	snprintf(body, 1024, "%s %s body=%zu:%s q=%s x=%s", req->method, req->path, req->body_len,
	    req->body, q, x ? x : "-");
	rep->status = 200;
	rep->body = body;
	rep->body_len = strlen(body);
	rep->content_type = "text/plain";
	rep->headers[0][0] = "X-One", rep->headers[0][1] = "1";
	rep->n_headers = 1;
}

static http_server *start(int port, int *calls)
{
	char url[64], err[256];
	snprintf(url, sizeof url, "http://127.0.0.1:%d", port);
	http_server_cfg cfg = {.url = url,
	    .handler = echo,
	    .arg = calls,
	    .conns_max = 8,
	    .conns_per_ip = 4,
	    .timeout_s = 5,
	    .header_memory = 16 * 1024,
	    .max_body = 100,
	    .thread_per_conn = true,
	    .name = "test",
	    .ca_option = "--tls-ca",
	    .allowed_hosts = "h"};
	http_server *s = NULL;
	assert_int_equal(http_server_start(&s, &cfg, err, sizeof err), 0);
	assert_non_null(s);
	return s;
}

static void test_request(void **state)
{
	(void)state;
	int calls = 0, port = free_port();
	http_server *s = start(port, &calls);
	char *r = http(port,
	    "POST /a-b?x=1&y=%2B+2&flag HTTP/1.1\r\nHost: h\r\nX-Test: yes\r\n"
	    "Content-Length: 5\r\nConnection: close\r\n\r\nhello");
	assert_non_null(strstr(r, "HTTP/1.1 200"));
	assert_non_null(strstr(r, "X-One: 1\r\n"));
	assert_non_null(strstr(r, "POST /a-b body=5:hello q=[x=1][y=+ 2][flag=] x=yes"));
	free(r);
	r = http(port, "GET / HTTP/1.0\r\nHost: h\r\n\r\n");
	assert_non_null(strstr(r, "GET / body=0: q= x=-"));
	free(r);
	assert_int_equal(calls, 2);
	http_server_stop(s);
}

static void test_body_limit(void **state)
{
	(void)state;
	int calls = 0, port = free_port();
	http_server *s = start(port, &calls);
	char req[512], body[102];
	memset(body, 'a', 101);
	body[101] = '\0';
	snprintf(req, sizeof req,
	    "POST /x HTTP/1.1\r\nHost: h\r\nContent-Length: 101\r\nConnection: close\r\n\r\n%s",
	    body);
	char *r = http(port, req);
	assert_non_null(strstr(r, "HTTP/1.1 413"));
	assert_non_null(strstr(r, "\"reason\":\"too_big\""));
	free(r);
	/* chunked, past the limit only in its second chunk */
	r = http(port,
	    "POST /x HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n"
	    "Connection: close\r\n\r\n"
	    "3c\r\naaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n"
	    "3c\r\naaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n0\r\n\r\n");
	assert_non_null(strstr(r, "HTTP/1.1 413"));
	free(r);
	assert_int_equal(calls, 0);
	/* exactly the limit */
	body[100] = '\0';
	snprintf(req, sizeof req,
	    "POST /x HTTP/1.1\r\nHost: h\r\nContent-Length: 100\r\nConnection: close\r\n\r\n%s",
	    body);
	r = http(port, req);
	assert_non_null(strstr(r, "body=100:"));
	free(r);
	/* status 0: closed, no answer */
	r = http(port, "GET /close HTTP/1.0\r\nHost: h\r\n\r\n");
	assert_string_equal(r, "");
	free(r);
	assert_int_equal(calls, 2);
	http_server_stop(s);
}

static void test_two_servers_and_refusals(void **state)
{
	(void)state;
	int c1 = 0, c2 = 0, p1 = free_port(), p2 = free_port();
	http_server *a = start(p1, &c1), *b = start(p2, &c2);
	free(http(p1, "GET /1 HTTP/1.0\r\nHost: h\r\n\r\n"));
	free(http(p2, "GET /2 HTTP/1.0\r\nHost: h\r\n\r\n"));
	free(http(p2, "GET /2 HTTP/1.0\r\nHost: h\r\n\r\n"));
	assert_int_equal(c1, 1);
	assert_int_equal(c2, 2);
	http_server_stop(a);
	http_server_stop(b);
	http_server_stop(NULL);
	char url[64], err[256];
	http_server *s = (http_server *)1;
	/* "" starts nothing */
	http_server_cfg cfg = {.url = "", .handler = echo, .name = "t", .ca_option = "--tls-ca"};
	assert_int_equal(http_server_start(&s, &cfg, err, sizeof err), 0);
	assert_null(s);
	/* https without its files; plain http off loopback */
	snprintf(url, sizeof url, "https://127.0.0.1:%d", free_port());
	cfg.url = url;
	assert_int_equal(http_server_start(&s, &cfg, err, sizeof err), -EINVAL);
	assert_non_null(strstr(err, "needs a certificate, its key and a CA"));
	cfg.url = "http://0.0.0.0:1";
	assert_int_equal(http_server_start(&s, &cfg, err, sizeof err), -EINVAL);
	assert_non_null(strstr(err, "--tls-ca"));
}

/* names_of fills *n for `url` and `allowed`, asserting it parses. */
static void names_of(http_names *n, const char *url, const char *allowed)
{
	char why[256] = "";
	if (http_names_init(n, url, allowed, why, sizeof why) != 0)
		fail_msg("http_names_init(%s, %s): %s", url, allowed, why);
}

static void test_names_host(void **state)
{
	(void)state;
	http_names n;
	names_of(&n, "http://127.0.0.1:7180", "");
	/* its address, and the loopback names, with its port */
	assert_true(http_names_host_ok(&n, "127.0.0.1:7180"));
	assert_true(http_names_host_ok(&n, "localhost:7180"));
	assert_true(http_names_host_ok(&n, "LocalHost.:7180"));
	assert_true(http_names_host_ok(&n, "[::1]:7180"));
	assert_true(http_names_host_ok(&n, "[0:0::1]:7180"));
	/* the rebinding page's name, other ports, and what does not parse */
	assert_false(http_names_host_ok(&n, "evil.example:7180"));
	assert_false(http_names_host_ok(&n, "evil.example"));
	assert_false(http_names_host_ok(&n, "127.0.0.1"));      /* port 80 */
	assert_false(http_names_host_ok(&n, "localhost:7181")); /* another port */
	assert_false(http_names_host_ok(&n, "127.0.0.1.evil.example:7180"));
	assert_false(http_names_host_ok(&n, "localhost.evil.example:7180"));
	assert_false(http_names_host_ok(&n, "127.0.0.1:7180@evil.example"));
	assert_false(http_names_host_ok(&n, "127.0.0.1:7180 "));
	assert_false(http_names_host_ok(&n, "127.0.0.1:07180x"));
	assert_false(http_names_host_ok(&n, "127.0.0.1:"));
	assert_false(http_names_host_ok(&n, "[::1"));
	assert_false(http_names_host_ok(&n, "::1:7180"));
	assert_false(http_names_host_ok(&n, ""));
	assert_false(http_names_host_ok(&n, NULL));
	/* configured: a bare name on any port, host:port on that port only */
	names_of(&n, "https://0.0.0.0:9471", "stock, stock2 ,gw.example.com:8443,[2001:DB8::1]");
	assert_true(http_names_host_ok(&n, "stock:9471"));
	assert_true(http_names_host_ok(&n, "STOCK2:19471"));
	assert_true(http_names_host_ok(&n, "stock")); /* 443 */
	assert_true(http_names_host_ok(&n, "gw.example.com:8443"));
	assert_false(http_names_host_ok(&n, "gw.example.com")); /* 443, not 8443 */
	assert_true(http_names_host_ok(&n, "[2001:db8:0::1]:1"));
	/* every address: the loopback names with its port; 0.0.0.0 is no name */
	assert_true(http_names_host_ok(&n, "127.0.0.1:9471"));
	assert_true(http_names_host_ok(&n, "localhost:9471"));
	assert_false(http_names_host_ok(&n, "0.0.0.0:9471"));
	assert_false(http_names_host_ok(&n, "stock3:9471"));
	assert_false(http_names_host_ok(&n, "evil.example:9471"));
	/* an address other hosts reach: that one, no loopback name */
	names_of(&n, "https://10.1.2.3:7443", NULL);
	assert_true(http_names_host_ok(&n, "10.1.2.3:7443"));
	assert_false(http_names_host_ok(&n, "localhost:7443"));
	names_of(&n, "https://Gateway.Example.com:443", NULL);
	assert_true(http_names_host_ok(&n, "gateway.example.com"));
	assert_true(http_names_host_ok(&n, "gateway.example.com:443"));
	names_of(&n, "http://[::1]:9000", NULL);
	assert_true(http_names_host_ok(&n, "[::1]:9000"));
	assert_true(http_names_host_ok(&n, "localhost:9000"));
}

static void test_names_origin(void **state)
{
	(void)state;
	http_names n;
	names_of(&n, "http://127.0.0.1:7180", "api.example.com");
	assert_true(http_names_origin_ok(&n, "http://127.0.0.1:7180"));
	assert_true(http_names_origin_ok(&n, "http://localhost:7180"));
	assert_true(http_names_origin_ok(&n, "https://api.example.com"));
	assert_true(http_names_origin_ok(&n, "HTTP://API.example.com:8080"));
	assert_false(http_names_origin_ok(&n, "http://evil.example:7180"));
	assert_false(http_names_origin_ok(&n, "http://127.0.0.1:7181"));
	assert_false(http_names_origin_ok(&n, "http://127.0.0.1")); /* port 80 */
	assert_false(http_names_origin_ok(&n, "null"));
	assert_false(http_names_origin_ok(&n, "file://"));
	assert_false(http_names_origin_ok(&n, "chrome-extension://abc"));
	assert_false(http_names_origin_ok(&n, "http://127.0.0.1:7180/"));
	assert_false(http_names_origin_ok(&n, "http://u@127.0.0.1:7180"));
	assert_false(http_names_origin_ok(&n, ""));
	assert_false(http_names_origin_ok(&n, NULL));
	assert_true(http_method_changes("POST"));
	assert_true(http_method_changes("put"));
	assert_true(http_method_changes("DELETE"));
	assert_true(http_method_changes("PATCH"));
	assert_false(http_method_changes("GET"));
	assert_false(http_method_changes("HEAD"));
	assert_false(http_method_changes("OPTIONS"));
}

static void test_hosts_check(void **state)
{
	(void)state;
	char why[256];
	assert_int_equal(http_hosts_check("", why, sizeof why), 0);
	assert_int_equal(http_hosts_check(NULL, why, sizeof why), 0);
	assert_int_equal(http_hosts_check("a,b:1,[::1]:65535, c.example ", why, sizeof why), 0);
	const char *bad[] = {"*", "a,,b", "a,", ",a", "a:0", "a:65536", "a:x", "a b", "[::1", "::1",
	    "http://a", "a/b", "-:1:2", ".a", "a..b"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		why[0] = '\0';
		if (http_hosts_check(bad[i], why, sizeof why) != -EINVAL)
			fail_msg("\"%s\" was taken", bad[i]);
		assert_true(why[0] != '\0');
	}
	char many[512] = "";
	for (int i = 0; i < HTTP_NAMES_MAX - 3; i++)
		snprintf(many + strlen(many), sizeof many - strlen(many), "%sh%d", i ? "," : "", i);
	assert_int_equal(http_hosts_check(many, why, sizeof why), -EINVAL);
	assert_non_null(strstr(why, "more than"));
	http_names n;
	assert_int_equal(
	    http_names_init(&n, "http://127.0.0.1:1", "a,*", why, sizeof why), -EINVAL);
	assert_non_null(strstr(why, "\"*\""));
}

/* refusals_are is true when sagas_http_refusals_total{listener="test",
 * reason} is n. */
static bool refusals_are(const char *reason, int n)
{
	char want[128];
	snprintf(want, sizeof want,
	    "sagas_http_refusals_total{listener=\"test\",reason=\"%s\"} %d\n", reason, n);
	size_t len = 0;
	char *page = metrics_render(&len);
	bool ok = page != NULL && strstr(page, want) != NULL;
	free(page);
	return ok;
}

static void test_refused_names(void **state)
{
	(void)state;
	int calls = 0, port = free_port();
	http_server *s = start(port, &calls);
	char req[512];
	char *r;
#define SEND(...) (snprintf(req, sizeof req, __VA_ARGS__), r = http(port, req))
	assert_true(refusals_are("host", 0));
	assert_true(refusals_are("origin", 0));
	/* a rebinding page's name: 421, the handler never runs (a POST too) */
	SEND("GET /v1/sagas HTTP/1.1\r\nHost: evil.example:%d\r\n\r\n", port);
	assert_non_null(strstr(r, "HTTP/1.1 421 "));
	assert_non_null(strstr(r, "\"reason\":\"misdirected\""));
	free(r);
	SEND("POST /v1/sagas HTTP/1.1\r\nHost: evil.example:%d\r\nOrigin: "
	     "http://evil.example:%d\r\nContent-Length: 2\r\n\r\n{}",
	    port, port);
	assert_non_null(strstr(r, "HTTP/1.1 421 "));
	free(r);
	/* no Host at all (HTTP/1.0): refused as well */
	SEND("GET /x HTTP/1.0\r\n\r\n");
	assert_non_null(strstr(r, " 421 "));
	free(r);
	assert_int_equal(calls, 0);
	assert_true(refusals_are("host", 3));
	/* the right Host, a POST from a foreign origin: 403 */
	SEND("POST /v1/sagas HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nOrigin: "
	     "http://evil.example:8000\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}",
	    port);
	assert_non_null(strstr(r, "HTTP/1.1 403 "));
	assert_non_null(strstr(r, "\"reason\":\"foreign_origin\""));
	free(r);
	SEND("DELETE /x HTTP/1.1\r\nHost: h\r\nOrigin: null\r\nConnection: close\r\n\r\n");
	assert_non_null(strstr(r, "HTTP/1.1 403 "));
	free(r);
	assert_int_equal(calls, 0);
	assert_true(refusals_are("origin", 2));
	/* served: its own origin, no Origin (curl), a GET from any origin (the
	 * browser does not let the page read it: no CORS header) */
	SEND("POST /a HTTP/1.1\r\nHost: localhost:%d\r\nOrigin: http://localhost:%d\r\n"
	     "Content-Length: 0\r\nConnection: close\r\n\r\n",
	    port, port);
	assert_non_null(strstr(r, "HTTP/1.1 200 "));
	free(r);
	SEND("POST /a HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Length: 0\r\nConnection: "
	     "close\r\n\r\n",
	    port);
	assert_non_null(strstr(r, "HTTP/1.1 200 "));
	free(r);
	SEND("GET /a HTTP/1.1\r\nHost: h:1\r\nOrigin: http://evil.example\r\nConnection: "
	     "close\r\n\r\n");
	assert_non_null(strstr(r, "HTTP/1.1 200 "));
	free(r);
	assert_int_equal(calls, 3);
	assert_true(refusals_are("host", 3));
	assert_true(refusals_are("origin", 2));
#undef SEND
	http_server_stop(s);
}

static void test_bad_path(void **state)
{
	(void)state;
	int calls = 0, port = free_port();
	http_server *s = start(port, &calls);
	static const char *const paths[]
	    = {"/v1/sagas/abc%2Fhistory", "/v1/sagas/abc%2fhistory", "/v1/sagas/abc%00xyz",
	        "/v1/history%00", "/v1/sagas%2Fabc%2Fretry", "/a%20b", "/a%", "/%41"};
	int n = (int)(sizeof paths / sizeof paths[0]);
	for (int i = 0; i < n; i++) {
		char req[256];
		snprintf(req, sizeof req,
		    "POST %s?x=1 HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\nConnection: "
		    "close\r\n\r\n{}",
		    paths[i]);
		char *r = http(port, req);
		assert_non_null(strstr(r, "HTTP/1.1 400 "));
		assert_non_null(strstr(r, "\"reason\":\"bad_path\""));
		free(r);
	}
	assert_int_equal(calls, 0);
	assert_true(refusals_are("bad_path", n));
	/* a foreign Host is refused as such first; an escape in the query is served */
	char *r = http(port, "GET /a%2Fb HTTP/1.1\r\nHost: evil\r\nConnection: close\r\n\r\n");
	assert_non_null(strstr(r, "HTTP/1.1 421 "));
	free(r);
	r = http(port, "GET /a?p=%2F%00 HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n");
	assert_non_null(strstr(r, "HTTP/1.1 200 "));
	free(r);
	/* keep-alive: a refused request does not mark the next one */
	r = http(port,
	    "GET /a HTTP/1.1\r\nHost: h\r\n\r\nGET /b%2F HTTP/1.1\r\nHost: "
	    "h\r\nConnection: close\r\n\r\n");
	assert_non_null(strstr(r, "GET /a body=0"));
	assert_non_null(strstr(r, "HTTP/1.1 400 "));
	free(r);
	assert_int_equal(calls, 2);
	assert_true(refusals_are("bad_path", n + 1));
	http_server_stop(s);
}

/* dial opens a connection to the loopback port (sends nothing). */
static int dial(int port)
{
	int s = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET,
	    .sin_port = htons((uint16_t)port),
	    .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	assert_int_equal(connect(s, (struct sockaddr *)&a, sizeof a), 0);
	return s;
}

static void test_conn_cap(void **state)
{
	(void)state;
	int calls = 0, port = free_port();
	http_server *s = start(port, &calls); /* 4 from one address */
	int fd[4];
	for (int i = 0; i < 4; i++) {
		fd[i] = dial(port);
		assert_int_equal(write(fd[i], "G", 1), 1); /* a trickle */
	}
	/* the fifth is closed without an answer, and counted */
	int five = dial(port);
	char b[16];
	ssize_t r = read(five, b, sizeof b);
	assert_true(r <= 0);
	close(five);
	assert_true(refusals_are("conn_cap", 1));
	/* one of the four closes: the address is served again */
	close(fd[0]);
	char *ans = NULL;
	for (int i = 0; i < 100; i++) {
		free(ans);
		int t = dial(port);
		const char *req = "GET /x HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n";
		ssize_t w = send(t, req, strlen(req), MSG_NOSIGNAL);
		ans = calloc(1, 4096);
		if (w > 0)
			(void)!read(t, ans, 4095);
		close(t);
		if (strstr(ans, "HTTP/1.1 200 ") != NULL)
			break;
		nanosleep(&(struct timespec) {0, 20 * 1000 * 1000}, NULL);
	}
	assert_non_null(strstr(ans, "HTTP/1.1 200 "));
	free(ans);
	for (int i = 1; i < 4; i++)
		close(fd[i]);
	http_server_stop(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_request),
	    cmocka_unit_test(test_body_limit),
	    cmocka_unit_test(test_two_servers_and_refusals),
	    cmocka_unit_test(test_names_host),
	    cmocka_unit_test(test_names_origin),
	    cmocka_unit_test(test_hosts_check),
	    cmocka_unit_test(test_refused_names),
	    cmocka_unit_test(test_bad_path),
	    cmocka_unit_test(test_conn_cap),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
