/* fuzz_orchestrator: orchestratord's handlers (orchestrator/core/api.c: every
 * request message of sagas.v1.Orchestrator as it is decoded and
 * validated, the batch path) through fuzz_handlers.h. Its database is a
 * socket that does not exist, so a request that passes validation is
 * answered UNAVAILABLE at once, and nothing is handed to an engine (there
 * is none). */
#include <stdio.h>
#include <stdlib.h>

#include "api.h"
#include "fuzz.h"
#include "fuzz_handlers.h"

static const char *const orch_fuzz_methods[] = {
    "/sagas.v1.Orchestrator/StartSaga",
    "/sagas.v1.Orchestrator/GetSaga",
    "/sagas.v1.Orchestrator/WaitSaga",
    "/sagas.v1.Orchestrator/ListSagas",
    "/sagas.v1.Orchestrator/GetSagaHistory",
    "/sagas.v1.Orchestrator/RetrySaga",
    "/sagas.v1.Orchestrator/NoSuchMethod",
    "/sagas.v1.Orchestrator/CancelSaga",
    "/sagas.v1.Orchestrator/ListAudit",
};

/* the order saga and a type of its own input (tests/definitions/trip.yaml:
 * trip takes a sagas.v1.Booking), which new sagas start under (orch_defs.h) */
static orch_defs fuzz_defs;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fuzz_quiet("fuzz_orchestrator");
	char err[256];
	if (orch_defs_load(&fuzz_defs, SAGA_SOURCE_DIR "/tests/definitions/trip.yaml",
	        saga_def_order_links, SAGA_DEF_ORDER_NLINKS, err, sizeof err)
	    != 0) {
		fprintf(stderr, "fuzz_orchestrator: %s\n", err);
		abort();
	}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static api a = {
	    .db = "host=/nonexistent/fuzz port=1 connect_timeout=1",
	    .db_wait_ms = 0,
	    .n_engines = 0,
	};
	a.defs = &fuzz_defs;
	fuzz_handlers_run(api_server_ops(), &a, orch_fuzz_methods,
	    sizeof orch_fuzz_methods / sizeof orch_fuzz_methods[0], data, size);
	return 0;
}
