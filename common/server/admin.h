/* admin: the sagas.v1.Admin service (failure injection) that every daemon
 * answers next to its own, dispatched by the RPC server like Health
 * (rpc_service). Only the admin role may call it (authz.h), and SetFault
 * works only in a daemon started with --enable-fault-injection. */
#ifndef SAGA_ADMIN_H
#define SAGA_ADMIN_H

#include <stdbool.h>

#include "retention.h"
#include "rpc.h"

/* What sagas.v1.Admin may do in this process (the ctx of admin_serve). */
typedef struct admin_service {
	bool fault_injection; /* --enable-fault-injection: SetFault arms faults */
} admin_service;

/* admin_serve serves a call of sagas.v1.Admin (an rpc_service handler;
 * `ctx` is an admin_service). SetFault arms a fault (fault.h) and logs a
 * WARNING naming it and who armed it (peer address and role); without
 * fault_injection it is refused with FAILED_PRECONDITION reason
 * "fault_injection_disabled", arms nothing, and the refusal is counted and
 * logged (at most once per peer per interval). ClearFaults disarms all.
 * RunRetention runs a retention pass, or a dry count (admin_set_retention). */
void admin_serve(void *ctx, const rpc_request *call, rpc_reply *reply);

/* admin_set_retention makes RunRetention run `cfg`'s batches (a pass on a
 * connection of its own, beside the elected background job: both delete
 * with SKIP LOCKED, so they never delete a unit twice nor half). `cfg` is
 * borrowed for the process's lifetime; call before serving. Without it,
 * RunRetention is UNIMPLEMENTED no_retention. */
void admin_set_retention(const retention_config *cfg);

/* admin_fault_refusals returns how many SetFault calls were refused
 * because failure injection is off. */
unsigned long admin_fault_refusals(void);

#endif
