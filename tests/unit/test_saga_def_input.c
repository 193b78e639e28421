/* A saga's input checked by its type's definition (saga_def_input_check,
 * saga_def_input_msg; docs/saga-definitions.md, "A saga's input"), on
 * tests/definitions/trip.yaml's `trip` (input sagas.v1.Booking): a good
 * input is kept canonically encoded, so two encodings of one input are
 * equal; each refusal names its field; and orchestratord's check of a
 * definition (saga_def_runnable) takes any input message but for the
 * order saga's. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "saga_def.h"
#include "sagas/v1/booking.pb-c.h"

static saga_defs *defs;
static const saga_def_type *trip;

static int setup(void **state)
{
	(void)state;
	char err[512];
	if (saga_def_load(SAGA_SOURCE_DIR "/tests/definitions/trip.yaml", &defs, err, sizeof err)
	    != 0)
		return -1;
	for (size_t i = 0; i < defs->ntypes; i++)
		if (strcmp(defs->types[i].name, "trip") == 0)
			trip = &defs->types[i];
	return trip != NULL ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	saga_defs_free(defs);
	return 0;
}

static Sagas__V1__Booking good(void)
{
	Sagas__V1__Booking b = SAGAS__V1__BOOKING__INIT;
	b.customer = "ann";
	b.room = "R1";
	b.nights = 3;
	b.flight = "F1";
	b.seats = 2;
	b.amount = 12000;
	return b;
}

/* check packs b, checks it, returns the check's result; out/nout/err */
static int check(const Sagas__V1__Booking *b, uint8_t *out, size_t *nout, char *err)
{
	uint8_t in[1024];
	size_t n = sagas__v1__booking__pack(b, in);
	return saga_def_input_check(trip, in, n, out, 512, nout, err, 256);
}

static void test_good_canonical(void **state)
{
	(void)state;
	Sagas__V1__Booking b = good();
	uint8_t out[512], in[128];
	size_t nout = 0;
	char err[256] = "";
	assert_int_equal(check(&b, out, &nout, err), 0);
	size_t n = sagas__v1__booking__pack(&b, in);
	assert_int_equal(nout, n);
	assert_memory_equal(out, in, n);
	/* the same input, its fields in another order on the wire: one
	 * canonical encoding */
	uint8_t odd[160];
	size_t k = 0;
	const uint8_t amount[] = {0x30, 0xe0, 0x5d}; /* field 6 = 12000 */
	memcpy(odd + k, amount, sizeof amount);
	k += sizeof amount;
	b.amount = 0; /* the rest, without the amount */
	k += sagas__v1__booking__pack(&b, odd + k);
	uint8_t out2[512];
	size_t nout2 = 0;
	assert_int_equal(
	    saga_def_input_check(trip, odd, k, out2, sizeof out2, &nout2, err, sizeof err), 0);
	assert_int_equal(nout2, nout);
	assert_memory_equal(out2, out, nout);
	/* a field given twice (the customer "z", then "ann") is not exactly
	 * what it decodes to: refused, as every request is (rpc_unpack) */
	const uint8_t first[] = {0x0a, 0x01, 'z'};
	memcpy(odd, first, sizeof first);
	b.amount = 12000;
	k = sizeof first + sagas__v1__booking__pack(&b, odd + sizeof first);
	assert_int_equal(
	    saga_def_input_check(trip, odd, k, out2, sizeof out2, &nout2, err, sizeof err), -1);
	assert_non_null(strstr(err, "invalid input: not exactly a sagas.v1.Booking"));
}

static void test_refusals(void **state)
{
	(void)state;
	uint8_t out[512];
	size_t nout = 0;
	char err[256];
	Sagas__V1__Booking b = good();
	b.room = "";
	assert_int_equal(check(&b, out, &nout, err), -1);
	assert_string_equal(err, "invalid input.room: missing");
	b = good();
	b.nights = 0;
	assert_int_equal(check(&b, out, &nout, err), -1);
	assert_string_equal(err, "invalid input.nights: missing");
	b.nights = -1;
	assert_int_equal(check(&b, out, &nout, err), -1);
	assert_string_equal(err, "invalid input.nights: must be 1..1000000");
	/* a count of 32 bits within the protocol's 1..10^6 (what a
	 * participant takes: seats go to a retriable step after the pivot) */
	b = good();
	b.seats = 1000001;
	assert_int_equal(check(&b, out, &nout, err), -1);
	assert_string_equal(err, "invalid input.seats: must be 1..1000000");
	b.seats = 1000000;
	assert_int_equal(check(&b, out, &nout, err), 0);
	/* a string with a NUL inside: cut short by the unpacking, refused */
	b = good();
	uint8_t nul[160];
	size_t nn = sagas__v1__booking__pack(&b, nul);
	assert_int_equal(nul[0], 0x0a); /* customer "ann" first */
	assert_int_equal(nul[1], 3);
	nul[3] = '\0'; /* "a", NUL, "n" */
	assert_int_equal(saga_def_input_check(trip, nul, nn, out, 512, &nout, err, 256), -1);
	assert_non_null(strstr(err, "invalid input: not exactly a sagas.v1.Booking"));
	b = good();
	b.amount = 1000000000000001LL;
	assert_int_equal(check(&b, out, &nout, err), -1);
	assert_string_equal(err, "invalid input.amount: must be 1..1000000000000000");
	b = good();
	b.customer = "a\tb"; /* a control character */
	assert_int_equal(check(&b, out, &nout, err), -1);
	assert_non_null(strstr(err, "invalid input.customer: must be"));
	/* a note (no step maps it) may be empty or long, but not past the row */
	b = good();
	char note[600];
	memset(note, 'x', sizeof note - 1);
	note[sizeof note - 1] = '\0';
	b.note = note;
	assert_int_equal(check(&b, out, &nout, err), -1);
	assert_string_equal(err, "invalid input: 622 bytes encoded, at most 512");
	note[100] = '\0';
	assert_int_equal(check(&b, out, &nout, err), 0);
	/* not valid UTF-8, in a field no step maps */
	b.note = "\xff\xfe";
	assert_int_equal(check(&b, out, &nout, err), -1);
	assert_string_equal(err, "invalid input.note: not valid UTF-8");
	/* does not decode; a field the message does not have */
	const uint8_t junk[] = {0x0a, 0x05, 'a'};
	assert_int_equal(
	    saga_def_input_check(trip, junk, sizeof junk, out, 512, &nout, err, 256), -1);
	assert_string_equal(err, "invalid input: not a sagas.v1.Booking (it does not decode)");
	uint8_t extra[160];
	b = good();
	size_t n = sagas__v1__booking__pack(&b, extra);
	extra[n++] = 0x98; /* field 99 (tag 792), varint 1 */
	extra[n++] = 0x06;
	extra[n++] = 0x01;
	assert_int_equal(saga_def_input_check(trip, extra, n, out, 512, &nout, err, 256), -1);
	assert_string_equal(err, "invalid input: field 99 is not a field of sagas.v1.Booking");
}

static void test_runnable_inputs(void **state)
{
	(void)state;
	char err[512];
	/* orchestratord runs trip (a Booking) beside the order saga */
	assert_int_equal(
	    saga_def_runnable(defs, saga_def_order_links, SAGA_DEF_ORDER_NLINKS, err, sizeof err),
	    0);
	/* the type named order takes the Order, not another message */
	saga_def_type *order = NULL;
	for (size_t i = 0; i < defs->ntypes; i++)
		if (strcmp(defs->types[i].name, "order") == 0)
			order = &defs->types[i];
	assert_non_null(order);
	char *was = order->input;
	order->input = "sagas.v1.Booking";
	assert_int_equal(
	    saga_def_runnable(defs, saga_def_order_links, SAGA_DEF_ORDER_NLINKS, err, sizeof err),
	    -1);
	assert_non_null(strstr(err,
	    "sagas.order.input: the type named order is the order saga, "
	    "whose input is sagas.v1.Order (StartSaga's order), not "
	    "sagas.v1.Booking"));
	order->input = was;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_good_canonical),
	    cmocka_unit_test(test_refusals),
	    cmocka_unit_test(test_runnable_inputs),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
