/* paymentd: the payment participant daemon. Reads its configuration, waits
 * for the database, applies the schema, serves sagas.v1.Payment until SIGINT
 * or SIGTERM (services/kit/participant.c). */
#include "handlers.h"
#include "participant.h"
#include "service.h"

int main(int argc, char **argv)
{
	static const participant_desc d = {
	    .prog = "paymentd",
	    .env_prefix = "SAGA_PAYMENT",
	    .default_listen = "tcp://127.0.0.1:7103",
	    .default_metrics = "http://127.0.0.1:9472",
	    .default_db = "dbname=sagas_payment",
	    .service = "sagas.v1.Payment",
	    .summary = "The payment participant of the order saga: charges and refunds payments,\n"
	               "idempotently by saga id.",
	    .fault_example = "unavailable:RefundPayment:count=2",
	    .kit = &payment_service,
	    .ops = &payment_rpc_ops,
	};
	return participant_main(&d, argc, argv);
}
