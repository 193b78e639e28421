/* api_input: a StartSaga's input, read for the saga type it starts
 * (docs/saga-definitions.md, "A saga's input"; api_internal.h): the order
 * saga's typed Order, or any type's own message given encoded (`input`) or
 * as JSON (`input_json`), checked by the type's definition
 * (saga_def_input_check) and kept canonically encoded in the row; and the
 * input's JSON form for GetSaga and ListSagas. */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "api_internal.h"
#include "pbjson.h"
#include "valid.h"

bool api_check_order(const Sagas__V1__Order *o, rpc_reply *reply)
{
	if (o == NULL) {
		rpc_reply_error(reply, RPC_INVALID_ARGUMENT, "bad_field", "invalid order: missing");
		return false;
	}
	if (!valid_name(o->customer)) {
		rpc_reply_error(reply, RPC_INVALID_ARGUMENT, "bad_field",
		    "invalid order.customer: must be " VALID_NAME_RULE);
		return false;
	}
	if (!valid_name(o->sku)) {
		rpc_reply_error(reply, RPC_INVALID_ARGUMENT, "bad_field",
		    "invalid order.sku: must be " VALID_NAME_RULE);
		return false;
	}
	if (o->qty < 1 || o->qty > VALID_QTY_MAX) {
		rpc_reply_error(reply, RPC_INVALID_ARGUMENT, "bad_field",
		    "invalid order.qty: must be 1..%d", VALID_QTY_MAX);
		return false;
	}
	if (o->amount < 1 || o->amount > VALID_AMOUNT_MAX) {
		rpc_reply_error(reply, RPC_INVALID_ARGUMENT, "bad_field",
		    "invalid order.amount: must be 1..%lld minor units", VALID_AMOUNT_MAX);
		return false;
	}
	return true;
}

/* ai_from_json decodes `text` (a JSON object) as a message of `desc`.
 * Returns it (the caller frees it with protobuf_c_message_free_unpacked),
 * or NULL with the refusal in reply. */
static ProtobufCMessage *ai_from_json(
    const ProtobufCMessageDescriptor *desc, const char *text, rpc_reply *reply)
{
	json_error_t jerr;
	json_t *j = json_loads(text, JSON_REJECT_DUPLICATES, &jerr);
	if (j == NULL || !json_is_object(j)) {
		rpc_reply_error(reply, RPC_INVALID_ARGUMENT, "bad_field", "invalid input_json: %s",
		    j == NULL ? jerr.text : "not a JSON object");
		json_decref(j);
		return NULL;
	}
	char err[PBJSON_ERR_MAX];
	ProtobufCMessage *m = pbjson_from_json(desc, j, err, sizeof err);
	json_decref(j);
	if (m == NULL)
		rpc_reply_error(reply, RPC_INVALID_ARGUMENT, "bad_field",
		    "invalid input_json.%s (a %s)", err, desc->name);
	return m;
}

/* ai_order reads the input of a type whose input is sagas.v1.Order into
 * row's typed columns: `order`, or the same message encoded or as JSON. */
static bool ai_order(const Sagas__V1__StartSagaRequest *req, saga_row *row, rpc_reply *reply)
{
	ProtobufCMessage *m = NULL;
	const Sagas__V1__Order *o = req->order;
	if (o == NULL && req->input.len > 0) {
		m = protobuf_c_message_unpack(
		    &sagas__v1__order__descriptor, NULL, req->input.len, req->input.data);
		if (m == NULL) {
			rpc_reply_error(reply, RPC_INVALID_ARGUMENT, "bad_field",
			    "invalid input: not a sagas.v1.Order (it does not decode)");
			return false;
		}
	} else if (o == NULL && req->input_json[0] != '\0') {
		m = ai_from_json(&sagas__v1__order__descriptor, req->input_json, reply);
		if (m == NULL)
			return false;
	}
	if (m != NULL)
		o = (const Sagas__V1__Order *)m;
	bool ok = api_check_order(o, reply);
	if (ok) {
		snprintf(row->customer, sizeof row->customer, "%s", o->customer);
		snprintf(row->sku, sizeof row->sku, "%s", o->sku);
		row->qty = o->qty;
		row->amount = o->amount;
	}
	if (m != NULL)
		protobuf_c_message_free_unpacked(m, NULL);
	return ok;
}

/* ai_customer copies the input's string field `customer`, when it has one
 * of a name's shape, into row->customer (ListSagas by customer, any type) */
static void ai_customer(const ProtobufCMessage *m, saga_row *row)
{
	const ProtobufCFieldDescriptor *f
	    = protobuf_c_message_descriptor_get_field_by_name(m->descriptor, "customer");
	if (f == NULL || f->type != PROTOBUF_C_TYPE_STRING || f->label == PROTOBUF_C_LABEL_REPEATED)
		return;
	const char *s = *(char *const *)((const char *)m + f->offset);
	if (s != NULL && valid_name(s))
		snprintf(row->customer, sizeof row->customer, "%s", s);
}

bool api_start_input(
    const Sagas__V1__StartSagaRequest *req, const saga_def_type *t, saga_row *row, rpc_reply *reply)
{
	int given = (req->order != NULL) + (req->input.len > 0) + (req->input_json[0] != '\0');
	if (given > 1) {
		rpc_reply_error(reply, RPC_INVALID_ARGUMENT, "bad_field",
		    "invalid input: give one of order, input and input_json");
		return false;
	}
	if (strcmp(t->input, "sagas.v1.Order") == 0)
		return ai_order(req, row, reply);
	if (req->order != NULL || given == 0) {
		rpc_reply_error(reply, RPC_INVALID_ARGUMENT, "bad_field",
		    "invalid input: %s: type %s takes a %s: give it as input or input_json%s",
		    given == 0 ? "missing" : "an order", t->name, t->input,
		    given == 0 ? "" : ", not order");
		return false;
	}
	ProtobufCMessage *m = req->input.len > 0
	    ? protobuf_c_message_unpack(t->input_desc, NULL, req->input.len, req->input.data)
	    : ai_from_json(t->input_desc, req->input_json, reply);
	if (m == NULL) {
		if (req->input.len > 0)
			rpc_reply_error(reply, RPC_INVALID_ARGUMENT, "bad_field",
			    "invalid input: not a %s (it does not decode)", t->input);
		return false;
	}
	char err[256];
	size_t n = 0;
	int rc = saga_def_input_msg(t, m, row->input, sizeof row->input, &n, err, sizeof err);
	if (rc == 0) {
		row->ninput = (uint32_t)n;
		ai_customer(m, row);
	} else {
		rpc_reply_error(
		    reply, RPC_INVALID_ARGUMENT, "bad_field", "%s (a %s)", err, t->input);
	}
	protobuf_c_message_free_unpacked(m, NULL);
	return rc == 0;
}

const char *api_input_type(const api *a, const saga_row *row)
{
	if (row->ninput == 0)
		return "sagas.v1.Order";
	/* the version it started with when it is the file's (immutable while
	 * running), else the file's version of its type: a type keeps its
	 * input message across versions (docs/operations.md) */
	for (size_t k = 0; a->defs != NULL && k < a->defs->nfile; k++)
		if (a->defs->v[k]->id == row->def_id)
			return a->defs->v[k]->type->input;
	const orch_def_version *v = a->defs != NULL ? orch_defs_start(a->defs, row->type) : NULL;
	return v != NULL ? v->type->input : "";
}

void api_saga_input(const api *a, const saga_row *row, Sagas__V1__Saga *m, char **json)
{
	m->input_type = (char *)api_input_type(a, row);
	*json = api_input_json(row, m->input_type);
	m->input_json = *json != NULL ? *json : (char *)"";
}

char *api_input_json(const saga_row *row, const char *input_type)
{
	ProtobufCMessage *m = NULL;
	Sagas__V1__Order o = SAGAS__V1__ORDER__INIT;
	const ProtobufCMessage *msg = &o.base;
	if (row->ninput > 0) {
		const ProtobufCMessageDescriptor *d = saga_proto_message(input_type);
		if (d == NULL)
			return NULL;
		m = protobuf_c_message_unpack(d, NULL, row->ninput, row->input);
		if (m == NULL)
			return NULL;
		msg = m;
	} else {
		codec_order_of(&o, row);
	}
	json_t *j = pbjson_to_json(msg, NULL, 0);
	char *s = j != NULL ? json_dumps(j, JSON_COMPACT) : NULL;
	json_decref(j);
	if (m != NULL)
		protobuf_c_message_free_unpacked(m, NULL);
	return s;
}
