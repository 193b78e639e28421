/* rpc: what the RPC server (rpc_server.c) and client (rpc_client.c) share:
 * status code names, the one mapping of nng errors, and the replies a
 * handler fills. */
#include "rpc.h"
#include "rpc_internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include <nng/nng.h>

#include "valid.h"

const char *rpc_code_name(int code)
{
	static const char *names[] = {"OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT",
	    "DEADLINE_EXCEEDED", "NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED",
	    "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED",
	    "INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED"};
	if (code < 0 || code > 16)
		return "UNKNOWN_CODE";
	return names[code];
}

int rpc_errno(int nng_rv)
{
	switch (nng_rv) {
	case 0:
		return 0;
	case NNG_ENOMEM:
		return -ENOMEM;
	case NNG_EADDRINUSE:
		return -EADDRINUSE;
	case NNG_EINVAL:
	case NNG_EADDRINVAL:
		return -EINVAL;
	case NNG_ETIMEDOUT:
		return -ETIMEDOUT;
	case NNG_ECLOSED:
		return -ESHUTDOWN;
	case NNG_EMSGSIZE:
		return -EMSGSIZE;
	case NNG_ECONNREFUSED:
		return -ECONNREFUSED;
	case NNG_EPEERAUTH:
	case NNG_ECRYPTO:
		return -EACCES; /* a TLS handshake refused */
	default:
		return -EIO;
	}
}

int rpc_reply_ok(rpc_reply *r, const ProtobufCMessage *msg)
{
	free(r->payload);
	r->payload = NULL;
	r->payload_len = 0;
	r->code = RPC_OK;
	r->reason[0] = r->message[0] = '\0';
	size_t n = protobuf_c_message_get_packed_size(msg);
	r->payload = malloc(n ? n : 1);
	if (r->payload == NULL) {
		rpc_reply_error(r, RPC_INTERNAL, "", "out of memory");
		return -ENOMEM;
	}
	r->payload_len = protobuf_c_message_pack(msg, r->payload);
	return 0;
}

void rpc_reply_error(rpc_reply *r, int code, const char *reason, const char *fmt, ...)
{
	free(r->payload);
	r->payload = NULL;
	r->payload_len = 0;
	r->code = code;
	valid_utf8_copy(r->reason, sizeof r->reason, reason ? reason : "");
	/* formatted whole (up to 4 times the room), then cut at a character
	 * boundary: a message quoting a long method or name stays UTF-8 */
	char text[4 * RPC_MESSAGE_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(text, sizeof text, fmt, ap);
	va_end(ap);
	valid_utf8_copy(r->message, sizeof r->message, text);
}
