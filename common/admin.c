#include "admin.h"

#include <string.h>

#include "fault.h"
#include "sagas/v1/admin.pb-c.h"
#include "valid.h"

#define ADMIN_PREFIX "/sagas.v1.Admin/"

static void admin_set_fault(const rpc_request *call, rpc_reply *reply)
{
	Sagas__V1__SetFaultRequest *req
	    = sagas__v1__set_fault_request__unpack(NULL, call->payload_len, call->payload);
	if (req == NULL) {
		rpc_reply_error(reply, RPC_INVALID_ARGUMENT, "malformed_payload",
		    "could not decode SetFaultRequest");
		return;
	}
	if (!valid_pb_exact(&req->base, call->payload_len))
		rpc_reply_error(reply, RPC_INVALID_ARGUMENT, "malformed_payload",
		    "could not decode SetFaultRequest: not a canonical "
		    "encoding " VALID_CANONICAL_HINT);
	int kind = (int)req->kind;
	if (!valid_pb_exact(&req->base, call->payload_len)) {
		/* refused above */
	} else if (kind < FAULT_DELAY || kind > FAULT_DUPLICATE_REPLY) {
		rpc_reply_error(reply, RPC_INVALID_ARGUMENT, "bad_field",
		    "invalid kind: %d is not a FaultKind", kind);
	} else if (req->method[0] != '\0' && !valid_name(req->method)) {
		rpc_reply_error(reply, RPC_INVALID_ARGUMENT, "bad_field",
		    "invalid method: must be 1..%d bytes of UTF-8", VALID_NAME_MAX);
	} else if (req->delay_ms < 0 || req->delay_ms > 600000) {
		rpc_reply_error(reply, RPC_INVALID_ARGUMENT, "bad_field",
		    "invalid delay_ms: must be 0..600000");
	} else if (req->count < 0) {
		rpc_reply_error(
		    reply, RPC_INVALID_ARGUMENT, "bad_field", "invalid count: must be >= 0");
	} else if (fault_arm((fault_kind)kind, req->method, req->delay_ms, req->count) != 0) {
		rpc_reply_error(reply, RPC_RESOURCE_EXHAUSTED, "too_many_faults",
		    "could not arm fault: too many armed");
	} else {
		Sagas__V1__SetFaultReply out = SAGAS__V1__SET_FAULT_REPLY__INIT;
		rpc_reply_ok(reply, &out.base);
	}
	sagas__v1__set_fault_request__free_unpacked(req, NULL);
}

bool admin_handle(const rpc_request *call, rpc_reply *reply)
{
	if (strncmp(call->method, ADMIN_PREFIX, strlen(ADMIN_PREFIX)) != 0)
		return false;
	const char *m = call->method + strlen(ADMIN_PREFIX);
	if (!strcmp(m, "SetFault")) {
		admin_set_fault(call, reply);
	} else if (!strcmp(m, "ClearFaults")) {
		fault_clear();
		Sagas__V1__ClearFaultsReply out = SAGAS__V1__CLEAR_FAULTS_REPLY__INIT;
		rpc_reply_ok(reply, &out.base);
	} else {
		rpc_reply_error(reply, RPC_UNIMPLEMENTED, "unknown_method", "unknown method \"%s\"",
		    call->method);
	}
	return true;
}
