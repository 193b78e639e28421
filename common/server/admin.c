#include "admin.h"

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "authz.h"
#include "fault.h"
#include "log.h"
#include "methods.h"
#include "pg.h"
#include "retention.h"
#include "sagas/v1/admin.pb-c.h"
#include "valid.h"

static atomic_ulong admin_refused;
/* the retention job RunRetention runs (admin_set_retention); NULL: none */
static const retention_config *admin_retention;

void admin_set_retention(const retention_config *cfg)
{
	admin_retention = cfg;
}

/* admin_run_retention serves RunRetention: one pass (or a dry count) on a
 * connection of its own. */
static void admin_run_retention(const rpc_request *call, rpc_reply *reply)
{
	Sagas__V1__RunRetentionRequest *req = (Sagas__V1__RunRetentionRequest *)rpc_unpack(
	    &sagas__v1__run_retention_request__descriptor, call, reply);
	if (req == NULL)
		return;
	bool dry = req->dry_run;
	sagas__v1__run_retention_request__free_unpacked(req, NULL);
	const retention_config *cfg = admin_retention;
	if (cfg == NULL) {
		rpc_reply_error(reply, RPC_UNIMPLEMENTED, "no_retention",
		    "this daemon keeps nothing that expires");
		return;
	}
	PGconn *conn = pg_connect(cfg->conninfo, 1000);
	if (conn == NULL) {
		rpc_reply_error(reply, RPC_UNAVAILABLE, "database_unavailable",
		    "could not run retention: database unavailable");
		return;
	}
	char peer[96];
	log_info(NULL, "retention %s requested by %s", dry ? "dry run" : "pass",
	    rpc_peer(call->pipe, peer, sizeof peer));
	retention_counts c = {{0, 0, 0}};
	int rc = retention_run_pass(cfg, conn, dry, &c);
	PQfinish(conn);
	if (rc != 0) {
		rpc_reply_error(reply, RPC_UNAVAILABLE, "database_error",
		    "could not run retention: %s (deleted %lld %s before it)", pg_err_name(rc),
		    (long long)c.n[0], cfg->tables[0]);
		return;
	}
	Sagas__V1__RunRetentionReply out = SAGAS__V1__RUN_RETENTION_REPLY__INIT;
	out.dry_run = dry;
	out.table = (char *)cfg->tables[0];
	out.deleted = c.n[0];
	out.other_table = (char *)(cfg->tables[1] ? cfg->tables[1] : "");
	out.other_deleted = c.n[1];
	out.ids_table = (char *)(cfg->tables[2] ? cfg->tables[2] : "");
	out.ids_deleted = c.n[2];
	rpc_reply_ok(reply, &out.base);
}

unsigned long admin_fault_refusals(void)
{
	return atomic_load(&admin_refused);
}

static void admin_set_fault(const rpc_request *call, rpc_reply *reply)
{
	Sagas__V1__SetFaultRequest *req = (Sagas__V1__SetFaultRequest *)rpc_unpack(
	    &sagas__v1__set_fault_request__descriptor, call, reply);
	if (req == NULL)
		return;
	int kind = (int)req->kind;
	if (kind < FAULT_DELAY || kind > FAULT_DUPLICATE_REPLY) {
		rpc_reply_error(reply, RPC_INVALID_ARGUMENT, "bad_field",
		    "invalid kind: %d is not a FaultKind", kind);
	} else if (req->method[0] != '\0' && !valid_name(req->method)) {
		rpc_reply_error(reply, RPC_INVALID_ARGUMENT, "bad_field",
		    "invalid method: must be 1..%d bytes of UTF-8", VALID_NAME_MAX);
	} else if (req->delay_ms < 0 || req->delay_ms > 600000) {
		rpc_reply_error(reply, RPC_INVALID_ARGUMENT, "bad_field",
		    "invalid delay_ms: must be 0..600000");
	} else if (req->count < 0) {
		rpc_reply_error(
		    reply, RPC_INVALID_ARGUMENT, "bad_field", "invalid count: must be >= 0");
	} else if (fault_arm((fault_kind)kind, req->method, req->delay_ms, req->count) != 0) {
		rpc_reply_error(reply, RPC_RESOURCE_EXHAUSTED, "too_many_faults",
		    "could not arm fault: too many armed");
	} else {
		char peer[96], roles[64];
		log_warn(NULL, "fault armed by %s (role %s): %s on %s, delay_ms=%lld, count=%d",
		    rpc_peer(call->pipe, peer, sizeof peer),
		    authz_role_names(call->roles, roles, sizeof roles),
		    fault_kind_name((fault_kind)kind),
		    req->method[0] ? req->method : "every method", (long long)req->delay_ms,
		    (int)req->count);
		Sagas__V1__SetFaultReply out = SAGAS__V1__SET_FAULT_REPLY__INIT;
		rpc_reply_ok(reply, &out.base);
	}
	sagas__v1__set_fault_request__free_unpacked(req, NULL);
}

void admin_serve(void *ctx, const rpc_request *call, rpc_reply *reply)
{
	const admin_service *a = ctx;
	enum method_id id = method_find(call->method);
	if (id == METHOD_Admin_SetFault && !a->fault_injection) {
		char peer[96];
		atomic_fetch_add(&admin_refused, 1);
		authz_count_refusal("fault_off", 1);
		authz_log_limited("fault_off", rpc_peer(call->pipe, peer, sizeof peer),
		    "refused SetFault: failure injection is off (--enable-fault-injection)");
		rpc_reply_error(reply, RPC_FAILED_PRECONDITION, "fault_injection_disabled",
		    "failure injection is off in this daemon: start it with "
		    "--enable-fault-injection (tests only)");
	} else if (id == METHOD_Admin_SetFault) {
		admin_set_fault(call, reply);
	} else if (id == METHOD_Admin_RunRetention) {
		admin_run_retention(call, reply);
	} else if (id == METHOD_Admin_ClearFaults) {
		fault_clear();
		Sagas__V1__ClearFaultsReply out = SAGAS__V1__CLEAR_FAULTS_REPLY__INIT;
		rpc_reply_ok(reply, &out.base);
	} else {
		rpc_reply_error(reply, RPC_UNIMPLEMENTED, "unknown_method", "unknown method \"%s\"",
		    call->method);
	}
}
