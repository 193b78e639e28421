/* test_methods: the table of methods (common/authz/methods.h) against
 * protoc-c's service descriptors of proto/sagas/v1: every method of every
 * service has exactly one row, and every row names a method of a service,
 * so a method added to a .proto without its row (or a row left behind)
 * fails here. Also the lookup (method_find, METHOD_PATH) and the rows'
 * own rules. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "methods.h"
#include "saga_proto_registry.h"

/* Every service of proto/sagas/v1: the registry generated from PROTO_NAMES
 * (a new .proto's service is checked here with no change). */
#define services   saga_proto_services
#define N_SERVICES saga_proto_nservices

/* every method of every service has exactly one row, with its path */
static void test_every_proto_method_has_one_row(void **state)
{
	(void)state;
	for (size_t s = 0; s < N_SERVICES; s++) {
		const ProtobufCServiceDescriptor *d = services[s];
		assert_string_equal(d->package, "sagas.v1");
		for (unsigned m = 0; m < d->n_methods; m++) {
			char path[256];
			snprintf(path, sizeof path, "/%s/%s", d->name, d->methods[m].name);
			int rows = 0;
			for (int i = 0; i < METHOD_COUNT; i++)
				if (strcmp(method_table[i].service, d->short_name) == 0
				    && strcmp(method_table[i].name, d->methods[m].name) == 0) {
					rows++;
					assert_string_equal(method_table[i].path, path);
				}
			if (rows != 1)
				fail_msg("%s has %d rows in common/authz/methods.h (want 1)", path,
				    rows);
		}
	}
}

/* every row is a method of a service */
static void test_every_row_is_a_proto_method(void **state)
{
	(void)state;
	for (int i = 0; i < METHOD_COUNT; i++) {
		const method_row *r = &method_table[i];
		bool found = false;
		for (size_t s = 0; s < N_SERVICES && !found; s++) {
			if (strcmp(services[s]->short_name, r->service) != 0)
				continue;
			for (unsigned m = 0; m < services[s]->n_methods; m++)
				if (strcmp(services[s]->methods[m].name, r->name) == 0)
					found = true;
		}
		if (!found)
			fail_msg("the row %s names no method of proto/sagas/v1", r->path);
	}
}

/* the table holds as many rows as the services have methods */
static void test_counts(void **state)
{
	(void)state;
	unsigned n = 0;
	for (size_t s = 0; s < N_SERVICES; s++)
		n += services[s]->n_methods;
	assert_int_equal(n, METHOD_COUNT);
}

static void test_lookup(void **state)
{
	(void)state;
	for (int i = 0; i < METHOD_COUNT; i++) {
		assert_int_equal(method_find(method_table[i].path), i);
		assert_ptr_equal(METHOD_PATH(i), method_table[i].path);
	}
	assert_string_equal(
	    METHOD_PATH(METHOD_Orchestrator_WatchHistory), "/sagas.v1.Orchestrator/WatchHistory");
	assert_string_equal(METHOD_PATH(METHOD_Health_Check), "/sagas.v1.Health/Check");
	assert_string_equal(METHOD_PATH(METHOD_Stock_ReserveStock), "/sagas.v1.Stock/ReserveStock");
	const char *unknown[] = {"", "/", "/sagas.v1.Stock/", "/sagas.v1.Stock/reservestock",
	    "/sagas.v1.Stock/ReserveStock ", "sagas.v1.Stock/ReserveStock", "/sagas.v1.Rpc/Batch",
	    "/sagas.v1.Health/Watch"};
	for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++)
		assert_int_equal(method_find(unknown[i]), METHOD_NONE);
	assert_int_equal(method_find(NULL), METHOD_NONE);
}

/* a row's own rules: some role, an HTTP route in full or none, a verb
 * gatewayd knows, one route per verb and path */
static void test_rows(void **state)
{
	(void)state;
	for (int i = 0; i < METHOD_COUNT; i++) {
		const method_row *r = &method_table[i];
		assert_true(r->roles != 0);
		assert_true((r->http_verb == NULL) == (r->http_path == NULL));
		if (r->http_path == NULL)
			continue;
		assert_true(r->http_path[0] == '/');
		/* the verbs gatewayd lists in an Allow header (gateway_http.c) */
		assert_true(strcmp(r->http_verb, "GET") == 0 || strcmp(r->http_verb, "POST") == 0
		    || strcmp(r->http_verb, "PUT") == 0 || strcmp(r->http_verb, "PATCH") == 0
		    || strcmp(r->http_verb, "DELETE") == 0);
		for (int j = 0; j < i; j++)
			if (method_table[j].http_path != NULL
			    && strcmp(method_table[j].http_path, r->http_path) == 0
			    && strcmp(method_table[j].http_verb, r->http_verb) == 0)
				fail_msg(
				    "%s and %s have the same route", method_table[j].path, r->path);
	}
	/* the batch list of a service, as its daemon builds it */
	static const char *const stock[] = {METHODS_Stock(METHOD_BATCH_PATH) NULL};
	assert_string_equal(stock[0], "/sagas.v1.Stock/ReserveStock");
	assert_string_equal(stock[1], "/sagas.v1.Stock/ReleaseStock");
	assert_null(stock[2]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_every_proto_method_has_one_row),
	    cmocka_unit_test(test_every_row_is_a_proto_method),
	    cmocka_unit_test(test_counts),
	    cmocka_unit_test(test_lookup),
	    cmocka_unit_test(test_rows),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
