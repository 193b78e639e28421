/* rpc_unpack (rpc.h): a handler's decoding of its payload, on
 * WaitSagaRequest (a string and an int32):
 *   - a valid payload decodes, the reply untouched;
 *   - an empty payload decodes too (every field at its default);
 *   - a truncated one is refused: "could not decode WaitSagaRequest";
 *   - non-canonical ones (a field sent twice, fields out of order with one
 *     at its default value, an overlong varint, a NUL byte in a string)
 *     decode but are refused with the canonical-encoding message;
 * each refusal INVALID_ARGUMENT malformed_payload, with no message. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "rpc.h"
#include "sagas/v1/orchestrator.pb-c.h"
#include "valid.h"

#define ID "0b9a3c52-3f2e-4d0c-9a51-6f1d2e8b7c40"

/* The canonical encoding of WaitSagaRequest{saga_id: ID, wait_ms: 150}:
 * field 1 (tag 0x0a), 36 bytes; field 2 (tag 0x10), varint 150. */
static const uint8_t valid_bytes[] = "\x0a\x24" ID "\x10\x96\x01";
#define VALID_LEN (sizeof valid_bytes - 1)

static Sagas__V1__WaitSagaRequest *unpack(const uint8_t *bytes, size_t len, rpc_reply *r)
{
	rpc_request call = {.method = "/sagas.v1.Orchestrator/WaitSaga", .request_id = "t"};
	call.payload = bytes;
	call.payload_len = len;
	memset(r, 0, sizeof *r);
	return (Sagas__V1__WaitSagaRequest *)rpc_unpack(
	    &sagas__v1__wait_saga_request__descriptor, &call, r);
}

static void assert_untouched(const rpc_reply *r)
{
	assert_int_equal(r->code, RPC_OK);
	assert_string_equal(r->reason, "");
	assert_string_equal(r->message, "");
	assert_null(r->payload);
}

static void assert_refused(const rpc_reply *r, const char *message)
{
	assert_int_equal(r->code, RPC_INVALID_ARGUMENT);
	assert_string_equal(r->reason, "malformed_payload");
	assert_string_equal(r->message, message);
	assert_null(r->payload);
}

#define NOT_CANONICAL                                                                              \
	"could not decode WaitSagaRequest: not a canonical encoding " VALID_CANONICAL_HINT

static void test_valid(void **state)
{
	(void)state;
	/* the bytes are what protobuf-c itself packs */
	Sagas__V1__WaitSagaRequest m = SAGAS__V1__WAIT_SAGA_REQUEST__INIT;
	m.saga_id = (char *)ID;
	m.wait_ms = 150;
	uint8_t packed[64];
	assert_int_equal(sagas__v1__wait_saga_request__pack(&m, packed), VALID_LEN);
	assert_memory_equal(packed, valid_bytes, VALID_LEN);

	rpc_reply r;
	Sagas__V1__WaitSagaRequest *req = unpack(valid_bytes, VALID_LEN, &r);
	assert_non_null(req);
	assert_string_equal(req->saga_id, ID);
	assert_int_equal(req->wait_ms, 150);
	assert_untouched(&r);
	protobuf_c_message_free_unpacked(&req->base, NULL);
}

static void test_empty(void **state)
{
	(void)state;
	rpc_reply r;
	Sagas__V1__WaitSagaRequest *req = unpack((const uint8_t *)"", 0, &r);
	assert_non_null(req);
	assert_string_equal(req->saga_id, "");
	assert_int_equal(req->wait_ms, 0);
	assert_untouched(&r);
	sagas__v1__wait_saga_request__free_unpacked(req, NULL);
}

static void test_truncated(void **state)
{
	(void)state;
	rpc_reply r;
	/* cut inside the string, then inside the varint */
	assert_null(unpack(valid_bytes, 10, &r));
	assert_refused(&r, "could not decode WaitSagaRequest");
	assert_null(unpack(valid_bytes, VALID_LEN - 1, &r));
	assert_refused(&r, "could not decode WaitSagaRequest");
	/* a lone tag */
	assert_null(unpack((const uint8_t *)"\x10", 1, &r));
	assert_refused(&r, "could not decode WaitSagaRequest");
}

static void test_not_canonical(void **state)
{
	(void)state;
	rpc_reply r;
	/* wait_ms sent twice (the last would win) */
	static const uint8_t twice[] = "\x0a\x24" ID "\x10\x01\x10\x96\x01";
	assert_null(unpack(twice, sizeof twice - 1, &r));
	assert_refused(&r, NOT_CANONICAL);
	/* out of order, wait_ms sent with its default value 0 */
	static const uint8_t order[] = "\x10\x00\x0a\x24" ID;
	assert_null(unpack(order, sizeof order - 1, &r));
	assert_refused(&r, NOT_CANONICAL);
	/* wait_ms 150 as an overlong varint */
	static const uint8_t overlong[] = "\x0a\x24" ID "\x10\x96\x81\x00";
	assert_null(unpack(overlong, sizeof overlong - 1, &r));
	assert_refused(&r, NOT_CANONICAL);
	/* a NUL byte inside the saga id: read as its first 2 bytes */
	static const uint8_t nul[] = "\x0a\x04"
	                             "0b\0x";
	assert_null(unpack(nul, sizeof nul - 1, &r));
	assert_refused(&r, NOT_CANONICAL);
}

/* A refusal replaces what the reply held (rpc_reply_error). */
static void test_refusal_overwrites(void **state)
{
	(void)state;
	rpc_request call = {.method = "/sagas.v1.Orchestrator/WaitSaga", .request_id = "t"};
	call.payload = valid_bytes;
	call.payload_len = 10;
	rpc_reply r = {.code = RPC_INTERNAL};
	strcpy(r.reason, "earlier");
	strcpy(r.message, "an earlier message, longer than the new one by far");
	assert_null(rpc_unpack(&sagas__v1__wait_saga_request__descriptor, &call, &r));
	assert_refused(&r, "could not decode WaitSagaRequest");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_valid),
	    cmocka_unit_test(test_empty),
	    cmocka_unit_test(test_truncated),
	    cmocka_unit_test(test_not_canonical),
	    cmocka_unit_test(test_refusal_overwrites),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
