/* Unit tests of the definitions orchestratord runs (orchestrator/core/
 * orch_defs.c, docs/saga-definitions.md section 2, fourth landing), without
 * a database: a file of two types loads as two versions, new sagas of each
 * start under its own (orch_defs_start); every position of each flow has a
 * name that maps back to it (orch_def_state, orch_def_pos: a stage named by
 * its first member, a group's members carried along), and a name of
 * another type or none maps to nothing; each step's command and
 * compensation go to their participant's link (orch_def_plan); a file
 * whose participant names a link orchestratord is not given is refused,
 * saying which --links entry it needs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "methods.h"
#include "orch_defs.h"

#ifndef SOURCE_DIR
#error "SOURCE_DIR: the repository, for tests/definitions"
#endif

/* the links of order_booking.yaml: the three of the order saga, then two
 * of --links */
static const saga_def_link links[] = {
    {"stock", "sagas.v1.Stock"},
    {"payment", "sagas.v1.Payment"},
    {"shipping", "sagas.v1.Shipping"},
    {"hotel", NULL},
    {"airline", NULL},
};

static void load(orch_defs *o, size_t nlinks)
{
	char err[512] = "";
	int rc = orch_defs_load(o, SOURCE_DIR "/tests/definitions/order_booking.yaml", links,
	    (int)nlinks, err, sizeof err);
	if (rc != 0)
		print_message("%s\n", err);
	assert_int_equal(rc, 0);
}

/* every position of v's flow round-trips through its name */
static void round_trip(const orch_def_version *v, size_t *names)
{
	const saga_flow *f = &v->flow;
	saga_flow_pos all[2 * SAGA_FLOW_MAX_STEPS + 2];
	size_t n = 0;
	all[n++] = (saga_flow_pos) {.step = f->nsteps, .phase = SAGA_FLOW_FORWARD};
	all[n++] = (saga_flow_pos) {.step = -1, .phase = SAGA_FLOW_COMPENSATING};
	for (int32_t i = 0; i < f->nsteps; i += saga_flow_stage_len(f, i)) {
		all[n++] = (saga_flow_pos) {.step = i, .phase = SAGA_FLOW_FORWARD, .members = 2};
		if (f->steps[i].has_compensation)
			all[n++] = (saga_flow_pos) {.step = i, .phase = SAGA_FLOW_COMPENSATING};
	}
	for (size_t k = 0; k < n; k++) {
		const char *name = orch_def_state(v, &all[k]);
		assert_non_null(name);
		saga_flow_pos back;
		assert_true(orch_def_pos(v, name, all[k].members, &back));
		assert_int_equal(back.step, all[k].step);
		assert_int_equal(back.phase, all[k].phase);
		assert_int_equal(back.members, all[k].members);
	}
	*names = n;
}

static void test_two_types(void **state)
{
	(void)state;
	orch_defs o;
	load(&o, sizeof links / sizeof links[0]);
	assert_int_equal(o.nfile, 2);
	const orch_def_version *order = orch_defs_start(&o, "order");
	const orch_def_version *booking = orch_defs_start(&o, "booking");
	assert_non_null(order);
	assert_non_null(booking);
	assert_ptr_not_equal(order, booking);
	assert_null(orch_defs_start(&o, "cruise"));
	assert_string_not_equal(order->hex, booking->hex);
	size_t n = 0;
	round_trip(order, &n);
	assert_int_equal(n, 2 + 3 + 2); /* ends, three steps forward, two compensated */
	round_trip(booking, &n);
	assert_int_equal(n, 2 + 3 + 2); /* ends, hold, pay, confirm; hold and pay compensated */
	/* the names: the order saga's, the booking's own */
	saga_flow_pos p;
	assert_true(orch_def_pos(order, "REFUNDING", 0, &p));
	assert_int_equal(p.step, 1);
	assert_int_equal(p.phase, SAGA_FLOW_COMPENSATING);
	assert_true(orch_def_pos(booking, "ROOM", 1, &p));
	assert_int_equal(p.step, 0);
	assert_int_equal(p.members, 1);
	assert_true(orch_def_pos(booking, "BOOKING_CANCELLED", 0, &p));
	assert_int_equal(p.step, -1);
	/* another type's name, a group's second member's name, none */
	assert_false(orch_def_pos(booking, "RESERVING", 0, &p));
	assert_false(orch_def_pos(order, "BOOKED", 0, &p));
	assert_false(orch_def_pos(booking, "SEAT", 0, &p));
	assert_false(orch_def_pos(booking, "", 0, &p));
	/* each member's command on its participant's link; a retriable step
	 * has no compensation */
	int link = -1;
	const saga_def_cmd *c = orch_def_plan(booking, 1, SAGA_FLOW_FORWARD, &link);
	assert_non_null(c);
	assert_int_equal(link, 4); /* seat: airline */
	assert_string_equal(method_table[c->method].name, "ReserveStock");
	c = orch_def_plan(booking, 0, SAGA_FLOW_COMPENSATING, &link);
	assert_non_null(c);
	assert_int_equal(link, 3); /* room: hotel (hoteld) */
	assert_string_equal(method_table[c->method].name, "FreeRoom");
	assert_null(orch_def_plan(booking, 3, SAGA_FLOW_COMPENSATING, &link));
	assert_null(orch_def_plan(booking, 4, SAGA_FLOW_FORWARD, &link));
	assert_string_equal(
	    orch_def_method(booking, &(saga_flow_pos) {.step = 2}), "ChargePayment");
	assert_string_equal(
	    orch_def_method(booking, &(saga_flow_pos) {.step = 4, .phase = SAGA_FLOW_FORWARD}),
	    "none");
	orch_defs_free(&o);
}

static void test_link_missing(void **state)
{
	(void)state;
	orch_defs o;
	char err[512] = "";
	assert_int_not_equal(orch_defs_load(&o, SOURCE_DIR "/tests/definitions/order_booking.yaml",
	                         links, 4, err, sizeof err),
	    0);
	assert_non_null(strstr(err,
	    "participants.airline names --airline: orchestratord has no such link (it has --stock, "
	    "--payment, --shipping, --hotel; give it one with --links airline=URL[,URL...])"));
	orch_defs_free(&o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_two_types),
	    cmocka_unit_test(test_link_missing),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
