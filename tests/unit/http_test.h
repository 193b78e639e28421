/* http_test: what the unit tests of the HTTP listeners (test_metrics,
 * test_http_server) need from a client. Include after <cmocka.h>. */
#ifndef SAGA_HTTP_TEST_H
#define SAGA_HTTP_TEST_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* free_port: a loopback port nobody listens on now, drawn as
 * scripts/ports.sh's free_port draws one: at random below the kernel's
 * ephemeral range (a port the kernel hands out for bind(0) is one an
 * outgoing connection of a test running beside this one may take before
 * the server binds it), bound and released once, and claimed with a
 * directory $SAGAS_PORT_DIR/PORT (default /tmp/sagas-ports) that only one
 * process can make, so the shell tests' stacks skip it; claims are swept
 * after 30 minutes by scripts/ports.sh. */
static inline int free_port(void)
{
	const char *dir = getenv("SAGAS_PORT_DIR");
	char path[512];
	snprintf(path, sizeof path, "%s", dir && dir[0] ? dir : "/tmp/sagas-ports");
	mkdir(path, 01777);
	int lo = 32768;
	FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");
	if (f != NULL) {
		if (fscanf(f, "%d", &lo) != 1)
			lo = 32768;
		fclose(f);
	}
	if (lo <= 12000)
		lo = 32768;
	srandom((unsigned)getpid() ^ (unsigned)time(NULL));
	for (int i = 0; i < 500; i++) {
		int p = 10000 + (int)(random() % (lo - 10000));
		int s = socket(AF_INET, SOCK_STREAM, 0);
		struct sockaddr_in a = {.sin_family = AF_INET,
		    .sin_port = htons((uint16_t)p),
		    .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
		bool ok = s >= 0 && bind(s, (struct sockaddr *)&a, sizeof a) == 0;
		if (s >= 0)
			close(s);
		char claim[600];
		snprintf(claim, sizeof claim, "%s/%d", path, p);
		if (ok && mkdir(claim, 0755) == 0)
			return p;
	}
	fail_msg("free_port: no free port below %d", lo);
	return -1;
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
