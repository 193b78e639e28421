/* handlers: the shipping participant's RPC methods (sagas.v1.Shipping): the
 * saga command through the participant kit (service.c, services/kit/pkit.h), the
 * admin method here. With service.c, the only shipping files that touch protobuf.
 */
#ifndef SAGA_SHIPPING_HANDLERS_H
#define SAGA_SHIPPING_HANDLERS_H

#include "pkit.h"
#include "rpc.h"

/* ListShipments, for shipping_service.others. */
#define SHIPPING_ADMIN_METHODS 1
extern const pkit_other_method shipping_admin_methods[SHIPPING_ADMIN_METHODS];

/* shipping_rpc_ops serves sagas.v1.Shipping with `app` a participant_app
 * whose kit is shipping_service (PKIT_RPC_OPS). */
extern const rpc_server_ops shipping_rpc_ops;

#endif
