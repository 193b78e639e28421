/* sockscan: this process's TCP connections as the kernel lists them
 * (/proc/net/tcp and tcp6, /proc/self/fd), for the reaper of connections
 * that nng does not show: the RPC listeners' TLS handshakes that never end
 * (rpc_conn.c). Only the process's own sockets are reported. Linux only.
 */
#ifndef SAGA_SOCKSCAN_H
#define SAGA_SOCKSCAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One connection. */
typedef struct sockscan_conn {
	unsigned lport;    /* its local port */
	bool v6;           /* from tcp6 (raddr holds 16 bytes; else the first 4) */
	uint8_t raddr[16]; /* the peer's address, network order */
	unsigned rport;    /* the peer's port */
	unsigned long inode;
} sockscan_conn;

/* The inodes of this process's sockets, sorted (sockscan_own). */
typedef struct sockscan_own {
	unsigned long *inodes; /* malloc'd; sockscan_own_free */
	size_t n;
} sockscan_own;

/* sockscan_own_read lists the inodes of this process's sockets (one pass
 * over /proc/self/fd). Returns 0, or -ENOMEM / -errno (then o->n is 0). */
int sockscan_own_read(sockscan_own *o);

/* sockscan_own_free frees the list. */
void sockscan_own_free(sockscan_own *o);

/* sockscan_tcp calls fn(arg, c) for every ESTABLISHED or CLOSE_WAIT
 * connection of /proc/net/tcp and tcp6 whose local port is one of
 * ports[0..nports) and whose socket is one of own's: connections other
 * processes hold on the same port (another address) are never reported. */
void sockscan_tcp(const unsigned *ports, int nports, const sockscan_own *own,
    void (*fn)(void *arg, const sockscan_conn *c), void *arg);

/* sockscan_shutdown shuts down (SHUT_RDWR) this process's sockets whose
 * inodes are in kill[0..n); the owner (nng) then sees them fail and closes
 * them. Returns how many were shut down. */
int sockscan_shutdown(const unsigned long *kill, int n);

#endif
