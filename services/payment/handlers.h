/* handlers: the payment participant's RPC methods (sagas.v1.Payment): the
 * saga commands through the participant kit (service.c, services/kit/pkit.h), the
 * admin methods here. With service.c, the only payment files that touch protobuf.
 */
#ifndef SAGA_PAYMENT_HANDLERS_H
#define SAGA_PAYMENT_HANDLERS_H

#include <stdbool.h>
#include <stdint.h>

#include "pkit.h"
#include "rpc.h"

/* Deposit and ListAccounts, for payment_service.others. */
#define PAYMENT_ADMIN_METHODS 2
extern const pkit_other_method payment_admin_methods[PAYMENT_ADMIN_METHODS];

/* payment_rpc_ops serves sagas.v1.Payment with `app` a participant_app
 * whose kit is payment_service (PKIT_RPC_OPS). */
extern const rpc_server_ops payment_rpc_ops;

#endif
