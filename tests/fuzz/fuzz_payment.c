/* fuzz_payment: paymentd's handlers (services/payment/handlers.c: every
 * request message of sagas.v1.Payment as it is decoded and validated, the
 * batch path, the answers) through the participant kit over an in-memory
 * store (mem_pkit_store.c, mem_payment_store.c), through fuzz_handlers.h. */
#include "fuzz.h"
#include "fuzz_handlers.h"
#include "handlers.h"
#include "participant.h"
#include "service.h"

static const char *const payment_fuzz_methods[] = {
    "/sagas.v1.Payment/ChargePayment",
    "/sagas.v1.Payment/RefundPayment",
    "/sagas.v1.Payment/Deposit",
    "/sagas.v1.Payment/ListAccounts",
    "/sagas.v1.Payment/NoSuchMethod",
};

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fuzz_quiet("fuzz_payment");
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static participant_app app = {.conninfo = "", .kit = &payment_service};
	fuzz_handlers_run(&payment_rpc_ops, &app, payment_fuzz_methods,
	    sizeof payment_fuzz_methods / sizeof payment_fuzz_methods[0], data, size);
	return 0;
}
