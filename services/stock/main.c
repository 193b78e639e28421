/* stockd: the stock participant daemon. Reads its configuration, waits for
 * the database, applies the schema, serves sagas.v1.Stock until SIGINT or
 * SIGTERM (services/kit/participant.c), built on the participant kit (services/kit/pkit.h,
 * service.c). */
#include "handlers.h"
#include "participant.h"
#include "service.h"

int main(int argc, char **argv)
{
	static const participant_desc d = {
	    .prog = "stockd",
	    .env_prefix = "SAGA_STOCK",
	    .default_listen = "tcp://127.0.0.1:7102",
	    .default_metrics = "http://127.0.0.1:9471",
	    .default_db = "dbname=sagas_stock",
	    .service = "sagas.v1.Stock",
	    .summary = "The stock participant of the order saga: reserves and releases stock,\n"
	               "idempotently by saga id.",
	    .fault_example = "delay:ReserveStock:ms=3000",
	    .kit = &stock_service,
	    .ops = &stock_rpc_ops,
	};
	return participant_main(&d, argc, argv);
}
