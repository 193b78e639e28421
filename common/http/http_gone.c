/* http_gone: whether a request's caller has gone away (http_server.h),
 * apart from http_server.c because POLLRDHUP needs _GNU_SOURCE. */
#define _GNU_SOURCE
#include <poll.h>

#include <microhttpd.h>

#include "http_server.h"

bool http_request_gone(const http_request *req)
{
	const union MHD_ConnectionInfo *ci
	    = MHD_get_connection_info(req->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	if (ci == NULL)
		return false;
	/* poll only: nothing is read, so the library's view of the stream
	 * (and of TLS records) is unchanged */
	struct pollfd p = {.fd = ci->connect_fd, .events = POLLRDHUP};
	if (poll(&p, 1, 0) <= 0)
		return false;
	return (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) != 0;
}
