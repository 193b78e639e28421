/* fuzz_handlers: one harness for a daemon's own handlers (rpc_server_ops),
 * as the RPC server calls them after it decoded the envelope: each input
 * is one call to ops->handle, or a batch of 1..8 calls to
 * ops->handle_batch, on a fresh worker (worker_init .. worker_fini).
 *
 * Input: byte 0: bit 0 set = a batch, bits 1-3 = its calls less one. Then
 * for each call a method byte (an index into `methods`, modulo), and for a
 * batch a two-byte little-endian payload length; a lone call's payload is
 * the rest of the input.
 *
 * Properties of every reply: a gRPC code (0..16); reason and message UTF-8
 * and NUL-terminated; a payload only with OK. */
#ifndef SAGA_FUZZ_HANDLERS_H
#define SAGA_FUZZ_HANDLERS_H

#include <stddef.h>
#include <stdint.h>

#include "rpc.h"

void fuzz_handlers_run(const rpc_server_ops *ops, void *app, const char *const *methods,
    size_t nmethods, const uint8_t *data, size_t size);

/* fuzz_quiet silences the daemon's log (every level). */
void fuzz_quiet(const char *prog);

#endif
