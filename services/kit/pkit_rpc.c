/* pkit_rpc: the rpc_server_ops of a participant built on the kit (pkit.h):
 * decoding and validation at the edge (bad input changes nothing), the
 * saga commands through the store alone or in batches, the reply only
 * after the store committed, and the service's other methods. */
#include <errno.h>
#include <inttypes.h>
#include <stdalign.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dbclock.h"
#include "horizon.h"
#include "log.h"
#include "metrics.h"
#include "participant.h"
#include "pg.h"
#include "pkit.h"
#include "status.h"
#include "valid.h"

/* ---- validation at the edge ---- */

bool pkit_check_saga_id(rpc_reply *r, const char *s)
{
	if (valid_uuid(s))
		return true;
	rpc_reply_error(
	    r, RPC_INVALID_ARGUMENT, "bad_field", "invalid saga_id: not a canonical UUID");
	return false;
}

bool pkit_check_name(rpc_reply *r, const char *field, const char *s)
{
	if (valid_name(s))
		return true;
	rpc_reply_error(
	    r, RPC_INVALID_ARGUMENT, "bad_field", "invalid %s: must be " VALID_NAME_RULE, field);
	return false;
}

bool pkit_check_range(
    rpc_reply *r, const char *field, int64_t v, int64_t min, int64_t max, const char *unit)
{
	if (v >= min && v <= max)
		return true;
	rpc_reply_error(r, RPC_INVALID_ARGUMENT, "bad_field",
	    "invalid %s: %" PRId64 "%s%s is outside %" PRId64 "..%" PRId64, field, v,
	    unit ? " " : "", unit ? unit : "", min, max);
	return false;
}

/* pkit_field_of returns the field `name` of `desc`, or NULL. */
static const ProtobufCFieldDescriptor *pkit_field_of(
    const ProtobufCMessageDescriptor *desc, const char *name)
{
	return name ? protobuf_c_message_descriptor_get_field_by_name(desc, name) : NULL;
}

/* pkit_text_at and pkit_num_at read a string or an integer field (types
 * checked by pkit_service_check). */
static const char *pkit_text_at(const ProtobufCMessage *m, const ProtobufCFieldDescriptor *f)
{
	return *(const char *const *)(const void *)((const char *)m + f->offset);
}

static int64_t pkit_num_at(const ProtobufCMessage *m, const ProtobufCFieldDescriptor *f)
{
	const void *at = (const char *)m + f->offset;
	return f->type == PROTOBUF_C_TYPE_INT64 ? *(const int64_t *)at : *(const int32_t *)at;
}

bool pkit_list_request(const ProtobufCMessageDescriptor *desc, const char *include_field,
    int32_t def, int32_t max, const rpc_request *call, bool *include, int32_t *limit, rpc_reply *r)
{
	ProtobufCMessage *m = rpc_unpack(desc, call, r);
	if (m == NULL)
		return false;
	const ProtobufCFieldDescriptor *fi = pkit_field_of(desc, include_field);
	*include = *(const protobuf_c_boolean *)(const void *)((const char *)m + fi->offset);
	*limit = (int32_t)pkit_num_at(m, pkit_field_of(desc, "limit"));
	protobuf_c_message_free_unpacked(m, NULL);
	if (!pkit_check_range(r, "limit", *limit, 0, max, NULL))
		return false;
	if (*limit == 0)
		*limit = def;
	return true;
}

bool pkit_page_fits(size_t *bytes, const ProtobufCMessage *row)
{
	/* tag + length prefix (<= 2 bytes for a row) + the row */
	*bytes += 3 + protobuf_c_message_get_packed_size(row);
	return *bytes <= RPC_REPLY_BUDGET;
}

void pkit_store_failed(rpc_reply *r, int rc, const char *what, const char *saga_id)
{
	switch (rc) {
	case PG_ERR_CONNECTION:
		rpc_reply_error(r, RPC_UNAVAILABLE, "database_unavailable",
		    "could not %s: database unavailable", what);
		break;
	case PG_ERR_INJECTED:
		rpc_reply_error(r, RPC_UNAVAILABLE, "fault_injected",
		    "could not %s: injected failure before commit", what);
		break;
	case PG_ERR_RETRY:
		rpc_reply_error(r, RPC_UNAVAILABLE, "database_busy",
		    "could not %s: too many concurrent attempts", what);
		break;
	case -ENOMEM:
		rpc_reply_error(
		    r, RPC_INTERNAL, "out_of_memory", "could not %s: out of memory", what);
		break;
	default:
		rpc_reply_error(r, RPC_INTERNAL, "database_error",
		    "could not %s: internal database error", what);
		break;
	}
	log_warn(saga_id, "could not %s: %s", what, r->reason);
}

/* ---- the saga commands ---- */

/* A decoded saga command: its method, the decoded request (owned) and what
 * the store applies. */
typedef struct pkit_call {
	const pkit_method *m;
	ProtobufCMessage *msg;
	pkit_cmd cmd;
} pkit_call;

/* pkit_method_of returns the saga command of `v` whose method is `id`, or
 * NULL (another method, or METHOD_NONE). */
static const pkit_method *pkit_method_of(const pkit_service *v, enum method_id id)
{
	for (size_t i = 0; id != METHOD_NONE && i < v->n_methods; i++)
		if (v->methods[i].id == id)
			return &v->methods[i];
	return NULL;
}

static void pkit_past_horizon(const pkit_method *m, const horizon_policy *hz, const char *saga_id,
    int64_t started, int64_t now, rpc_reply *r);

/* pkit_parse decodes and checks `call` of method `m` into *c: the saga id,
 * each field of m->fields, and its saga's start against `hz` (rule R1,
 * horizon.h; NULL: not checked, the fuzz targets). Returns false with the
 * error in `r` (and nothing to free) when the payload is malformed, a field
 * is invalid or the saga started before the horizon (FAILED_PRECONDITION
 * past_horizon: nothing applied, logged and counted). */
static bool pkit_parse(const pkit_method *m, const horizon_policy *hz, const rpc_request *call,
    pkit_call *c, rpc_reply *r)
{
	memset(c, 0, sizeof *c);
	c->m = m;
	c->msg = rpc_unpack(m->request, call, r);
	if (c->msg == NULL)
		return false;
	c->cmd.args.op = m->op;
	c->cmd.saga_id = pkit_text_at(c->msg, pkit_field_of(m->request, "saga_id"));
	bool ok = pkit_check_saga_id(r, c->cmd.saga_id);
	for (int i = 0, t = 0, k = 0; ok && i < m->n_fields; i++) {
		const pkit_field *f = &m->fields[i];
		const ProtobufCFieldDescriptor *fd = pkit_field_of(m->request, f->name);
		if (f->text) {
			c->cmd.args.text[t] = pkit_text_at(c->msg, fd);
			ok = pkit_check_name(r, f->name, c->cmd.args.text[t++]);
		} else {
			c->cmd.args.num[k] = pkit_num_at(c->msg, fd);
			ok = pkit_check_range(
			    r, f->name, c->cmd.args.num[k++], f->min, f->max, f->unit);
		}
	}
	if (ok) {
		c->cmd.args.started
		    = pkit_num_at(c->msg, pkit_field_of(m->request, PKIT_STARTED_FIELD));
		c->cmd.args.skew_ms = hz != NULL ? hz->skew_ms : 0;
	}
	if (ok && hz != NULL) {
		int64_t started = c->cmd.args.started;
		int64_t now = dbclock_now_ms();
		if (horizon_refuses(hz, started, now)) {
			pkit_past_horizon(m, hz, c->cmd.saga_id, started, now, r);
			ok = false;
		}
	}
	if (!ok) {
		protobuf_c_message_free_unpacked(c->msg, NULL);
		c->msg = NULL;
	}
	return ok;
}

/* pkit_reply_ok encodes the OK reply of the committed command `c` of
 * method `m`: status, and the row's value and `created` where the reply has
 * them. */
static void pkit_reply_ok(const pkit_method *m, const pkit_cmd *c, rpc_reply *r)
{
	_Alignas(max_align_t) char buf[PKIT_REPLY_MAX];
	ProtobufCMessage *rep = (ProtobufCMessage *)(void *)buf;
	protobuf_c_message_init(m->reply, rep);
	const ProtobufCFieldDescriptor *f = pkit_field_of(m->reply, "status");
	*(int32_t *)(void *)(buf + f->offset) = c->out.reply_status;
	if ((f = pkit_field_of(m->reply, m->reply_value)) != NULL) {
		void *at = buf + f->offset;
		if (f->type == PROTOBUF_C_TYPE_INT64)
			*(int64_t *)at = c->value;
		else
			*(int32_t *)at = (int32_t)c->value;
	}
	if ((f = pkit_field_of(m->reply, m->reply_created)) != NULL)
		*(protobuf_c_boolean *)(void *)(buf + f->offset) = c->out.write_record;
	rpc_reply_ok(r, rep);
}

/* pkit_refuse answers a business refusal decided by the service's decide
 * function (rules 5, 6, and the service's own). */
static void pkit_refuse(const pkit_service *v, const pkit_call *c, rpc_reply *r)
{
	const pkit_outcome *o = &c->cmd.out;
	const char *what = c->m->what;
	if (strcmp(o->reason, REASON_TOMBSTONE) == 0) {
		rpc_reply_error(
		    r, o->code, o->reason, "could not %s: the saga was already compensated", what);
		return;
	}
	if (strcmp(o->reason, REASON_SAGA_ID_REUSED) == 0 && o->record.started == 0) {
		rpc_reply_error(r, o->code, o->reason,
		    "could not %s: saga id already used by another saga, whose record (made at "
		    "%" PRId64 " ms, before records kept their saga's start; this saga started at "
		    "%" PRId64 " ms) is still kept (docs/saga-semantics.md, rule R5)",
		    what, o->record.made_ms, c->cmd.args.started);
		return;
	}
	if (strcmp(o->reason, REASON_SAGA_ID_REUSED) == 0) {
		rpc_reply_error(r, o->code, o->reason,
		    "could not %s: saga id already used by another saga, which started at %" PRId64
		    " ms (this one at %" PRId64 " ms) and whose record is still kept "
		    "(docs/saga-semantics.md, rule R5)",
		    what, o->record.started, c->cmd.args.started);
		return;
	}
	if (strcmp(o->reason, REASON_KEY_MISMATCH) == 0) {
		rpc_reply_error(r, o->code, o->reason,
		    "could not %s: saga id already used with another %s", what, v->args_name);
		return;
	}
	for (size_t i = 0; i < v->n_refusals; i++) {
		const pkit_refusal *f = &v->refusals[i];
		if (strcmp(o->reason, f->reason) != 0)
			continue;
		if (f->names_key)
			rpc_reply_error(r, o->code, o->reason, "could not %s: %s \"%s\"", what,
			    f->text, c->cmd.args.text[0]);
		else
			rpc_reply_error(r, o->code, o->reason, "could not %s: %s", what, f->text);
		return;
	}
	rpc_reply_error(r, o->code, o->reason, "could not %s: %s", what, o->reason);
}

static void pkit_call_free(pkit_call *c)
{
	if (c->msg != NULL)
		protobuf_c_message_free_unpacked(c->msg, NULL);
	c->msg = NULL;
}

/* pkit_log_outcome logs a decided command: what changed at info, a
 * duplicate answered from the record at debug, a key mismatch (a caller's
 * bug or a forged call: rule 6) at warning. Its arguments are named as in
 * the request ("sku=A1 qty=2"). */
static void pkit_log_outcome(const pkit_service *v, const pkit_call *c)
{
	const pkit_outcome *o = &c->cmd.out;
	char args[PKIT_FIELDS_MAX * (VALID_NAME_MAX + 40)] = "";
	size_t at = 0;
	for (int i = 0, t = 0, k = 0; i < c->m->n_fields && at < sizeof args; i++) {
		const pkit_field *f = &c->m->fields[i];
		int n = f->text ? snprintf(args + at, sizeof args - at, "%s%s=%s", i ? " " : "",
		            f->name, c->cmd.args.text[t++])
		                : snprintf(args + at, sizeof args - at, "%s%s=%" PRId64,
		                    i ? " " : "", f->name, c->cmd.args.num[k++]);
		at += n > 0 ? (size_t)n : 0;
	}
	if (strcmp(o->reason, REASON_SAGA_ID_REUSED) == 0) {
		if (o->record.started != 0)
			log_warn(c->cmd.saga_id,
			    "%s %s: refused saga_id_reused: the record is another saga's (started "
			    "at %" PRId64 " ms; this one at %" PRId64 " ms), nothing changed",
			    c->m->verb, args, o->record.started, c->cmd.args.started);
		else
			log_warn(c->cmd.saga_id,
			    "%s %s: refused saga_id_reused: the record is another saga's (made at "
			    "%" PRId64 " ms, before records kept their start; this one started at "
			    "%" PRId64 " ms), nothing changed",
			    c->m->verb, args, o->record.made_ms, c->cmd.args.started);
		return;
	}
	char value[64] = "";
	if (v->rows != NULL)
		snprintf(value, sizeof value, ", %s %" PRId64, v->value_name, c->cmd.value);
	enum log_level lvl = o->write_record ? LOG_LEVEL_INFO
	    : strcmp(o->reason, REASON_KEY_MISMATCH) == 0
	        || strcmp(o->reason, REASON_SAGA_ID_REUSED) == 0
	    ? LOG_LEVEL_WARN
	    : LOG_LEVEL_DEBUG;
	log_msg(lvl, c->cmd.saga_id, "%s %s: %s%s%s%s%s", c->m->verb, args,
	    v->status_name(o->reply_status), *o->reason ? " " : "", o->reason, value,
	    o->write_record ? "" : " (from record)");
}

static const metric_def PKIT_COMMANDS = {"sagas_participant_commands_total",
    "Saga commands answered, by command and outcome: applied, refused (a business refusal, "
    "or a step after its compensation), duplicate (answered from its record), tombstone (a "
    "compensation that came first), key_mismatch, past_horizon, saga_id_reused (another saga's "
    "record holds its id), error (not committed)",
    METRIC_COUNTER, "command,outcome", NULL, 0};
static const metric_def PKIT_DUPLICATES = {"sagas_participant_duplicates_total",
    "Saga commands answered from their idempotency record, by command", METRIC_COUNTER, "command",
    NULL, 0};
static const metric_def PKIT_TOMBSTONES = {"sagas_participant_tombstones_total",
    "Tombstones written: a compensation that came before its step (rule 5), by command",
    METRIC_COUNTER, "command", NULL, 0};
static const double PKIT_BATCH_BUCKETS[] = {1, 2, 4, 8, 16, 32, 64, 128};
static const metric_def PKIT_BATCH
    = {"sagas_participant_batch_size", "Saga commands per committed transaction", METRIC_HISTOGRAM,
        "", PKIT_BATCH_BUCKETS, sizeof PKIT_BATCH_BUCKETS / sizeof PKIT_BATCH_BUCKETS[0]};

static const char *const PKIT_OUTCOMES[] = {"applied", "refused", "duplicate", "tombstone",
    "key_mismatch", "past_horizon", "saga_id_reused", "error"};

/* pkit_command_name: "ReserveStock" of "/sagas.v1.Stock/ReserveStock". */
static const char *pkit_command_name(const pkit_method *m)
{
	return method_table[m->id].name;
}

void pkit_metrics_init(const pkit_service *v)
{
	for (size_t i = 0; i < v->n_methods; i++) {
		const char *cmd = pkit_command_name(&v->methods[i]);
		for (size_t k = 0; k < sizeof PKIT_OUTCOMES / sizeof PKIT_OUTCOMES[0]; k++) {
			const char *l[2] = {cmd, PKIT_OUTCOMES[k]};
			metric_add(metric_get(&PKIT_COMMANDS, l), 0);
		}
		metric_add(metric_get1(&PKIT_DUPLICATES, cmd), 0);
		metric_add(metric_get1(&PKIT_TOMBSTONES, cmd), 0);
	}
	(void)metric_get(&PKIT_BATCH, NULL);
}

/* pkit_count counts one answered command (store error `rc`, else the
 * committed outcome in c->cmd). */
static void pkit_count(const pkit_service *v, const pkit_call *c, int rc)
{
	const pkit_outcome *o = &c->cmd.out;
	const char *cmd = pkit_command_name(c->m), *outcome;
	bool tomb = false;
	if (rc != 0)
		outcome = "error";
	else if (strcmp(o->reason, REASON_KEY_MISMATCH) == 0)
		outcome = "key_mismatch";
	else if (strcmp(o->reason, REASON_SAGA_ID_REUSED) == 0)
		outcome = "saga_id_reused";
	else if (o->write_record) {
		tomb = strcmp(v->status_name(o->record.status), "TOMBSTONE") == 0;
		outcome = tomb ? "tombstone" : o->code == RPC_OK ? "applied" : "refused";
	} else if (o->code != RPC_OK && strcmp(o->reason, REASON_TOMBSTONE) == 0)
		outcome = "refused"; /* a step after its compensation (rule 5) */
	else
		outcome = "duplicate";
	const char *l[2] = {cmd, outcome};
	metric_inc(metric_get(&PKIT_COMMANDS, l));
	if (tomb)
		metric_inc(metric_get1(&PKIT_TOMBSTONES, cmd));
	else if (strcmp(outcome, "duplicate") == 0)
		metric_inc(metric_get1(&PKIT_DUPLICATES, cmd));
}

/* pkit_past_horizon refuses a command of a saga that started at `started`
 * (<= 0: not said), before the horizon at `now` or ahead of it by more than
 * the tolerated clock error (rule R1), and logs and counts the refusal. */
static void pkit_past_horizon(const pkit_method *m, const horizon_policy *hz, const char *saga_id,
    int64_t started, int64_t now, rpc_reply *r)
{
	const char *l[2] = {pkit_command_name(m), "past_horizon"};
	metric_inc(metric_get(&PKIT_COMMANDS, l));
	if (started <= 0) {
		rpc_reply_error(r, RPC_FAILED_PRECONDITION, REASON_PAST_HORIZON,
		    "could not %s: saga_started_unix_ms is required and must be positive "
		    "(docs/saga-semantics.md, rule R1)",
		    m->what);
	} else if (horizon_ahead(hz, started, now)) {
		/* the orchestrator parks the saga, as for a start too old: a
		 * clock fault (or a forged start) for an operator to look at */
		rpc_reply_error(r, RPC_FAILED_PRECONDITION, REASON_PAST_HORIZON,
		    "could not %s: the saga starts %" PRId64
		    " ms after this participant's clock, more than --max-clock-skew ahead (a clock "
		    "fault or a forged start; docs/saga-semantics.md, rule R1)",
		    m->what, started - now);
	} else {
		rpc_reply_error(r, RPC_FAILED_PRECONDITION, REASON_PAST_HORIZON,
		    "could not %s: the saga started %.1f days ago (%" PRId64
		    " ms), before this participant's retention horizon (--retention; "
		    "docs/saga-semantics.md, rule R1)",
		    m->what, (double)(now - started) / 86400000.0, now - started);
	}
	log_warn(saga_id, "refused %s: %s", pkit_command_name(m), r->message);
}

/* pkit_observe_batch records a committed transaction of `n` commands. */
static void pkit_observe_batch(size_t n)
{
	metric_observe(metric_get(&PKIT_BATCH, NULL), (double)n);
}

/* pkit_answer fills the reply of an applied command: store error `rc`, or
 * the committed outcome in c->cmd. */
static void pkit_answer(const pkit_service *v, const pkit_call *c, int rc, rpc_reply *r)
{
	pkit_count(v, c, rc);
	if (rc != 0) {
		pkit_store_failed(r, rc, c->m->what, c->cmd.saga_id);
		return;
	}
	pkit_log_outcome(v, c);
	const pkit_outcome *o = &c->cmd.out;
	if (o->code == RPC_OK)
		pkit_reply_ok(c->m, &c->cmd, r);
	else
		pkit_refuse(v, c, r);
}

static const pkit_service *pkit_service_of(void *app)
{
	return ((const participant_app *)app)->kit;
}

static const horizon_policy *pkit_horizon_of(void *app)
{
	return ((const participant_app *)app)->horizon;
}

void pkit_handle(void *app, void *worker, const rpc_request *call, rpc_reply *reply)
{
	const pkit_service *v = pkit_service_of(app);
	enum method_id id = method_find(call->method);
	const pkit_method *m = pkit_method_of(v, id);
	if (m != NULL) { /* one saga command alone: its own transaction */
		pkit_call c;
		if (!pkit_parse(m, pkit_horizon_of(app), call, &c, reply))
			return;
		int rc = pkit_store_apply(worker, &c.cmd, 1);
		if (rc == 0)
			pkit_observe_batch(1);
		pkit_answer(v, &c, rc, reply);
		pkit_call_free(&c);
		return;
	}
	for (size_t i = 0; id != METHOD_NONE && i < v->n_others; i++)
		if (v->others[i].id == id) {
			v->others[i].fn(worker, call, reply);
			return;
		}
	/* the method name came off the wire: bounded in the message */
	rpc_reply_error(
	    reply, RPC_UNIMPLEMENTED, "unknown_method", "unknown method \"%s\"", call->method);
	rpc_refusal_note(call->pipe, "unknown_method", call->method);
}

/* pkit_handle_batch serves calls that arrived together: their saga
 * commands in one transaction (pkit_store_apply), in arrival order, and the
 * rest one by one. When the batch cannot commit (bad data, a database
 * error), each command is applied alone, so one bad command fails only its
 * own call. */
void pkit_handle_batch(
    void *app, void *worker, const rpc_request *calls, rpc_reply *replies, size_t n)
{
	const pkit_service *v = pkit_service_of(app);
	pkit_call cs[RPC_BATCH_MAX];
	pkit_cmd cmds[RPC_BATCH_MAX];
	size_t at[RPC_BATCH_MAX], m = 0;
	for (size_t i = 0; i < n && i < RPC_BATCH_MAX; i++) {
		const pkit_method *meth = pkit_method_of(v, method_find(calls[i].method));
		if (meth == NULL) {
			pkit_handle(app, worker, &calls[i], &replies[i]);
			continue;
		}
		if (!pkit_parse(meth, pkit_horizon_of(app), &calls[i], &cs[m], &replies[i]))
			continue;
		cmds[m] = cs[m].cmd;
		at[m++] = i;
	}
	if (m == 0)
		return;
	int rc = m > 1 ? pkit_store_apply(worker, cmds, m) : -1;
	if (rc == 0)
		pkit_observe_batch(m);
	if (m > 1 && rc != 0)
		log_warn(NULL,
		    "a batch of %zu %s commands could not commit (%s): applying each alone", m,
		    v->name, pg_err_name(rc));
	for (size_t k = 0; k < m; k++) {
		int one = rc == PG_ERR_CONNECTION ? rc : 0; /* no database: all fail alike */
		if (rc != 0 && rc != PG_ERR_CONNECTION) {   /* each command alone, in order */
			one = pkit_store_apply(worker, &cmds[k], 1);
			if (one == 0)
				pkit_observe_batch(1);
		}
		cs[k].cmd = cmds[k];
		pkit_answer(v, &cs[k], one, &replies[at[k]]);
		pkit_call_free(&cs[k]);
	}
}

int pkit_worker_init(void *app, void **worker)
{
	const participant_app *a = app;
	pkit_store *st = NULL;
	int rc = pkit_store_open(&st, a->kit, a->conninfo, a->connect_wait_ms, a->cache);
	if (rc != 0)
		return rc;
	*worker = st;
	return 0;
}

void pkit_worker_fini(void *app, void *worker)
{
	(void)app;
	uint64_t fast = 0, fell_back = 0;
	if (worker != NULL)
		pkit_store_fast_counts(worker, &fast, &fell_back);
	log_info(NULL,
	    "worker stopped: %" PRIu64 " transactions by the one-round-trip path, %" PRIu64
	    " fell back to the locking path",
	    fast, fell_back);
	pkit_store_close(worker);
}

/* pkit_check_field is true when `desc` has field `name` of one of the
 * types allowed; logs otherwise. */
static bool pkit_check_field(const ProtobufCMessageDescriptor *desc, const char *name, bool text,
    bool boolean, const char *method)
{
	const ProtobufCFieldDescriptor *f = pkit_field_of(desc, name);
	bool ok = f != NULL && f->label != PROTOBUF_C_LABEL_REPEATED
	    && (text          ? f->type == PROTOBUF_C_TYPE_STRING
	            : boolean ? f->type == PROTOBUF_C_TYPE_BOOL
	                      : f->type == PROTOBUF_C_TYPE_INT32 || f->type == PROTOBUF_C_TYPE_INT64
	                || f->type == PROTOBUF_C_TYPE_ENUM);
	if (!ok)
		log_error(NULL, "%s: %s has no usable field \"%s\"", method, desc->name, name);
	return ok;
}

bool pkit_service_check(const pkit_service *v)
{
	bool ok = v->n_text >= 0 && v->n_text <= PKIT_TEXT_MAX && v->n_num >= 0
	    && v->n_num <= PKIT_NUM_MAX && (v->rows == NULL || v->n_text >= 1);
	if (!ok)
		log_error(NULL, "service %s: bad column counts", v->name);
	for (size_t i = 0; ok && i < v->n_methods; i++) {
		const pkit_method *m = &v->methods[i];
		if (m->id < 0 || m->id >= METHOD_COUNT) {
			log_error(NULL, "service %s: a command with no row in the table of methods",
			    v->name);
			return false;
		}
		const char *name = METHOD_PATH(m->id);
		int t = 0, k = 0;
		ok = pkit_check_field(m->request, "saga_id", true, false, name)
		    && pkit_check_field(m->request, PKIT_STARTED_FIELD, false, false, name)
		    && pkit_check_field(m->reply, "status", false, false, name)
		    && (m->reply_value == NULL
		        || pkit_check_field(m->reply, m->reply_value, false, false, name))
		    && (m->reply_created == NULL
		        || pkit_check_field(m->reply, m->reply_created, false, true, name))
		    && m->reply->sizeof_message <= PKIT_REPLY_MAX && m->n_fields <= PKIT_FIELDS_MAX;
		for (int j = 0; ok && j < m->n_fields; j++) {
			const pkit_field *f = &m->fields[j];
			ok = pkit_check_field(m->request, f->name, f->text, false, name);
			*(f->text ? &t : &k) += 1;
		}
		if (ok && (t > PKIT_TEXT_MAX || k > PKIT_NUM_MAX || (v->rows != NULL && t < 1))) {
			log_error(NULL, "%s: too many or too few fields", name);
			ok = false;
		}
	}
	for (size_t i = 0; ok && i < v->n_others; i++)
		if (v->others[i].id < 0 || v->others[i].id >= METHOD_COUNT) {
			log_error(NULL, "service %s: a method with no row in the table of methods",
			    v->name);
			ok = false;
		}
	return ok;
}
