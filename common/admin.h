/* admin: the sagas.v1.Admin service (failure injection) that every rpc
 * server answers next to its own service. */
#ifndef SAGA_ADMIN_H
#define SAGA_ADMIN_H

#include <stdbool.h>

#include "rpc.h"

/* admin_handle serves `call` when its method belongs to sagas.v1.Admin and
 * returns true (reply filled); returns false for any other method. */
bool admin_handle(const rpc_request *call, rpc_reply *reply);

#endif
