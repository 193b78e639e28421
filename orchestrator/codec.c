#include "codec.h"

#include <errno.h>

#include "sagas/v1/payment.pb-c.h"
#include "sagas/v1/stock.pb-c.h"

const char *codec_method_of(saga_command cmd)
{
	switch (cmd) {
	case SAGA_CMD_RESERVE_STOCK:
		return "/sagas.v1.Stock/ReserveStock";
	case SAGA_CMD_RELEASE_STOCK:
		return "/sagas.v1.Stock/ReleaseStock";
	case SAGA_CMD_CHARGE_PAYMENT:
		return "/sagas.v1.Payment/ChargePayment";
	case SAGA_CMD_REFUND_PAYMENT:
		return "/sagas.v1.Payment/RefundPayment";
	case SAGA_CMD_NONE:
		break;
	}
	return NULL;
}

int codec_send_command(rpc_client *client, saga_command cmd, const saga_row *row,
    int64_t timeout_ms, rpc_done_fn done, void *arg)
{
	const char *method = codec_method_of(cmd);
	if (method == NULL)
		return -EINVAL;
	/* the generated structs take char *, the row is const: the encoder
	 * only reads them */
	char *saga_id = (char *)row->saga_id;
	switch (cmd) {
	case SAGA_CMD_RESERVE_STOCK: {
		Sagas__V1__ReserveStockRequest m = SAGAS__V1__RESERVE_STOCK_REQUEST__INIT;
		m.saga_id = saga_id;
		m.sku = (char *)row->sku;
		m.qty = row->qty;
		return rpc_call_async(client, method, &m.base, timeout_ms, done, arg);
	}
	case SAGA_CMD_RELEASE_STOCK: {
		Sagas__V1__ReleaseStockRequest m = SAGAS__V1__RELEASE_STOCK_REQUEST__INIT;
		m.saga_id = saga_id;
		m.sku = (char *)row->sku;
		m.qty = row->qty;
		return rpc_call_async(client, method, &m.base, timeout_ms, done, arg);
	}
	case SAGA_CMD_CHARGE_PAYMENT: {
		Sagas__V1__ChargePaymentRequest m = SAGAS__V1__CHARGE_PAYMENT_REQUEST__INIT;
		m.saga_id = saga_id;
		m.customer = (char *)row->customer;
		m.amount = row->amount;
		return rpc_call_async(client, method, &m.base, timeout_ms, done, arg);
	}
	case SAGA_CMD_REFUND_PAYMENT: {
		Sagas__V1__RefundPaymentRequest m = SAGAS__V1__REFUND_PAYMENT_REQUEST__INIT;
		m.saga_id = saga_id;
		m.customer = (char *)row->customer;
		m.amount = row->amount;
		return rpc_call_async(client, method, &m.base, timeout_ms, done, arg);
	}
	case SAGA_CMD_NONE:
		break;
	}
	return -EINVAL;
}
