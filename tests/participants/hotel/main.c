/* hoteld: the hotel participant daemon, a test participant (not in the
 * default deployment): the booking saga's room step
 * (tests/definitions/order_booking.yaml). Reads its configuration, waits for
 * the database, applies the schema, serves sagas.v1.Hotel until SIGINT or
 * SIGTERM, all by the participant kit (services/kit/participant.c); this
 * folder brings only its schema, its decision and its admin methods. */
#include "handlers.h"
#include "participant.h"
#include "service.h"

int main(int argc, char **argv)
{
	static const participant_desc d = {
	    .prog = "hoteld",
	    .env_prefix = "SAGA_HOTEL",
	    .default_listen = "tcp://127.0.0.1:7105",
	    .default_metrics = "http://127.0.0.1:9475",
	    .default_db = "dbname=sagas_hotel",
	    .service = "sagas.v1.Hotel",
	    .summary = "The hotel participant of the booking saga (a test participant): holds\n"
	               "and frees rooms, idempotently by saga id.",
	    .fault_example = "delay:HoldRoom:ms=3000",
	    .kit = &hotel_service,
	    .ops = &hotel_rpc_ops,
	};
	return participant_main(&d, argc, argv);
}
