/* authz: who may call what (docs/security.md, "Roles").
 *
 * A caller's roles come from the listener its connection arrived on: every
 * TLS listener serves one role and trusts only that role's CA, because nng
 * 1.5.2 tells a server that a client certificate was verified but not whose
 * it is. A plain listener (tcp:// on loopback, ipc://, inproc://: a laptop
 * or a test) gives every role, and its daemon warns so at start.
 *
 * The roles that may call each method are a column of the one table of
 * methods, common/authz/methods.h. The RPC server checks it for every call (a
 * call inside a batch frame too) before any handler, Health and Admin
 * included, runs. A refusal changes nothing, is counted, and is logged at
 * most once per peer address per AUTHZ_LOG_INTERVAL_MS.
 */
#ifndef SAGA_AUTHZ_H
#define SAGA_AUTHZ_H

#include <stdbool.h>
#include <stdint.h>

/* Roles, as a bit set. */
enum {
	AUTHZ_ORCHESTRATOR = 1u << 0, /* the orchestrator: steps and compensations */
	AUTHZ_ADMIN = 1u << 1,        /* operators: stock, money, listings, faults, retry */
	AUTHZ_CLIENT = 1u << 2,       /* applications: start, get, wait, list sagas */
	AUTHZ_ALL = AUTHZ_ORCHESTRATOR | AUTHZ_ADMIN | AUTHZ_CLIENT,
	AUTHZ_OPEN = 1u << 7, /* in the table: any caller, even with no role */
};

/* How often a refusal is logged per peer address (ms); the refusals in
 * between are counted and told with the next line. */
#define AUTHZ_LOG_INTERVAL_MS 10000

/* authz_method_roles returns the roles that may call `method` (a full
 * "/sagas.v1.Service/Method", NUL-terminated): a set of AUTHZ_* bits, with
 * AUTHZ_OPEN for a method anyone may call (Health/Check); 0 for a method
 * not in the table (the server answers UNIMPLEMENTED). Thread-safe. */
unsigned authz_method_roles(const char *method);

/* authz_method_name returns the table's own copy of `method` (static
 * storage: a bounded metrics label), or "unknown" for a method not in the
 * table. Thread-safe. */
const char *authz_method_name(const char *method);

/* authz_role_names writes the names of the roles in `roles` as
 * "orchestrator, admin" into buf (size len > 0; cut when short), "none" for
 * no role. Returns buf. */
const char *authz_role_names(unsigned roles, char *buf, int len);

/* authz_role_parse maps "orchestrator", "admin" or "client" to its bit.
 * Returns the bit, or 0 for any other text. */
unsigned authz_role_parse(const char *name);

/* Outcomes of authz_check. */
enum authz_verdict {
	AUTHZ_ALLOWED = 0,
	AUTHZ_UNKNOWN_METHOD,    /* not in the table: UNIMPLEMENTED */
	AUTHZ_UNAUTHENTICATED,   /* the caller has no role at all */
	AUTHZ_PERMISSION_DENIED, /* the caller's roles do not include one allowed */
};

/* authz_decide says whether a caller with `roles` may call `method`: the
 * table alone, no side effect. Thread-safe. */
enum authz_verdict authz_decide(const char *method, unsigned roles);

/* authz_note_refusal counts a refusal `v` (UNAUTHENTICATED or
 * PERMISSION_DENIED) of `method` to a caller with `roles` and logs a
 * WARNING naming them and `peer` (the caller's address as text, e.g.
 * "127.0.0.1:51234"; may be NULL), at most once per peer address per
 * AUTHZ_LOG_INTERVAL_MS (authz_log_limited). Thread-safe. */
void authz_note_refusal(enum authz_verdict v, const char *method, unsigned roles, const char *peer);

/* authz_refused returns how many calls authz_check refused since the
 * process started: UNAUTHENTICATED ones in *unauthenticated and
 * PERMISSION_DENIED ones in *denied (either may be NULL). */
void authz_refused(uint64_t *unauthenticated, uint64_t *denied);

/* authz_log_limited logs a WARNING `what` about `peer` (may be NULL) unless
 * one about the same key (`kind` and the peer's address without its port)
 * was logged less than AUTHZ_LOG_INTERVAL_MS ago; a line says how many were
 * held back since. For refusals at the edge (connection cap, unverified
 * TLS) as well as authz_check. Thread-safe. */
void authz_log_limited(const char *kind, const char *peer, const char *what);

/* authz_count_refusal adds `n` to sagas_rpc_refusals_total{reason}: a call or
 * a connection refused before any handler ran. `reason` is one of
 * AUTHZ_REFUSAL_REASONS (static storage; bounded). Thread-safe. */
void authz_count_refusal(const char *reason, int64_t n);

/* The reasons of sagas_rpc_refusals_total, each exported at 0 from the
 * start (authz_metrics_init): no verified identity for the method
 * (unauthenticated), the wrong role (permission_denied), a TLS connection
 * without a verified client certificate (unverified), past
 * --max-connections (conn_cap), a TLS handshake not finished in time
 * (handshake), calls piling up on the Health-only listener (piling),
 * SetFault with failure injection off (fault_off), a request envelope that
 * does not decode or is not canonical (malformed_envelope), a bad field of
 * one (bad_field), a method no service here serves (unknown_method), a
 * payload rpc_unpack refuses (malformed_payload). */
#define AUTHZ_REFUSAL_REASONS                                                                      \
	{                                                                                          \
		"unauthenticated", "permission_denied", "unverified", "conn_cap", "handshake",     \
		    "piling", "fault_off", "malformed_envelope", "bad_field", "unknown_method",    \
		    "malformed_payload"                                                            \
	}

/* authz_metrics_init registers every refusal reason's series at 0. */
void authz_metrics_init(void);

#endif
