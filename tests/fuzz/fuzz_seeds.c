/* fuzz_seeds: writes the seed corpus of every fuzz target (docs/testing.md,
 * "Fuzzing") into DIR/<target>/: a valid input for every method, alone and
 * in a batch, in the format each target reads. Deterministic: the ctest
 * fuzz_corpus checks that tests/fuzz/corpus is what this writes (regenerate
 * with `make fuzz-corpus` after a change of the protos or of a target's
 * input format).
 *
 *     fuzz_seeds DIR
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "sagas/v1/admin.pb-c.h"
#include "sagas/v1/health.pb-c.h"
#include "sagas/v1/booking.pb-c.h"
#include "sagas/v1/orchestrator.pb-c.h"
#include "sagas/v1/payment.pb-c.h"
#include "sagas/v1/rpc.pb-c.h"
#include "sagas/v1/shipping.pb-c.h"
#include "sagas/v1/stock.pb-c.h"

#define SEED_ID  "5eed0000-0000-4000-8000-000000000001"
#define SEED_MAX 8192

static const char *seed_dir;
static int seed_failed;

/* seed_write writes `len` bytes to DIR/target/name. */
static void seed_write(const char *target, const char *name, const uint8_t *buf, size_t len)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/%s", seed_dir, target);
	if (mkdir(path, 0755) != 0 && errno != EEXIST) {
		perror(path);
		seed_failed = 1;
		return;
	}
	snprintf(path, sizeof path, "%s/%s/%s", seed_dir, target, name);
	FILE *f = fopen(path, "wb");
	if (f == NULL || fwrite(buf, 1, len, f) != len || fclose(f) != 0) {
		perror(path);
		seed_failed = 1;
	}
}

/* One method of a daemon, with a valid request message. */
typedef struct seed_call {
	const char *method; /* full name */
	const char *name;   /* file name */
	uint8_t index;      /* its index in the target's method table */
	uint8_t payload[512];
	size_t len;
} seed_call;

static size_t seed_pack(const ProtobufCMessage *m, uint8_t *out)
{
	return protobuf_c_message_pack(m, out);
}

/* seed_handlers writes a handler target's seeds: each call alone, and all
 * of the batchable ones in one batch (fuzz_handlers.h's format). */
static void seed_handlers(const char *target, const seed_call *calls, size_t n, size_t nbatch)
{
	uint8_t buf[SEED_MAX];
	for (size_t i = 0; i < n; i++) {
		buf[0] = 0;
		buf[1] = calls[i].index;
		memcpy(buf + 2, calls[i].payload, calls[i].len);
		seed_write(target, calls[i].name, buf, 2 + calls[i].len);
	}
	size_t k = 0;
	buf[k++] = (uint8_t)(1 | ((nbatch - 1) << 1));
	for (size_t i = 0; i < nbatch; i++) {
		buf[k++] = calls[i].index;
		buf[k++] = (uint8_t)(calls[i].len & 0xff);
		buf[k++] = (uint8_t)(calls[i].len >> 8);
		memcpy(buf + k, calls[i].payload, calls[i].len);
		k += calls[i].len;
	}
	seed_write(target, "batch", buf, k);
}

/* seed_frames writes fuzz_frame's seeds: an envelope of every call of
 * every daemon, and one batch frame of the first `nbatch`. */
static void seed_frame(const seed_call *calls, size_t n, const char *prefix, size_t nbatch)
{
	uint8_t buf[SEED_MAX];
	Sagas__V1__RequestEnvelope envs[16], *ptrs[16];
	for (size_t i = 0; i < n && i < 16; i++) {
		Sagas__V1__RequestEnvelope e = SAGAS__V1__REQUEST_ENVELOPE__INIT;
		envs[i] = e;
		envs[i].request_id = (char *)"r1";
		envs[i].method = (char *)calls[i].method;
		envs[i].timeout_ms = 5000;
		envs[i].payload.data = (uint8_t *)calls[i].payload;
		envs[i].payload.len = calls[i].len;
		ptrs[i] = &envs[i];
		char name[128];
		snprintf(name, sizeof name, "%s_%s", prefix, calls[i].name);
		seed_write("fuzz_frame", name, buf, seed_pack(&envs[i].base, buf));
	}
	Sagas__V1__RequestEnvelope b = SAGAS__V1__REQUEST_ENVELOPE__INIT;
	b.request_id = (char *)"b1";
	b.method = (char *)"/sagas.v1.Rpc/Batch";
	b.n_calls = nbatch;
	b.calls = ptrs;
	char name[128];
	snprintf(name, sizeof name, "%s_batch", prefix);
	seed_write("fuzz_frame", name, buf, seed_pack(&b.base, buf));
}

#define SEED(arr, i, meth, nm, idx, msg)                                                           \
	do {                                                                                       \
		(arr)[i].method = (meth);                                                          \
		(arr)[i].name = (nm);                                                              \
		(arr)[i].index = (idx);                                                            \
		(arr)[i].len = seed_pack(&(msg).base, (arr)[i].payload);                           \
	} while (0)

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: fuzz_seeds DIR\n");
		return 2;
	}
	seed_dir = argv[1];
	if (mkdir(seed_dir, 0755) != 0 && errno != EEXIST) {
		perror(seed_dir);
		return 1;
	}

	seed_call st[4];
	Sagas__V1__ReserveStockRequest rs = SAGAS__V1__RESERVE_STOCK_REQUEST__INIT;
	rs.saga_id = (char *)SEED_ID;
	rs.sku = (char *)"A1";
	rs.qty = 2;
	rs.saga_started_unix_ms = 1796256000000; /* 2026-12-03 */
	SEED(st, 0, "/sagas.v1.Stock/ReserveStock", "reserve", 0, rs);
	Sagas__V1__ReleaseStockRequest rl = SAGAS__V1__RELEASE_STOCK_REQUEST__INIT;
	rl.saga_id = (char *)SEED_ID;
	rl.sku = (char *)"A1";
	rl.qty = 2;
	rl.saga_started_unix_ms = 1796256000000; /* 2026-12-03 */
	SEED(st, 1, "/sagas.v1.Stock/ReleaseStock", "release", 1, rl);
	Sagas__V1__SetStockRequest ss = SAGAS__V1__SET_STOCK_REQUEST__INIT;
	ss.sku = (char *)"B2";
	ss.on_hand = 7;
	SEED(st, 2, "/sagas.v1.Stock/SetStock", "set", 2, ss);
	Sagas__V1__ListStockRequest ls = SAGAS__V1__LIST_STOCK_REQUEST__INIT;
	ls.include_reservations = 1;
	ls.limit = 10;
	SEED(st, 3, "/sagas.v1.Stock/ListStock", "list", 3, ls);
	seed_handlers("fuzz_stock", st, 4, 2);
	seed_frame(st, 4, "stock", 2);

	seed_call pa[4];
	Sagas__V1__ChargePaymentRequest ch = SAGAS__V1__CHARGE_PAYMENT_REQUEST__INIT;
	ch.saga_id = (char *)SEED_ID;
	ch.customer = (char *)"ali";
	ch.amount = 1000;
	ch.saga_started_unix_ms = 1796256000000; /* 2026-12-03 */
	SEED(pa, 0, "/sagas.v1.Payment/ChargePayment", "charge", 0, ch);
	Sagas__V1__RefundPaymentRequest rf = SAGAS__V1__REFUND_PAYMENT_REQUEST__INIT;
	rf.saga_id = (char *)SEED_ID;
	rf.customer = (char *)"ali";
	rf.amount = 1000;
	rf.saga_started_unix_ms = 1796256000000; /* 2026-12-03 */
	SEED(pa, 1, "/sagas.v1.Payment/RefundPayment", "refund", 1, rf);
	Sagas__V1__DepositRequest dp = SAGAS__V1__DEPOSIT_REQUEST__INIT;
	dp.customer = (char *)"sara";
	dp.amount = 2000;
	dp.deposit_id = (char *)"5eed0000-0000-4000-8000-000000000002";
	SEED(pa, 2, "/sagas.v1.Payment/Deposit", "deposit", 2, dp);
	Sagas__V1__ListAccountsRequest la = SAGAS__V1__LIST_ACCOUNTS_REQUEST__INIT;
	la.include_charges = 1;
	la.limit = 10;
	SEED(pa, 3, "/sagas.v1.Payment/ListAccounts", "list", 3, la);
	seed_handlers("fuzz_payment", pa, 4, 2);
	seed_frame(pa, 4, "payment", 2);

	seed_call sh[2];
	Sagas__V1__ShipOrderRequest so = SAGAS__V1__SHIP_ORDER_REQUEST__INIT;
	so.saga_id = (char *)SEED_ID;
	so.customer = (char *)"ali";
	so.sku = (char *)"A1";
	so.qty = 2;
	so.saga_started_unix_ms = 1796256000000; /* 2026-12-03 */
	SEED(sh, 0, "/sagas.v1.Shipping/ShipOrder", "ship", 0, so);
	Sagas__V1__ListShipmentsRequest lh = SAGAS__V1__LIST_SHIPMENTS_REQUEST__INIT;
	lh.include_shipments = 1;
	lh.limit = 10;
	SEED(sh, 1, "/sagas.v1.Shipping/ListShipments", "list", 1, lh);
	seed_handlers("fuzz_shipping", sh, 2, 1);
	seed_frame(sh, 2, "shipping", 1);

	seed_call or [10];
	Sagas__V1__Order o = SAGAS__V1__ORDER__INIT;
	o.customer = (char *)"ali";
	o.sku = (char *)"A1";
	o.qty = 1;
	o.amount = 1000;
	Sagas__V1__StartSagaRequest sr = SAGAS__V1__START_SAGA_REQUEST__INIT;
	sr.saga_id = (char *)SEED_ID;
	sr.order = &o;
	SEED(or, 0, "/sagas.v1.Orchestrator/StartSaga", "start", 0, sr);
	Sagas__V1__GetSagaRequest gs = SAGAS__V1__GET_SAGA_REQUEST__INIT;
	gs.saga_id = (char *)SEED_ID;
	SEED(or, 1, "/sagas.v1.Orchestrator/GetSaga", "get", 1, gs);
	Sagas__V1__WaitSagaRequest ws = SAGAS__V1__WAIT_SAGA_REQUEST__INIT;
	ws.saga_id = (char *)SEED_ID;
	ws.wait_ms = 100;
	SEED(or, 2, "/sagas.v1.Orchestrator/WaitSaga", "wait", 2, ws);
	Sagas__V1__ListSagasRequest lsg = SAGAS__V1__LIST_SAGAS_REQUEST__INIT;
	lsg.limit = 10;
	lsg.attention_only = 1;
	/* the filters and the page token of issue 21 (a valid token: the
	 * decoder is the interesting part) */
	lsg.overdue = 1;
	lsg.older_than_ms = 60000;
	lsg.overdue_margin_ms = 1000;
	lsg.stuck_after_ms = 600000;
	lsg.page_token = (char *)"A4REDMxzX/8AAAAAAAAAAAAAAAAAAAAA";
	SEED(or, 3, "/sagas.v1.Orchestrator/ListSagas", "list", 3, lsg);
	Sagas__V1__GetSagaHistoryRequest hs = SAGAS__V1__GET_SAGA_HISTORY_REQUEST__INIT;
	hs.saga_id = (char *)SEED_ID;
	SEED(or, 4, "/sagas.v1.Orchestrator/GetSagaHistory", "history", 4, hs);
	Sagas__V1__RetrySagaRequest rt = SAGAS__V1__RETRY_SAGA_REQUEST__INIT;
	rt.saga_id = (char *)SEED_ID;
	SEED(or, 5, "/sagas.v1.Orchestrator/RetrySaga", "retry", 5, rt);
	/* a saga type's own input (tests/definitions/trip.yaml's trip, a
	 * sagas.v1.Booking), as JSON and encoded */
	Sagas__V1__StartSagaRequest tj = SAGAS__V1__START_SAGA_REQUEST__INIT;
	tj.saga_id = (char *)SEED_ID;
	tj.type = (char *)"trip";
	tj.input_json = (char *)"{\"customer\":\"ali\",\"room\":\"R1\",\"nights\":2,"
	                        "\"flight\":\"F1\",\"seats\":1,\"amount\":\"1000\"}";
	SEED(or, 6, "/sagas.v1.Orchestrator/StartSaga", "start_trip_json", 0, tj);
	Sagas__V1__Booking bk = SAGAS__V1__BOOKING__INIT;
	bk.customer = (char *)"ali";
	bk.room = (char *)"R1";
	bk.nights = 2;
	bk.flight = (char *)"F1";
	bk.seats = 1;
	bk.amount = 1000;
	uint8_t bkbuf[256];
	Sagas__V1__StartSagaRequest ti = SAGAS__V1__START_SAGA_REQUEST__INIT;
	ti.saga_id = (char *)SEED_ID;
	ti.type = (char *)"trip";
	ti.input.data = bkbuf;
	ti.input.len = sagas__v1__booking__pack(&bk, bkbuf);
	SEED(or, 7, "/sagas.v1.Orchestrator/StartSaga", "start_trip_input", 0, ti);
	Sagas__V1__CancelSagaRequest cs = SAGAS__V1__CANCEL_SAGA_REQUEST__INIT;
	cs.saga_id = (char *)SEED_ID;
	cs.reason = (char *)"customer called";
	cs.request_id = (char *)"5eed0000-0000-4000-8000-0000000000c1";
	SEED(or, 8, "/sagas.v1.Orchestrator/CancelSaga", "cancel", 7, cs);
	Sagas__V1__ListAuditRequest lau = SAGAS__V1__LIST_AUDIT_REQUEST__INIT;
	lau.saga_id = (char *)SEED_ID;
	lau.action = (char *)"cancel";
	lau.page_size = 10;
	SEED(or, 9, "/sagas.v1.Orchestrator/ListAudit", "audit", 8, lau);
	seed_handlers("fuzz_orchestrator", or, 10, 2);
	seed_frame(or, 10, "orchestrator", 2);

	seed_call ops[3];
	Sagas__V1__HealthCheckRequest hc = SAGAS__V1__HEALTH_CHECK_REQUEST__INIT;
	hc.service = (char *)"sagas.v1.Toy";
	SEED(ops, 0, "/sagas.v1.Health/Check", "health", 0, hc);
	Sagas__V1__SetFaultRequest sf = SAGAS__V1__SET_FAULT_REQUEST__INIT;
	sf.kind = SAGAS__V1__FAULT_KIND__FAULT_KIND_DELAY;
	sf.method = (char *)"ReserveStock";
	sf.delay_ms = 10;
	sf.count = 1;
	SEED(ops, 1, "/sagas.v1.Admin/SetFault", "setfault", 1, sf);
	Sagas__V1__ClearFaultsRequest cf = SAGAS__V1__CLEAR_FAULTS_REQUEST__INIT;
	SEED(ops, 2, "/sagas.v1.Admin/ClearFaults", "clearfaults", 2, cf);
	seed_frame(ops, 3, "ops", 1);

	/* replies a client decodes: one, a batch's, an error */
	{
		uint8_t buf[SEED_MAX];
		Sagas__V1__HealthCheckResponse hr = SAGAS__V1__HEALTH_CHECK_RESPONSE__INIT;
		hr.status
		    = SAGAS__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__SERVING_STATUS_SERVING;
		uint8_t pl[64];
		size_t pll = seed_pack(&hr.base, pl);
		Sagas__V1__ReplyEnvelope r1 = SAGAS__V1__REPLY_ENVELOPE__INIT;
		r1.request_id = (char *)"r1";
		r1.payload.data = pl;
		r1.payload.len = pll;
		seed_write("fuzz_reply", "ok", buf, seed_pack(&r1.base, buf));
		Sagas__V1__ReplyEnvelope r2 = SAGAS__V1__REPLY_ENVELOPE__INIT;
		r2.request_id = (char *)"r2";
		r2.code = 9;
		r2.reason = (char *)"out_of_stock";
		r2.message = (char *)"could not reserve stock: out of stock";
		seed_write("fuzz_reply", "error", buf, seed_pack(&r2.base, buf));
		Sagas__V1__ReplyEnvelope *rp[2] = {&r1, &r2};
		Sagas__V1__ReplyEnvelope b = SAGAS__V1__REPLY_ENVELOPE__INIT;
		b.request_id = (char *)"b1";
		b.n_replies = 2;
		b.replies = rp;
		seed_write("fuzz_reply", "batch", buf, seed_pack(&b.base, buf));
	}

	/* the parsers: a selector byte, then the text (fuzz_parsers.c) */
	static const struct {
		const char *name, *text;
	} texts[] = {
	    {"money",
	        "\x00"
	        "12.50"},
	    {"money_zero",
	        "\x04"
	        "0"},
	    {"uuid", "\x01" SEED_ID},
	    {"name",
	        "\x02"
	        "caf\xc3\xa9"},
	    {"utf8",
	        "\x03"
	        "\xe2\x82\xac uro"},
	};
	for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++)
		seed_write("fuzz_parsers", texts[i].name, (const uint8_t *)texts[i].text,
		    1 + strlen(texts[i].text + 1));

	static const char cfg[] = "# a daemon's config file\n"
	                          "listen = tcp://127.0.0.1:7102\n"
	                          "db = dbname=sagas_stock\n"
	                          "workers = 4\n"
	                          "timeout = 2500\n"
	                          "flag = yes\n";
	seed_write("fuzz_config", "config", (const uint8_t *)cfg, sizeof cfg - 1);

	/* saga definitions: the order saga (orchestrator/definitions/order.yaml
	 * in short) and a group with a constant, in YAML and in JSON */
	static const char order_def[]
	    = "format: 1\n"
	      "participants:\n"
	      "  stock: {service: sagas.v1.Stock, urls: --stock}\n"
	      "  payment: {service: sagas.v1.Payment, urls: --payment}\n"
	      "  shipping: {service: sagas.v1.Shipping, urls: --shipping}\n"
	      "sagas:\n"
	      "  order:\n"
	      "    input: sagas.v1.Order\n"
	      "    completed: COMPLETED\n"
	      "    cancelled: CANCELLED\n"
	      "    steps:\n"
	      "      - {name: reserve, state: RESERVING, compensating: RELEASING, participant: "
	      "stock,"
	      " command: ReserveStock, compensation: ReleaseStock, kind: compensable, input: {sku:"
	      " sku, qty: qty}}\n"
	      "      - {name: charge, state: CHARGING, compensating: REFUNDING, participant: "
	      "payment,"
	      " command: ChargePayment, compensation: RefundPayment, kind: pivot, input: {customer:"
	      " customer, amount: amount}}\n"
	      "      - {name: ship, state: SHIPPING, participant: shipping, command: ShipOrder, "
	      "kind:"
	      " retriable, input: {customer: customer, sku: sku, qty: qty}}\n";
	seed_write("fuzz_definitions", "order", (const uint8_t *)order_def, sizeof order_def - 1);
	static const char group_def[]
	    = "{\"format\": 1, \"participants\": {\"a\": {\"service\": \"sagas.v1.Stock\", "
	      "\"urls\": \"--a\"}, \"b\": {\"service\": \"sagas.v1.Stock\", \"urls\": \"--b\"}, "
	      "\"p\": {\"service\": \"sagas.v1.Payment\", \"urls\": \"--p\"}}, \"sagas\": {\"t\": "
	      "{\"input\": \"sagas.v1.Order\", \"completed\": \"DONE\", \"cancelled\": \"UNDONE\", "
	      "\"steps\": [{\"group\": \"g\", \"steps\": [{\"name\": \"x\", \"participant\": "
	      "\"a\", "
	      "\"command\": \"ReserveStock\", \"compensation\": \"ReleaseStock\", \"kind\": "
	      "\"compensable\", \"input\": {\"sku\": {\"const\": \"S1\"}, \"qty\": \"qty\"}}, "
	      "{\"name\": \"y\", \"participant\": \"b\", \"command\": \"ReserveStock\", "
	      "\"compensation\": \"ReleaseStock\", \"kind\": \"compensable\", \"input\": {\"sku\": "
	      "\"sku\", \"qty\": {\"const\": 2}}}]}, {\"name\": \"pay\", \"participant\": \"p\", "
	      "\"command\": \"ChargePayment\", \"compensation\": \"RefundPayment\", \"kind\": "
	      "\"pivot\", \"input\": {\"customer\": \"customer\", \"amount\": \"amount\"}}]}}}\n";
	seed_write(
	    "fuzz_definitions", "group.json", (const uint8_t *)group_def, sizeof group_def - 1);
	return seed_failed;
}
