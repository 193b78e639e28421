/* fault: named failure-injection points (docs/testing.md, "Failure
 * injection"). Armed at start with --fault SPEC or at run time through the
 * Admin service (sagas.v1.Admin/SetFault); unarmed, a check costs one
 * relaxed atomic load. Thread-safe.
 */
#ifndef SAGA_FAULT_H
#define SAGA_FAULT_H

#include <stdbool.h>
#include <stdint.h>

/* Values equal sagas.v1.FaultKind. */
typedef enum fault_kind {
	FAULT_DELAY = 1,              /* hold the call delay_ms before serving */
	FAULT_DROP_REPLY = 2,         /* serve, then send no reply */
	FAULT_UNAVAILABLE = 3,        /* answer UNAVAILABLE without serving */
	FAULT_EXIT_AFTER_COMMIT = 4,  /* _exit right after the commit */
	FAULT_FAIL_BEFORE_COMMIT = 5, /* roll back instead of committing */
	FAULT_EXIT_AFTER_SEND = 6,    /* orchestrator: _exit when a reply came
	                                 back, before storing it */
	FAULT_DROP_REQUEST = 7,       /* neither serve nor reply (lost request) */
	FAULT_DUPLICATE_REPLY = 8,    /* orchestrator: a reply handled twice */
} fault_kind;

#define FAULT_EXIT_CODE 86 /* the exit status of a fault exit */

/* fault_arm adds a fault: `method` is a short method or command name
 * ("ChargePayment"), "" for all; delay_ms for FAULT_DELAY (0..600000);
 * count > 0 fires on the next `count` matching checks, 0 on all of them.
 * Returns 0, -EINVAL for a bad kind or range, -ENOSPC when 32 are armed. */
int fault_arm(fault_kind kind, const char *method, int64_t delay_ms, int32_t count);

/* fault_clear disarms every fault. */
void fault_clear(void);

/* fault_parse arms the faults of a spec: comma-separated items
 * `kind[:Method][:ms=N][:count=N]`, kind one of delay, drop_reply,
 * unavailable, exit_after_commit, fail_before_commit, exit_after_send,
 * drop_request, duplicate_reply,
 * e.g. "delay:ReserveStock:ms=3000,unavailable:ReleaseStock:count=5".
 * Returns 0, or -EINVAL after printing what is wrong to stderr. */
int fault_parse(const char *spec);

/* fault_check is true when an armed fault of `kind` matches `method` (a
 * full "/pkg.Service/Method" or short name; NULL matches only faults armed
 * for every method); it consumes one count and sets *delay_ms (may be NULL).
 * Logs a WARNING naming the fault each time one fires. */
bool fault_check(fault_kind kind, const char *method, int64_t *delay_ms);

/* fault_any is true while any fault is armed (a relaxed atomic read): the
 * batched paths fall back to one call at a time then, so every fault point
 * fires exactly as it would without batching. */
bool fault_any(void);

/* fault_exit_if ends the process with FAULT_EXIT_CODE (no cleanup, like a
 * crash) when a fault of `kind` fires for `method`. */
void fault_exit_if(fault_kind kind, const char *method);

/* fault_kind_name returns "delay", ... (static), or "unknown". */
const char *fault_kind_name(fault_kind kind);

#endif
