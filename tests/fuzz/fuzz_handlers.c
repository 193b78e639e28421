#include "fuzz_handlers.h"

#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "log.h"
#include "valid.h"

#define FUZZ_BATCH_MAX 8

void fuzz_quiet(const char *prog)
{
	/* one past the highest level: nothing is logged */
	log_init(prog, (enum log_level)(LOG_LEVEL_ERROR + 1));
}

static void fuzz_reply_check(const rpc_reply *r)
{
	fuzz_check(r->code >= 0 && r->code <= 16, "a gRPC code");
	fuzz_check(memchr(r->reason, '\0', sizeof r->reason) != NULL
	        && valid_utf8(r->reason, strlen(r->reason)),
	    "the reason is UTF-8");
	fuzz_check(memchr(r->message, '\0', sizeof r->message) != NULL
	        && valid_utf8(r->message, strlen(r->message)),
	    "the message is UTF-8");
	fuzz_check(r->code == 0 || r->payload == NULL, "a payload only with OK");
}

void fuzz_handlers_run(const rpc_server_ops *ops, void *app, const char *const *methods,
    size_t nmethods, const uint8_t *data, size_t size)
{
	fuzz_input in = {data, size};
	uint8_t head = fuzz_byte(&in);
	bool batch = (head & 1) && ops->handle_batch != NULL;
	size_t n = batch ? 1 + ((head >> 1) & 7) : 1;
	rpc_request calls[FUZZ_BATCH_MAX];
	rpc_reply replies[FUZZ_BATCH_MAX];
	/* each payload its own exact-size copy, so ASan sees a read past it */
	uint8_t *payloads[FUZZ_BATCH_MAX] = {0};
	memset(calls, 0, sizeof calls);
	memset(replies, 0, sizeof replies);
	for (size_t i = 0; i < n; i++) {
		uint8_t m = fuzz_byte(&in);
		size_t len = in.n;
		if (batch) {
			len = fuzz_byte(&in);
			len |= (size_t)fuzz_byte(&in) << 8;
			if (len > in.n)
				len = in.n;
		}
		payloads[i] = malloc(len ? len : 1);
		if (payloads[i] == NULL)
			goto out;
		memcpy(payloads[i], in.p, len);
		in.p += len;
		in.n -= len;
		calls[i] = (rpc_request) {
		    .method = methods[m % nmethods],
		    .request_id = "fuzz",
		    .payload = payloads[i],
		    .payload_len = len,
		    .in_batch = batch,
		    .roles = ~0u,
		};
	}
	void *worker = NULL;
	if (ops->worker_init != NULL && ops->worker_init(app, &worker) != 0)
		goto out;
	if (batch) {
		ops->handle_batch(app, worker, calls, replies, n);
	} else {
		ops->handle(app, worker, &calls[0], &replies[0]);
	}
	for (size_t i = 0; i < n; i++)
		fuzz_reply_check(&replies[i]);
	if (ops->worker_fini != NULL)
		ops->worker_fini(app, worker);
out:
	for (size_t i = 0; i < n; i++) {
		free(replies[i].payload);
		free(payloads[i]);
	}
}
