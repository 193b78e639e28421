/* handlers: the stock participant's RPC methods (sagas.v1.Stock): the saga
 * commands through the participant kit (service.c, services/kit/pkit.h), the
 * admin methods here. With service.c, the only stock files that touch protobuf.
 */
#ifndef SAGA_STOCK_HANDLERS_H
#define SAGA_STOCK_HANDLERS_H

#include "pkit.h"
#include "rpc.h"

/* SetStock and ListStock, for stock_service.others. */
#define STOCK_ADMIN_METHODS 2
extern const pkit_other_method stock_admin_methods[STOCK_ADMIN_METHODS];

/* stock_rpc_ops serves sagas.v1.Stock with `app` a participant_app whose
 * kit is stock_service (PKIT_RPC_OPS). */
extern const rpc_server_ops stock_rpc_ops;

#endif
