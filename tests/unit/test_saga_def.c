/* test_saga_def: saga definitions (orchestrator/sagadef, docs/saga-definitions.md
 * section 1): order.yaml parsed to the values it says, booking.yaml (a group)
 * valid, their flows (order.yaml's is saga_flow_order), the version's
 * independence of comments and key order, and one case per rule of
 * "Validation at start" with its exact error, line and column. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <sys/stat.h>
#include <unistd.h>

#include "saga_def.h"

/* expect_error parses `text` named `name` and checks the refusal's text. */
static void expect_error(const char *name, const char *text, const char *want)
{
	saga_defs *d = NULL;
	char err[512] = "";
	int rc = saga_def_parse(text, strlen(text), name, &d, err, sizeof err);
	if (rc == 0 || strcmp(err, want) != 0)
		fprintf(stderr, "rc %d\n got: %s\nwant: %s\n", rc, err, want);
	assert_int_equal(rc, -1);
	assert_null(d);
	assert_string_equal(err, want);
}

/* the start of every case's file: three participants (PARTS), a type t
 * (TYPE0 without its steps, HEAD with "steps:" on line 11) */
#define PARTS                                                                                      \
	"participants:\n"                                                                          \
	"  stock: {service: sagas.v1.Stock, urls: --stock}\n"                                      \
	"  payment: {service: sagas.v1.Payment, urls: --payment}\n"                                \
	"  shipping: {service: sagas.v1.Shipping, urls: --shipping}\n"
#define TYPE0                                                                                      \
	"format: 1\n" PARTS "sagas:\n"                                                             \
	"  t:\n"                                                                                   \
	"    input: sagas.v1.Order\n"                                                              \
	"    completed: DONE\n"                                                                    \
	"    cancelled: UNDONE\n"
#define HEAD TYPE0 "    steps:\n"
/* the order saga's three steps, one line each (line 12 on, after HEAD) */
#define R                                                                                          \
	"      - {name: reserve, participant: stock, command: ReserveStock, compensation: "        \
	"ReleaseStock, kind: compensable, input: {sku: sku, qty: qty}}\n"
#define C                                                                                          \
	"      - {name: charge, participant: payment, command: ChargePayment, compensation: "      \
	"RefundPayment, kind: pivot, input: {customer: customer, amount: amount}}\n"
#define S                                                                                          \
	"      - {name: ship, participant: shipping, command: ShipOrder, kind: retriable, input: " \
	"{customer: customer, sku: sku, qty: qty}}\n"

static const char valid_text[] = HEAD R C S;

static void test_order_yaml(void **state)
{
	(void)state;
	saga_defs *d = NULL;
	char err[512] = "";
	int rc = saga_def_load(
	    SAGA_SOURCE_DIR "/orchestrator/definitions/order.yaml", &d, err, sizeof err);
	if (rc != 0)
		fprintf(stderr, "%s\n", err);
	assert_int_equal(rc, 0);
	assert_int_equal(d->format, 1);
	assert_int_equal(d->nparticipants, 3);
	assert_string_equal(d->participants[0].name, "stock");
	assert_string_equal(d->participants[0].service, "sagas.v1.Stock");
	assert_string_equal(d->participants[0].urls, "--stock");
	assert_int_equal(d->ntypes, 1);
	const saga_def_type *t = &d->types[0];
	assert_string_equal(t->name, "order");
	assert_string_equal(t->input, "sagas.v1.Order");
	assert_string_equal(t->completed, "COMPLETED");
	assert_string_equal(t->cancelled, "CANCELLED");
	assert_int_equal(t->nsteps, 3);
	const saga_def_step *s = &t->steps[0];
	assert_string_equal(s->name, "reserve");
	assert_string_equal(s->state, "RESERVING");
	assert_string_equal(s->compensating, "RELEASING");
	assert_string_equal(s->participant, "stock");
	assert_int_equal(s->command, METHOD_Stock_ReserveStock);
	assert_int_equal(s->compensation, METHOD_Stock_ReleaseStock);
	assert_int_equal(s->kind, SAGA_STEP_COMPENSABLE);
	assert_int_equal(s->deadline_ms, SAGA_DEF_DEFAULT);
	assert_int_equal(s->retry_base_ms, SAGA_DEF_DEFAULT);
	assert_null(s->group);
	assert_int_equal(s->ninput, 2);
	assert_string_equal(s->input[0].field, "qty");
	assert_string_equal(s->input[0].from, "qty");
	assert_string_equal(s->input[1].field, "sku");
	assert_string_equal(s->input[1].from, "sku");
	s = &t->steps[1];
	assert_string_equal(s->name, "charge");
	assert_string_equal(s->state, "CHARGING");
	assert_string_equal(s->compensating, "REFUNDING");
	assert_int_equal(s->command, METHOD_Payment_ChargePayment);
	assert_int_equal(s->compensation, METHOD_Payment_RefundPayment);
	assert_int_equal(s->kind, SAGA_STEP_PIVOT);
	assert_int_equal(s->ninput, 2);
	s = &t->steps[2];
	assert_string_equal(s->name, "ship");
	assert_string_equal(s->state, "SHIPPING");
	assert_null(s->compensating);
	assert_int_equal(s->command, METHOD_Shipping_ShipOrder);
	assert_int_equal(s->compensation, METHOD_NONE);
	assert_int_equal(s->kind, SAGA_STEP_RETRIABLE);
	assert_int_equal(s->ninput, 3);
	unsigned char v[32];
	char hex[65];
	assert_int_equal(saga_def_version(d, t, v, hex), 0);
	assert_int_equal(strlen(hex), 64);
	saga_defs_free(d);
}

static void test_booking_yaml(void **state)
{
	(void)state;
	saga_defs *d = NULL;
	char err[512] = "";
	int rc
	    = saga_def_load(SAGA_SOURCE_DIR "/tests/definitions/booking.yaml", &d, err, sizeof err);
	if (rc != 0)
		fprintf(stderr, "%s\n", err);
	assert_int_equal(rc, 0);
	const saga_def_type *t = &d->types[0];
	assert_int_equal(t->nsteps, 4);
	assert_string_equal(t->steps[0].group, "hold");
	assert_string_equal(t->steps[1].group, "hold");
	assert_null(t->steps[2].group);
	assert_int_equal(t->steps[2].kind, SAGA_STEP_PIVOT);
	assert_int_equal(t->steps[2].deadline_ms, 30000);
	assert_string_equal(t->steps[0].state, "ROOM");
	assert_string_equal(t->steps[0].compensating, "ROOM_UNDO");
	assert_int_equal(t->steps[3].kind, SAGA_STEP_RETRIABLE);
	assert_int_equal(t->steps[3].retry_cap_ms, 5000);
	assert_int_equal(t->steps[3].attention_after, 10);
	assert_string_equal(t->steps[3].input[1].field, "qty");
	assert_string_equal(t->steps[3].input[1].constant, "1");
	saga_defs_free(d);
}

/* order.yaml's flow is the built-in order flow (saga_flow_order), which
 * saga_transition runs; booking.yaml's has its group */
static void test_flows(void **state)
{
	(void)state;
	saga_defs *d = NULL;
	char err[512] = "";
	assert_int_equal(saga_def_load(SAGA_SOURCE_DIR "/orchestrator/definitions/order.yaml", &d,
	                     err, sizeof err),
	    0);
	saga_flow f;
	assert_int_equal(saga_def_flow(&d->types[0], &f), 0);
	assert_int_equal(f.nsteps, saga_flow_order.nsteps);
	for (int32_t i = 0; i < f.nsteps; i++) {
		const saga_flow_step *a = &f.steps[i], *b = &saga_flow_order.steps[i];
		assert_string_equal(a->name, b->name);
		assert_int_equal(a->kind, b->kind);
		assert_int_equal(a->has_compensation, b->has_compensation);
		assert_int_equal(a->has_deadline, b->has_deadline);
		assert_int_equal(a->group, b->group);
	}
	saga_defs_free(d);

	d = NULL;
	assert_int_equal(
	    saga_def_load(SAGA_SOURCE_DIR "/tests/definitions/booking.yaml", &d, err, sizeof err),
	    0);
	assert_int_equal(saga_def_flow(&d->types[0], &f), 0);
	assert_int_equal(f.nsteps, 4);
	assert_int_equal(f.steps[0].group, 0);
	assert_int_equal(f.steps[1].group, 0);
	assert_int_equal(f.steps[2].group, -1);
	assert_int_equal(f.steps[2].kind, SAGA_FLOW_PIVOT);
	assert_true(f.steps[2].has_deadline);
	assert_int_equal(f.steps[3].kind, SAGA_FLOW_RETRIABLE);
	assert_false(f.steps[3].has_compensation);
	assert_false(f.steps[3].has_deadline);
	assert_int_equal(saga_flow_stage_len(&f, 0), 2);
	saga_defs_free(d);
}

/* the version is of the parsed values: comments, key order and JSON do not
 * change it; a changed value does */
static void test_version_canonical(void **state)
{
	(void)state;
	static const char json[]
	    = "{\"sagas\": {\"t\": {\"steps\": ["
	      "{\"input\": {\"qty\": \"qty\", \"sku\": \"sku\"}, \"kind\": \"compensable\","
	      " \"compensation\": \"ReleaseStock\", \"command\": \"ReserveStock\","
	      " \"participant\": \"stock\", \"name\": \"reserve\"},"
	      "{\"name\": \"charge\", \"participant\": \"payment\", \"command\": \"ChargePayment\","
	      " \"compensation\": \"RefundPayment\", \"kind\": \"pivot\","
	      " \"input\": {\"amount\": \"amount\", \"customer\": \"customer\"}},"
	      "{\"name\": \"ship\", \"participant\": \"shipping\", \"command\": \"ShipOrder\","
	      " \"kind\": \"retriable\", \"input\": {\"qty\": \"qty\", \"customer\": \"customer\","
	      " \"sku\": \"sku\"}}],"
	      " \"cancelled\": \"UNDONE\", \"completed\": \"DONE\", \"input\": "
	      "\"sagas.v1.Order\"}},"
	      " \"participants\": {\"shipping\": {\"service\": \"sagas.v1.Shipping\", \"urls\": "
	      "\"--ship\"},"
	      " \"payment\": {\"service\": \"sagas.v1.Payment\", \"urls\": \"--pay\"},"
	      " \"stock\": {\"service\": \"sagas.v1.Stock\", \"urls\": \"--stk\"}},"
	      " \"format\": 1}";
	saga_defs *a = NULL, *b = NULL;
	char err[512] = "";
	assert_int_equal(
	    saga_def_parse(valid_text, strlen(valid_text), "a", &a, err, sizeof err), 0);
	int rc = saga_def_parse(json, strlen(json), "b.json", &b, err, sizeof err);
	if (rc != 0)
		fprintf(stderr, "%s\n", err);
	assert_int_equal(rc, 0);
	unsigned char va[32], vb[32];
	char ha[65], hb[65];
	assert_int_equal(saga_def_version(a, &a->types[0], va, ha), 0);
	assert_int_equal(saga_def_version(b, &b->types[0], vb, hb), 0);
	assert_string_equal(ha, hb);
	assert_memory_equal(va, vb, 32);
	b->types[0].steps[0].kind = SAGA_STEP_PIVOT;
	assert_int_equal(saga_def_version(b, &b->types[0], vb, hb), 0);
	assert_string_not_equal(ha, hb);
	saga_defs_free(a);
	saga_defs_free(b);
}

static void test_load_missing_file(void **state)
{
	(void)state;
	saga_defs *d = NULL;
	char err[512] = "";
	assert_int_equal(saga_def_load("/nonexistent/x.yaml", &d, err, sizeof err), -1);
	assert_null(d);
	assert_string_equal(err, "/nonexistent/x.yaml: No such file or directory");
}

/* One case per rule of "Validation at start" (and the shape errors): the
 * file is HEAD and steps from line 12; each error names its line and column. */
static void test_format(void **state)
{
	(void)state;
	expect_error("format.yaml",
	    "format: 2\n"
	    "participants:\n"
	    "  stock: {service: sagas.v1.Stock, urls: --stock}\n"
	    "  payment: {service: sagas.v1.Payment, urls: --payment}\n"
	    "  shipping: {service: sagas.v1.Shipping, urls: --shipping}\n"
	    "sagas:\n"
	    "  t:\n"
	    "    input: sagas.v1.Order\n"
	    "    completed: DONE\n"
	    "    cancelled: UNDONE\n"
	    "    steps:\n" R C S,
	    "format.yaml:1:9: format: format 2 is not supported (this build reads 1)");
}

static void test_unknown_key(void **state)
{
	(void)state;
	expect_error("unknown_key.yaml",
	    HEAD "      - {name: reserve, participant: stock, command: ReserveStock, compensation: "
	         "ReleaseStock, kind: compensable, colour: red, input: {sku: sku, qty: qty}}\n" C S,
	    "unknown_key.yaml:12:115: sagas.t.steps[0].colour: unknown key (one of: name, state, "
	    "compensating, participant, command, compensation, kind, deadline_ms, retry, input)");
}

static void test_two_pivots(void **state)
{
	(void)state;
	expect_error("two_pivots.yaml",
	    HEAD R C
	    "      - {name: charge2, participant: payment, command: ChargePayment, compensation: "
	    "RefundPayment, kind: pivot, input: {customer: customer, amount: amount}}\n" S,
	    "two_pivots.yaml:14:106: sagas.t.steps[2].kind: a second pivot (the first is "
	    "sagas.t.steps[1])");
}

static void test_compensable_after_pivot(void **state)
{
	(void)state;
	expect_error("compensable_after_pivot.yaml", HEAD C R S,
	    "compensable_after_pivot.yaml:13:102: sagas.t.steps[1].kind: a compensable step after "
	    "the pivot");
}

static void test_retriable_before_pivot(void **state)
{
	(void)state;
	expect_error("retriable_before_pivot.yaml", HEAD R S C,
	    "retriable_before_pivot.yaml:13:71: sagas.t.steps[1].kind: a retriable step before the "
	    "pivot");
}

static void test_compensable_without_compensation(void **state)
{
	(void)state;
	expect_error("compensable_without_compensation.yaml",
	    HEAD "      - {name: reserve, participant: stock, command: ReserveStock, kind: "
	         "compensable, input: {sku: sku, qty: qty}}\n" C S,
	    "compensable_without_compensation.yaml:12:74: sagas.t.steps[0].kind: a compensable "
	    "step without a compensation");
}

static void test_pivot_without_compensation(void **state)
{
	(void)state;
	expect_error("pivot_without_compensation.yaml",
	    HEAD R "      - {name: charge, participant: payment, command: ChargePayment, kind: "
	           "pivot, input: {customer: customer, amount: amount}}\n" S,
	    "pivot_without_compensation.yaml:13:76: sagas.t.steps[1].kind: a pivot without a "
	    "compensation");
}

static void test_retriable_with_compensation(void **state)
{
	(void)state;
	expect_error("retriable_with_compensation.yaml",
	    HEAD R C
	    "      - {name: ship, participant: shipping, command: ShipOrder, compensation: "
	    "ShipOrder, kind: retriable, input: {customer: customer, sku: sku, qty: qty}}\n",
	    "retriable_with_compensation.yaml:14:79: sagas.t.steps[2].compensation: a retriable "
	    "step has no compensation");
}

static void test_group_not_compensable(void **state)
{
	(void)state;
	expect_error("group_not_compensable.yaml",
	    HEAD
	    "      - group: g\n"
	    "        steps:\n"
	    "        - {name: reserve, participant: stock, command: ReserveStock, compensation: "
	    "ReleaseStock, kind: compensable, input: {sku: sku, qty: qty}}\n"
	    "        - {name: charge, participant: payment, command: ChargePayment, compensation: "
	    "RefundPayment, kind: pivot, input: {customer: customer, amount: amount}}\n" S,
	    "group_not_compensable.yaml:15:107: sagas.t.steps[0].steps[1].kind: a group holds "
	    "compensable steps only");
}

static void test_group_after_pivot(void **state)
{
	(void)state;
	expect_error("group_after_pivot.yaml",
	    HEAD C
	    "      - group: g\n"
	    "        steps:\n"
	    "        - {name: reserve, participant: stock, command: ReserveStock, compensation: "
	    "ReleaseStock, kind: compensable, input: {sku: sku, qty: qty}}\n"
	    "        - {name: reserve2, participant: stock, command: ReserveStock, compensation: "
	    "ReleaseStock, kind: compensable, input: {sku: sku, qty: qty}}\n" S,
	    "group_after_pivot.yaml:15:104: sagas.t.steps[1].steps[0].kind: a group after the "
	    "pivot");
}

static void test_participant_undeclared(void **state)
{
	(void)state;
	expect_error("participant_undeclared.yaml",
	    HEAD "      - {name: reserve, participant: hotel, command: ReserveStock, compensation: "
	         "ReleaseStock, kind: compensable, input: {sku: sku, qty: qty}}\n" C S,
	    "participant_undeclared.yaml:12:38: sagas.t.steps[0].participant: participant hotel is "
	    "not declared (declared: stock, payment, shipping)");
}

static void test_method_unknown(void **state)
{
	(void)state;
	expect_error("method_unknown.yaml",
	    HEAD "      - {name: reserve, participant: stock, command: HoldSeat, compensation: "
	         "ReleaseStock, kind: compensable, input: {sku: sku, qty: qty}}\n" C S,
	    "method_unknown.yaml:12:54: sagas.t.steps[0].command: /sagas.v1.Stock/HoldSeat is not "
	    "a method of sagas.v1.Stock (its methods: ReserveStock, ReleaseStock)");
}

/* an operator's method (its role is admin: SetStock, Deposit) is not a
 * saga's command: under mutual TLS every try would be refused, and on a
 * plain link every saga would set the stock (review, issue 34) */
static void test_method_operator(void **state)
{
	(void)state;
	expect_error("method_operator.yaml",
	    HEAD "      - {name: reserve, participant: stock, command: SetStock, compensation: "
	         "ReleaseStock, kind: compensable, input: {sku: sku, on_hand: {const: 0}}}\n" C S,
	    "method_operator.yaml:12:54: sagas.t.steps[0].command: SetStock is an operator's "
	    "method of sagas.v1.Stock, not a saga command (the orchestrator may not call it)");
	expect_error("method_operator2.yaml",
	    HEAD R
	    "      - {name: charge, participant: payment, command: ChargePayment, compensation: "
	    "Deposit, kind: pivot, input: {customer: customer, amount: amount}}\n" S,
	    "method_operator2.yaml:13:84: sagas.t.steps[1].compensation: Deposit is an "
	    "operator's method of sagas.v1.Payment, not a saga command (the orchestrator may not "
	    "call it)");
}

static void test_method_other_service(void **state)
{
	(void)state;
	expect_error("method_other_service.yaml",
	    HEAD
	    "      - {name: reserve, participant: stock, command: ChargePayment, compensation: "
	    "ReleaseStock, kind: compensable, input: {sku: sku, qty: qty}}\n" C S,
	    "method_other_service.yaml:12:54: sagas.t.steps[0].command: ChargePayment is a method "
	    "of sagas.v1.Payment, not of sagas.v1.Stock (participant stock)");
}

static void test_input_not_field(void **state)
{
	(void)state;
	expect_error("input_not_field.yaml",
	    HEAD "      - {name: reserve, participant: stock, command: ReserveStock, compensation: "
	         "ReleaseStock, kind: compensable, input: {sku: sku, qty: quantity}}\n" C S,
	    "input_not_field.yaml:12:138: sagas.t.steps[0].input.qty: quantity is not a field of "
	    "sagas.v1.Order (it has customer, sku, qty, amount)");
}

static void test_input_type(void **state)
{
	(void)state;
	expect_error("input_type.yaml",
	    HEAD "      - {name: reserve, participant: stock, command: ReserveStock, compensation: "
	         "ReleaseStock, kind: compensable, input: {sku: sku, qty: amount}}\n" C S,
	    "input_type.yaml:12:138: sagas.t.steps[0].input.qty: sagas.v1.Order.amount is int64, "
	    "sagas.v1.ReserveStockRequest.qty is int32");
}

static void test_request_not_field(void **state)
{
	(void)state;
	expect_error("request_not_field.yaml",
	    HEAD "      - {name: reserve, participant: stock, command: ReserveStock, compensation: "
	         "ReleaseStock, kind: compensable, input: {sku: sku, qty: qty, colour: sku}}\n" C S,
	    "request_not_field.yaml:12:143: sagas.t.steps[0].input.colour: not a field of "
	    "sagas.v1.ReserveStockRequest (it has sku, qty)");
}

static void test_unmapped(void **state)
{
	(void)state;
	expect_error("unmapped.yaml",
	    HEAD "      - {name: reserve, participant: stock, command: ReserveStock, compensation: "
	         "ReleaseStock, kind: compensable, input: {sku: sku}}\n" C S,
	    "unmapped.yaml:12:123: sagas.t.steps[0].input: the field qty of "
	    "sagas.v1.ReserveStockRequest is not mapped");
}

static void test_engine_field(void **state)
{
	(void)state;
	expect_error("engine_field.yaml",
	    HEAD
	    "      - {name: reserve, participant: stock, command: ReserveStock, compensation: "
	    "ReleaseStock, kind: compensable, input: {sku: sku, qty: qty, saga_id: sku}}\n" C S,
	    "engine_field.yaml:12:143: sagas.t.steps[0].input.saga_id: saga_id is set by the "
	    "engine");
}

static void test_duplicate_step(void **state)
{
	(void)state;
	expect_error("duplicate_step.yaml",
	    HEAD R "      - {name: reserve, state: RESERVE2, compensating: RESERVE2_UNDO, "
	           "participant: stock, command: ReserveStock, compensation: ReleaseStock, kind: "
	           "compensable, input: {sku: sku, qty: qty}}\n" C S,
	    "duplicate_step.yaml:13:16: sagas.t.steps[1].name: a second step named reserve (the "
	    "first is sagas.t.steps[0])");
}

static void test_duplicate_state(void **state)
{
	(void)state;
	expect_error("duplicate_state.yaml",
	    HEAD R "      - {name: charge, state: RESERVE, participant: payment, command: "
	           "ChargePayment, compensation: RefundPayment, kind: pivot, input: {customer: "
	           "customer, amount: amount}}\n" S,
	    "duplicate_state.yaml:13:31: sagas.t.steps[1].state: the state RESERVE is also "
	    "sagas.t.steps[0].state");
}

static void test_deadline_retriable(void **state)
{
	(void)state;
	expect_error("deadline_retriable.yaml",
	    HEAD R C
	    "      - {name: ship, participant: shipping, command: ShipOrder, kind: retriable, "
	    "deadline_ms: 1000, input: {customer: customer, sku: sku, qty: qty}}\n",
	    "deadline_retriable.yaml:14:95: sagas.t.steps[2].deadline_ms: a retriable step has no "
	    "deadline (it is retried until it succeeds)");
}

/* a step's own timing takes the range of the option it replaces
 * (orchestratord --step-timeout 10..86400000, --backoff-base 1..600000,
 * --backoff-cap 1..3600000, --attention-after 1..1000000) */
static void test_timing_range(void **state)
{
	(void)state;
	expect_error("deadline_range.yaml",
	    HEAD
	    "      - {name: reserve, participant: stock, command: ReserveStock, compensation: "
	    "ReleaseStock, kind: compensable, deadline_ms: 9, input: {sku: sku, qty: qty}}\n" C S,
	    "deadline_range.yaml:12:128: sagas.t.steps[0].deadline_ms: 9 is out of range (10 to "
	    "86400000)");
	expect_error("base_range.yaml",
	    HEAD R C
	    "      - {name: ship, participant: shipping, command: ShipOrder, kind: retriable, "
	    "retry: {base_ms: 600001}, input: {customer: customer, sku: sku, qty: qty}}\n",
	    "base_range.yaml:14:99: sagas.t.steps[2].retry.base_ms: 600001 is out of range (1 to "
	    "600000)");
	expect_error("cap_range.yaml",
	    HEAD R C
	    "      - {name: ship, participant: shipping, command: ShipOrder, kind: retriable, "
	    "retry: {cap_ms: 3600001}, input: {customer: customer, sku: sku, qty: qty}}\n",
	    "cap_range.yaml:14:98: sagas.t.steps[2].retry.cap_ms: 3600001 is out of range (1 to "
	    "3600000)");
	expect_error("attention_range.yaml",
	    HEAD R C
	    "      - {name: ship, participant: shipping, command: ShipOrder, kind: retriable, "
	    "retry: {attention_after: 1000001}, input: {customer: customer, sku: sku, qty: "
	    "qty}}\n",
	    "attention_range.yaml:14:107: sagas.t.steps[2].retry.attention_after: 1000001 is out "
	    "of range (1 to 1000000)");
}

static void test_other_type_state(void **state)
{
	(void)state;
	expect_error("other_type_state.yaml",
	    HEAD R C S "  u:\n"
	               "    input: sagas.v1.Order\n"
	               "    completed: SHIP\n"
	               "    cancelled: U_CANCELLED\n"
	               "    steps:\n" R,
	    "other_type_state.yaml:20:16: sagas.u.steps[0].state: the state RESERVE is also "
	    "sagas.t.steps[0].state");
}

static void test_syntax(void **state)
{
	(void)state;
	expect_error("syntax.yaml", HEAD R "      - {name: [\n",
	    "syntax.yaml:14:1: flow sequence without a closing bracket");
}

/* a key twice in a mapping (libfyaml's check is off, ours walks): the
 * error at the second, in each kind of mapping */
static void test_duplicate_key(void **state)
{
	(void)state;
	expect_error("dup.yaml", "format: 1\nformat: 1\n", "dup.yaml:2:1: duplicate key");
	expect_error("dup_key.yaml",
	    "format: 1\nparticipants:\n"
	    "  stock: {service: sagas.v1.Stock, service: sagas.v1.Stock, urls: --stock}\n",
	    "dup_key.yaml:3:36: duplicate key");
	expect_error("dup_part.yaml",
	    "format: 1\n" PARTS "  stock: {service: sagas.v1.Stock, urls: --stock}\n",
	    "dup_part.yaml:6:3: duplicate key");
	expect_error("dup_type.yaml", HEAD R C S "  t:\n", "dup_type.yaml:15:3: duplicate key");
	expect_error("dup_input.yaml",
	    HEAD "      - {name: reserve, participant: stock, command: ReserveStock, compensation: "
	         "ReleaseStock, kind: compensable, input: {sku: sku, qty: qty, sku: sku, qty: "
	         "qty}}\n" C S,
	    "dup_input.yaml:12:143: duplicate key");
}

/* text_of: a file of `n` participants (p0, p1, ...), or of `n` saga types,
 * into buf (size bytes) */
static void text_of(char *buf, size_t size, int nparts, int ntypes)
{
	size_t len = (size_t)snprintf(buf, size, "format: 1\nparticipants:\n");
	for (int i = 0; i < nparts; i++)
		len += (size_t)snprintf(
		    buf + len, size - len, "  p%d: {service: sagas.v1.Stock, urls: --stock}\n", i);
	len += (size_t)snprintf(buf + len, size - len, "sagas:\n");
	for (int i = 0; i < ntypes; i++)
		len += (size_t)snprintf(buf + len, size - len,
		    "  t%d:\n    input: sagas.v1.Order\n    completed: DONE\n    cancelled: "
		    "UNDONE\n    steps: [{name: s%d, participant: p0, command: ReserveStock, kind: "
		    "pivot, compensation: ReleaseStock, input: {sku: sku, qty: qty}}]\n",
		    i, i);
	assert_true(len < size);
}

static void test_too_many_named(void **state)
{
	(void)state;
	static char buf[65536];
	text_of(buf, sizeof buf, 65, 1);
	expect_error("parts.yaml", buf, "parts.yaml:3:3: participants: more than 64 participants");
	text_of(buf, sizeof buf, 1, 65);
	expect_error("types.yaml", buf, "types.yaml:5:3: sagas: more than 64 saga types");
}

/* anything after the first document (`---` or `...`) is refused at the
 * second's start; a lone `...` closing the first is not */
static void test_second_document(void **state)
{
	(void)state;
	expect_error("multi.yaml", HEAD R C S "---\nformat: 999\nsagas: [unclosed\n",
	    "multi.yaml:15:1: a second YAML document (one definition file holds one)");
	expect_error("multi2.yaml", HEAD R C S "...\n---\n",
	    "multi2.yaml:16:1: a second YAML document (one definition file holds one)");
	static const char text[] = HEAD R C S "...\n";
	saga_defs *d = NULL;
	char err[512] = "";
	assert_int_equal(saga_def_parse(text, strlen(text), "end.yaml", &d, err, sizeof err), 0);
	saga_defs_free(d);
}

/* write_file: valid_text padded with comment lines to `size` bytes, in a
 * new temporary file whose path is put in path (its size 32) */
static void write_file(char *path, size_t size)
{
	snprintf(path, 32, "/tmp/test_saga_defXXXXXX");
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	FILE *f = fdopen(fd, "wb");
	assert_non_null(f);
	size_t n = strlen(valid_text);
	assert_int_equal(fwrite(valid_text, 1, n, f), n);
	for (; size - n > 80; n += 80)
		fprintf(f, "#%78s\n", "");
	fprintf(f, "#%*s\n", (int)(size - n - 2), "");
	assert_int_equal(ftell(f), (long)size);
	assert_int_equal(fclose(f), 0);
}

/* a file of exactly SAGA_DEF_MAX_FILE bytes is read; one more byte is not */
static void test_file_cap(void **state)
{
	(void)state;
	char path[32], err[512] = "", want[128];
	saga_defs *d = NULL;
	write_file(path, SAGA_DEF_MAX_FILE);
	int rc = saga_def_load(path, &d, err, sizeof err);
	unlink(path);
	assert_string_equal(err, "");
	assert_int_equal(rc, 0);
	saga_defs_free(d);
	d = NULL;
	write_file(path, SAGA_DEF_MAX_FILE + 1);
	rc = saga_def_load(path, &d, err, sizeof err);
	unlink(path);
	assert_int_equal(rc, -1);
	assert_null(d);
	snprintf(want, sizeof want, "%s: larger than 1 MiB (a definition file is a few KB)", path);
	assert_string_equal(err, want);
}

/* a flat mapping of 50,000 keys is refused (libfyaml's duplicate-key check,
 * now off, took quadratic time): unknown keys, the same key, and a step's
 * input of 50,000 fields */
static void test_large_mapping(void **state)
{
	(void)state;
	enum { N = 50000 };
	static char buf[N * 24 + 1024];
	size_t len = 0;
	buf[len++] = '{';
	for (int i = 0; i < N; i++)
		len += (size_t)snprintf(
		    buf + len, sizeof buf - len, "%sk%d: %d", i ? ", " : "", i, i);
	buf[len++] = '}';
	buf[len] = '\0';
	expect_error(
	    "big.yaml", buf, "big.yaml:1:2: k0: unknown key (one of: format, participants, sagas)");
	len = 0;
	buf[len++] = '{';
	for (int i = 0; i < N; i++)
		len += (size_t)snprintf(buf + len, sizeof buf - len, "%sformat: 1", i ? ", " : "");
	buf[len++] = '}';
	buf[len] = '\0';
	expect_error("same.yaml", buf, "same.yaml:1:13: duplicate key");
	len = (size_t)snprintf(buf, sizeof buf,
	    HEAD "      - {name: reserve, participant: stock, command: ReserveStock, compensation: "
	         "ReleaseStock, kind: pivot, input: {");
	for (int i = 0; i < N; i++)
		len += (size_t)snprintf(
		    buf + len, sizeof buf - len, "%sf%d: sku", i ? ", " : "", i);
	snprintf(buf + len, sizeof buf - len, "}}\n");
	saga_defs *d = NULL;
	char err[512] = "";
	assert_int_equal(saga_def_parse(buf, strlen(buf), "input.yaml", &d, err, sizeof err), -1);
	assert_null(d);
}

static void test_load_directory(void **state)
{
	(void)state;
	saga_defs *d = NULL;
	char err[512] = "";
	assert_int_equal(
	    saga_def_load(SAGA_SOURCE_DIR "/orchestrator/definitions", &d, err, sizeof err), -1);
	assert_null(d);
	assert_string_equal(err, SAGA_SOURCE_DIR "/orchestrator/definitions: is a directory");
}

/* Attack review (issue 34): an alias is refused, not read as its anchor's
 * name (a constant `*sk` was sent as "sk"); an anchor too; a NUL inside a
 * value (it cut the value); bytes that are not UTF-8 (the body column
 * refused them at start); a FIFO (it blocked the start); a number with
 * white space before it (read two ways). */
static void test_alias_refused(void **state)
{
	(void)state;
	expect_error("alias.yaml",
	    HEAD "      - {name: reserve, participant: stock, command: ReserveStock, compensation: "
	         "ReleaseStock, kind: compensable, input: {sku: {const: &sk S1}, qty: qty}}\n" C
	         "      - {name: ship, participant: shipping, command: ShipOrder, kind: retriable, "
	         "input: {customer: customer, sku: {const: *sk}, qty: qty}}\n",
	    "alias.yaml:12:140: an anchor: anchors and aliases are not read in a definition, "
	    "write the value out");
	expect_error("alias2.yaml", "format: 1\nx: &a 1\ny: *a\n",
	    "alias2.yaml:2:7: an anchor: anchors and aliases are not read in a definition, write "
	    "the value out");
	expect_error("alias3.yaml", "format: 1\ny: *a\n",
	    "alias3.yaml:2:5: an alias: anchors and aliases are not read in a definition, write "
	    "the value out");
}

static void test_nul_refused(void **state)
{
	(void)state;
	expect_error("nul.yaml",
	    HEAD "      - {name: reserve, participant: stock, command: ReserveStock, compensation: "
	         "ReleaseStock, kind: compensable, input: {sku: {const: \"S1\\u0000EVIL\"}, qty: "
	         "qty}}\n" C S,
	    "nul.yaml:12:137: a NUL character in a value");
}

static void test_not_utf8(void **state)
{
	(void)state;
	expect_error("latin1.yaml", "format: 1\n# caf\xe9\n",
	    "latin1.yaml:2:1: not UTF-8 (a definition file is UTF-8 text)");
}

static void test_fifo_refused(void **state)
{
	(void)state;
	char path[] = "/tmp/saga_def_fifo_XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	unlink(path);
	assert_int_equal(mkfifo(path, 0600), 0);
	saga_defs *d = NULL;
	char err[512] = "", want[600];
	assert_int_equal(saga_def_load(path, &d, err, sizeof err), -1);
	snprintf(want, sizeof want, "%s: not a regular file", path);
	assert_string_equal(err, want);
	unlink(path);
}

static void test_const_space_refused(void **state)
{
	(void)state;
	expect_error("space.yaml",
	    HEAD R C
	    "      - {name: ship, participant: shipping, command: ShipOrder, kind: retriable, "
	    "input: {customer: customer, sku: sku, qty: {const: \"\\n-1\"}}}\n",
	    "space.yaml:14:126: sagas.t.steps[2].input.qty: the constant \n-1 is not an int32");
}

static void test_no_pivot(void **state)
{
	(void)state;
	expect_error("no_pivot.yaml", HEAD R S,
	    "no_pivot.yaml:13:71: sagas.t.steps[1].kind: a retriable step needs the pivot "
	    "before it (this type has none)");
}

/* two steps sending one command to one daemon: a participant applies each
 * (saga id, method) once, so the second would be answered from the first's
 * record and never applied (found by a review: a trip's room and seat on
 * one stockd took one unit for both) */
static void test_same_key(void **state)
{
	(void)state;
	expect_error("same_key.yaml",
	    HEAD R "      - {name: again, participant: stock, command: ReserveStock, compensation: "
	           "ReleaseStock, kind: compensable, input: {sku: sku, qty: qty}}\n" C S,
	    "same_key.yaml:13:52: sagas.t.steps[1].command: again sends ReserveStock to --stock as "
	    "sagas.t.steps[0] does: a participant applies each (saga id, method) once, so one "
	    "would be answered with the other's record; give one of them a participant of its own "
	    "(another urls option)");
}

static void test_const_range(void **state)
{
	(void)state;
	expect_error("const_range.yaml",
	    HEAD
	    "      - {name: reserve, participant: stock, command: ReserveStock, compensation: "
	    "ReleaseStock, kind: compensable, input: {sku: sku, qty: {const: 99999999999999}}}\n" C
	        S,
	    "const_range.yaml:12:139: sagas.t.steps[0].input.qty: the constant 99999999999999 "
	    "does not fit int32");
}

/* the bounds themselves fit */
static void test_const_bounds_fit(void **state)
{
	(void)state;
	static const char *const qty[] = {"2147483647", "-2147483648"};
	for (int i = 0; i < 2; i++) {
		char text[2048];
		snprintf(text, sizeof text,
		    HEAD "      - {name: reserve, participant: stock, command: ReserveStock, "
		         "compensation: ReleaseStock, kind: compensable, input: {sku: sku, qty: "
		         "{const: %s}}}\n" C S,
		    qty[i]);
		saga_defs *d = NULL;
		char err[512] = "";
		int rc = saga_def_parse(text, strlen(text), "bounds.yaml", &d, err, sizeof err);
		if (rc != 0)
			fprintf(stderr, "%s\n", err);
		assert_int_equal(rc, 0);
		saga_defs_free(d);
	}
}

static void test_const_not_int(void **state)
{
	(void)state;
	expect_error("const_not_int.yaml",
	    HEAD "      - {name: reserve, participant: stock, command: ReserveStock, compensation: "
	         "ReleaseStock, kind: compensable, input: {sku: sku, qty: {const: many}}}\n" C S,
	    "const_not_int.yaml:12:139: sagas.t.steps[0].input.qty: the constant many is not an "
	    "int32");
}

static void test_const_below_min(void **state)
{
	(void)state;
	expect_error("const_min.yaml",
	    HEAD
	    "      - {name: reserve, participant: stock, command: ReserveStock, compensation: "
	    "ReleaseStock, kind: compensable, input: {sku: sku, qty: {const: -2147483649}}}\n" C S,
	    "const_min.yaml:12:139: sagas.t.steps[0].input.qty: the constant -2147483649 does "
	    "not fit int32");
}

static void test_steps_empty(void **state)
{
	(void)state;
	expect_error("steps_empty.yaml", TYPE0 "    steps: []\n",
	    "steps_empty.yaml:11:5: sagas.t.steps: at least one step");
}

static void test_group_empty(void **state)
{
	(void)state;
	expect_error("group_empty.yaml", HEAD "      - {group: g, steps: []}\n" C S,
	    "group_empty.yaml:12:20: sagas.t.steps[0].steps: at least one step");
}

/* two groups of one name in a type (consecutive ones were run as one) */
static void test_group_twice(void **state)
{
	(void)state;
	expect_error("group_twice.yaml",
	    HEAD
	    "      - {group: g, steps: [{name: a, participant: stock, command: ReserveStock, "
	    "compensation: ReleaseStock, kind: compensable, input: {sku: sku, qty: qty}}]}\n"
	    "      - {group: g, steps: [{name: b, participant: stock, command: ReserveStock, "
	    "compensation: ReleaseStock, kind: compensable, input: {sku: sku, qty: qty}}]}\n" C S,
	    "group_twice.yaml:13:17: sagas.t.steps[1].group: a second group named g (the first is "
	    "sagas.t.steps[0])");
}

static void test_sagas_empty(void **state)
{
	(void)state;
	expect_error("sagas_empty.yaml", "format: 1\n" PARTS "sagas: {}\n",
	    "sagas_empty.yaml:6:1: sagas: at least one saga type");
}

static void test_participants_empty(void **state)
{
	(void)state;
	expect_error("participants_empty.yaml",
	    "format: 1\nparticipants: {}\nsagas: {t: {input: sagas.v1.Order}}\n",
	    "participants_empty.yaml:2:1: participants: at least one participant");
}

static void test_urls_form(void **state)
{
	(void)state;
	expect_error("urls_form.yaml",
	    "format: 1\nparticipants:\n  stock: {service: sagas.v1.Stock, urls: stock}\n",
	    "urls_form.yaml:3:42: participants.stock.urls: an option name --[a-z][a-z0-9-]* "
	    "expected");
}

static void test_service_unknown(void **state)
{
	(void)state;
	expect_error("service_unknown.yaml",
	    "format: 1\nparticipants:\n  stock: {service: sagas.v1.Stok, urls: --stock}\n",
	    "service_unknown.yaml:3:20: participants.stock.service: sagas.v1.Stok is not a "
	    "service of the table of methods (services: sagas.v1.Health, sagas.v1.Admin, "
	    "sagas.v1.Orchestrator, sagas.v1.Stock, sagas.v1.Payment, sagas.v1.Shipping, "
	    "sagas.v1.Hotel)");
}

static void test_kind_unknown(void **state)
{
	(void)state;
	expect_error("kind_unknown.yaml",
	    HEAD "      - {name: reserve, participant: stock, command: ReserveStock, compensation: "
	         "ReleaseStock, kind: compensible, input: {sku: sku, qty: qty}}\n" C S,
	    "kind_unknown.yaml:12:102: sagas.t.steps[0].kind: compensible is not a kind (kinds: "
	    "compensable, pivot, retriable)");
}

static void test_deadline_bad(void **state)
{
	(void)state;
	expect_error("deadline_bad.yaml",
	    HEAD
	    "      - {name: reserve, participant: stock, command: ReserveStock, compensation: "
	    "ReleaseStock, kind: compensable, deadline_ms: soon, input: {sku: sku, qty: qty}}\n" C
	        S,
	    "deadline_bad.yaml:12:128: sagas.t.steps[0].deadline_ms: a positive integer or "
	    "default expected");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_order_yaml),
	    cmocka_unit_test(test_booking_yaml),
	    cmocka_unit_test(test_flows),
	    cmocka_unit_test(test_version_canonical),
	    cmocka_unit_test(test_load_missing_file),
	    cmocka_unit_test(test_format),
	    cmocka_unit_test(test_unknown_key),
	    cmocka_unit_test(test_two_pivots),
	    cmocka_unit_test(test_compensable_after_pivot),
	    cmocka_unit_test(test_retriable_before_pivot),
	    cmocka_unit_test(test_compensable_without_compensation),
	    cmocka_unit_test(test_pivot_without_compensation),
	    cmocka_unit_test(test_retriable_with_compensation),
	    cmocka_unit_test(test_group_not_compensable),
	    cmocka_unit_test(test_group_after_pivot),
	    cmocka_unit_test(test_participant_undeclared),
	    cmocka_unit_test(test_method_unknown),
	    cmocka_unit_test(test_method_operator),
	    cmocka_unit_test(test_method_other_service),
	    cmocka_unit_test(test_input_not_field),
	    cmocka_unit_test(test_input_type),
	    cmocka_unit_test(test_request_not_field),
	    cmocka_unit_test(test_unmapped),
	    cmocka_unit_test(test_engine_field),
	    cmocka_unit_test(test_duplicate_step),
	    cmocka_unit_test(test_duplicate_state),
	    cmocka_unit_test(test_deadline_retriable),
	    cmocka_unit_test(test_timing_range),
	    cmocka_unit_test(test_other_type_state),
	    cmocka_unit_test(test_syntax),
	    cmocka_unit_test(test_duplicate_key),
	    cmocka_unit_test(test_too_many_named),
	    cmocka_unit_test(test_second_document),
	    cmocka_unit_test(test_file_cap),
	    cmocka_unit_test(test_large_mapping),
	    cmocka_unit_test(test_load_directory),
	    cmocka_unit_test(test_no_pivot),
	    cmocka_unit_test(test_same_key),
	    cmocka_unit_test(test_alias_refused),
	    cmocka_unit_test(test_nul_refused),
	    cmocka_unit_test(test_not_utf8),
	    cmocka_unit_test(test_fifo_refused),
	    cmocka_unit_test(test_const_space_refused),
	    cmocka_unit_test(test_const_range),
	    cmocka_unit_test(test_const_not_int),
	    cmocka_unit_test(test_const_below_min),
	    cmocka_unit_test(test_const_bounds_fit),
	    cmocka_unit_test(test_steps_empty),
	    cmocka_unit_test(test_group_empty),
	    cmocka_unit_test(test_group_twice),
	    cmocka_unit_test(test_sagas_empty),
	    cmocka_unit_test(test_participants_empty),
	    cmocka_unit_test(test_urls_form),
	    cmocka_unit_test(test_service_unknown),
	    cmocka_unit_test(test_kind_unknown),
	    cmocka_unit_test(test_deadline_bad),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
