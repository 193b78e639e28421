/* test_saga_def_table: a saga type's state table (saga_def_table,
 * docs/saga-states.md) is what the engine's transition does: the order
 * saga's rows, a group's (booking.yaml), a type whose last step is
 * compensable instead of retriable (its row is refused and compensated,
 * not retried: the table follows the definition), and the state names of
 * positions (saga_def_state_name). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "saga_def.h"

/* table_of loads `path` and returns type `type`'s table (malloc'd). */
static char *table_of(const char *path, const char *type)
{
	saga_defs *d = NULL;
	char err[512];
	int rc = saga_def_load(path, &d, err, sizeof err);
	if (rc != 0)
		fprintf(stderr, "%s\n", err);
	assert_int_equal(rc, 0);
	char *out = NULL;
	for (size_t i = 0; i < d->ntypes; i++)
		if (strcmp(d->types[i].name, type) == 0)
			assert_int_equal(saga_def_table(&d->types[i], &out), 0);
	saga_defs_free(d);
	assert_non_null(out);
	return out;
}

/* parsed parses `text` named `name`, which must be valid; the caller
 * frees the result (saga_defs_free). */
static saga_defs *parsed(const char *text, const char *name)
{
	saga_defs *d = NULL;
	char err[512];
	int rc = saga_def_parse(text, strlen(text), name, &d, err, sizeof err);
	if (rc != 0)
		fprintf(stderr, "%s\n", err);
	assert_int_equal(rc, 0);
	return d;
}

/* has_row checks that `table` has the line `row` (without its newline). */
static void has_row(const char *table, const char *row)
{
	size_t n = strlen(row);
	for (const char *p = table; *p != '\0';) {
		const char *nl = strchr(p, '\n');
		size_t len = nl != NULL ? (size_t)(nl - p) : strlen(p);
		if (len == n && memcmp(p, row, n) == 0)
			return;
		p += len + (nl != NULL);
	}
	fprintf(stderr, "no row\n  %s\nin\n%s", row, table);
	fail();
}

static size_t count_lines(const char *s)
{
	size_t n = 0;
	for (; *s != '\0'; s++)
		n += *s == '\n';
	return n;
}

static void test_order_table(void **state)
{
	(void)state;
	char *t = table_of(SAGA_SOURCE_DIR "/orchestrator/definitions/order.yaml", "order");
	has_row(t,
	    "| state | command in flight | on success | on definitive refusal | on step "
	    "deadline | on cancel |");
	has_row(t,
	    "| RESERVING | ReserveStock | CHARGING | CANCELLED (the reply's reason) | "
	    "RELEASING (timeout) | RELEASING (cancel_requested) |");
	has_row(t,
	    "| CHARGING (pivot) | ChargePayment | SHIPPING | RELEASING (the reply's "
	    "reason) | REFUNDING (timeout) | REFUNDING (cancel_requested) |");
	has_row(t,
	    "| SHIPPING (retriable) | ShipOrder | COMPLETED | never refused: retried "
	    "(attention after --attention-after tries) | none: retried | refused past_pivot |");
	has_row(t,
	    "| REFUNDING | RefundPayment | RELEASING | never refused: retried (attention "
	    "after --attention-after tries) | none: retried | refused compensating |");
	has_row(t,
	    "| RELEASING | ReleaseStock | CANCELLED | never refused: retried (attention "
	    "after --attention-after tries) | none: retried | refused compensating |");
	has_row(t, "| COMPLETED, CANCELLED | none (terminal) | | | | refused |");
	assert_int_equal(count_lines(t), 2 + 5 + 1);
	free(t);
}

static void test_booking_group(void **state)
{
	(void)state;
	char *t = table_of(SAGA_SOURCE_DIR "/tests/definitions/booking.yaml", "booking");
	/* a member refused: the other member is compensated (the group's
	 * compensating state), then nothing before it */
	has_row(t,
	    "| ROOM (group hold: room, seat) | HoldRoom + ReserveStock | PAY | ROOM_UNDO "
	    "(the reply's reason) | ROOM_UNDO (timeout) | ROOM_UNDO (cancel_requested) |");
	/* the pivot refused undoes the group; timed out, it refunds first */
	has_row(t,
	    "| PAY (pivot) | ChargePayment | CONFIRM | ROOM_UNDO (the reply's reason) | "
	    "PAY_UNDO (timeout) | PAY_UNDO (cancel_requested) |");
	/* the step's own attention_after: 10 */
	has_row(t,
	    "| CONFIRM (retriable) | ShipOrder | BOOKED | never refused: retried "
	    "(attention after 10 tries) | none: retried | refused past_pivot |");
	has_row(t,
	    "| ROOM_UNDO (group hold: room, seat) | FreeRoom + ReleaseStock | "
	    "BOOKING_CANCELLED | never refused: retried (attention after --attention-after "
	    "tries) | none: retried | refused compensating |");
	assert_int_equal(count_lines(t), 2 + 5 + 1);
	free(t);
}

/* a type whose steps are all compensable (no pivot): the last step is
 * refused and compensated, and times out, like the first */
static void test_follows_kinds(void **state)
{
	(void)state;
	static const char text[]
	    = "format: 1\n"
	      "participants:\n"
	      "  stock: {service: sagas.v1.Stock, urls: --stock}\n"
	      "  payment: {service: sagas.v1.Payment, urls: --payment}\n"
	      "sagas:\n"
	      "  t:\n"
	      "    input: sagas.v1.Order\n"
	      "    completed: DONE\n"
	      "    cancelled: UNDONE\n"
	      "    steps:\n"
	      "      - {name: reserve, participant: stock, command: ReserveStock, compensation: "
	      "ReleaseStock, kind: compensable, input: {sku: sku, qty: qty}}\n"
	      "      - {name: charge, participant: payment, command: ChargePayment, compensation: "
	      "RefundPayment, kind: compensable, input: {customer: customer, amount: amount}}\n";
	saga_defs *d = parsed(text, "t.yaml");
	char *t = NULL;
	assert_int_equal(saga_def_table(&d->types[0], &t), 0);
	has_row(t,
	    "| CHARGE | ChargePayment | DONE | RESERVE_UNDO (the reply's reason) | "
	    "CHARGE_UNDO (timeout) | CHARGE_UNDO (cancel_requested) |");
	has_row(t,
	    "| CHARGE_UNDO | RefundPayment | RESERVE_UNDO | never refused: retried "
	    "(attention after --attention-after tries) | none: retried | refused compensating |");
	has_row(t, "| DONE, UNDONE | none (terminal) | | | | refused |");
	free(t);

	/* the names of positions: terminal ones, a stage's, none past the end */
	saga_flow f;
	assert_int_equal(saga_def_flow(&d->types[0], &f), 0);
	saga_flow_pos done = {.step = 2, .phase = SAGA_FLOW_FORWARD};
	saga_flow_pos undone = {.step = -1, .phase = SAGA_FLOW_COMPENSATING};
	saga_flow_pos undo1 = {.step = 1, .phase = SAGA_FLOW_COMPENSATING};
	saga_flow_pos past = {.step = 7, .phase = SAGA_FLOW_COMPENSATING};
	assert_string_equal(saga_def_state_name(&d->types[0], &f, &done), "DONE");
	assert_string_equal(saga_def_state_name(&d->types[0], &f, &undone), "UNDONE");
	assert_string_equal(saga_def_state_name(&d->types[0], &f, &undo1), "CHARGE_UNDO");
	assert_null(saga_def_state_name(&d->types[0], &f, &past));
	saga_defs_free(d);
}

/* a group of one member: its commands name the member (as the engine's),
 * so its success, refusal and compensation move the saga */
static void test_group_of_one(void **state)
{
	(void)state;
	static const char text[]
	    = "format: 1\n"
	      "participants:\n"
	      "  stock: {service: sagas.v1.Stock, urls: --stock}\n"
	      "sagas:\n"
	      "  t:\n"
	      "    input: sagas.v1.Order\n"
	      "    completed: G_DONE\n"
	      "    cancelled: G_CANC\n"
	      "    steps:\n"
	      "      - group: e\n"
	      "        steps:\n"
	      "          - {name: s0, participant: stock, command: ReserveStock, compensation: "
	      "ReleaseStock, kind: compensable, input: {sku: sku, qty: qty}}\n";
	saga_defs *d = parsed(text, "g1.yaml");
	char *t = NULL;
	assert_int_equal(saga_def_table(&d->types[0], &t), 0);
	has_row(t,
	    "| S0 (group e: s0) | ReserveStock | G_DONE | G_CANC (the reply's reason) | "
	    "S0_UNDO (timeout) | S0_UNDO (cancel_requested) |");
	has_row(t,
	    "| S0_UNDO (group e: s0) | ReleaseStock | G_CANC | never refused: retried "
	    "(attention after --attention-after tries) | none: retried | refused compensating |");
	free(t);
	saga_defs_free(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_order_table),
	    cmocka_unit_test(test_booking_group),
	    cmocka_unit_test(test_follows_kinds),
	    cmocka_unit_test(test_group_of_one),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
