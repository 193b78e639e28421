/* fuzz_stock: stockd's handlers (services/stock/handlers.c: every request
 * message of sagas.v1.Stock as it is decoded and validated, the batch
 * path, the answers) through the participant kit over an in-memory store (mem_pkit_store.c,
 * mem_stock_store.c), through
 * fuzz_handlers.h. */
#include "fuzz.h"
#include "fuzz_handlers.h"
#include "handlers.h"
#include "participant.h"
#include "service.h"

static const char *const stock_fuzz_methods[] = {
    "/sagas.v1.Stock/ReserveStock",
    "/sagas.v1.Stock/ReleaseStock",
    "/sagas.v1.Stock/SetStock",
    "/sagas.v1.Stock/ListStock",
    "/sagas.v1.Stock/NoSuchMethod",
};

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fuzz_quiet("fuzz_stock");
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static participant_app app = {.conninfo = "", .kit = &stock_service};
	fuzz_handlers_run(&stock_rpc_ops, &app, stock_fuzz_methods,
	    sizeof stock_fuzz_methods / sizeof stock_fuzz_methods[0], data, size);
	return 0;
}
