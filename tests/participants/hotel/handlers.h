/* handlers: the hotel participant's RPC methods (sagas.v1.Hotel): the saga
 * commands through the participant kit (service.c, services/kit/pkit.h), the
 * admin methods here. With service.c, the only hotel files that touch
 * protobuf. */
#ifndef SAGA_HOTEL_HANDLERS_H
#define SAGA_HOTEL_HANDLERS_H

#include "pkit.h"
#include "rpc.h"

/* SetRooms and ListRooms, for hotel_service.others. */
#define HOTEL_ADMIN_METHODS 2
extern const pkit_other_method hotel_admin_methods[HOTEL_ADMIN_METHODS];

/* hotel_rpc_ops serves sagas.v1.Hotel with `app` a participant_app whose
 * kit is hotel_service (PKIT_RPC_OPS). */
extern const rpc_server_ops hotel_rpc_ops;

#endif
