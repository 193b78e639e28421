/* authz_table: the one table of methods and the roles that may call them,
 * and the decision on it (authz.h). Pure: no I/O, no state; the RPC server
 * and the simulation (tests/sim) use the same code. */
#include "authz.h"

#include <stdio.h>
#include <string.h>

/* ---- the table (docs/security.md, "Roles": keep the two the same) ---- */

typedef struct authz_row {
	const char *method;
	unsigned roles;
} authz_row;

#define ORCH   AUTHZ_ORCHESTRATOR
#define ADMIN  AUTHZ_ADMIN
#define CLIENT AUTHZ_CLIENT

static const authz_row authz_methods[] = {
    /* anyone: a load balancer or an orchestrator probing readiness */
    {"/sagas.v1.Health/Check", AUTHZ_OPEN},
    /* the steps and compensations: only the orchestrator moves stock, money and parcels */
    {"/sagas.v1.Stock/ReserveStock", ORCH},
    {"/sagas.v1.Stock/ReleaseStock", ORCH},
    {"/sagas.v1.Payment/ChargePayment", ORCH},
    {"/sagas.v1.Payment/RefundPayment", ORCH},
    {"/sagas.v1.Shipping/ShipOrder", ORCH},
    /* operators: stock levels, money in, listings, failure injection */
    {"/sagas.v1.Stock/SetStock", ADMIN},
    {"/sagas.v1.Stock/ListStock", ADMIN},
    {"/sagas.v1.Payment/Deposit", ADMIN},
    {"/sagas.v1.Payment/ListAccounts", ADMIN},
    {"/sagas.v1.Shipping/ListShipments", ADMIN},
    {"/sagas.v1.Admin/SetFault", ADMIN},
    {"/sagas.v1.Admin/ClearFaults", ADMIN},
    {"/sagas.v1.Admin/RunRetention", ADMIN},
    {"/sagas.v1.Orchestrator/RetrySaga", ADMIN},
    /* applications (and operators, who look at the same sagas) */
    {"/sagas.v1.Orchestrator/StartSaga", CLIENT | ADMIN},
    {"/sagas.v1.Orchestrator/GetSaga", CLIENT | ADMIN},
    {"/sagas.v1.Orchestrator/WaitSaga", CLIENT | ADMIN},
    {"/sagas.v1.Orchestrator/ListSagas", CLIENT | ADMIN},
    {"/sagas.v1.Orchestrator/GetSagaHistory", CLIENT | ADMIN},
    {"/sagas.v1.Orchestrator/WatchHistory", CLIENT | ADMIN},
};

unsigned authz_method_roles(const char *method)
{
	for (size_t i = 0; i < sizeof authz_methods / sizeof authz_methods[0]; i++)
		if (strcmp(authz_methods[i].method, method) == 0)
			return authz_methods[i].roles;
	return 0;
}

const char *authz_method_name(const char *method)
{
	for (size_t i = 0; method && i < sizeof authz_methods / sizeof authz_methods[0]; i++)
		if (strcmp(authz_methods[i].method, method) == 0)
			return authz_methods[i].method;
	return "unknown";
}

static const struct {
	unsigned bit;
	const char *name;
} authz_names[] = {
    {AUTHZ_ORCHESTRATOR, "orchestrator"},
    {AUTHZ_ADMIN, "admin"},
    {AUTHZ_CLIENT, "client"},
};

const char *authz_role_names(unsigned roles, char *buf, int len)
{
	int at = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < sizeof authz_names / sizeof authz_names[0]; i++) {
		if (!(roles & authz_names[i].bit) || at >= len)
			continue;
		at += snprintf(
		    buf + at, (size_t)(len - at), "%s%s", at ? ", " : "", authz_names[i].name);
	}
	if (buf[0] == '\0')
		snprintf(buf, (size_t)len, "none");
	return buf;
}

unsigned authz_role_parse(const char *name)
{
	for (size_t i = 0; i < sizeof authz_names / sizeof authz_names[0]; i++)
		if (strcmp(authz_names[i].name, name) == 0)
			return authz_names[i].bit;
	return 0;
}

enum authz_verdict authz_decide(const char *method, unsigned roles)
{
	unsigned allowed = authz_method_roles(method);
	if (allowed == 0)
		return AUTHZ_UNKNOWN_METHOD;
	if ((allowed & AUTHZ_OPEN) || (allowed & roles))
		return AUTHZ_ALLOWED;
	return (roles & AUTHZ_ALL) == 0 ? AUTHZ_UNAUTHENTICATED : AUTHZ_PERMISSION_DENIED;
}
