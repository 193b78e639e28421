/* authz_table: the roles that may call each method, from the table of
 * methods (methods.h), and the decision on it (authz.h). Pure: no I/O, no
 * state; the RPC server and the simulation (tests/sim) use the same code. */
#include "authz.h"

#include <stdio.h>
#include <string.h>

#include "methods.h"

/* ---- the roles of each method: the table of methods (methods.h) ---- */

unsigned authz_method_roles(const char *method)
{
	enum method_id id = method_find(method);
	return id == METHOD_NONE ? 0 : method_table[id].roles;
}

const char *authz_method_name(const char *method)
{
	enum method_id id = method_find(method);
	return id == METHOD_NONE ? "unknown" : METHOD_PATH(id);
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
