/* sagactl retry with filters instead of an ID: re-arm every unfinished saga
 * that `list`'s filters select, after an outage, at a bounded rate, or
 * count them first with --dry-run (docs/operations.md, "Retrying many
 * sagas"). The matching sagas are read first, page by page, and then
 * re-armed one RetrySaga each: a saga that finished meanwhile is counted
 * as such, not as an error. */
#include "sagactl.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "methods.h"
#include "status.h"

/* a page of the listing: the orchestrator's largest */
#define RETRY_PAGE CTL_LIST_LIMIT_MAX
/* tries in a row with no answer (timed out, unavailable, no connection)
 * after which the run stops */
#define RETRY_UNANSWERED_MAX 3
/* the sagas one run reads at most (37 bytes of id each) */
#define RETRY_MAX 1000000

/* The ids of the matching unfinished sagas: malloc'd, n of cap. */
typedef struct retry_ids {
	char (*id)[37];
	size_t n, cap;
} retry_ids;

/* retry_collect pages through ListSagas with `req`'s filters and keeps the
 * ids of the sagas not finished. Returns 0, or an exit code (printed). */
static int retry_collect(ctl_ctx *c, Sagas__V1__ListSagasRequest *req, retry_ids *ids)
{
	char token[CONFIG_STR_MAX] = "";
	req->limit = RETRY_PAGE;
	req->page_token = token;
	for (;;) {
		Sagas__V1__ListSagasReply *rep = NULL;
		int rc = ctl_list_page(c, req, &rep);
		if (rc != 0)
			return rc;
		for (size_t i = 0; i < rep->n_sagas; i++) {
			const Sagas__V1__Saga *s = rep->sagas[i];
			if (s == NULL || s->finished || s->saga_id == NULL
			    || strlen(s->saga_id) != 36)
				continue;
			if (ids->n == ids->cap) {
				size_t cap = ids->cap ? ids->cap * 2 : 1024;
				if (cap > RETRY_MAX)
					cap = RETRY_MAX;
				void *p = cap > ids->cap ? realloc(ids->id, cap * sizeof *ids->id)
				                         : NULL;
				if (p == NULL) {
					sagas__v1__list_sagas_reply__free_unpacked(rep, NULL);
					return ids->cap == RETRY_MAX
					    ? ctl_error("more than %d sagas match: narrow the "
					                "filters (nothing was re-armed)",
					        RETRY_MAX)
					    : ctl_error("out of memory reading the matching sagas");
				}
				ids->id = p;
				ids->cap = cap;
			}
			memcpy(ids->id[ids->n++], s->saga_id, 37);
		}
		snprintf(
		    token, sizeof token, "%s", rep->next_page_token ? rep->next_page_token : "");
		sagas__v1__list_sagas_reply__free_unpacked(rep, NULL);
		if (token[0] == '\0')
			return 0;
	}
}

/* What the re-arming came to. */
typedef struct retry_counts {
	size_t rearmed;  /* RetrySaga OK */
	size_t finished; /* FAILED_PRECONDITION terminal: ended meanwhile */
	size_t gone;     /* NOT_FOUND: deleted by retention meanwhile */
	size_t failed;   /* anything else (each said on stderr) */
} retry_counts;

/* retry_none_hint: when nothing matched and a state or type was named,
 * says on stderr why that may be (a finished state never matches; the
 * names are the definitions'). */
static void retry_none_hint(const ctl_ctx *c, size_t matched)
{
	if (matched == 0 && (c->o.state[0] != '\0' || c->o.type[0] != '\0'))
		fprintf(stderr,
		    "sagactl: no unfinished saga matches: a finished saga (COMPLETED, "
		    "CANCELLED, ...) is never re-armed, and --state and --type take the "
		    "names of the orchestrator's definitions ('sagactl list' shows them)\n");
}

static int retry_print(
    ctl_ctx *c, size_t matched, const retry_counts *k, const retry_ids *ids, double secs)
{
	if (c->o.json) {
		json_t *a = json_array();
		for (size_t i = 0; c->o.dry_run && a != NULL && i < ids->n; i++)
			if (json_array_append_new(a, json_string(ids->id[i])) != 0) {
				json_decref(a);
				a = NULL;
			}
		if (a == NULL)
			return ctl_json_print(NULL);
		return ctl_json_print(
		    json_pack("{s:b, s:I, s:I, s:I, s:I, s:I, s:f, s:o}", "dry_run", c->o.dry_run,
		        "matched", (json_int_t)matched, "rearmed", (json_int_t)k->rearmed,
		        "finished", (json_int_t)k->finished, "gone", (json_int_t)k->gone, "failed",
		        (json_int_t)k->failed, "seconds", secs, "saga_ids", a));
	}
	if (c->o.dry_run) {
		printf("dry run: %zu unfinished saga%s; none re-armed (without --dry-run: "
		       "at most %" PRId64 " a second, about %.0f s)\n",
		    matched, matched == 1 ? " matches" : "s match", c->o.rate,
		    (double)matched / (double)c->o.rate);
		retry_none_hint(c, matched);
		return CTL_EXIT_OK;
	}
	printf("re-armed %zu of %zu matching saga%s in %.1f s (%zu had finished meanwhile, %zu "
	       "were deleted, %zu failed)\n",
	    k->rearmed, matched, matched == 1 ? "" : "s", secs, k->finished, k->gone, k->failed);
	retry_none_hint(c, matched);
	return CTL_EXIT_OK;
}

bool ctl_retry_filtered(const ctl_ctx *c)
{
	return c->o.attention || c->o.overdue || c->o.state[0] != '\0' || c->o.type[0] != '\0'
	    || c->o.customer[0] != '\0' || c->o.older_than_ms != 0;
}

int ctl_retry_many(ctl_ctx *c)
{
	if (!ctl_retry_filtered(c))
		return ctl_usage(c->cmd,
		    "retry needs an ID, or filters to select sagas by (--attention, --state, "
		    "--type, --customer, --older-than MS above 0, --overdue)");
	int rc = ctl_reason_check(c, false);
	if (rc != 0)
		return rc;
	Sagas__V1__ListSagasRequest req;
	char state_name[CTL_STATE_NAME_MAX];
	rc = ctl_list_filter(c, &req, state_name);
	if (rc != 0)
		return rc;
	retry_ids ids = {0};
	rc = retry_collect(c, &req, &ids);
	if (rc != 0) {
		free(ids.id);
		return rc;
	}
	retry_counts k = {0};
	int64_t t0 = clock_mono_ms();
	/* pacing: each re-arm waits for its slot, a 1/rate s after the one
	 * before; a slot missed by a slow call is not made up for (after a
	 * stall, no burst) */
	int64_t interval_us = 1000000 / c->o.rate, next_us = clock_mono_us();
	int unanswered = 0; /* tries in a row with no answer */
	for (size_t i = 0; !c->o.dry_run && i < ids.n; i++) {
		int64_t now_us = clock_mono_us();
		if (next_us > now_us)
			clock_sleep_us(next_us - now_us);
		else
			next_us = now_us;
		next_us += interval_us;
		Sagas__V1__RetrySagaRequest rr = SAGAS__V1__RETRY_SAGA_REQUEST__INIT;
		rr.saga_id = ids.id[i];
		rr.reason = c->o.reason;
		rpc_result res;
		rc = ctl_try(c, CTL_SVC_ORCHESTRATOR, METHOD_PATH(METHOD_Orchestrator_RetrySaga),
		    &rr.base, c->o.timeout_ms, &res);
		if (rc != 0)
			break;
		bool transient = res.transport || res.code == RPC_DEADLINE_EXCEEDED
		    || res.code == RPC_UNAVAILABLE;
		unanswered = transient ? unanswered + 1 : 0;
		if (res.code == RPC_OK)
			k.rearmed++;
		else if (res.code == RPC_FAILED_PRECONDITION && strcmp(res.reason, "terminal") == 0)
			k.finished++;
		else if (res.code == RPC_NOT_FOUND)
			k.gone++;
		else if (!res.transport
		    && (res.code == RPC_PERMISSION_DENIED || res.code == RPC_UNAUTHENTICATED
		        || res.code == RPC_UNIMPLEMENTED)) {
			/* every other saga would be refused the same: stop */
			rc = ctl_error("could not retry saga %s: %s (%s): %s%s", ids.id[i],
			    rpc_code_name(res.code), ctl_esc(res.reason), ctl_esc(res.message),
			    res.code == RPC_UNIMPLEMENTED
			        ? " (is every URL of --orchestrator an orchestratord's?)"
			        : "");
			rpc_result_clear(&res);
			break;
		} else {
			k.failed++;
			fprintf(stderr, "sagactl: saga %s not re-armed: %s%s%s%s%s%s\n", ids.id[i],
			    rpc_code_name(res.code), res.reason[0] ? " (" : "", ctl_esc(res.reason),
			    res.reason[0] ? ")" : "", res.message[0] ? ": " : "",
			    ctl_esc(res.message));
		}
		rpc_result_clear(&res);
		if (unanswered >= RETRY_UNANSWERED_MAX) {
			/* the orchestrator is gone: waiting a timeout per saga
			 * would take hours; what was re-armed stays re-armed */
			retry_print(c, ids.n, &k, &ids, (double)(clock_mono_ms() - t0) / 1000.0);
			rc = ctl_error(
			    "the orchestrator did not answer %d re-arms in a row: stopped; "
			    "run the same command again once it answers (sagas re-armed "
			    "and not yet tried match again, harmlessly)",
			    RETRY_UNANSWERED_MAX);
			break;
		}
	}
	if (rc == 0) {
		double secs = (double)(clock_mono_ms() - t0) / 1000.0;
		rc = retry_print(c, ids.n, &k, &ids, secs);
		if (rc == CTL_EXIT_OK && k.failed > 0)
			rc = CTL_EXIT_ERROR;
	}
	free(ids.id);
	return rc;
}
