/* sagactl_ops: the operator's actions on one saga beyond retry (issue 36):
 * cancel (CancelSaga, rule 11 of docs/saga-semantics.md) and the audit
 * trail (ListAudit). Admin role only, on the orchestrator.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "methods.h"
#include "sagactl.h"

int ctl_reason_check(ctl_ctx *c, bool required)
{
	const char *r = c->o.reason;
	if (r[0] == '\0' && !required)
		return 0;
	if (r[0] == '\0')
		return ctl_usage(
		    c->cmd, "missing --reason: say why (it is kept in the audit trail)");
	/* "--reason --json": the option's text forgotten, the next option taken */
	if (r[0] == '-' && r[1] == '-')
		return ctl_usage(c->cmd,
		    "--reason needs a text, not the option \"%s\" (--reason \"customer called\")",
		    ctl_esc(r));
	if (strlen(r) > CTL_NOTE_MAX || !valid_note(r, CTL_NOTE_MAX))
		return ctl_usage(c->cmd,
		    "invalid --reason: expected at most %d bytes of " VALID_NOTE_RULE,
		    CTL_NOTE_MAX);
	return 0;
}

int ctl_cancel(ctl_ctx *c, char **args)
{
	int rc = ctl_parse_id(c, args[0]);
	if (rc != 0)
		return rc;
	if ((rc = ctl_reason_check(c, true)) != 0)
		return rc;
	char key[VALID_UUID_LEN + 1];
	if ((rc = ctl_key(c, key)) != 0)
		return rc;
	Sagas__V1__CancelSagaRequest req = SAGAS__V1__CANCEL_SAGA_REQUEST__INIT;
	req.saga_id = args[0];
	req.reason = c->o.reason;
	req.request_id = key;
	/* idempotent by (saga, request id): a transient failure is re-sent
	 * with the same key, and a repeat of a cancel taken is answered so */
	rpc_result res;
	int tries = 0;
	rc = ctl_call_keyed(c, CTL_SVC_ORCHESTRATOR, METHOD_PATH(METHOD_Orchestrator_CancelSaga),
	    &req.base, "cancel saga", c->o.timeout_ms, &res, &tries);
	if (rc != 0) {
		if (c->transient)
			fprintf(stderr,
			    "hint: 'sagactl get %s' tells whether the cancel was taken; the same "
			    "command with --id %s retries it safely\n",
			    ctl_esc(args[0]), key);
		return rc;
	}
	Sagas__V1__CancelSagaReply *rep
	    = sagas__v1__cancel_saga_reply__unpack(NULL, res.payload_len, res.payload);
	rpc_result_clear(&res);
	if (rep == NULL || !ctl_saga_ok(rep->saga)) {
		rc = ctl_bad_reply(c, CTL_SVC_ORCHESTRATOR, "CancelSaga");
		goto out_free_rep;
	}
	if (c->o.json) {
		json_t *j = ctl_saga_json(rep->saga);
		if (j != NULL)
			json_object_set_new(j, "replayed", json_boolean(rep->replayed));
		rc = ctl_json_print(j);
	} else {
		ctl_saga_print(rep->saga, -1);
		if (rep->replayed)
			printf("this cancel (request %s) was taken before: nothing changed\n", key);
		else
			printf("cancelled: compensating what may have acted; 'sagactl wait %s' "
			       "waits for CANCELLED\n",
			    ctl_esc(args[0]));
		rc = CTL_EXIT_OK;
	}
out_free_rep:
	if (rep != NULL)
		sagas__v1__cancel_saga_reply__free_unpacked(rep, NULL);
	return rc;
}

int ctl_audit(ctl_ctx *c, char **args)
{
	(void)args;
	if (c->o.saga[0] != '\0' && !valid_uuid(c->o.saga))
		return ctl_usage(c->cmd,
		    "invalid --saga \"%s\": expected a saga id, a canonical lowercase UUID",
		    ctl_esc(c->o.saga));
	if (c->o.action[0] != '\0' && strcmp(c->o.action, "cancel") != 0
	    && strcmp(c->o.action, "retry") != 0)
		return ctl_usage(c->cmd, "invalid --action \"%s\": expected cancel or retry",
		    ctl_esc(c->o.action));
	Sagas__V1__ListAuditRequest req = SAGAS__V1__LIST_AUDIT_REQUEST__INIT;
	req.saga_id = c->o.saga;
	req.action = c->o.action;
	req.page_size = (int32_t)c->o.limit;
	req.before_id = c->o.before_id;
	rpc_result res;
	int rc = ctl_call(c, CTL_SVC_ORCHESTRATOR, METHOD_PATH(METHOD_Orchestrator_ListAudit),
	    &req.base, "read the audit trail", c->o.timeout_ms, false, &res);
	if (rc != 0)
		return rc;
	Sagas__V1__ListAuditReply *rep
	    = sagas__v1__list_audit_reply__unpack(NULL, res.payload_len, res.payload);
	rpc_result_clear(&res);
	if (rep == NULL)
		return ctl_bad_reply(c, CTL_SVC_ORCHESTRATOR, "ListAudit");
	if (c->o.json) {
		json_t *a = json_array();
		bool ok = a != NULL;
		for (size_t i = 0; ok && i < rep->n_entries; i++) {
			const Sagas__V1__AuditEntry *e = rep->entries[i];
			char at[32];
			ok = ctl_json_append(a,
			    json_pack("{s:I, s:I, s:s, s:s, s:s, s:s, s:s, s:s, s:I, s:s, s:s}",
			        "id", (json_int_t)e->id, "at_unix_ms", (json_int_t)e->at_unix_ms,
			        "at", ctl_iso_ms(e->at_unix_ms, at, sizeof at), "action", e->action,
			        "role", e->role, "peer", e->peer, "reason", e->reason, "saga_id",
			        e->saga_id, "version", (json_int_t)e->version, "request_id",
			        e->request_id, "outcome", e->outcome));
		}
		if (!ok) {
			json_decref(a);
			a = NULL;
		}
		rc = ctl_json_print(a);
	} else {
		static const char *const head[]
		    = {"at", "action", "saga", "version", "after", "by", "reason"};
		ctl_table t = {.ncols = CTL_NELEM(head), .head = head, .align = "lllrlll"};
		for (size_t i = 0; i < rep->n_entries; i++) {
			const Sagas__V1__AuditEntry *e = rep->entries[i];
			char at[32], ver[24], by[160];
			snprintf(ver, sizeof ver, "%" PRId64, (int64_t)e->version);
			snprintf(by, sizeof by, "%s at %s", e->role, e->peer);
			ctl_table_row(&t, ctl_iso_ms(e->at_unix_ms, at, sizeof at), e->action,
			    e->saga_id, ver, e->outcome, by, e->reason);
		}
		rc = ctl_table_done(&t);
		if (rc == CTL_EXIT_OK && rep->next_before_id != 0)
			fprintf(stderr, "note: more entries: the next page with --before-id %lld\n",
			    (long long)rep->next_before_id);
	}
	sagas__v1__list_audit_reply__free_unpacked(rep, NULL);
	return rc;
}
