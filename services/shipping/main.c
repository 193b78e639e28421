/* shippingd: the shipping participant daemon. Reads its configuration,
 * waits for the database, applies the schema, serves sagas.v1.Shipping
 * until SIGINT or SIGTERM (services/kit/participant.c), built on the participant
 * kit (services/kit/pkit.h, service.c). */
#include "handlers.h"
#include "participant.h"
#include "service.h"

int main(int argc, char **argv)
{
	static const participant_desc d = {
	    .prog = "shippingd",
	    .env_prefix = "SAGA_SHIPPING",
	    .default_listen = "tcp://127.0.0.1:7104",
	    .default_metrics = "http://127.0.0.1:9473",
	    .default_db = "dbname=sagas_shipping",
	    .service = "sagas.v1.Shipping",
	    .summary = "The shipping participant of the order saga: ships the parcel of a\n"
	               "charged order (the retriable step after the pivot), once per saga id.",
	    .fault_example = "unavailable:ShipOrder:count=3",
	    .kit = &shipping_service,
	    .ops = &shipping_rpc_ops,
	};
	return participant_main(&d, argc, argv);
}
