/* rpc_internal: what rpc.c, rpc_server.c and rpc_client.c share and no
 * other module may use. */
#ifndef SAGA_RPC_INTERNAL_H
#define SAGA_RPC_INTERNAL_H

/* rpc_errno maps an nng error (NNG_E*, 0) to 0 or a negative errno
 * (-ENOMEM, -EADDRINUSE, -EINVAL, -ETIMEDOUT, -ESHUTDOWN, -EMSGSIZE,
 * -ECONNREFUSED, -EACCES for a failed TLS handshake, else -EIO): the one place that does. */
int rpc_errno(int nng_rv);

#endif
