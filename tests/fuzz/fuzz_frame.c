/* fuzz_frame: the RPC server's own decoding of request frames (rpc_server.c:
 * the envelope, batch frames and each call in them, deadlines, the roles
 * table, Health and Admin), as deployed: a real server on an inproc://
 * listener, the input sent as one raw frame by a REQ socket. The handler is
 * a toy that answers OK. Properties: the server answers every frame within
 * 10 s (it never drops one: no fault is armed, and SetFault is refused as
 * failure injection is off); the reply decodes as a ReplyEnvelope whose
 * code is a gRPC code (0..16), whose texts are UTF-8, and, for a batch
 * answered OK, with one reply per call. */
#include <stdlib.h>
#include <string.h>

#include <nng/nng.h>
#include <nng/protocol/reqrep0/req.h>

#include "admin.h"
#include "fuzz.h"
#include "health.h"
#include "log.h"
#include "rpc.h"
#include "valid.h"
#include "sagas/v1/health.pb-c.h"
#include "sagas/v1/rpc.pb-c.h"

#define FUZZ_URL "inproc://fuzz_frame"

static void toy_handle(void *app, void *worker, const rpc_request *call, rpc_reply *reply)
{
	(void)app;
	(void)worker;
	(void)call;
	Sagas__V1__HealthCheckResponse out = SAGAS__V1__HEALTH_CHECK_RESPONSE__INIT;
	rpc_reply_ok(reply, &out.base);
}

static health_service toy_health = {.service = "sagas.v1.Toy"};
static admin_service toy_admin = {.fault_injection = false};
static const rpc_service toy_health_svc = {"sagas.v1.Health", health_serve, &toy_health};
static const rpc_service toy_admin_svc = {"sagas.v1.Admin", admin_serve, &toy_admin};
static const rpc_service *const toy_services[] = {&toy_health_svc, &toy_admin_svc, NULL};
static const rpc_server_ops toy_ops = {.handle = toy_handle, .services = toy_services};

static rpc_server *fuzz_srv;
static nng_socket fuzz_req;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	log_init("fuzz_frame", LOG_LEVEL_ERROR);
	if (rpc_server_start(&fuzz_srv, FUZZ_URL, 2, 0, 0, &toy_ops, NULL) != 0)
		fuzz_fail(__FILE__, __LINE__, "could not start the server");
	if (nng_req0_open(&fuzz_req) != 0 || nng_dial(fuzz_req, FUZZ_URL, NULL, 0) != 0)
		fuzz_fail(__FILE__, __LINE__, "could not dial the server");
	nng_socket_set_ms(fuzz_req, NNG_OPT_RECVTIMEO, 10000);
	nng_socket_set_ms(fuzz_req, NNG_OPT_SENDTIMEO, 10000);
	/* no resend: one frame, one answer */
	nng_socket_set_ms(fuzz_req, NNG_OPT_REQ_RESENDTIME, NNG_DURATION_INFINITE);
	nng_socket_set_size(fuzz_req, NNG_OPT_RECVMAXSZ, 0);
	return 0;
}

/* fuzz_reply_ok checks one reply envelope (and its batch replies). */
static void fuzz_reply_ok(const Sagas__V1__ReplyEnvelope *r, int depth)
{
	fuzz_check(r->code >= 0 && r->code <= 16, "a gRPC code");
	fuzz_check(valid_utf8(r->message, strlen(r->message)), "the message is UTF-8");
	fuzz_check(valid_utf8(r->reason, strlen(r->reason)), "the reason is UTF-8");
	fuzz_check(depth == 0 || r->n_replies == 0, "no batch inside a batch reply");
	for (size_t i = 0; i < r->n_replies; i++)
		fuzz_reply_ok(r->replies[i], depth + 1);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* past the frame limit a TCP listener closes the connection
	 * (test_frame_limit); inproc does not enforce it */
	if (size > RPC_MAX_REQUEST_DEFAULT)
		return 0;
	nng_msg *m = NULL;
	if (nng_msg_alloc(&m, 0) != 0 || nng_msg_append(m, data, size) != 0) {
		nng_msg_free(m);
		return 0;
	}
	if (nng_sendmsg(fuzz_req, m, 0) != 0) {
		nng_msg_free(m);
		fuzz_fail(__FILE__, __LINE__, "could not send the frame");
	}
	nng_msg *rep = NULL;
	fuzz_check(nng_recvmsg(fuzz_req, &rep, 0) == 0, "the server answers every frame");
	Sagas__V1__ReplyEnvelope *r
	    = sagas__v1__reply_envelope__unpack(NULL, nng_msg_len(rep), nng_msg_body(rep));
	fuzz_check(r != NULL, "the reply decodes");
	fuzz_reply_ok(r, 0);
	/* a batch answered OK has one reply per call it carried (or fewer
	 * only when the server dropped one, which it never does here) */
	Sagas__V1__RequestEnvelope *q
	    = valid_pb_nesting(data, size, RPC_ENVELOPE_CALLS_FIELD, RPC_ENVELOPE_NESTING_MAX)
	    ? sagas__v1__request_envelope__unpack(NULL, size, data)
	    : NULL;
	if (q != NULL && strcmp(q->method, RPC_BATCH_METHOD) == 0 && r->code == 0)
		fuzz_check(r->n_replies == q->n_calls, "one reply per call of a batch");
	sagas__v1__request_envelope__free_unpacked(q, NULL);
	sagas__v1__reply_envelope__free_unpacked(r, NULL);
	nng_msg_free(rep);
	return 0;
}
