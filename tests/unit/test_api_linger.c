/* The orchestrator API's batch delay (api_linger_us, orchestrator/core/api.c;
 * docs/operations.md "--batch-delay"): which frames a worker holds decide
 * whether it waits for more.
 *
 *   - a StartSaga with wait_ms > 0, with enough commands in flight: waits
 *     the configured delay, alone or among other frames;
 *   - a StartSaga without wait_ms, a GetSaga, a batch frame, a frame that did
 *     not decode, a StartSaga whose payload does not decode: never wait;
 *   - --batch-delay 0: never waits;
 *   - fewer commands in flight than --batch-siblings (no engine): no wait.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "api.h"
#include "rpc.h"
#include "sagas/v1/orchestrator.pb-c.h"

#define M_START "/sagas.v1.Orchestrator/StartSaga"
#define M_GET   "/sagas.v1.Orchestrator/GetSaga"

static uint8_t start_wait[256], start_nowait[256], get[256];
static size_t start_wait_len, start_nowait_len, get_len;

static int setup(void **state)
{
	(void)state;
	Sagas__V1__Order o = SAGAS__V1__ORDER__INIT;
	o.customer = "ali";
	o.sku = "A1";
	o.qty = 1;
	o.amount = 100;
	Sagas__V1__StartSagaRequest m = SAGAS__V1__START_SAGA_REQUEST__INIT;
	m.saga_id = "0b5e4b5a-1c1d-4e7e-9a55-000000000001";
	m.order = &o;
	m.wait_ms = 5000;
	start_wait_len = sagas__v1__start_saga_request__pack(&m, start_wait);
	m.wait_ms = 0;
	start_nowait_len = sagas__v1__start_saga_request__pack(&m, start_nowait);
	Sagas__V1__GetSagaRequest g = SAGAS__V1__GET_SAGA_REQUEST__INIT;
	g.saga_id = m.saga_id;
	get_len = sagas__v1__get_saga_request__pack(&g, get);
	return 0;
}

static int64_t ask(api *a, const rpc_linger_frame *f, size_t n)
{
	return api_server_ops()->linger_us(a, f, n);
}

static void test_which_frames_wait(void **state)
{
	(void)state;
	/* no engines: 0 commands in flight, so siblings 0 lets the rule show */
	api a = {.n_engines = 0, .batch_delay_us = 1000, .batch_siblings = 0};
	rpc_linger_frame sw = {M_START, start_wait, start_wait_len};
	rpc_linger_frame sn = {M_START, start_nowait, start_nowait_len};
	rpc_linger_frame g = {M_GET, get, get_len};
	rpc_linger_frame batch = {RPC_BATCH_METHOD, NULL, 0};
	rpc_linger_frame bad = {"", NULL, 0};
	static const uint8_t junk[] = {0xff, 0xff, 0xff};
	rpc_linger_frame badstart = {M_START, junk, sizeof junk};

	assert_int_equal(ask(&a, &sw, 1), 1000);
	assert_int_equal(ask(&a, &sn, 1), 0);
	assert_int_equal(ask(&a, &g, 1), 0);
	assert_int_equal(ask(&a, &batch, 1), 0);
	assert_int_equal(ask(&a, &bad, 1), 0);
	assert_int_equal(ask(&a, &badstart, 1), 0);
	rpc_linger_frame mixed[] = {g, sn, batch, sw};
	assert_int_equal(ask(&a, mixed, 4), 1000);
	assert_int_equal(ask(&a, mixed, 3), 0);

	a.batch_delay_us = 0; /* --batch-delay 0 */
	assert_int_equal(ask(&a, &sw, 1), 0);
	a.batch_delay_us = 1000;
	a.batch_siblings = 1; /* one command must be in flight: none is */
	assert_int_equal(ask(&a, &sw, 1), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_which_frames_wait),
	};
	return cmocka_run_group_tests(tests, setup, NULL);
}
