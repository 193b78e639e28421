/* handlers: the stock participant's RPC methods (sagas.v1.Stock). Decodes
 * and validates each request at the edge, runs it through the store and
 * encodes the reply. The only stock file that touches protobuf.
 */
#ifndef SAGA_STOCK_HANDLERS_H
#define SAGA_STOCK_HANDLERS_H

#include <stdint.h>

#include "participant.h"
#include "rpc.h"

/* What every worker shares; borrowed by the server until it stops. */
typedef participant_app stock_app;

/* stock_rpc_ops serves sagas.v1.Stock with `app` a stock_app: each worker
 * thread owns one stock_store (one PGconn). Bad input is answered
 * INVALID_ARGUMENT ("bad_field", "malformed_payload"), an unknown method
 * UNIMPLEMENTED ("unknown_method"), a lost database UNAVAILABLE
 * ("database_unavailable"); the handler never crashes on any bytes. */
extern const rpc_server_ops stock_rpc_ops;

#endif
