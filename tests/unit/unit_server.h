/* unit_server.h: an in-process rpc_server for the unit tests, on a free
 * loopback port. Include after <cmocka.h>. */
#ifndef SAGA_UNIT_SERVER_H
#define SAGA_UNIT_SERVER_H

#include <errno.h>
#include <stdio.h>
#include <unistd.h>

#include <nng/nng.h>
#include <nng/supplemental/util/platform.h>

#include "rpc.h"

/* unit_server_start starts rpc_server_start(ops, app, workers, contexts)
 * on a random free loopback port below the kernel's ephemeral range (as
 * tests/lib/stack.sh picks them: outgoing connections take ports from that
 * range, so the kernel's choice could be taken again), and writes its URL
 * into `url` (`urlsz` bytes). Fails the test when no port is free after 100
 * tries, or on any error but -EADDRINUSE. */
static inline rpc_server *unit_server_start(
    const rpc_server_ops *ops, void *app, int workers, int contexts, char *url, size_t urlsz)
{
	long lo = 32768;
	FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");
	if (f != NULL) {
		if (fscanf(f, "%ld", &lo) != 1)
			lo = 32768;
		fclose(f);
	}
	if (lo <= 12000 || lo > 32768)
		lo = 32768;
	unsigned seed = (unsigned)nng_clock() ^ (unsigned)getpid() * 2654435761u;
	for (int attempt = 0; attempt < 100; attempt++) {
		seed = seed * 1103515245u + 12345u;
		long port = 10000 + (long)((seed >> 8) % (unsigned)(lo - 10000));
		snprintf(url, urlsz, "tcp://127.0.0.1:%ld", port);
		rpc_server *s = NULL;
		int rc = rpc_server_start(&s, url, workers, contexts, 0, ops, app);
		if (rc == 0)
			return s;
		assert_int_equal(rc, -EADDRINUSE);
	}
	fail_msg("no free loopback port below %ld", lo);
	return NULL;
}

#endif
