/* sagactl_saga.c: the verbs of the orchestrator's sagas: start, get, wait,
 * list, history and retry (sagactl.h). */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "methods.h"
#include "sagactl.h"
#include "status.h"

/* ctl_wait waits until saga `id` is terminal (parked: an error) with WaitSaga calls (a long
 * poll: each waits up to CTL_WAIT_CALL_MS on the orchestrator), until
 * `deadline` (clock_mono_ms) at the latest. Returns 0
 * with the final reply in *out (free it), or an exit code after printing an
 * error (an RPC error, or --wait-timeout passed). */
static int ctl_wait(ctl_ctx *c, const char *id, int64_t deadline, Sagas__V1__WaitSagaReply **out)
{
	const char *method = METHOD_PATH(METHOD_Orchestrator_WaitSaga);
	saga_state last = SAGA_STATE_UNSPECIFIED;
	char last_name[80] = "";    /* its state's name ("": no reply yet) */
	bool answered_last = false; /* did the latest call get a reply? */
	Sagas__V1__WaitSagaRequest req = SAGAS__V1__WAIT_SAGA_REQUEST__INIT;
	req.saga_id = (char *)id;
	for (;;) {
		int64_t began = clock_mono_ms(), left = deadline - began;
		int64_t wait = left < CTL_WAIT_CALL_MS ? left : CTL_WAIT_CALL_MS;
		req.wait_ms = (int32_t)(wait > 1 ? wait : 1);
		/* the call's deadline leaves the orchestrator time to answer,
		 * but never runs far past --wait-timeout when it does not */
		int64_t t = req.wait_ms
		    + (c->o.timeout_ms > CTL_POLL_MIN_CALL_MS ? c->o.timeout_ms
		                                              : CTL_POLL_MIN_CALL_MS);
		if (t > left + CTL_WAIT_OVERRUN_MS)
			t = left + CTL_WAIT_OVERRUN_MS;
		rpc_result res;
		int rc = ctl_call(
		    c, CTL_SVC_ORCHESTRATOR, method, &req.base, "wait for saga", t, true, &res);
		if (rc > 0)
			return rc;
		answered_last = rc == 0;
		if (rc == 0) {
			Sagas__V1__WaitSagaReply *rep = sagas__v1__wait_saga_reply__unpack(
			    NULL, res.payload_len, res.payload);
			rpc_result_clear(&res);
			if (rep == NULL || !ctl_saga_ok(rep->saga)) {
				if (rep != NULL)
					sagas__v1__wait_saga_reply__free_unpacked(rep, NULL);
				return ctl_bad_reply(c, CTL_SVC_ORCHESTRATOR, "WaitSaga");
			}
			last = (saga_state)rep->saga->state;
			snprintf(last_name, sizeof last_name, "%s", ctl_state(rep->saga));
			if (rep->finished || saga_is_terminal(last)) {
				*out = rep;
				return 0;
			}
			if (rep->saga->next_attempt_unix_ms == 0 && rep->saga->attention) {
				/* parked (rules R3, R5): nothing happens to it
				 * until an operator acts, so waiting is over */
				rc = ctl_error(
				    "saga %s is parked in %s (%s): it is not tried again "
				    "until an operator acts, see 'sagactl history %s'",
				    id, ctl_esc(last_name), ctl_esc(rep->saga->reason), id);
				sagas__v1__wait_saga_reply__free_unpacked(rep, NULL);
				return rc;
			}
			sagas__v1__wait_saga_reply__free_unpacked(rep, NULL);
		}
		/* rc < 0: the orchestrator did not answer in time; keep waiting */
		left = deadline - clock_mono_ms();
		if (left <= 0 && !answered_last)
			return ctl_error(
			    "saga %s: the orchestrator at %s stopped answering while "
			    "waiting (last seen %s); the saga resumes when it is back, "
			    "see 'sagactl get %s'",
			    id, c->o.url[CTL_SVC_ORCHESTRATOR],
			    last_name[0] == '\0' ? "no reply" : ctl_esc(last_name), id);
		if (left <= 0)
			return ctl_error("saga %s did not finish within %" PRId64
			                 " ms (last seen %s); it goes on, see 'sagactl get %s'",
			    id, c->o.wait_timeout_ms,
			    last_name[0] == '\0' ? "no reply" : ctl_esc(last_name), id);
		/* an answer that came back at once (the orchestrator holds too
		 * many waits, or was unreachable): pause before asking again */
		if (clock_mono_ms() - began < CTL_POLL_MS) {
			clock_sleep_us((left < CTL_POLL_MS ? left : CTL_POLL_MS) * 1000);
		}
	}
}

int ctl_start(ctl_ctx *c, char **args)
{
	int rc;
	int64_t qty = 0, amount = 0;
	/* --input: the type's input as JSON, checked by the orchestrator
	 * against its definition (the four arguments are not given) */
	bool own = c->o.input[0] != '\0';
	if (own)
		goto keyed;
	if ((rc = ctl_parse_name(c, "CUSTOMER", args[0])) != 0
	    || (rc = ctl_parse_name(c, "SKU", args[1])) != 0)
		return rc;
	int err = ctl_parse_int(args[2], 1, VALID_QTY_MAX, &qty);
	if (err == -ERANGE)
		return ctl_usage(
		    c->cmd, "invalid QTY \"%s\": out of range 1..%d", args[2], VALID_QTY_MAX);
	if (err != 0)
		return ctl_usage(c->cmd, "invalid QTY \"%s\": expected a whole number 1..%d",
		    args[2], VALID_QTY_MAX);
	if ((rc = ctl_parse_amount(c, args[3], &amount)) != 0)
		return rc;
keyed:;
	char id[VALID_UUID_LEN + 1];
	if ((rc = ctl_key(c, id)) != 0)
		return rc;

	Sagas__V1__Order order = SAGAS__V1__ORDER__INIT;
	Sagas__V1__StartSagaRequest req = SAGAS__V1__START_SAGA_REQUEST__INIT;
	req.saga_id = id;
	if (own) {
		req.input_json = c->o.input;
	} else {
		order.customer = args[0];
		order.sku = args[1];
		order.qty = (int32_t)qty;
		order.amount = amount;
		req.order = &order;
	}
	req.type = c->o.type[0] != '\0' ? c->o.type : (char *)"";
	/* --wait: the StartSaga itself waits for the end (wait_ms), and
	 * WaitSaga calls go on waiting when that was not long enough */
	int64_t began = clock_mono_ms();
	if (c->o.wait)
		req.wait_ms
		    = (int32_t)(c->o.wait_timeout_ms < CTL_WAIT_CALL_MS ? c->o.wait_timeout_ms
		                                                        : CTL_WAIT_CALL_MS);
	rpc_result res;
	/* StartSaga is idempotent by saga id, so a transient failure (no reply,
	 * UNAVAILABLE) is retried with the same id: the outcome of a call whose
	 * reply was lost is settled instead of left unknown */
	int tries = 0;
	rc = ctl_call_keyed(c, CTL_SVC_ORCHESTRATOR, METHOD_PATH(METHOD_Orchestrator_StartSaga),
	    &req.base, "start saga", c->o.timeout_ms + req.wait_ms, &res, &tries);
	if (rc != 0) {
		/* only when the outcome is unknown: a refusal is final */
		if (c->transient)
			fprintf(stderr,
			    "hint: the saga id was %s; 'sagactl get %s' tells whether it started, "
			    "and the same command with --id %s retries it safely\n",
			    ctl_esc(id), ctl_esc(id), ctl_esc(id));
		return rc;
	}
	Sagas__V1__StartSagaReply *rep
	    = sagas__v1__start_saga_reply__unpack(NULL, res.payload_len, res.payload);
	rpc_result_clear(&res);
	Sagas__V1__WaitSagaReply *fin = NULL;
	if (rep == NULL || !ctl_saga_ok(rep->saga)) {
		rc = ctl_bad_reply(c, CTL_SVC_ORCHESTRATOR, "StartSaga");
		goto out_free_rep;
	}
	const Sagas__V1__Saga *shown = rep->saga;
	if (c->o.wait && !rep->finished && !saga_is_terminal((saga_state)rep->saga->state)) {
		rc = ctl_wait(c, rep->saga->saga_id, began + c->o.wait_timeout_ms, &fin);
		if (rc != 0)
			goto out_free_rep;
		shown = fin->saga;
	}
	ctl_key_use use = ctl_key_use_of(c, !rep->created, tries);
	if (c->o.json) {
		rc = ctl_json_print(json_pack("{s:b, s:i, s:o}", "created",
		    use == CTL_KEY_NEW || use == CTL_KEY_OURS, "tries", tries, "saga",
		    ctl_saga_json(shown)));
	} else {
		ctl_saga_print(shown, (int)use);
		rc = CTL_EXIT_OK;
	}
	if (fin != NULL)
		sagas__v1__wait_saga_reply__free_unpacked(fin, NULL);
out_free_rep:
	if (rep != NULL)
		sagas__v1__start_saga_reply__free_unpacked(rep, NULL);
	return rc;
}

/* ctl_get_saga calls GetSaga for `id` (checked). Returns CTL_EXIT_OK and
 * *out (free with sagas__v1__get_saga_reply__free_unpacked), or an exit
 * code after printing why. */
static int ctl_get_saga(ctl_ctx *c, const char *id, Sagas__V1__GetSagaReply **out)
{
	Sagas__V1__GetSagaRequest req = SAGAS__V1__GET_SAGA_REQUEST__INIT;
	req.saga_id = (char *)id;
	rpc_result res;
	int rc = ctl_call(c, CTL_SVC_ORCHESTRATOR, METHOD_PATH(METHOD_Orchestrator_GetSaga),
	    &req.base, "get saga", c->o.timeout_ms, false, &res);
	if (rc != 0)
		return rc;
	Sagas__V1__GetSagaReply *rep
	    = sagas__v1__get_saga_reply__unpack(NULL, res.payload_len, res.payload);
	rpc_result_clear(&res);
	if (rep == NULL || !ctl_saga_ok(rep->saga)) {
		if (rep != NULL)
			sagas__v1__get_saga_reply__free_unpacked(rep, NULL);
		return ctl_bad_reply(c, CTL_SVC_ORCHESTRATOR, "GetSaga");
	}
	*out = rep;
	return CTL_EXIT_OK;
}

int ctl_get(ctl_ctx *c, char **args)
{
	int rc = ctl_parse_id(c, args[0]);
	if (rc != 0)
		return rc;
	Sagas__V1__GetSagaReply *rep = NULL;
	if ((rc = ctl_get_saga(c, args[0], &rep)) != CTL_EXIT_OK)
		return rc;
	if (c->o.json) {
		rc = ctl_json_print(ctl_saga_json(rep->saga));
	} else {
		ctl_saga_print(rep->saga, -1);
		rc = CTL_EXIT_OK;
	}
	sagas__v1__get_saga_reply__free_unpacked(rep, NULL);
	return rc;
}

/* ctl_wait_cmd: `sagactl wait ID`, the --wait of start for a saga that
 * runs already. */
int ctl_wait_cmd(ctl_ctx *c, char **args)
{
	int rc = ctl_parse_id(c, args[0]);
	if (rc != 0)
		return rc;
	Sagas__V1__WaitSagaReply *fin = NULL;
	rc = ctl_wait(c, args[0], clock_mono_ms() + c->o.wait_timeout_ms, &fin);
	if (rc != 0)
		return rc;
	if (c->o.json) {
		rc = ctl_json_print(ctl_saga_json(fin->saga));
	} else {
		ctl_saga_print(fin->saga, -1);
		rc = CTL_EXIT_OK;
	}
	sagas__v1__wait_saga_reply__free_unpacked(fin, NULL);
	return rc;
}

int ctl_list_page(
    ctl_ctx *c, const Sagas__V1__ListSagasRequest *req, Sagas__V1__ListSagasReply **out)
{
	rpc_result res;
	int rc = ctl_call(c, CTL_SVC_ORCHESTRATOR, METHOD_PATH(METHOD_Orchestrator_ListSagas),
	    &req->base, "list sagas", c->o.timeout_ms, false, &res);
	if (rc != 0)
		return rc;
	Sagas__V1__ListSagasReply *rep
	    = sagas__v1__list_sagas_reply__unpack(NULL, res.payload_len, res.payload);
	rpc_result_clear(&res);
	if (rep == NULL)
		return ctl_bad_reply(c, CTL_SVC_ORCHESTRATOR, "ListSagas");
	for (size_t i = 0; i < rep->n_sagas; i++) {
		if (!ctl_saga_ok(rep->sagas[i])) {
			sagas__v1__list_sagas_reply__free_unpacked(rep, NULL);
			return ctl_bad_reply(c, CTL_SVC_ORCHESTRATOR, "ListSagas");
		}
	}
	*out = rep;
	return 0;
}

int ctl_list_sagas(
    ctl_ctx *c, saga_state state, int32_t limit, bool attention, Sagas__V1__ListSagasReply **out)
{
	Sagas__V1__ListSagasRequest req = SAGAS__V1__LIST_SAGAS_REQUEST__INIT;
	req.state = (Sagas__V1__SagaState)state;
	req.limit = limit;
	req.attention_only = attention;
	return ctl_list_page(c, &req, out);
}

/* ctl_why joins a saga's overdue reasons with commas into buf, the failing
 * ones with their count of tries ("retrying: 5 tries, last error
 * carrier_down": a retriable step's refusal is on its row; a compensation's
 * row keeps the reason it cancels for, not an error). */
static const char *ctl_why(const Sagas__V1__Saga *s, char *buf, size_t len)
{
	size_t at = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < s->n_overdue && at < len; i++) {
		const char *r = s->overdue[i];
		bool retrying = strcmp(r, "retrying") == 0;
		int w;
		if (retrying || strcmp(r, "compensation_failing") == 0)
			w = snprintf(buf + at, len - at, "%s%s: %d tries%s%s", i ? ", " : "", r,
			    (int)s->attempts, retrying && s->reason[0] ? ", last error " : "",
			    retrying ? s->reason : "");
		else
			w = snprintf(buf + at, len - at, "%s%s", i ? ", " : "", r);
		if (w < 0)
			break;
		at += (size_t)w;
	}
	return buf;
}

/* ctl_list_add puts the sagas of one page into the JSON array `a` or the
 * table `t`. Returns false when out of memory. */
static bool ctl_list_add(ctl_ctx *c, const Sagas__V1__ListSagasReply *rep, json_t *a, ctl_table *t)
{
	for (size_t i = 0; i < rep->n_sagas; i++) {
		const Sagas__V1__Saga *s = rep->sagas[i];
		if (c->o.json) {
			json_t *j = ctl_saga_json(s);
			if (j != NULL && c->o.overdue) {
				json_t *why = json_array();
				for (size_t k = 0; why != NULL && k < s->n_overdue; k++)
					json_array_append_new(why, json_string(s->overdue[k]));
				if (why == NULL || json_object_set_new(j, "overdue", why) != 0) {
					json_decref(j);
					j = NULL;
				}
			}
			if (!ctl_json_append(a, j))
				return false;
			continue;
		}
		char qty[16], amount[32], at[32], why[96];
		snprintf(qty, sizeof qty, "%d", (int)s->order->qty);
		/* the why column is the 10th: a table of 9 columns ignores it */
		ctl_table_row(t, s->saga_id, ctl_state(s), s->reason, s->order->customer,
		    s->order->sku, qty, ctl_money(s->order->amount, amount),
		    s->attention ? "yes" : "", ctl_iso_ms(s->updated_unix_ms, at, sizeof at),
		    ctl_why(s, why, sizeof why));
	}
	return true;
}

int ctl_list_filter(
    ctl_ctx *c, Sagas__V1__ListSagasRequest *req, char state_name[CTL_STATE_NAME_MAX])
{
	/* the order saga's states go as the SagaState (what an orchestrator
	 * older than saga types reads); any other name, or with another
	 * --type, as state_name */
	saga_state state = SAGA_STATE_UNSPECIFIED;
	memset(state_name, 0, CTL_STATE_NAME_MAX);
	bool other_type = c->o.type[0] != '\0' && strcmp(c->o.type, "order") != 0;
	if (c->o.state[0] != '\0') {
		size_t n = strlen(c->o.state);
		bool ok = n <= 64 && isalpha((unsigned char)c->o.state[0]);
		for (size_t i = 0; ok && i < n; i++) {
			unsigned char ch = (unsigned char)c->o.state[i];
			ok = isalnum(ch) || ch == '_';
			state_name[i] = (char)toupper(ch);
		}
		if (!ok)
			return ctl_usage(c->cmd,
			    "invalid --state \"%s\": a state's name is a letter, then letters, "
			    "digits or _ (RESERVING, ..., or another saga type's: BOOKED)",
			    ctl_esc(c->o.state));
		state = other_type ? SAGA_STATE_UNSPECIFIED : saga_state_parse(state_name);
		if (state != SAGA_STATE_UNSPECIFIED)
			state_name[0] = '\0';
	}
	if (!c->o.overdue && (c->o.margin_ms != 0 || c->o.stuck_after_ms != 0))
		return ctl_usage(c->cmd, "--margin and --stuck-after go with --overdue");
	sagas__v1__list_sagas_request__init(req);
	req->state = (Sagas__V1__SagaState)state;
	req->limit = (int32_t)c->o.limit;
	req->attention_only = c->o.attention;
	req->overdue = c->o.overdue;
	req->overdue_margin_ms = c->o.margin_ms;
	req->stuck_after_ms = c->o.stuck_after_ms;
	req->older_than_ms = c->o.older_than_ms;
	req->customer = c->o.customer;
	req->type = c->o.type;
	req->state_name = state_name;
	return 0;
}

int ctl_list(ctl_ctx *c, char **args)
{
	(void)args;
	Sagas__V1__ListSagasRequest req;
	char state_name[CTL_STATE_NAME_MAX];
	int rc = ctl_list_filter(c, &req, state_name);
	if (rc != 0)
		return rc;
	/* the object form of --json, with the next page's token */
	bool paged = c->page_token_given || c->o.all || c->o.overdue;
	char token[CONFIG_STR_MAX];
	snprintf(token, sizeof token, "%s", c->o.page_token);
	req.page_token = token;
	static const char *const head[] = {"saga_id", "state", "reason", "customer", "sku", "qty",
	    "amount", "attention", "updated_at", "why"};
	ctl_table t = {.ncols = c->o.overdue ? 10 : 9, .head = head, .align = "lllllrrlll"};
	json_t *a = c->o.json ? json_array() : NULL;
	bool ok = !c->o.json || a != NULL;
	Sagas__V1__ListSagasReply *rep = NULL;
	size_t shown = 0;
	bool truncated = false;
	int64_t margin = 0, stuck = 0;
	for (;;) {
		rc = ctl_list_page(c, &req, &rep);
		if (rc != 0)
			goto out_free;
		ok = ok && ctl_list_add(c, rep, a, &t);
		shown += rep->n_sagas;
		truncated = truncated || rep->truncated;
		margin = rep->overdue_margin_ms;
		stuck = rep->stuck_after_ms;
		snprintf(
		    token, sizeof token, "%s", rep->next_page_token ? rep->next_page_token : "");
		sagas__v1__list_sagas_reply__free_unpacked(rep, NULL);
		rep = NULL;
		if (!c->o.all || token[0] == '\0')
			break;
	}
	if (c->o.json) {
		json_t *j = a;
		a = NULL;
		if (ok && paged) {
			j = json_pack("{s:o, s:s}", "sagas", j, "next_page_token", token);
			if (j != NULL && c->o.overdue
			    && (json_object_set_new(j, "overdue_margin_ms", json_integer(margin))
			            != 0
			        || json_object_set_new(j, "stuck_after_ms", json_integer(stuck))
			            != 0)) {
				json_decref(j);
				j = NULL;
			}
		} else if (!ok) {
			json_decref(j);
			j = NULL;
		}
		rc = ctl_json_print(j);
	} else {
		if (c->o.overdue)
			printf("overdue: past_deadline after %" PRId64 " ms, stuck after %" PRId64
			       " ms, compensation_failing and retrying after 3 failed tries\n",
			    margin, stuck);
		rc = ctl_table_done(&t);
	}
	if (token[0] != '\0')
		fprintf(stderr, "note: %zu %s shown, more match: next page with --page-token %s\n",
		    shown, shown == 1 ? "saga" : "sagas", ctl_esc(token));
	else if (truncated && !c->o.all)
		fprintf(stderr,
		    "note: %zu %s shown: the reply was cut at one frame (about 1 MiB)\n", shown,
		    shown == 1 ? "saga" : "sagas");
	return rc;
out_free:
	json_decref(a);
	if (!c->o.json)
		ctl_table_fini(&t);
	return rc;
}

/* ctl_history_tries prints, for an unfinished saga, the tries of its
 * current step from its row (GetSaga): the history has a row per
 * transition, not per try; the row keeps the count of failed tries, when
 * the last was written (updated_at) and why when it was refused (reason),
 * the next try and the deadline. Returns an exit code. */
static int ctl_history_tries(ctl_ctx *c, const char *id)
{
	Sagas__V1__GetSagaReply *rep = NULL;
	int rc = ctl_get_saga(c, id, &rep);
	if (rc != CTL_EXIT_OK)
		return rc;
	const Sagas__V1__Saga *s = rep->saga;
	saga_state st = (saga_state)s->state;
	/* any type's end (Saga.finished), or the order saga's states from an
	 * orchestrator older than saga types */
	bool over = s->finished || saga_is_terminal(st);
	/* the step by its state's name, and for the order saga its command */
	char step[160];
	snprintf(step, sizeof step, "%s%s%s", ctl_esc(ctl_state(s)),
	    st != SAGA_STATE_UNSPECIFIED ? ", " : "",
	    st != SAGA_STATE_UNSPECIFIED ? saga_command_name(saga_command_of(st)) : "");
	if (!over && strcmp(s->reason, REASON_PAST_HORIZON) == 0) {
		/* rule R3: parked, never tried again */
		printf("\ncurrent step: %s\n", step);
		printf("  parked        past the retention horizon: never sent again\n");
		printf("  attention     yes: settle it by hand (docs/operations.md, "
		       "\"Retention\")\n");
	} else if (!over && strcmp(s->reason, REASON_SAGA_ID_REUSED) == 0
	    && s->next_attempt_unix_ms == 0) {
		/* rule R5: parked, its step refused for another saga's record */
		printf("\ncurrent step: %s\n", step);
		printf("  parked        refused saga_id_reused: a participant keeps an earlier "
		       "saga with this id\n");
		printf("  attention     yes: retry it once that participant's retention forgot "
		       "it (docs/operations.md, \"Retention\")\n");
	} else if (!over) {
		char t1[32], t2[32], t3[32];
		printf("\ncurrent step: %s\n", step);
		printf("  failed tries  %d\n", (int)s->attempts);
		/* the row's reason is why a compensation runs, or in SHIPPING
		 * why shippingd refused the last try; a transient failure's
		 * (no reply, UNAVAILABLE) is not kept */
		if (s->attempts > 0)
			printf("  last failed   %s (%s)\n",
			    ctl_iso_ms(s->updated_unix_ms, t1, sizeof t1),
			    saga_is_retriable(st) && s->reason[0]
			        ? ctl_esc(s->reason)
			        : "no reply, or a transient error");
		/* a claimed saga's next_attempt_at is the lease of its try in
		 * flight (store.c), so "next" may be a try already sent */
		printf("  next try      %s%s\n", ctl_iso_ms(s->next_attempt_unix_ms, t2, sizeof t2),
		    s->attempts == 0 ? " (the first try's lease, or due)"
		                     : " (a retry's due time, or the lease of the try in flight)");
		printf("  step deadline %s\n",
		    s->step_deadline_unix_ms ? ctl_iso_ms(s->step_deadline_unix_ms, t3, sizeof t3)
		                             : "none: retried until it succeeds");
		if (s->attention)
			printf("  attention     yes (sagactl retry %s re-arms it)\n", ctl_esc(id));
	}
	sagas__v1__get_saga_reply__free_unpacked(rep, NULL);
	return CTL_EXIT_OK;
}

int ctl_history(ctl_ctx *c, char **args)
{
	int rc = ctl_parse_id(c, args[0]);
	if (rc != 0)
		return rc;
	Sagas__V1__GetSagaHistoryRequest req = SAGAS__V1__GET_SAGA_HISTORY_REQUEST__INIT;
	req.saga_id = args[0];
	rpc_result res;
	rc = ctl_call(c, CTL_SVC_ORCHESTRATOR, METHOD_PATH(METHOD_Orchestrator_GetSagaHistory),
	    &req.base, "get saga history", c->o.timeout_ms, false, &res);
	if (rc != 0)
		return rc;
	Sagas__V1__GetSagaHistoryReply *rep
	    = sagas__v1__get_saga_history_reply__unpack(NULL, res.payload_len, res.payload);
	rpc_result_clear(&res);
	if (rep == NULL)
		return ctl_bad_reply(c, CTL_SVC_ORCHESTRATOR, "GetSagaHistory");
	if (c->o.json) {
		json_t *a = json_array();
		bool ok = a != NULL;
		for (size_t i = 0; ok && i < rep->n_entries; i++) {
			const Sagas__V1__HistoryEntry *e = rep->entries[i];
			char at[32];
			ok = ctl_json_append(a,
			    json_pack("{s:I, s:I, s:s, s:s?, s:s, s:s, s:s, s:s, s:s}", "version",
			        (json_int_t)e->version, "at_unix_ms", (json_int_t)e->at_unix_ms,
			        "at", ctl_iso_ms(e->at_unix_ms, at, sizeof at), "from_state",
			        ctl_hist_state(e, true), "to_state", ctl_hist_state(e, false),
			        "event", e->event, "reason", e->reason, "actor", e->actor, "note",
			        e->note));
		}
		if (!ok) {
			json_decref(a);
			a = NULL;
		}
		rc = ctl_json_print(a);
	} else {
		static const char *const head[]
		    = {"version", "at", "transition", "event", "reason"};
		ctl_table t = {.ncols = CTL_NELEM(head), .head = head, .align = "rllll"};
		for (size_t i = 0; i < rep->n_entries; i++) {
			const Sagas__V1__HistoryEntry *e = rep->entries[i];
			char ver[24], at[32], tr[160], why[512];
			snprintf(ver, sizeof ver, "%" PRId64, (int64_t)e->version);
			const char *from = ctl_hist_state(e, true);
			snprintf(tr, sizeof tr, "%s -> %s", from != NULL ? from : "-",
			    ctl_hist_state(e, false));
			/* an operator's action: who, and their words */
			if (e->actor[0] != '\0')
				snprintf(why, sizeof why, "%s%sby %s%s%s%s", e->reason,
				    e->reason[0] ? " " : "", e->actor, e->note[0] ? ": \"" : "",
				    e->note, e->note[0] ? "\"" : "");
			else
				snprintf(why, sizeof why, "%s", e->reason);
			ctl_table_row(
			    &t, ver, ctl_iso_ms(e->at_unix_ms, at, sizeof at), tr, e->event, why);
		}
		rc = ctl_table_done(&t);
		if (rc == CTL_EXIT_OK)
			rc = ctl_history_tries(c, args[0]);
	}
	sagas__v1__get_saga_history_reply__free_unpacked(rep, NULL);
	return rc;
}

int ctl_retry(ctl_ctx *c, char **args)
{
	if (args[0] == NULL)
		return ctl_retry_many(c);
	if (ctl_retry_filtered(c) || c->o.dry_run || c->rate_given)
		return ctl_usage(c->cmd,
		    "retry ID re-arms that saga; the filters (and --dry-run, "
		    "--rate) go without an ID");
	int rc = ctl_parse_id(c, args[0]);
	if (rc != 0)
		return rc;
	if ((rc = ctl_reason_check(c, false)) != 0)
		return rc;
	Sagas__V1__RetrySagaRequest req = SAGAS__V1__RETRY_SAGA_REQUEST__INIT;
	req.saga_id = args[0];
	req.reason = c->o.reason;
	rpc_result res;
	rc = ctl_call(c, CTL_SVC_ORCHESTRATOR, METHOD_PATH(METHOD_Orchestrator_RetrySaga),
	    &req.base, "retry saga", c->o.timeout_ms, false, &res);
	if (rc != 0)
		return rc;
	Sagas__V1__RetrySagaReply *rep
	    = sagas__v1__retry_saga_reply__unpack(NULL, res.payload_len, res.payload);
	rpc_result_clear(&res);
	if (rep == NULL || !ctl_saga_ok(rep->saga)) {
		rc = ctl_bad_reply(c, CTL_SVC_ORCHESTRATOR, "RetrySaga");
		goto out_free_rep;
	}
	if (c->o.json) {
		rc = ctl_json_print(ctl_saga_json(rep->saga));
	} else {
		ctl_saga_print(rep->saga, -1);
		rc = CTL_EXIT_OK;
	}
out_free_rep:
	if (rep != NULL)
		sagas__v1__retry_saga_reply__free_unpacked(rep, NULL);
	return rc;
}
