/* methods: the one table of RPC methods (issue 33). One row per method of
 * every service of the .proto files of proto/sagas/v1; everything else that names a
 * method comes from it: the roles that may call it (authz.h), the
 * orchestrator's dispatch (orchestrator/core/api.c), the participants'
 * (services/kit/pkit.h), the methods a batch frame may carry, gatewayd's
 * HTTP routes, sagactl's calls and docs/security.md's roles table
 * (tests/docs/methods_doc.c checks it). tests/unit/test_methods.c checks
 * the table against protoc-c's service descriptors: a method of a .proto
 * without its row, or a row without its method, fails.
 *
 * A row: M(Service, Method, roles, batch, http_verb, http_path)
 *   Service, Method: the proto's names, as tokens ("/sagas.v1.Service/Method")
 *   roles: the AUTHZ_* bits of the roles that may call it (AUTHZ_OPEN: anyone)
 *   batch: BATCH when a batch frame may carry it (its reply is small and
 *     immediate), else ALONE
 *   http_verb, http_path: gatewayd's route ("*" is the saga id segment), or
 *     NULL, NULL for a method the gateway does not expose
 * The rows of a service are METHODS_<Service>(M), in the .proto's order;
 * METHODS(M) is every service's.
 */
#ifndef SAGA_METHODS_H
#define SAGA_METHODS_H

#include <stdbool.h>
#include <stddef.h>

#include "authz.h"

/* clang-format off */
#define METHODS_Health(M)                                                                          \
	M(Health, Check, AUTHZ_OPEN, ALONE, "GET", "/healthz")

#define METHODS_Admin(M)                                                                           \
	M(Admin, SetFault, AUTHZ_ADMIN, ALONE, NULL, NULL)                                         \
	M(Admin, ClearFaults, AUTHZ_ADMIN, ALONE, NULL, NULL)                                      \
	M(Admin, RunRetention, AUTHZ_ADMIN, ALONE, NULL, NULL)

#define METHODS_Orchestrator(M)                                                                    \
	M(Orchestrator, StartSaga, AUTHZ_CLIENT | AUTHZ_ADMIN, BATCH, "POST", "/v1/sagas")         \
	M(Orchestrator, GetSaga, AUTHZ_CLIENT | AUTHZ_ADMIN, BATCH, "GET", "/v1/sagas/*")          \
	M(Orchestrator, ListSagas, AUTHZ_CLIENT | AUTHZ_ADMIN, ALONE, "GET", "/v1/sagas")          \
	M(Orchestrator, GetSagaHistory, AUTHZ_CLIENT | AUTHZ_ADMIN, ALONE, "GET",                  \
	    "/v1/sagas/*/history")                                                                 \
	M(Orchestrator, RetrySaga, AUTHZ_ADMIN, ALONE, "POST", "/v1/sagas/*/retry")                \
	M(Orchestrator, WaitSaga, AUTHZ_CLIENT | AUTHZ_ADMIN, ALONE, "GET", "/v1/sagas/*/wait")    \
	M(Orchestrator, WatchHistory, AUTHZ_CLIENT | AUTHZ_ADMIN, ALONE, "GET", "/v1/history")    \
	M(Orchestrator, CancelSaga, AUTHZ_ADMIN, ALONE, "POST", "/v1/sagas/*/cancel")              \
	M(Orchestrator, ListAudit, AUTHZ_ADMIN, ALONE, "GET", "/v1/audit")

#define METHODS_Stock(M)                                                                           \
	M(Stock, ReserveStock, AUTHZ_ORCHESTRATOR, BATCH, NULL, NULL)                              \
	M(Stock, ReleaseStock, AUTHZ_ORCHESTRATOR, BATCH, NULL, NULL)                              \
	M(Stock, SetStock, AUTHZ_ADMIN, ALONE, NULL, NULL)                                         \
	M(Stock, ListStock, AUTHZ_ADMIN, ALONE, NULL, NULL)

#define METHODS_Payment(M)                                                                         \
	M(Payment, ChargePayment, AUTHZ_ORCHESTRATOR, BATCH, NULL, NULL)                           \
	M(Payment, RefundPayment, AUTHZ_ORCHESTRATOR, BATCH, NULL, NULL)                           \
	M(Payment, Deposit, AUTHZ_ADMIN, ALONE, NULL, NULL)                                        \
	M(Payment, ListAccounts, AUTHZ_ADMIN, ALONE, NULL, NULL)

#define METHODS_Shipping(M)                                                                        \
	M(Shipping, ShipOrder, AUTHZ_ORCHESTRATOR, BATCH, NULL, NULL)                              \
	M(Shipping, ListShipments, AUTHZ_ADMIN, ALONE, NULL, NULL)

/* sagas.v1.Hotel: the test participant hoteld (tests/participants/hotel) */
#define METHODS_Hotel(M)                                                                           \
	M(Hotel, HoldRoom, AUTHZ_ORCHESTRATOR, BATCH, NULL, NULL)                                  \
	M(Hotel, FreeRoom, AUTHZ_ORCHESTRATOR, BATCH, NULL, NULL)                                  \
	M(Hotel, SetRooms, AUTHZ_ADMIN, ALONE, NULL, NULL)                                         \
	M(Hotel, ListRooms, AUTHZ_ADMIN, ALONE, NULL, NULL)

#define METHODS(M)                                                                                 \
	METHODS_Health(M) METHODS_Admin(M) METHODS_Orchestrator(M) METHODS_Stock(M)                \
	METHODS_Payment(M) METHODS_Shipping(M) METHODS_Hotel(M)
/* clang-format on */

/* METHOD_PATH_OF(Service, Method) is the full path as a string literal:
 * "/sagas.v1.Service/Method". */
#define METHOD_PATH_OF(S, N) "/sagas.v1." #S "/" #N

/* The methods' ids: METHOD_<Service>_<Method>, 0..METHOD_COUNT-1, in the
 * table's order; METHOD_NONE for a path not in the table. */
enum method_id {
	METHOD_NONE = -1,
#define METHOD_ENUM_ROW(S, N, roles, batch, verb, path) METHOD_##S##_##N,
	METHODS(METHOD_ENUM_ROW)
#undef METHOD_ENUM_ROW
	    METHOD_COUNT
};

/* One row of the table, as data. */
typedef struct method_row {
	const char *path;      /* "/sagas.v1.Stock/ReserveStock" */
	const char *service;   /* "Stock" */
	const char *name;      /* "ReserveStock" */
	unsigned roles;        /* AUTHZ_* bits; AUTHZ_OPEN: anyone */
	bool batch;            /* a batch frame may carry it */
	const char *http_verb; /* "GET", "POST", or NULL: not on the gateway */
	const char *http_path; /* the gateway's path pattern ("*": the saga id), or NULL */
} method_row;

/* The table, indexed by enum method_id (methods.c). Static storage. */
extern const method_row method_table[METHOD_COUNT];

/* METHOD_PATH(id) is the full path of method `id` (a valid enum method_id,
 * not METHOD_NONE): static storage. */
#define METHOD_PATH(id) (method_table[(id)].path)

/* method_find returns the id of the method whose full path is `path`
 * (NUL-terminated; NULL allowed), or METHOD_NONE when none is. Pure,
 * thread-safe. */
enum method_id method_find(const char *path);

/* METHOD_BATCH_PATH is a row macro for a service's list of the methods a
 * batch frame may carry (rpc_server_ops.batch_methods):
 *   static const char *const l[] = {METHODS_Stock(METHOD_BATCH_PATH) NULL};
 */
#define METHOD_BATCH_IF_BATCH(S, N) METHOD_PATH_OF(S, N),
#define METHOD_BATCH_IF_ALONE(S, N)
#define METHOD_BATCH_PATH(S, N, roles, batch, verb, path) METHOD_BATCH_IF_##batch(S, N)

#endif
