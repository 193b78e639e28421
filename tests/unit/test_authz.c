/* test_authz: the roles (common/authz/methods.h, docs/security.md
 * "Roles"): every method of the proto files against every role, the methods
 * outside it, and the role names. The table in docs/security.md is this
 * one; a change to either must change both. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "authz.h"

#define O AUTHZ_ORCHESTRATOR
#define A AUTHZ_ADMIN
#define C AUTHZ_CLIENT

/* every method of proto/sagas/v1 and who may call it */
static const struct {
	const char *method;
	unsigned allowed; /* AUTHZ_OPEN: anyone */
} expect[] = {
    {"/sagas.v1.Health/Check", AUTHZ_OPEN},
    {"/sagas.v1.Stock/ReserveStock", O},
    {"/sagas.v1.Stock/ReleaseStock", O},
    {"/sagas.v1.Payment/ChargePayment", O},
    {"/sagas.v1.Payment/RefundPayment", O},
    {"/sagas.v1.Shipping/ShipOrder", O},
    {"/sagas.v1.Stock/SetStock", A},
    {"/sagas.v1.Stock/ListStock", A},
    {"/sagas.v1.Payment/Deposit", A},
    {"/sagas.v1.Payment/ListAccounts", A},
    {"/sagas.v1.Shipping/ListShipments", A},
    {"/sagas.v1.Admin/SetFault", A},
    {"/sagas.v1.Admin/ClearFaults", A},
    {"/sagas.v1.Admin/RunRetention", A},
    {"/sagas.v1.Orchestrator/RetrySaga", A},
    {"/sagas.v1.Orchestrator/StartSaga", C | A},
    {"/sagas.v1.Orchestrator/GetSaga", C | A},
    {"/sagas.v1.Orchestrator/WaitSaga", C | A},
    {"/sagas.v1.Orchestrator/ListSagas", C | A},
    {"/sagas.v1.Orchestrator/GetSagaHistory", C | A},
    {"/sagas.v1.Orchestrator/WatchHistory", C | A},
};

static void test_every_method_every_role(void **state)
{
	(void)state;
	const unsigned roles[] = {0, O, A, C, O | A, AUTHZ_ALL};
	for (size_t i = 0; i < sizeof expect / sizeof expect[0]; i++) {
		assert_int_equal(authz_method_roles(expect[i].method), expect[i].allowed);
		for (size_t r = 0; r < sizeof roles / sizeof roles[0]; r++) {
			enum authz_verdict want;
			if (expect[i].allowed & AUTHZ_OPEN || expect[i].allowed & roles[r])
				want = AUTHZ_ALLOWED;
			else if (roles[r] == 0)
				want = AUTHZ_UNAUTHENTICATED;
			else
				want = AUTHZ_PERMISSION_DENIED;
			if (authz_decide(expect[i].method, roles[r]) != want)
				fail_msg("%s with roles %u: got %d, want %d", expect[i].method,
				    roles[r], authz_decide(expect[i].method, roles[r]), want);
		}
	}
}

/* what moves money or stock is the orchestrator's alone, and a fault the
 * admin's alone */
static void test_only_the_orchestrator_moves_money(void **state)
{
	(void)state;
	assert_int_equal(
	    authz_decide("/sagas.v1.Payment/ChargePayment", A | C), AUTHZ_PERMISSION_DENIED);
	assert_int_equal(
	    authz_decide("/sagas.v1.Payment/RefundPayment", A | C), AUTHZ_PERMISSION_DENIED);
	assert_int_equal(
	    authz_decide("/sagas.v1.Stock/ReleaseStock", A | C), AUTHZ_PERMISSION_DENIED);
	assert_int_equal(authz_decide("/sagas.v1.Admin/SetFault", O | C), AUTHZ_PERMISSION_DENIED);
	assert_int_equal(authz_decide("/sagas.v1.Payment/Deposit", O | C), AUTHZ_PERMISSION_DENIED);
}

static void test_unknown_methods(void **state)
{
	(void)state;
	const char *unknown[] = {"", "/", "/sagas.v1.Stock/", "/sagas.v1.Stock/reservestock",
	    "/sagas.v1.Stock/ReserveStock ", "sagas.v1.Stock/ReserveStock", "/sagas.v1.Rpc/Batch",
	    "/sagas.v1.Health/Watch"};
	for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++) {
		assert_int_equal(authz_method_roles(unknown[i]), 0);
		assert_int_equal(authz_decide(unknown[i], AUTHZ_ALL), AUTHZ_UNKNOWN_METHOD);
	}
}

static void test_role_names(void **state)
{
	(void)state;
	char b[64];
	assert_string_equal(authz_role_names(0, b, sizeof b), "none");
	assert_string_equal(authz_role_names(O, b, sizeof b), "orchestrator");
	assert_string_equal(authz_role_names(C | A, b, sizeof b), "admin, client");
	assert_string_equal(
	    authz_role_names(AUTHZ_ALL, b, sizeof b), "orchestrator, admin, client");
	char small[8];
	authz_role_names(AUTHZ_ALL, small, sizeof small);
	assert_true(strlen(small) < sizeof small);
	assert_int_equal(authz_role_parse("admin"), A);
	assert_int_equal(authz_role_parse("client"), C);
	assert_int_equal(authz_role_parse("orchestrator"), O);
	assert_int_equal(authz_role_parse("Admin"), 0);
	assert_int_equal(authz_role_parse(""), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_every_method_every_role),
	    cmocka_unit_test(test_only_the_orchestrator_moves_money),
	    cmocka_unit_test(test_unknown_methods),
	    cmocka_unit_test(test_role_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
