/* fuzz_orchestrator: orchestratord's handlers (orchestrator/core/api.c: every
 * request message of sagas.v1.Orchestrator as it is decoded and
 * validated, the batch path) through fuzz_handlers.h. Its database is a
 * socket that does not exist, so a request that passes validation is
 * answered UNAVAILABLE at once, and nothing is handed to an engine (there
 * is none). */
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
};

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fuzz_quiet("fuzz_orchestrator");
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static api a = {
	    .db = "host=/nonexistent/fuzz port=1 connect_timeout=1",
	    .db_wait_ms = 0,
	    .n_engines = 0,
	};
	fuzz_handlers_run(api_server_ops(), &a, orch_fuzz_methods,
	    sizeof orch_fuzz_methods / sizeof orch_fuzz_methods[0], data, size);
	return 0;
}
