/* http_test: what the unit tests of the HTTP listeners (test_metrics,
 * test_http_server) need from a client. Include after <cmocka.h>. */
#ifndef SAGA_HTTP_TEST_H
#define SAGA_HTTP_TEST_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* free_port: a loopback port nobody listens on now (bound and released). */
static inline int free_port(void)
{
	int s = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t l = sizeof a;
	assert_int_equal(bind(s, (struct sockaddr *)&a, sizeof a), 0);
	assert_int_equal(getsockname(s, (struct sockaddr *)&a, &l), 0);
	close(s);
	return ntohs(a.sin_port);
}

/* http: sends `req` to the loopback port and returns the whole answer, up
 * to 1 MiB (malloc'd, caller frees; "" when the server closed without
 * one). */
static inline char *http(int port, const char *req)
{
	int s = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET,
	    .sin_port = htons((uint16_t)port),
	    .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	assert_int_equal(connect(s, (struct sockaddr *)&a, sizeof a), 0);
	assert_int_equal(write(s, req, strlen(req)), (ssize_t)strlen(req));
	size_t cap = 1 << 20, n = 0;
	char *buf = malloc(cap);
	ssize_t r;
	while ((r = read(s, buf + n, cap - 1 - n)) > 0)
		n += (size_t)r;
	buf[n] = '\0';
	close(s);
	return buf;
}

#endif
