/* rpc_unpack: a handler's decoding of its request payload (rpc.h), the
 * same for every service: protobuf-c's unpacking, then the canonical
 * encoding (valid_pb_exact), with one reply for either failure. */
#include <protobuf-c/protobuf-c.h>

#include "rpc.h"
#include "valid.h"

ProtobufCMessage *rpc_unpack(
    const ProtobufCMessageDescriptor *desc, const rpc_request *call, rpc_reply *r)
{
	/* the type name without its package, as the messages say it */
	const char *what = desc->short_name;
	ProtobufCMessage *m
	    = protobuf_c_message_unpack(desc, NULL, call->payload_len, call->payload);
	if (m == NULL) {
		rpc_reply_error(
		    r, RPC_INVALID_ARGUMENT, "malformed_payload", "could not decode %s", what);
		rpc_refusal_note(call->pipe, "malformed_payload", call->method);
		return NULL;
	}
	if (!valid_pb_exact(m, call->payload_len)) {
		rpc_reply_error(r, RPC_INVALID_ARGUMENT, "malformed_payload",
		    "could not decode %s: not a canonical encoding " VALID_CANONICAL_HINT, what);
		rpc_refusal_note(call->pipe, "malformed_payload", call->method);
		protobuf_c_message_free_unpacked(m, NULL);
		return NULL;
	}
	return m;
}
