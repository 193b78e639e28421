/* stockd: the stock participant daemon. Reads its configuration, waits for
 * the database, applies the schema, serves sagas.v1.Stock until SIGINT or
 * SIGTERM (common/participant.c). */
#include "handlers.h"
#include "participant.h"
#include "store.h"

int main(int argc, char **argv)
{
	static const participant_desc d = {
	    .prog = "stockd",
	    .env_prefix = "SAGA_STOCK",
	    .default_listen = "tcp://127.0.0.1:7102",
	    .default_db = "dbname=sagas_stock",
	    .service = "sagas.v1.Stock",
	    .summary = "The stock participant of the order saga: reserves and releases stock,\n"
	               "idempotently by saga id.",
	    .fault_example = "delay:ReserveStock:ms=3000",
	    .migrate = stock_store_migrate,
	    .ops = &stock_rpc_ops,
	};
	return participant_main(&d, argc, argv);
}
