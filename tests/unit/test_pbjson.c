/* pbjson (common/pbjson/pbjson.h): proto3's JSON mapping of the orchestrator's
 * messages. Exact JSON texts for the output (JSON names, int64 as strings,
 * enums by name, defaults omitted), round trips (message -> JSON -> message
 * packs to the same bytes), both spellings of a field name on input, and
 * every refusal with the field path it names. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "pbjson.h"
#include "sagas/v1/orchestrator.pb-c.h"
#include "sagas/v1/rpc.pb-c.h"

/* dump returns the compact, key-sorted text of msg as JSON (malloc'd). */
static char *dump(const ProtobufCMessage *msg)
{
	char err[PBJSON_ERR_MAX];
	json_t *j = pbjson_to_json(msg, err, sizeof err);
	assert_non_null(j);
	char *t = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(j);
	return t;
}

/* parse makes a message of `d` from JSON text; NULL with err on refusal. */
static ProtobufCMessage *parse(
    const ProtobufCMessageDescriptor *d, const char *text, char *err, size_t len)
{
	json_error_t je;
	json_t *j = json_loads(text, JSON_DECODE_ANY, &je);
	assert_non_null(j);
	ProtobufCMessage *m = pbjson_from_json(d, j, err, len);
	json_decref(j);
	return m;
}

/* round_trip: msg -> JSON -> message packs to the same bytes as msg. */
static void round_trip(const ProtobufCMessage *msg)
{
	char err[PBJSON_ERR_MAX] = "";
	json_t *j = pbjson_to_json(msg, err, sizeof err);
	assert_non_null(j);
	ProtobufCMessage *back = pbjson_from_json(msg->descriptor, j, err, sizeof err);
	if (back == NULL)
		fail_msg("round trip refused: %s", err);
	size_t n1 = protobuf_c_message_get_packed_size(msg);
	size_t n2 = protobuf_c_message_get_packed_size(back);
	assert_int_equal(n1, n2);
	uint8_t *b1 = malloc(n1 + 1), *b2 = malloc(n2 + 1);
	protobuf_c_message_pack(msg, b1);
	protobuf_c_message_pack(back, b2);
	assert_memory_equal(b1, b2, n1);
	free(b1);
	free(b2);
	json_decref(j);
	protobuf_c_message_free_unpacked(back, NULL);
}

static Sagas__V1__Order order_ = SAGAS__V1__ORDER__INIT;
static Sagas__V1__Saga saga_ = SAGAS__V1__SAGA__INIT;
static char *overdue_[] = {"past_deadline", "stuck"};

static void fill_saga(void)
{
	order_.customer = "alice";
	order_.sku = "sku-1";
	order_.qty = 2;
	order_.amount = 1000000000000000;
	saga_.saga_id = "0d0e0000-0000-4000-8000-00000000000d";
	saga_.state = SAGAS__V1__SAGA_STATE__SAGA_STATE_COMPLETED;
	saga_.order = &order_;
	saga_.version = 5;
	saga_.attention = 1;
	saga_.created_unix_ms = 1764000000123;
	saga_.updated_unix_ms = -1;
	saga_.epoch = 1;
	saga_.lease_owner = "h/1/abcd0123";
	saga_.n_overdue = 2;
	saga_.overdue = overdue_;
}

static void test_saga_text(void **state)
{
	(void)state;
	fill_saga();
	char *t = dump(&saga_.base);
	assert_string_equal(t,
	    "{\"attention\":true,\"createdUnixMs\":\"1764000000123\",\"epoch\":\"1\","
	    "\"leaseOwner\":\"h/1/abcd0123\",\"order\":{\"amount\":\"1000000000000000\","
	    "\"customer\":\"alice\",\"qty\":2,\"sku\":\"sku-1\"},\"overdue\":[\"past_deadline\","
	    "\"stuck\"],\"sagaId\":\"0d0e0000-0000-4000-8000-00000000000d\","
	    "\"state\":\"SAGA_STATE_COMPLETED\",\"updatedUnixMs\":\"-1\",\"version\":\"5\"}");
	free(t);
	round_trip(&saga_.base);
}

static void test_defaults_omitted(void **state)
{
	(void)state;
	Sagas__V1__GetSagaRequest g = SAGAS__V1__GET_SAGA_REQUEST__INIT;
	char *t = dump(&g.base);
	assert_string_equal(t, "{}");
	free(t);
	Sagas__V1__ListSagasReply r = SAGAS__V1__LIST_SAGAS_REPLY__INIT;
	t = dump(&r.base);
	assert_string_equal(t, "{}");
	free(t);
	round_trip(&r.base);
	/* an enum value the enum does not name goes out as its number */
	Sagas__V1__Saga s = SAGAS__V1__SAGA__INIT;
	s.state = 42;
	t = dump(&s.base);
	assert_string_equal(t, "{\"state\":42}");
	free(t);
}

static void test_round_trips(void **state)
{
	(void)state;
	fill_saga();
	Sagas__V1__StartSagaRequest sr = SAGAS__V1__START_SAGA_REQUEST__INIT;
	sr.saga_id = "0d0e0000-0000-4000-8000-00000000000d";
	sr.order = &order_;
	sr.wait_ms = 60000;
	round_trip(&sr.base);
	Sagas__V1__StartSagaReply sp = SAGAS__V1__START_SAGA_REPLY__INIT;
	sp.saga = &saga_;
	sp.created = 1;
	sp.finished = 1;
	round_trip(&sp.base);
	Sagas__V1__Saga *list[2] = {&saga_, &saga_};
	Sagas__V1__ListSagasReply lr = SAGAS__V1__LIST_SAGAS_REPLY__INIT;
	lr.n_sagas = 2;
	lr.sagas = list;
	lr.next_page_token = "tok";
	lr.truncated = 1;
	lr.overdue_margin_ms = 60000;
	round_trip(&lr.base);
	Sagas__V1__ListSagasRequest lq = SAGAS__V1__LIST_SAGAS_REQUEST__INIT;
	lq.state = SAGAS__V1__SAGA_STATE__SAGA_STATE_SHIPPING;
	lq.customer = "bob";
	lq.created_after_unix_ms = INT64_MIN;
	lq.created_before_unix_ms = INT64_MAX;
	lq.limit = 10000;
	lq.attention_only = 1;
	round_trip(&lq.base);
	Sagas__V1__HistoryEntry he = SAGAS__V1__HISTORY_ENTRY__INIT;
	he.version = 2;
	he.from_state = SAGAS__V1__SAGA_STATE__SAGA_STATE_RESERVING;
	he.to_state = SAGAS__V1__SAGA_STATE__SAGA_STATE_CHARGING;
	he.event = "reply_ok";
	he.at_unix_ms = 1764000000000;
	Sagas__V1__HistoryEntry *hes[1] = {&he};
	Sagas__V1__GetSagaHistoryReply hr = SAGAS__V1__GET_SAGA_HISTORY_REPLY__INIT;
	hr.n_entries = 1;
	hr.entries = hes;
	round_trip(&hr.base);
	Sagas__V1__FeedEntry fe = SAGAS__V1__FEED_ENTRY__INIT;
	fe.saga_id = saga_.saga_id;
	fe.entry = &he;
	Sagas__V1__FeedEntry *fes[1] = {&fe};
	Sagas__V1__WatchHistoryReply wr = SAGAS__V1__WATCH_HISTORY_REPLY__INIT;
	wr.n_entries = 1;
	wr.entries = fes;
	wr.cursor = "c1";
	wr.more = 1;
	round_trip(&wr.base);
	char *t = dump(&wr.base);
	assert_string_equal(t,
	    "{\"cursor\":\"c1\",\"entries\":[{\"entry\":{\"atUnixMs\":\"1764000000000\","
	    "\"event\":\"reply_ok\",\"fromState\":\"SAGA_STATE_RESERVING\","
	    "\"toState\":\"SAGA_STATE_CHARGING\",\"version\":\"2\"},"
	    "\"sagaId\":\"0d0e0000-0000-4000-8000-00000000000d\"}],\"more\":true}");
	free(t);
	Sagas__V1__WaitSagaReply wt = SAGAS__V1__WAIT_SAGA_REPLY__INIT;
	wt.saga = &saga_;
	round_trip(&wt.base);
}

static void test_bytes_base64(void **state)
{
	(void)state;
	Sagas__V1__RequestEnvelope e = SAGAS__V1__REQUEST_ENVELOPE__INIT;
	uint8_t bytes[] = {0xfb, 0xff, 0x00, 0x61};
	e.payload.data = bytes;
	e.payload.len = sizeof bytes;
	char *t = dump(&e.base);
	assert_string_equal(t, "{\"payload\":\"+/8AYQ==\"}");
	free(t);
	round_trip(&e.base);
	for (size_t n = 0; n <= 4; n++) { /* every padding */
		e.payload.len = n;
		round_trip(&e.base);
	}
	char err[PBJSON_ERR_MAX];
	/* URL-safe and unpadded */
	Sagas__V1__RequestEnvelope *m = (Sagas__V1__RequestEnvelope *)parse(
	    &sagas__v1__request_envelope__descriptor, "{\"payload\":\"-_8AYQ\"}", err, sizeof err);
	assert_non_null(m);
	assert_int_equal(m->payload.len, 4);
	assert_memory_equal(m->payload.data, bytes, 4);
	protobuf_c_message_free_unpacked(&m->base, NULL);
}

static void test_input_spellings(void **state)
{
	(void)state;
	char err[PBJSON_ERR_MAX] = "";
	Sagas__V1__StartSagaRequest *r
	    = (Sagas__V1__StartSagaRequest *)parse(&sagas__v1__start_saga_request__descriptor,
	        "{\"saga_id\":\"x\",\"waitMs\":\"12\",\"order\":{\"customer\":\"c\",\"sku\":\"s\","
	        "\"qty\":3.0,\"amount\":\"9007199254740993\"}}",
	        err, sizeof err);
	if (r == NULL)
		fail_msg("%s", err);
	assert_string_equal(r->saga_id, "x");
	assert_int_equal(r->wait_ms, 12);
	assert_int_equal(r->order->qty, 3);
	assert_int_equal(r->order->amount, 9007199254740993LL);
	protobuf_c_message_free_unpacked(&r->base, NULL);
	Sagas__V1__ListSagasRequest *l
	    = (Sagas__V1__ListSagasRequest *)parse(&sagas__v1__list_sagas_request__descriptor,
	        "{\"state\":3,\"attention_only\":true,\"olderThanMs\":5,\"customer\":null}", err,
	        sizeof err);
	assert_non_null(l);
	assert_int_equal(l->state, SAGAS__V1__SAGA_STATE__SAGA_STATE_COMPLETED);
	assert_true(l->attention_only);
	assert_int_equal(l->older_than_ms, 5);
	assert_string_equal(l->customer, "");
	protobuf_c_message_free_unpacked(&l->base, NULL);
	l = (Sagas__V1__ListSagasRequest *)parse(&sagas__v1__list_sagas_request__descriptor,
	    "{\"state\":\"SAGA_STATE_CANCELLED\"}", err, sizeof err);
	assert_non_null(l);
	assert_int_equal(l->state, SAGAS__V1__SAGA_STATE__SAGA_STATE_CANCELLED);
	protobuf_c_message_free_unpacked(&l->base, NULL);
}

/* refused: parsing `text` as `d` fails with exactly `want`. */
static void refused(const ProtobufCMessageDescriptor *d, const char *text, const char *want)
{
	char err[PBJSON_ERR_MAX] = "";
	ProtobufCMessage *m = parse(d, text, err, sizeof err);
	if (m != NULL)
		fail_msg("accepted %s", text);
	assert_string_equal(err, want);
}

static void test_refusals(void **state)
{
	(void)state;
	const ProtobufCMessageDescriptor *st = &sagas__v1__start_saga_request__descriptor;
	const ProtobufCMessageDescriptor *ls = &sagas__v1__list_sagas_request__descriptor;
	refused(st, "[]", "the body: expected an object, got an array");
	refused(st, "{\"bogus\":1}",
	    "bogus: unknown field (sagas.v1.StartSagaRequest has no field \"bogus\")");
	refused(st, "{\"order\":{\"qty\":1,\"colour\":\"red\"}}",
	    "order.colour: unknown field (sagas.v1.Order has no field \"colour\")");
	refused(st, "{\"saga_id\":\"a\",\"sagaId\":\"b\"}",
	    "sagaId: given twice (as \"saga_id\" and its JSON name)");
	refused(st, "{\"sagaId\":7}", "sagaId: expected a string, got a number");
	refused(st, "{\"order\":\"x\"}", "order: expected an object, got a string");
	refused(st, "{\"order\":{\"qty\":\"3x\"}}", "order.qty: \"3x\" is not an integer");
	refused(st, "{\"order\":{\"qty\":1.5}}", "order.qty: 1.5 is not an integer");
	refused(st, "{\"order\":{\"qty\":\"1.5\"}}", "order.qty: \"1.5\" is not an integer");
	refused(st, "{\"order\":{\"qty\":\" 1\"}}", "order.qty: \" 1\" is not an integer");
	refused(st, "{\"order\":{\"qty\":\"\"}}", "order.qty: \"\" is not an integer");
	refused(st, "{\"order\":{\"qty\":true}}", "order.qty: expected an integer, got a boolean");
	refused(st, "{\"order\":{\"qty\":[1]}}", "order.qty: expected an integer, got an array");
	refused(st, "{\"order\":{\"qty\":2147483648}}",
	    "order.qty: 2147483648 is out of range for int32");
	refused(st, "{\"order\":{\"qty\":-2147483649}}",
	    "order.qty: -2147483649 is out of range for int32");
	refused(st, "{\"order\":{\"qty\":1e300}}",
	    "order.qty: 1.0000000000000001e+300 is out of range for int32");
	refused(st, "{\"order\":{\"amount\":\"9223372036854775808\"}}",
	    "order.amount: \"9223372036854775808\" is out of range for int64");
	refused(st, "{\"order\":{\"amount\":\"-9223372036854775809\"}}",
	    "order.amount: \"-9223372036854775809\" is out of range for int64");
	refused(st, "{\"order\":{\"amount\":\"123456789012345678901234\"}}",
	    "order.amount: \"123456789012345678901234\" is out of range for int64");
	refused(ls, "{\"state\":\"DONE\"}", "state: \"DONE\" is not a value of sagas.v1.SagaState");
	refused(ls, "{\"state\":\"COMPLETED\"}",
	    "state: \"COMPLETED\" is not a value of sagas.v1.SagaState");
	refused(ls, "{\"state\":99}", "state: 99 is not a value of sagas.v1.SagaState");
	refused(ls, "{\"state\":true}", "state: expected a name of sagas.v1.SagaState");
	refused(ls, "{\"attentionOnly\":\"true\"}",
	    "attentionOnly: expected true or false, got a string");
	const ProtobufCMessageDescriptor *lr = &sagas__v1__list_sagas_reply__descriptor;
	refused(lr, "{\"sagas\":{}}", "sagas: expected an array, got an object");
	refused(lr, "{\"sagas\":[{},{\"order\":{\"qty\":0.5}}]}",
	    "sagas[1].order.qty: 0.5 is not an integer");
	refused(lr, "{\"sagas\":[null]}", "sagas[0]: null in an array");
	refused(lr, "{\"sagas\":[{\"overdue\":[\"a\",1]}]}",
	    "sagas[0].overdue[1]: expected a string, got a number");
	refused(&sagas__v1__request_envelope__descriptor, "{\"payload\":\"a\"}",
	    "payload: expected base64");
	refused(&sagas__v1__request_envelope__descriptor, "{\"payload\":\"ab!c\"}",
	    "payload: expected base64");
}

static void test_set_text(void **state)
{
	(void)state;
	char err[PBJSON_ERR_MAX] = "";
	Sagas__V1__ListSagasRequest *l = (Sagas__V1__ListSagasRequest *)parse(
	    &sagas__v1__list_sagas_request__descriptor, "{}", err, sizeof err);
	assert_non_null(l);
	ProtobufCMessage *m = &l->base;
	assert_int_equal(pbjson_set_text(m, "state", "COMPLETED", err, sizeof err), 0);
	assert_int_equal(l->state, SAGAS__V1__SAGA_STATE__SAGA_STATE_COMPLETED);
	assert_int_equal(pbjson_set_text(m, "state", "SAGA_STATE_CANCELLED", err, sizeof err), 0);
	assert_int_equal(l->state, SAGAS__V1__SAGA_STATE__SAGA_STATE_CANCELLED);
	assert_int_equal(pbjson_set_text(m, "state", "7", err, sizeof err), 0);
	assert_int_equal(l->state, SAGAS__V1__SAGA_STATE__SAGA_STATE_SHIPPING);
	assert_int_equal(pbjson_set_text(m, "attentionOnly", "true", err, sizeof err), 0);
	assert_true(l->attention_only);
	assert_int_equal(pbjson_set_text(m, "created_after_unix_ms", "-5", err, sizeof err), 0);
	assert_int_equal(l->created_after_unix_ms, -5);
	assert_int_equal(pbjson_set_text(m, "customer", "alice", err, sizeof err), 0);
	assert_int_equal(pbjson_set_text(m, "customer", "bob", err, sizeof err), 0);
	assert_string_equal(l->customer, "bob");
	assert_int_equal(pbjson_set_text(m, "state", "DONE", err, sizeof err), -1);
	assert_string_equal(err, "state: \"DONE\" is not a value of sagas.v1.SagaState");
	assert_int_equal(pbjson_set_text(m, "limit", "ten", err, sizeof err), -1);
	assert_string_equal(err, "limit: \"ten\" is not an integer");
	assert_int_equal(pbjson_set_text(m, "limit", "99999999999", err, sizeof err), -1);
	assert_string_equal(err, "limit: \"99999999999\" is out of range for int32");
	assert_int_equal(pbjson_set_text(m, "overdue", "yes", err, sizeof err), -1);
	assert_string_equal(err, "overdue: \"yes\" is not true or false");
	assert_int_equal(pbjson_set_text(m, "bogus", "1", err, sizeof err), -1);
	assert_string_equal(
	    err, "bogus: unknown parameter (sagas.v1.ListSagasRequest has no field \"bogus\")");
	protobuf_c_message_free_unpacked(m, NULL);
	Sagas__V1__StartSagaRequest *s = (Sagas__V1__StartSagaRequest *)parse(
	    &sagas__v1__start_saga_request__descriptor, "{}", err, sizeof err);
	assert_int_equal(pbjson_set_text(&s->base, "order", "x", err, sizeof err), -1);
	assert_string_equal(err, "order: cannot be given as a query parameter");
	protobuf_c_message_free_unpacked(&s->base, NULL);
}

static void test_json_name(void **state)
{
	(void)state;
	char b[64];
	assert_string_equal(pbjson_json_name("saga_id", b, sizeof b), "sagaId");
	assert_string_equal(pbjson_json_name("created_unix_ms", b, sizeof b), "createdUnixMs");
	assert_string_equal(pbjson_json_name("state", b, sizeof b), "state");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_saga_text),
	    cmocka_unit_test(test_defaults_omitted),
	    cmocka_unit_test(test_round_trips),
	    cmocka_unit_test(test_bytes_base64),
	    cmocka_unit_test(test_input_spellings),
	    cmocka_unit_test(test_refusals),
	    cmocka_unit_test(test_set_text),
	    cmocka_unit_test(test_json_name),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
