/* sagactl_rpc.c: how sagactl calls the services: one lazily opened client
 * per service (plain or mutual TLS), the errors of a call as sagactl prints
 * them, and the re-sent calls that carry an idempotency key (sagactl.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "sagactl.h"

/* The daemon that serves each ctl_svc, for "is it running?". */
static const char *const ctl_svc_daemons[CTL_SVC_COUNT]
    = {"orchestratord", "stockd", "paymentd", "shippingd"};

/* ctl_client returns the (lazily opened) client of `svc`, or NULL after
 * printing an error; *rc is the exit code then. */
static rpc_client *ctl_client(ctl_ctx *c, ctl_svc svc, int *rc)
{
	if (c->client[svc] != NULL)
		return c->client[svc];
	const char *url = c->o.url[svc];
	rpc_urls *u = &c->urls[svc];
	char why[1024];
	rpc_urls_free(u); /* a failed earlier try's */
	if (rpc_urls_parse(u, url, why, sizeof why) != 0) {
		/* every entry of a list is checked as a single URL is, and the
		 * error names the bad one */
		*rc = ctl_usage(c->cmd, "invalid --%s URL %s", ctl_svc_names[svc], why);
		return NULL;
	}
	const char *tls = rpc_urls_tls_entry(u);
	if (tls != NULL) {
		tls_files f = {.cert = c->o.tls_cert, .key = c->o.tls_key, .ca = c->o.tls_ca};
		if (!c->o.tls_ca[0]) {
			*rc = ctl_usage(c->cmd,
			    "--%s %s is a TLS URL: give --tls-ca (and --tls-cert, --tls-key for a "
			    "role; docs/security.md)",
			    ctl_svc_names[svc], tls);
			return NULL;
		}
		if (rpc_urls_tls(u, &f, why, sizeof why) != 0) {
			*rc = ctl_usage(c->cmd, "%s", why);
			return NULL;
		}
	}
	/* no nng resend: sagactl re-sends only the calls that carry their own
	 * idempotency key (StartSaga's saga id, Deposit's deposit id), itself */
	rpc_client_opts opts = {.resend_ms = 0, .connect_now = true};
	int err = rpc_client_open_urls(&c->client[svc], u, &opts);
	if (err == -ECONNREFUSED) {
		*rc = ctl_error("could not reach %s at %s: connection refused (is %s running?)",
		    ctl_svc_names[svc], url, ctl_svc_daemons[svc]);
		c->refused = true;
		c->client[svc] = NULL;
		return NULL;
	}
	if (err == -EACCES) {
		if (c->o.tls_cert[0] == '\0')
			*rc = ctl_error(
			    "could not reach %s at %s: the TLS handshake failed: its "
			    "listener takes only callers with a certificate of its role; "
			    "give --tls-cert and --tls-key (docs/security.md)",
			    ctl_svc_names[svc], url);
		else
			*rc = ctl_error(
			    "could not reach %s at %s: the TLS handshake failed (does its "
			    "certificate name the host dialled? dial an address as "
			    "tls+tcp://ADDR:PORT?server_name=NAME, NAME a name in its "
			    "certificate; does it trust the CA of --tls-cert, a CA of the role "
			    "the listener serves, and --tls-ca its certificate? "
			    "docs/security.md)",
			    ctl_svc_names[svc], url);
		c->client[svc] = NULL;
		return NULL;
	}
	/* a connection reset, closed or timed out while it was set up is what a
	 * daemon that is stopping or starting gives: watch --follow tries again */
	c->unreached = err == -EIO || err == -ESHUTDOWN || err == -ETIMEDOUT;
	if (err == -EIO && tls == NULL) {
		*rc = ctl_error("could not open a connection to %s at %s: the connection failed "
		                "(is it a tls+tcp:// listener? docs/security.md)",
		    ctl_svc_names[svc], url);
		c->client[svc] = NULL;
		return NULL;
	}
	if (err != 0) {
		*rc = ctl_error("could not open a connection to %s at %s: %s", ctl_svc_names[svc],
		    url, strerror(-err));
		c->client[svc] = NULL;
		return NULL;
	}
	return c->client[svc];
}

/* ctl_call sends one request to `svc` and waits up to `timeout_ms`. On an OK
 * reply returns 0 with the payload in *res (clear it with rpc_result_clear).
 * Otherwise prints "sagactl: error: could not <action>: ..." (or "could not reach"
 * for a transport failure) unless `quiet`, clears *res and returns an exit
 * code. With `quiet`, a transient failure (no reply, DEADLINE_EXCEEDED,
 * UNAVAILABLE) returns -1 without printing, for callers that poll. */
static int ctl_answer(
    ctl_ctx *c, ctl_svc svc, const char *action, int64_t timeout_ms, bool quiet, rpc_result *res);

int ctl_call(ctl_ctx *c, ctl_svc svc, const char *method, const ProtobufCMessage *req,
    const char *action, int64_t timeout_ms, bool quiet, rpc_result *res)
{
	int rc = CTL_EXIT_ERROR;
	memset(res, 0, sizeof *res);
	c->transient = false;
	c->refused = false;
	c->unreached = false;
	rpc_client *cl = ctl_client(c, svc, &rc);
	if (cl == NULL)
		return rc;
	int err = rpc_call(cl, method, req, timeout_ms, res);
	if (err != 0)
		return ctl_error("could not %s: could not send the request to %s: %s", action,
		    ctl_svc_names[svc], strerror(-err));
	return ctl_answer(c, svc, action, timeout_ms, quiet, res);
}

int ctl_try(ctl_ctx *c, ctl_svc svc, const char *method, const ProtobufCMessage *req,
    int64_t timeout_ms, rpc_result *res)
{
	int rc = CTL_EXIT_ERROR;
	memset(res, 0, sizeof *res);
	rpc_client *cl = ctl_client(c, svc, &rc);
	if (cl == NULL)
		return rc;
	int err = rpc_call(cl, method, req, timeout_ms, res);
	if (err != 0)
		return ctl_error(
		    "could not send the request to %s: %s", ctl_svc_names[svc], strerror(-err));
	return 0;
}

/* ctl_answer: ctl_call's handling of the reply in *res (see ctl_call). */
static int ctl_answer(
    ctl_ctx *c, ctl_svc svc, const char *action, int64_t timeout_ms, bool quiet, rpc_result *res)
{
	int rc;
	if (res->code == RPC_OK)
		return 0;
	c->transient
	    = res->transport || res->code == RPC_DEADLINE_EXCEEDED || res->code == RPC_UNAVAILABLE;
	if (quiet
	    && (res->transport || res->code == RPC_DEADLINE_EXCEEDED
	        || res->code == RPC_UNAVAILABLE)) {
		/* transient (rule 3): the caller polls again */
		rpc_result_clear(res);
		return -1;
	}
	if (res->transport) {
		char msg[RPC_MESSAGE_MAX];
		snprintf(msg, sizeof msg, "%s", res->message);
		/* nng says "Timed out"; messages here are lowercase */
		if (msg[0] >= 'A' && msg[0] <= 'Z' && msg[1] >= 'a' && msg[1] <= 'z')
			msg[0] = (char)(msg[0] - 'A' + 'a');
		if (res->code == RPC_DEADLINE_EXCEEDED)
			rc = ctl_error("could not reach %s at %s: timed out after %" PRId64
			               " ms (%s)",
			    ctl_svc_names[svc], c->o.url[svc], timeout_ms,
			    rpc_code_name(res->code));
		else
			rc = ctl_error("could not reach %s at %s: %s (%s)", ctl_svc_names[svc],
			    c->o.url[svc], msg, rpc_code_name(res->code));
	} else if (res->code == RPC_NOT_FOUND && strcmp(res->reason, "unknown_service") == 0) {
		/* Health/Check of a service by name: another daemon answered */
		rc = ctl_error("could not %s: the daemon at %s is not %s (%s): is the URL "
		               "another daemon's? (--%s names %s's address)",
		    action, c->o.url[svc], ctl_svc_daemons[svc], ctl_esc(res->message),
		    ctl_svc_names[svc], ctl_svc_daemons[svc]);
	} else if (res->code == RPC_UNIMPLEMENTED) {
		/* a daemon answered, but not the one this method is for: most
		 * often a URL of another service (--stock's given as --orchestrator) */
		rc = ctl_error(
		    "could not %s: the daemon at %s%s does not serve this method (%s%s%s): "
		    "is it %s? (--%s names %s's address)",
		    action, strchr(c->o.url[svc], ',') != NULL ? "one of " : "", c->o.url[svc],
		    rpc_code_name(res->code), res->message[0] ? ": " : "", ctl_esc(res->message),
		    ctl_svc_daemons[svc], ctl_svc_names[svc], ctl_svc_daemons[svc]);
	} else if (res->reason[0] != '\0') {
		rc = ctl_error("could not %s: %s (%s): %s", action, rpc_code_name(res->code),
		    res->reason, res->message);
	} else {
		rc = ctl_error(
		    "could not %s: %s: %s", action, rpc_code_name(res->code), res->message);
	}
	rpc_result_clear(res);
	return rc;
}

/* ctl_bad_reply reports a reply payload that did not decode. */
int ctl_bad_reply(ctl_ctx *c, ctl_svc svc, const char *what)
{
	return ctl_error(
	    "malformed %s reply from %s at %s", what, ctl_svc_names[svc], c->o.url[svc]);
}

/* ctl_saga_ok is true when a decoded saga has the parts the CLI prints. */
bool ctl_saga_ok(const Sagas__V1__Saga *s)
{
	return s != NULL && s->order != NULL;
}

/* tries of a keyed call (StartSaga, Deposit) before giving up on transient
 * failures */
#define CTL_KEYED_TRIES 3

/* ctl_key fills `id` with the call's idempotency key: --id when given (it
 * must be a canonical lowercase UUID), else a new random one, so that the
 * call is harmless even if it is delivered twice. Returns 0, or the usage
 * exit code after printing the error. */
int ctl_key(ctl_ctx *c, char id[VALID_UUID_LEN + 1])
{
	if (c->o.id[0] == '\0' && !c->id_given) {
		saga_id_new(id);
		c->own_key = true;
		return 0;
	}
	if (!valid_uuid(c->o.id))
		return ctl_usage(c->cmd,
		    "invalid --id \"%s\": expected a canonical lowercase UUID "
		    "(8-4-4-4-12 hex digits)",
		    c->o.id);
	memcpy(id, c->o.id, VALID_UUID_LEN + 1);
	return 0;
}

/* ctl_key_use_of tells who used the key of a keyed call that took `tries`
 * tries and whose reply said the key was `used_before` (StartSaga's
 * created false, Deposit's duplicate true). */
ctl_key_use ctl_key_use_of(const ctl_ctx *c, bool used_before, int tries)
{
	if (!used_before)
		return CTL_KEY_NEW;
	if (tries <= 1)
		return CTL_KEY_OLD;
	return c->own_key ? CTL_KEY_OURS : CTL_KEY_MAYBE;
}

/* ctl_call_keyed is ctl_call for a call that carries its own idempotency
 * key: a transient failure (no reply, DEADLINE_EXCEEDED, UNAVAILABLE; rule 3
 * of saga-semantics.md) is re-sent as it is, up to CTL_KEYED_TRIES tries
 * 100 ms, 200 ms, ... apart, so that the outcome of a call whose reply was
 * lost is settled instead of left unknown. *tries is how many were sent.
 * Returns as ctl_call (after the last try, c->transient says whether the
 * outcome is still unknown). */
int ctl_call_keyed(ctl_ctx *c, ctl_svc svc, const char *method, const ProtobufCMessage *req,
    const char *action, int64_t timeout_ms, rpc_result *res, int *tries)
{
	int rc = CTL_EXIT_ERROR;
	for (int attempt = 1; attempt <= CTL_KEYED_TRIES; attempt++) {
		bool last = attempt == CTL_KEYED_TRIES;
		*tries = attempt;
		rc = ctl_call(c, svc, method, req, action, timeout_ms, !last, res);
		if (rc != -1)
			break;
		struct timespec pause = {.tv_sec = 0, .tv_nsec = 100000000L * attempt};
		nanosleep(&pause, NULL);
	}
	return rc;
}
