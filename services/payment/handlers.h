/* handlers: the payment participant's RPC methods (sagas.v1.Payment). Decodes
 * and validates each request at the edge, runs it through the store and
 * encodes the reply. The only payment file that touches protobuf.
 */
#ifndef SAGA_PAYMENT_HANDLERS_H
#define SAGA_PAYMENT_HANDLERS_H

#include <stdint.h>

#include "participant.h"
#include "rpc.h"

/* What every worker shares; borrowed by the server until it stops. */
typedef participant_app payment_app;

/* payment_rpc_ops serves sagas.v1.Payment with `app` a payment_app: each worker
 * thread owns one payment_store (one PGconn). Bad input is answered
 * INVALID_ARGUMENT ("bad_field", "malformed_payload"), an unknown method
 * UNIMPLEMENTED ("unknown_method"), a lost database UNAVAILABLE
 * ("database_unavailable"); the handler never crashes on any bytes. */
extern const rpc_server_ops payment_rpc_ops;

#endif
