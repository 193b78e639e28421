/* nanomsg_req: a REQ client built on nanomsg (libnanomsg), a second and
 * independent implementation of the SP protocols, talking to a daemon's nng
 * REP socket (docs/protocol.md: any SP implementation works).
 *
 *   nanomsg_req URL              ListSagas on the orchestrator; prints
 *                                "code=N sagas=M" and exits 0 when code is 0
 *   nanomsg_req --envelope FILE  writes a ListSagas request frame to FILE
 *                                (for nanocat --req --file) and exits
 *   nanomsg_req --decode FILE    decodes a reply frame from FILE and prints
 *                                "code=N sagas=M"
 * Exit status: 0 OK reply, 1 anything else.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <nanomsg/nn.h>
#include <nanomsg/reqrep.h>

#include "sagas/v1/orchestrator.pb-c.h"
#include "sagas/v1/rpc.pb-c.h"
#include "version.h"

#define NANOMSG_REQ_TIMEOUT_MS 5000

/* nanomsg_req_frame packs a ListSagas request envelope; malloc'd. */
static uint8_t *nanomsg_req_frame(size_t *len)
{
	Sagas__V1__ListSagasRequest req = SAGAS__V1__LIST_SAGAS_REQUEST__INIT;
	req.limit = 10;
	uint8_t payload[64];
	size_t plen = sagas__v1__list_sagas_request__pack(&req, payload);
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	Sagas__V1__RequestEnvelope env = SAGAS__V1__REQUEST_ENVELOPE__INIT;
	env.method = "/sagas.v1.Orchestrator/ListSagas";
	env.request_id = "nanomsg-1";
	/* the envelope's old absolute deadline, as clients written before
	 * timeout_ms send it: servers must keep reading it */
	env.deadline_unix_ms
	    = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000 + NANOMSG_REQ_TIMEOUT_MS;
	env.payload.data = payload;
	env.payload.len = plen;
	*len = sagas__v1__request_envelope__get_packed_size(&env);
	uint8_t *out = malloc(*len);
	if (out != NULL)
		sagas__v1__request_envelope__pack(&env, out);
	return out;
}

/* nanomsg_req_decode prints a reply frame; returns the exit status. */
static int nanomsg_req_decode(const uint8_t *buf, size_t len)
{
	Sagas__V1__ReplyEnvelope *env = sagas__v1__reply_envelope__unpack(NULL, len, buf);
	if (env == NULL) {
		fprintf(stderr, "nanomsg_req: the reply is not a ReplyEnvelope (%zu bytes)\n", len);
		return 1;
	}
	int rc = 1;
	if (env->code != 0) {
		printf("code=%d reason=%s message=%s\n", (int)env->code, env->reason, env->message);
	} else if (strcmp(env->request_id, "nanomsg-1") != 0) {
		fprintf(stderr, "nanomsg_req: request_id \"%s\" not echoed\n", env->request_id);
	} else {
		Sagas__V1__ListSagasReply *rep = sagas__v1__list_sagas_reply__unpack(
		    NULL, env->payload.len, env->payload.data);
		if (rep == NULL) {
			fprintf(stderr, "nanomsg_req: the payload is not a ListSagasReply\n");
		} else {
			printf("code=0 sagas=%zu\n", rep->n_sagas);
			for (size_t i = 0; i < rep->n_sagas; i++)
				printf("saga %s\n", rep->sagas[i]->saga_id);
			sagas__v1__list_sagas_reply__free_unpacked(rep, NULL);
			rc = 0;
		}
	}
	sagas__v1__reply_envelope__free_unpacked(env, NULL);
	return rc;
}

static int nanomsg_req_file(const char *mode, const char *path)
{
	if (strcmp(mode, "--envelope") == 0) {
		size_t len = 0;
		uint8_t *frame = nanomsg_req_frame(&len);
		FILE *f = fopen(path, "wb");
		int ok = frame != NULL && f != NULL && fwrite(frame, 1, len, f) == len;
		if (f != NULL && fclose(f) != 0)
			ok = 0;
		free(frame);
		return ok ? 0 : 1;
	}
	FILE *f = fopen(path, "rb");
	if (f == NULL) {
		perror(path);
		return 1;
	}
	static uint8_t buf[1 << 20];
	size_t len = fread(buf, 1, sizeof buf, f);
	fclose(f);
	return nanomsg_req_decode(buf, len);
}

int main(int argc, char **argv)
{
	if (argc == 2 && strcmp(argv[1], "--version") == 0) {
		printf("nanomsg_req %s (commit %s)\n", saga_version, saga_commit);
		return 0;
	}
	if (argc == 3)
		return nanomsg_req_file(argv[1], argv[2]);
	if (argc != 2) {
		fprintf(stderr, "usage: nanomsg_req URL | --envelope FILE | --decode FILE\n");
		return 1;
	}
	int s = nn_socket(AF_SP, NN_REQ);
	if (s < 0) {
		fprintf(stderr, "nn_socket: %s\n", nn_strerror(nn_errno()));
		return 1;
	}
	int timeout = NANOMSG_REQ_TIMEOUT_MS;
	nn_setsockopt(s, NN_SOL_SOCKET, NN_RCVTIMEO, &timeout, sizeof timeout);
	nn_setsockopt(s, NN_SOL_SOCKET, NN_SNDTIMEO, &timeout, sizeof timeout);
	int rc = 1;
	size_t len = 0;
	uint8_t *frame = nanomsg_req_frame(&len);
	if (frame == NULL || nn_connect(s, argv[1]) < 0) {
		fprintf(stderr, "nn_connect %s: %s\n", argv[1], nn_strerror(nn_errno()));
		goto out;
	}
	if (nn_send(s, frame, len, 0) < 0) {
		fprintf(stderr, "nn_send: %s\n", nn_strerror(nn_errno()));
		goto out;
	}
	void *reply = NULL;
	int n = nn_recv(s, &reply, NN_MSG, 0);
	if (n < 0) {
		fprintf(stderr, "nn_recv: %s\n", nn_strerror(nn_errno()));
		goto out;
	}
	rc = nanomsg_req_decode(reply, (size_t)n);
	nn_freemsg(reply);
out:
	free(frame);
	nn_close(s);
	return rc;
}
