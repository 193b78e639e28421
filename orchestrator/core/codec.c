#include "codec.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>

#include "sagas/v1/orchestrator.pb-c.h"

/* codec_call sends one encoded command: in `batch` when there is one. */
static int codec_call(rpc_client *client, rpc_batch *batch, const char *method,
    const ProtobufCMessage *m, int64_t timeout_ms, rpc_done_fn done, void *arg)
{
	if (batch != NULL)
		return rpc_batch_add(batch, method, m, timeout_ms, done, arg);
	return rpc_call_async(client, method, m, timeout_ms, done, arg);
}

void codec_order_of(Sagas__V1__Order *o, const saga_row *row)
{
	sagas__v1__order__init(o);
	/* the generated struct takes char *, the row is const: the encoder
	 * only reads them */
	o->customer = (char *)row->customer;
	o->sku = (char *)row->sku;
	o->qty = row->qty;
	o->amount = row->amount;
}

int codec_send_command(rpc_client *client, rpc_batch *batch, const saga_def_cmd *plan,
    const saga_row *row, int64_t timeout_ms, rpc_done_fn done, void *arg)
{
	if (plan == NULL || plan->request == NULL)
		return -EINVAL;
	saga_def_req req;
	if (plan->input == &sagas__v1__order__descriptor) { /* the typed Order, no copy */
		Sagas__V1__Order input;
		codec_order_of(&input, row);
		saga_def_cmd_build(plan, &input.base, row->saga_id, row->created_ms, &req);
		return codec_call(client, batch, plan->path, &req.base, timeout_ms, done, arg);
	}
	/* a type's own input: decoded for this command (the call packs the
	 * request before it returns); none stored (0 bytes: every field at
	 * its default) decodes as the message's defaults */
	ProtobufCMessage *input
	    = protobuf_c_message_unpack(plan->input, NULL, row->ninput, row->input);
	if (input == NULL)
		return -EBADMSG; /* StartSaga stored it checked: not reached */
	saga_def_cmd_build(plan, input, row->saga_id, row->created_ms, &req);
	int rc = codec_call(client, batch, plan->path, &req.base, timeout_ms, done, arg);
	protobuf_c_message_free_unpacked(input, NULL);
	return rc;
}

/* The names of every set of overdue reasons (saga_row.overdue, a mask of
 * 1 << store_overdue_reason), in the order of the enum: Saga.overdue
 * points at one of these, so nothing is copied or freed. */
static char *codec_why[1u << STORE_OVERDUE_N][STORE_OVERDUE_N];
static size_t codec_n_why[1u << STORE_OVERDUE_N];
static pthread_once_t codec_why_once = PTHREAD_ONCE_INIT;

static void codec_why_init(void)
{
	for (unsigned mask = 0; mask < 1u << STORE_OVERDUE_N; mask++)
		for (int k = 0; k < STORE_OVERDUE_N; k++)
			if (mask & 1u << k)
				codec_why[mask][codec_n_why[mask]++]
				    = (char *)store_overdue_name((store_overdue_reason)k);
}

/* codec_saga_to_pb points the fields of `m` into `row` (no copies: `row` must
 * outlive the packing of `m`). */
void codec_saga_to_pb(Sagas__V1__Saga *m, Sagas__V1__Order *o, saga_row *row)
{
	sagas__v1__saga__init(m);
	codec_order_of(o, row);
	m->saga_id = row->saga_id;
	/* the order saga's enum for its own type; other types by name only */
	m->state = strcmp(row->type, "order") == 0 ? (Sagas__V1__SagaState)row->s.state
	                                           : SAGAS__V1__SAGA_STATE__SAGA_STATE_UNSPECIFIED;
	m->type = row->type;
	m->state_name = row->state;
	m->finished = row->finished;
	m->reason = row->s.reason;
	m->order = o;
	m->version = row->version;
	m->attempts = row->s.attempts;
	m->attention = row->s.attention;
	m->created_unix_ms = row->created_ms;
	m->updated_unix_ms = row->updated_ms;
	m->step_deadline_unix_ms = row->s.step_deadline_ms;
	m->next_attempt_unix_ms = saga_is_terminal(row->s.state) ? 0 : row->s.next_attempt_ms;
	m->epoch = row->epoch;
	m->lease_owner = row->lease_owner;
	/* a type's own input, encoded (its name and JSON: api_saga_input) */
	m->input.data = row->input;
	m->input.len = row->ninput;
	if (row->overdue != 0) {
		pthread_once(&codec_why_once, codec_why_init);
		unsigned mask = row->overdue & ((1u << STORE_OVERDUE_N) - 1);
		m->n_overdue = codec_n_why[mask];
		m->overdue = codec_why[mask];
	}
}

int codec_reply_start(rpc_reply *r, const saga_row *row, bool created, bool finished)
{
	Sagas__V1__Saga m;
	Sagas__V1__Order o;
	saga_row copy = *row; /* codec_saga_to_pb points into a mutable row */
	codec_saga_to_pb(&m, &o, &copy);
	Sagas__V1__StartSagaReply out = SAGAS__V1__START_SAGA_REPLY__INIT;
	out.saga = &m;
	out.created = created;
	out.finished = finished;
	return rpc_reply_ok(r, &out.base);
}

int codec_reply_wait(rpc_reply *r, const saga_row *row, bool finished)
{
	Sagas__V1__Saga m;
	Sagas__V1__Order o;
	saga_row copy = *row;
	codec_saga_to_pb(&m, &o, &copy);
	Sagas__V1__WaitSagaReply out = SAGAS__V1__WAIT_SAGA_REPLY__INIT;
	out.saga = &m;
	out.finished = finished;
	return rpc_reply_ok(r, &out.base);
}

void codec_history_to_pb(Sagas__V1__HistoryEntry *m, store_history_entry *h)
{
	sagas__v1__history_entry__init(m);
	m->version = h->version;
	m->from_state = (Sagas__V1__SagaState)h->from_state;
	m->to_state = (Sagas__V1__SagaState)h->to_state;
	m->from_state_name = h->from;
	m->to_state_name = h->to;
	m->event = h->event;
	m->reason = h->reason;
	m->at_unix_ms = h->at_ms;
	m->actor = h->actor;
	m->note = h->note;
}

void codec_audit_to_pb(Sagas__V1__AuditEntry *m, store_audit_entry *e)
{
	sagas__v1__audit_entry__init(m);
	m->id = e->id;
	m->at_unix_ms = e->at_ms;
	m->action = e->action;
	m->role = e->role;
	m->peer = e->peer;
	m->reason = e->reason;
	m->saga_id = e->saga_id;
	m->version = e->version;
	m->request_id = e->request_id;
	m->outcome = e->outcome;
}
