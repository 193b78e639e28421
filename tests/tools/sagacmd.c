/* sagacmd: sends one participant command by hand, for fault tests that
 * replay a lost command.
 *   sagacmd URL reserve|release SAGA_ID SKU QTY
 *   sagacmd URL charge|refund SAGA_ID CUSTOMER AMOUNT_MINOR
 *   sagacmd URL ship SAGA_ID CUSTOMER SKU QTY
 *   sagacmd URL hold|free SAGA_ID ROOM NIGHTS    (hoteld's HoldRoom, FreeRoom)
 *   sagacmd URL set-rooms ROOM FREE              (hoteld's SetRooms: an admin's)
 *   sagacmd URL list-rooms                       (hoteld's ListRooms: an admin's)
 * Prints "<CODE_NAME> <reason or -> <status number, or - when not OK>" and exits 0 when a reply
 * came, 1 when none came, 2 on usage errors. For a tls+tcp:// URL the
 * environment gives the files: SAGACMD_TLS_CA (required), SAGACMD_TLS_CERT
 * and SAGACMD_TLS_KEY (a role's certificate, or none), and the URL may end
 * in "?server_name=NAME" (the name checked; rpc_urls_parse); a refused TLS
 * handshake prints "HANDSHAKE_REFUSED" and exits 1. The command's saga
 * started now (this host's clock), or at SAGACMD_STARTED_MS (ms since the
 * epoch; 0 sends none): a late copy of an old saga's command (rule R1).
 * set-rooms prints the rooms free it set in place of the status; list-rooms
 * prints, after that line (status -), a line "ROOM FREE LIVE_HOLDS" per kind. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "rpc.h"
#include "tls.h"
#include "version.h"
#include "sagas/v1/hotel.pb-c.h"
#include "sagas/v1/payment.pb-c.h"
#include "sagas/v1/shipping.pb-c.h"
#include "sagas/v1/stock.pb-c.h"

/* sagacmd_usage prints the usage to `out`; returns 2 (a usage error). */
static int sagacmd_usage(FILE *out)
{
	fprintf(out,
	    "usage: sagacmd URL reserve|release SAGA_ID SKU QTY\n"
	    "       sagacmd URL charge|refund SAGA_ID CUSTOMER AMOUNT_MINOR\n"
	    "       sagacmd URL ship SAGA_ID CUSTOMER SKU QTY\n"
	    "       sagacmd URL hold|free SAGA_ID ROOM NIGHTS\n"
	    "       sagacmd URL set-rooms ROOM FREE\n"
	    "       sagacmd URL list-rooms\n"
	    "       sagacmd --help | --version\n");
	return 2;
}

int main(int argc, char **argv)
{
	if (argc == 2 && version_is_flag(argv[1])) {
		version_print(stdout, "sagacmd");
		return 0;
	}
	if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		sagacmd_usage(stdout);
		return 0;
	}
	bool ship = argc == 7 && !strcmp(argv[2], "ship");
	bool set_rooms = argc == 5 && !strcmp(argv[2], "set-rooms");
	bool list_rooms = argc == 3 && !strcmp(argv[2], "list-rooms");
	if (argc != 6 && !ship && !set_rooms && !list_rooms)
		return sagacmd_usage(stderr);
	const char *url = argv[1], *verb = argv[2];
	char *id = list_rooms ? NULL : argv[3];
	char *name = list_rooms ? NULL
	    : set_rooms         ? argv[3]
	                        : argv[4],
	     *sku = ship ? argv[5] : NULL;
	long long n = list_rooms ? 0 : strtoll(argv[ship ? 6 : set_rooms ? 4 : 5], NULL, 10);
	char listing[4096] = "";
	const char *st = getenv("SAGACMD_STARTED_MS");
	int64_t started = st ? strtoll(st, NULL, 10) : clock_wall_ms();
	rpc_client *c = NULL;
	rpc_client_opts opts = {.connect_now = true};
	/* one URL, through the lists' parser: "?server_name=NAME" works */
	rpc_urls urls;
	char err[512];
	int prc = rpc_urls_parse(&urls, url, err, sizeof err);
	if (prc != 0 || urls.n != 1) {
		fprintf(stderr, "sagacmd: %s\n", prc != 0 ? err : "one URL, not a list");
		rpc_urls_free(&urls);
		return 2;
	}
	if (tls_url(urls.url[0])) {
		const char *cert = getenv("SAGACMD_TLS_CERT"), *key = getenv("SAGACMD_TLS_KEY");
		tls_files f = {.cert = cert ? cert : "",
		    .key = key ? key : "",
		    .ca = getenv("SAGACMD_TLS_CA") ? getenv("SAGACMD_TLS_CA") : ""};
		if (rpc_urls_tls(&urls, &f, err, sizeof err) != 0) {
			fprintf(stderr, "sagacmd: %s\n", err);
			rpc_urls_free(&urls);
			return 2;
		}
	}
	int orc = rpc_client_open_urls(&c, &urls, &opts);
	if (orc != 0) {
		if (orc == -EACCES)
			printf("HANDSHAKE_REFUSED\n");
		else
			printf("UNREACHABLE %s\n", strerror(-orc));
		rpc_urls_free(&urls);
		return 1;
	}
	rpc_result res;
	int rc = -1;
	int status = 0;
	if (!strcmp(verb, "reserve") || !strcmp(verb, "release")) {
		bool reserve = !strcmp(verb, "reserve");
		Sagas__V1__ReserveStockRequest m = SAGAS__V1__RESERVE_STOCK_REQUEST__INIT;
		m.saga_id = id;
		m.sku = name;
		m.qty = (int32_t)n;
		m.saga_started_unix_ms = started;
		/* both requests have the same fields, numbered alike */
		rc = rpc_call(c,
		    reserve ? "/sagas.v1.Stock/ReserveStock" : "/sagas.v1.Stock/ReleaseStock",
		    &m.base, 5000, &res);
		if (rc == 0 && res.code == 0) {
			Sagas__V1__ReleaseStockReply *r = sagas__v1__release_stock_reply__unpack(
			    NULL, res.payload_len, res.payload);
			if (r) {
				status = r->status;
				sagas__v1__release_stock_reply__free_unpacked(r, NULL);
			}
		}
	} else if (!strcmp(verb, "charge") || !strcmp(verb, "refund")) {
		bool charge = !strcmp(verb, "charge");
		Sagas__V1__ChargePaymentRequest m = SAGAS__V1__CHARGE_PAYMENT_REQUEST__INIT;
		m.saga_id = id;
		m.customer = name;
		m.amount = n;
		m.saga_started_unix_ms = started;
		rc = rpc_call(c,
		    charge ? "/sagas.v1.Payment/ChargePayment" : "/sagas.v1.Payment/RefundPayment",
		    &m.base, 5000, &res);
		if (rc == 0 && res.code == 0) {
			Sagas__V1__RefundPaymentReply *r = sagas__v1__refund_payment_reply__unpack(
			    NULL, res.payload_len, res.payload);
			if (r) {
				status = r->status;
				sagas__v1__refund_payment_reply__free_unpacked(r, NULL);
			}
		}
	} else if (!strcmp(verb, "hold") || !strcmp(verb, "free")) {
		bool hold = !strcmp(verb, "hold");
		Sagas__V1__HoldRoomRequest m = SAGAS__V1__HOLD_ROOM_REQUEST__INIT;
		m.saga_id = id;
		m.room = name;
		m.nights = (int32_t)n;
		m.saga_started_unix_ms = started;
		/* both requests have the same fields, numbered alike */
		rc = rpc_call(c, hold ? "/sagas.v1.Hotel/HoldRoom" : "/sagas.v1.Hotel/FreeRoom",
		    &m.base, 5000, &res);
		if (rc == 0 && res.code == 0) {
			Sagas__V1__FreeRoomReply *r = sagas__v1__free_room_reply__unpack(
			    NULL, res.payload_len, res.payload);
			if (r) {
				status = r->status;
				sagas__v1__free_room_reply__free_unpacked(r, NULL);
			}
		}
	} else if (set_rooms) {
		Sagas__V1__SetRoomsRequest m = SAGAS__V1__SET_ROOMS_REQUEST__INIT;
		m.room = name;
		m.free = n;
		rc = rpc_call(c, "/sagas.v1.Hotel/SetRooms", &m.base, 5000, &res);
		if (rc == 0 && res.code == 0) {
			Sagas__V1__SetRoomsReply *r = sagas__v1__set_rooms_reply__unpack(
			    NULL, res.payload_len, res.payload);
			if (r) {
				status = (int)r->free;
				sagas__v1__set_rooms_reply__free_unpacked(r, NULL);
			}
		}
	} else if (list_rooms) {
		Sagas__V1__ListRoomsRequest m = SAGAS__V1__LIST_ROOMS_REQUEST__INIT;
		rc = rpc_call(c, "/sagas.v1.Hotel/ListRooms", &m.base, 5000, &res);
		if (rc == 0 && res.code == 0) {
			Sagas__V1__ListRoomsReply *r = sagas__v1__list_rooms_reply__unpack(
			    NULL, res.payload_len, res.payload);
			size_t len = 0;
			for (size_t i = 0; r != NULL && i < r->n_rooms && len < sizeof listing; i++)
				len += (size_t)snprintf(listing + len, sizeof listing - len,
				    "%s %lld %d\n", r->rooms[i]->room, (long long)r->rooms[i]->free,
				    r->rooms[i]->live_holds);
			if (r)
				sagas__v1__list_rooms_reply__free_unpacked(r, NULL);
		}
	} else if (ship) {
		Sagas__V1__ShipOrderRequest m = SAGAS__V1__SHIP_ORDER_REQUEST__INIT;
		m.saga_id = id;
		m.customer = name;
		m.sku = sku;
		m.qty = (int32_t)n;
		m.saga_started_unix_ms = started;
		rc = rpc_call(c, "/sagas.v1.Shipping/ShipOrder", &m.base, 5000, &res);
		if (rc == 0 && res.code == 0) {
			Sagas__V1__ShipOrderReply *r = sagas__v1__ship_order_reply__unpack(
			    NULL, res.payload_len, res.payload);
			if (r) {
				status = r->status;
				sagas__v1__ship_order_reply__free_unpacked(r, NULL);
			}
		}
	} else {
		rpc_client_close(c);
		rpc_urls_free(&urls);
		return sagacmd_usage(stderr);
	}
	rpc_client_close(c);
	rpc_urls_free(&urls);
	if (rc != 0 || res.transport) {
		fprintf(stderr, "sagacmd: no reply (%s)\n", rc == 0 ? res.message : "send failed");
		return 1;
	}
	if (res.code == 0 && list_rooms)
		printf("%s - -\n%s", rpc_code_name(res.code), listing);
	else if (res.code == 0)
		printf("%s %s %d\n", rpc_code_name(res.code), res.reason[0] ? res.reason : "-",
		    status);
	else
		printf("%s %s -\n", rpc_code_name(res.code), res.reason[0] ? res.reason : "-");
	rpc_result_clear(&res);
	return 0;
}
