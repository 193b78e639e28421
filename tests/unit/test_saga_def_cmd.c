/* Commands built from a definition (saga_def_cmd.h; docs/saga-definitions.md,
 * section 2 "Third landing"):
 *   - order.yaml's five plans build, for random orders, the very bytes the
 *     hand-written codec built before the definitions drove it (the
 *     requests below, field by field as codec.c had them);
 *   - booking.yaml's constant (confirm's qty: 1) and its group members'
 *     participants;
 *   - a step without a compensation, an index out of range: refused with
 *     a reason;
 *   - every kind of field the copy meets (a message copied to itself).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "saga_def.h"
#include "saga_def_cmd.h"
#include "sagas/v1/orchestrator.pb-c.h"
#include "sagas/v1/payment.pb-c.h"
#include "sagas/v1/shipping.pb-c.h"
#include "sagas/v1/stock.pb-c.h"

static saga_defs *load(const char *rel)
{
	char path[512], err[512];
	snprintf(path, sizeof path, "%s/%s", SAGA_SOURCE_DIR, rel);
	saga_defs *d = NULL;
	if (saga_def_load(path, &d, err, sizeof err) != 0)
		fail_msg("%s", err);
	return d;
}

/* pack m into a malloc'd buffer; *len its length */
static uint8_t *pack(const ProtobufCMessage *m, size_t *len)
{
	*len = protobuf_c_message_get_packed_size(m);
	uint8_t *b = malloc(*len + 1);
	assert_non_null(b);
	protobuf_c_message_pack(m, b);
	return b;
}

static void assert_same(const ProtobufCMessage *a, const ProtobufCMessage *b)
{
	size_t la, lb;
	uint8_t *pa = pack(a, &la), *pb = pack(b, &lb);
	assert_int_equal(la, lb);
	assert_memory_equal(pa, pb, la);
	free(pa);
	free(pb);
}

static uint64_t rng = 88172645463325252ull;
static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static void rand_text(char *out, size_t cap)
{
	size_t n = next() % (cap - 1);
	for (size_t i = 0; i < n; i++)
		out[i] = (char)('a' + next() % 26);
	out[n] = '\0';
}

/* the plan of step i of `t`, forward or compensating */
static void make(const saga_defs *d, const saga_def_type *t, size_t i, bool comp, saga_def_cmd *c)
{
	char err[256];
	if (saga_def_cmd_make(d, t, i, comp, c, err, sizeof err) != 0)
		fail_msg("%s", err);
}

static void test_order_as_before(void **state)
{
	(void)state;
	saga_defs *d = load("orchestrator/definitions/order.yaml");
	const saga_def_type *t = &d->types[0];
	saga_def_cmd reserve, release, charge, refund, ship;
	make(d, t, 0, false, &reserve);
	make(d, t, 0, true, &release);
	make(d, t, 1, false, &charge);
	make(d, t, 1, true, &refund);
	make(d, t, 2, false, &ship);
	assert_string_equal(reserve.path, "/sagas.v1.Stock/ReserveStock");
	assert_string_equal(release.path, "/sagas.v1.Stock/ReleaseStock");
	assert_string_equal(charge.path, "/sagas.v1.Payment/ChargePayment");
	assert_string_equal(refund.path, "/sagas.v1.Payment/RefundPayment");
	assert_string_equal(ship.path, "/sagas.v1.Shipping/ShipOrder");
	assert_string_equal(d->participants[reserve.participant].name, "stock");
	assert_int_equal(release.participant, reserve.participant);
	assert_string_equal(d->participants[charge.participant].name, "payment");
	assert_int_equal(refund.participant, charge.participant);
	assert_string_equal(d->participants[ship.participant].name, "shipping");
	for (int k = 0; k < 2000; k++) {
		char customer[24], sku[24], id[40];
		rand_text(customer, sizeof customer);
		rand_text(sku, sizeof sku);
		snprintf(id, sizeof id, "57a11000-0000-4000-8000-%012d", k);
		Sagas__V1__Order o = SAGAS__V1__ORDER__INIT;
		o.customer = customer;
		o.sku = sku;
		o.qty = (int32_t)(next() % 1000) - (k % 7 == 0 ? 500 : 0);
		o.amount = (int64_t)(next() % 10000000) - (k % 11 == 0 ? 5000000 : 0);
		int64_t started = (int64_t)(next() % 4000000000000ll);
		saga_def_req r;

		Sagas__V1__ReserveStockRequest a = SAGAS__V1__RESERVE_STOCK_REQUEST__INIT;
		a.saga_id = id, a.sku = sku, a.qty = o.qty, a.saga_started_unix_ms = started;
		saga_def_cmd_build(&reserve, &o.base, id, started, &r);
		assert_same(&a.base, &r.base);

		Sagas__V1__ReleaseStockRequest b = SAGAS__V1__RELEASE_STOCK_REQUEST__INIT;
		b.saga_id = id, b.sku = sku, b.qty = o.qty, b.saga_started_unix_ms = started;
		saga_def_cmd_build(&release, &o.base, id, started, &r);
		assert_same(&b.base, &r.base);

		Sagas__V1__ChargePaymentRequest c = SAGAS__V1__CHARGE_PAYMENT_REQUEST__INIT;
		c.saga_id = id, c.customer = customer, c.amount = o.amount;
		c.saga_started_unix_ms = started;
		saga_def_cmd_build(&charge, &o.base, id, started, &r);
		assert_same(&c.base, &r.base);

		Sagas__V1__RefundPaymentRequest e = SAGAS__V1__REFUND_PAYMENT_REQUEST__INIT;
		e.saga_id = id, e.customer = customer, e.amount = o.amount;
		e.saga_started_unix_ms = started;
		saga_def_cmd_build(&refund, &o.base, id, started, &r);
		assert_same(&e.base, &r.base);

		Sagas__V1__ShipOrderRequest s = SAGAS__V1__SHIP_ORDER_REQUEST__INIT;
		s.saga_id = id, s.customer = customer, s.sku = sku, s.qty = o.qty;
		s.saga_started_unix_ms = started;
		saga_def_cmd_build(&ship, &o.base, id, started, &r);
		assert_same(&s.base, &r.base);
	}
	saga_defs_free(d);
}

static void test_booking_constant(void **state)
{
	(void)state;
	saga_defs *d = load("tests/definitions/booking.yaml");
	const saga_def_type *t = &d->types[0];
	saga_def_cmd room, seat, confirm;
	make(d, t, 0, false, &room);
	make(d, t, 1, true, &seat);
	make(d, t, 3, false, &confirm);
	assert_string_equal(d->participants[room.participant].name, "hotel");
	assert_string_equal(d->participants[seat.participant].name, "airline");
	assert_string_equal(seat.path, "/sagas.v1.Stock/ReleaseStock");
	Sagas__V1__Order o = SAGAS__V1__ORDER__INIT;
	o.customer = "ann", o.sku = "ROOM-12", o.qty = 3, o.amount = 45000;
	saga_def_req r;
	saga_def_cmd_build(&confirm, &o.base, "57a11000-0000-4000-8000-000000000001", 1700, &r);
	const Sagas__V1__ShipOrderRequest *s = (const Sagas__V1__ShipOrderRequest *)&r.base;
	assert_string_equal(s->customer, "ann");
	assert_string_equal(s->sku, "ROOM-12");
	assert_int_equal(s->qty, 1); /* the constant, not the input's 3 */
	assert_int_equal(s->saga_started_unix_ms, 1700);
	assert_string_equal(s->saga_id, "57a11000-0000-4000-8000-000000000001");
	saga_defs_free(d);
}

static void test_refusals(void **state)
{
	(void)state;
	saga_defs *d = load("orchestrator/definitions/order.yaml");
	const saga_def_type *t = &d->types[0];
	saga_def_cmd c;
	char err[256] = "";
	assert_int_equal(saga_def_cmd_make(d, t, 2, true, &c, err, sizeof err), -1);
	assert_string_equal(err, "sagas.order.steps[2] has no compensation");
	assert_int_equal(saga_def_cmd_make(d, t, 3, false, &c, err, sizeof err), -1);
	assert_string_equal(err, "sagas.order has no step 3");
	saga_defs_free(d);
}

/* Every kind of field the copy meets (strings, int32, int64, bool, enum,
 * a message, a repeated string): a made-up plan over sagas.v1.Saga that
 * copies each field to itself gives the same bytes back. */
static void test_copy_all_types(void **state)
{
	(void)state;
	const ProtobufCMessageDescriptor *sd = &sagas__v1__saga__descriptor;
	assert_true(sd->sizeof_message <= SAGA_DEF_REQ_SIZE);
	saga_def_cmd c;
	memset(&c, 0, sizeof c);
	c.request = sd;
	c.input = sd;
	for (unsigned i = 0; i < sd->n_fields; i++) {
		c.fill[c.nfill].to = &sd->fields[i];
		c.fill[c.nfill].from = &sd->fields[i];
		c.nfill++;
	}
	Sagas__V1__Order o = SAGAS__V1__ORDER__INIT;
	o.customer = "zed", o.sku = "S9", o.qty = -4, o.amount = INT64_MAX;
	char *why[] = {"lease", "next_attempt"};
	Sagas__V1__Saga m = SAGAS__V1__SAGA__INIT;
	m.saga_id = "57a11000-0000-4000-8000-000000000002";
	m.state = SAGAS__V1__SAGA_STATE__SAGA_STATE_REFUNDING;
	m.reason = "payment_declined";
	m.order = &o;
	m.version = 7;
	m.attention = 1;
	m.created_unix_ms = 1700000000123;
	m.n_overdue = 2;
	m.overdue = why;
	saga_def_req r;
	saga_def_cmd_build(&c, &m.base, "unused", 0, &r);
	assert_same(&m.base, &r.base);
	const Sagas__V1__Saga *got = (const Sagas__V1__Saga *)&r.base;
	assert_int_equal(got->n_overdue, 2);
	assert_ptr_equal(got->order, &o); /* borrowed, not copied */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_order_as_before),
	    cmocka_unit_test(test_booking_constant),
	    cmocka_unit_test(test_refusals),
	    cmocka_unit_test(test_copy_all_types),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
