/* http_server (common/http_server.h), the listener of /metrics and of
 * gatewayd: the handler sees the method, the decoded path, the body, the
 * query parameters (decoded, in order) and the headers; a body past
 * max_body is 413 without the handler, declared (Content-Length) or sent
 * chunked; status 0 closes the connection without an answer; two servers
 * run at once; https without its files is refused. */
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
#include <unistd.h>

#include <cmocka.h>

#include "http_test.h"

#include "http_server.h"

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
	    .ca_option = "--tls-ca"};
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
	    "POST /a%20b?x=1&y=%2B+2&flag HTTP/1.1\r\nHost: h\r\nX-Test: yes\r\n"
	    "Content-Length: 5\r\nConnection: close\r\n\r\nhello");
	assert_non_null(strstr(r, "HTTP/1.1 200"));
	assert_non_null(strstr(r, "X-One: 1\r\n"));
	assert_non_null(strstr(r, "POST /a b body=5:hello q=[x=1][y=+ 2][flag=] x=yes"));
	free(r);
	r = http(port, "GET / HTTP/1.0\r\n\r\n");
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
	r = http(port, "GET /close HTTP/1.0\r\n\r\n");
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
	free(http(p1, "GET /1 HTTP/1.0\r\n\r\n"));
	free(http(p2, "GET /2 HTTP/1.0\r\n\r\n"));
	free(http(p2, "GET /2 HTTP/1.0\r\n\r\n"));
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

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_request),
	    cmocka_unit_test(test_body_limit),
	    cmocka_unit_test(test_two_servers_and_refusals),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
