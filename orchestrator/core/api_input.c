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

bool api_check_order(const Sagas__V1__Order *o, const char *as, rpc_reply *reply)
{
	if (o == NULL) {
		rpc_reply_error(
		    reply, RPC_INVALID_ARGUMENT, "bad_field", "invalid %s: missing", as);
		return false;
	}
	if (!valid_name(o->customer)) {
		rpc_reply_error(reply, RPC_INVALID_ARGUMENT, "bad_field",
		    "invalid %s.customer: must be " VALID_NAME_RULE, as);
		return false;
	}
	if (!valid_name(o->sku)) {
		rpc_reply_error(reply, RPC_INVALID_ARGUMENT, "bad_field",
		    "invalid %s.sku: must be " VALID_NAME_RULE, as);
		return false;
	}
	if (o->qty < 1 || o->qty > VALID_QTY_MAX) {
		rpc_reply_error(reply, RPC_INVALID_ARGUMENT, "bad_field",
		    "invalid %s.qty: must be 1..%d", as, VALID_QTY_MAX);
		return false;
	}
	if (o->amount < 1 || o->amount > VALID_AMOUNT_MAX) {
		rpc_reply_error(reply, RPC_INVALID_ARGUMENT, "bad_field",
		    "invalid %s.amount: must be 1..%lld minor units", as, VALID_AMOUNT_MAX);
		return false;
	}
	return true;
}

/* ai_unpack decodes the `n` bytes at `data` as a message of `desc`,
 * exactly (valid_pb_exact: as rpc_unpack reads every request) and with no
 * field the message does not have. Returns it (the caller frees it with
 * protobuf_c_message_free_unpacked), or NULL with the refusal in reply. */
static ProtobufCMessage *ai_unpack(
    const ProtobufCMessageDescriptor *desc, const uint8_t *data, size_t n, rpc_reply *reply)
{
	ProtobufCMessage *m = protobuf_c_message_unpack(desc, NULL, n, data);
	if (m == NULL) {
		rpc_reply_error(reply, RPC_INVALID_ARGUMENT, "bad_field",
		    "invalid input: not a %s (it does not decode)", desc->name);
		return NULL;
	}
	if (!valid_pb_exact(m, n)) {
		rpc_reply_error(reply, RPC_INVALID_ARGUMENT, "bad_field",
		    "invalid input: not exactly a %s (a string with a NUL byte inside, an "
		    "overlong varint or a field given twice)",
		    desc->name);
	} else if (m->n_unknown_fields > 0) {
		rpc_reply_error(reply, RPC_INVALID_ARGUMENT, "bad_field",
		    "invalid input: field %u is not a field of %s",
		    (unsigned)m->unknown_fields[0].tag, desc->name);
	} else {
		return m;
	}
	protobuf_c_message_free_unpacked(m, NULL);
	return NULL;
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
	const char *as = "order";
	if (o == NULL && req->input.len > 0) {
		m = ai_unpack(
		    &sagas__v1__order__descriptor, req->input.data, req->input.len, reply);
		if (m == NULL)
			return false;
		as = "input";
	} else if (o == NULL && req->input_json[0] != '\0') {
		m = ai_from_json(&sagas__v1__order__descriptor, req->input_json, reply);
		if (m == NULL)
			return false;
		as = "input_json";
	}
	if (m != NULL)
		o = (const Sagas__V1__Order *)m;
	bool ok = api_check_order(o, as, reply);
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
	    ? ai_unpack(t->input_desc, req->input.data, req->input.len, reply)
	    : ai_from_json(t->input_desc, req->input_json, reply);
	if (m == NULL)
		return false;
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

const char *api_input_type(const api *a, PGconn *conn, const saga_row *row)
{
	if (a->defs == NULL)
		return row->ninput == 0 ? "sagas.v1.Order" : "";
	/* the version the saga started with (its input message, whatever the
	 * file says of its type now), read from the database if this process
	 * has not loaded it yet; the orch_defs are shared with the engines and
	 * safe to load into from any thread */
	const orch_def_version *v = orch_defs_version((orch_defs *)a->defs, conn, row->def_id);
	if (v != NULL)
		return v->type->input;
	return row->ninput == 0 ? "sagas.v1.Order" : "";
}

void api_saga_input(
    const api *a, PGconn *conn, const saga_row *row, Sagas__V1__Saga *m, char **json)
{
	m->input_type = (char *)api_input_type(a, conn, row);
	*json = api_input_json(row, m->input_type);
	m->input_json = *json != NULL ? *json : (char *)"";
}

char *api_input_json(const saga_row *row, const char *input_type)
{
	ProtobufCMessage *m = NULL;
	Sagas__V1__Order o = SAGAS__V1__ORDER__INIT;
	const ProtobufCMessage *msg = &o.base;
	if (strcmp(input_type, "sagas.v1.Order") != 0) {
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
