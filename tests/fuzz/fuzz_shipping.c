/* fuzz_shipping: shippingd's methods (services/shipping: every request
 * message of sagas.v1.Shipping as it is decoded and validated, the batch
 * path, the answers) through the participant kit over an in-memory store
 * (mem_pkit_store.c; ListShipments meets a database that is away and
 * answers UNAVAILABLE), through fuzz_handlers.h. */
#include "fuzz.h"
#include "fuzz_handlers.h"
#include "handlers.h"
#include "participant.h"
#include "service.h"

static const char *const shipping_fuzz_methods[] = {
    "/sagas.v1.Shipping/ShipOrder",
    "/sagas.v1.Shipping/ListShipments",
    "/sagas.v1.Shipping/NoSuchMethod",
};

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fuzz_quiet("fuzz_shipping");
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static participant_app app = {.conninfo = "", .kit = &shipping_service};
	fuzz_handlers_run(&shipping_rpc_ops, &app, shipping_fuzz_methods,
	    sizeof shipping_fuzz_methods / sizeof shipping_fuzz_methods[0], data, size);
	return 0;
}
