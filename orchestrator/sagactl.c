/* sagactl: the command-line client of the saga orchestrator, and the admin
 * client of the stock and payment participants.
 *
 *   sagactl [GLOBAL OPTIONS] VERB [ARGS] [OPTIONS]
 *
 * Global options may come before or after the verb; verb options anywhere
 * after the verb (GNU getopt permutes; "--" ends the options). Every verb is
 * parsed with config_load from one table: the global rows plus its own.
 *
 * Exit status: 0 success (a saga that was started and then CANCELLED is a
 * success: the outcome is data); 1 an error (RPC error, unreachable service,
 * malformed reply, --wait timed out); 2 a usage error (printed before any
 * call). Human output goes to stdout as aligned tables; with --json, exactly
 * one JSON object or array on one line. Errors go to stderr as
 * "sagactl: error: <message>".
 *
 * Protobuf lives here because this file is the CLI's codec: every reply
 * payload is unpacked with the NULL allocator, checked for NULL and freed.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "clock.h"
#include "config.h"
#include "log.h"
#include "rpc.h"
#include "tls.h"
#include "saga.h"
#include "status.h"
#include "valid.h"
#include "version.h"

#include "sagas/v1/admin.pb-c.h"
#include "sagas/v1/health.pb-c.h"
#include "sagas/v1/orchestrator.pb-c.h"
#include "sagas/v1/payment.pb-c.h"
#include "sagas/v1/stock.pb-c.h"

enum {
	CTL_EXIT_OK = 0,
	CTL_EXIT_ERROR = 1,
	CTL_EXIT_USAGE = 2,
};

#define CTL_POLL_MS          20     /* --wait asks again no sooner than this */
#define CTL_WAIT_CALL_MS     10000  /* longest wait of one WaitSaga call */
#define CTL_WAIT_OVERRUN_MS  500    /* a wait gives up at most this late */
#define CTL_POLL_MIN_CALL_MS 100    /* shortest timeout of one poll */
#define CTL_LIST_LIMIT_MAX   10000  /* the orchestrator's largest page */
#define CTL_MAX_ARGS         256    /* positional arguments of one verb */
#define CTL_FAULT_DELAY_MAX  600000 /* the Admin service's largest delay_ms */

/* The services sagactl talks to. */
typedef enum ctl_svc {
	CTL_SVC_ORCHESTRATOR = 0,
	CTL_SVC_STOCK = 1,
	CTL_SVC_PAYMENT = 2,
	CTL_SVC_COUNT = 3,
} ctl_svc;

static const char *const ctl_svc_names[CTL_SVC_COUNT] = {"orchestrator", "stock", "payment"};

/* Every option of every verb; config_load fills the rows of the verb's table. */
typedef struct ctl_opts {
	char url[CTL_SVC_COUNT][CONFIG_STR_MAX];
	int64_t timeout_ms;
	bool json;
	char id[CONFIG_STR_MAX];
	bool wait;
	int64_t wait_timeout_ms;
	char state[CONFIG_STR_MAX];
	int64_t limit;
	bool attention;
	bool reservations;
	bool charges;
	char method[CONFIG_STR_MAX];
	int64_t count;
	int64_t delay_ms;
	char tls_cert[CONFIG_STR_MAX];
	char tls_key[CONFIG_STR_MAX];
	char tls_ca[CONFIG_STR_MAX];
} ctl_opts;

typedef struct ctl_ctx ctl_ctx;

/* One verb: its option table, its positional arguments and its action. */
typedef struct ctl_cmd {
	const char *name;     /* "start", "stock set" */
	const char *synopsis; /* positional part, for the verb list */
	const char *brief;    /* one line for the verb list */
	const char *usage;
	const char *summary;
	const config_opt *opts;
	size_t nopts;
	const char *const *args; /* names of the positional arguments */
	int (*run)(ctl_ctx *c, char **args);
} ctl_cmd;

struct ctl_ctx {
	ctl_opts o;
	const ctl_cmd *cmd;
	rpc_client *client[CTL_SVC_COUNT];
	tls_conf *tls[CTL_SVC_COUNT]; /* of a tls+tcp:// URL */
	bool transient; /* the last failed ctl_call got no answer, DEADLINE_EXCEEDED or
	                   UNAVAILABLE: its outcome is unknown */
	bool id_given;  /* --id was on the command line (even as "") */
	bool own_key;   /* ctl_key made the call's key: nobody else has it */
};

/* ---- option tables ---- */

#define CTL_OPT_GLOBAL                                                                             \
	{"orchestrator", "SAGA_ORCHESTRATOR_URL", CONFIG_STR, "tcp://127.0.0.1:7101", 0, 0,        \
	    offsetof(ctl_opts, url[CTL_SVC_ORCHESTRATOR]), "orchestrator URL", "URL"},             \
	    {"stock", "SAGA_STOCK_URL", CONFIG_STR, "tcp://127.0.0.1:7102", 0, 0,                  \
	        offsetof(ctl_opts, url[CTL_SVC_STOCK]), "stock service URL", "URL"},               \
	    {"payment", "SAGA_PAYMENT_URL", CONFIG_STR, "tcp://127.0.0.1:7103", 0, 0,              \
	        offsetof(ctl_opts, url[CTL_SVC_PAYMENT]), "payment service URL", "URL"},           \
	    {"timeout", NULL, CONFIG_INT, "5000", 1, 3600000, offsetof(ctl_opts, timeout_ms),      \
	        "timeout of each call", "MS"},                                                     \
	    {"tls-cert", "SAGACTL_TLS_CERT", CONFIG_STR, "", 0, 0, offsetof(ctl_opts, tls_cert),   \
	        "client certificate (PEM) for tls+tcp:// URLs: its CA is its role", "FILE"},       \
	    {"tls-key", "SAGACTL_TLS_KEY", CONFIG_STR, "", 0, 0, offsetof(ctl_opts, tls_key),      \
	        "the private key of --tls-cert (PEM)", "FILE"},                                    \
	    {"tls-ca", "SAGACTL_TLS_CA", CONFIG_STR, "", 0, 0, offsetof(ctl_opts, tls_ca),         \
	        "the CA (PEM) that signs the daemons' certificates", "FILE"},                      \
	{                                                                                          \
		"json", NULL, CONFIG_BOOL, NULL, 0, 0, offsetof(ctl_opts, json),                   \
		    "print one JSON value on one line", NULL                                       \
	}

#define CTL_NELEM(a) (sizeof(a) / sizeof((a)[0]))

static const config_opt ctl_opts_global[] = {CTL_OPT_GLOBAL};

static const config_opt ctl_opts_wait[] = {
    CTL_OPT_GLOBAL,
    {"wait-timeout", NULL, CONFIG_INT, "30000", 1, 86400000, offsetof(ctl_opts, wait_timeout_ms),
        "give up waiting after this long (exit 1)", "MS"},
};

static const config_opt ctl_opts_start[] = {
    CTL_OPT_GLOBAL,
    {"id", NULL, CONFIG_STR, NULL, 0, 0, offsetof(ctl_opts, id),
        "saga id, a canonical lowercase UUID (default: a new random one)", "UUID"},
    {"wait", NULL, CONFIG_BOOL, NULL, 0, 0, offsetof(ctl_opts, wait),
        "wait until the saga is COMPLETED or CANCELLED", NULL},
    {"wait-timeout", NULL, CONFIG_INT, "30000", 1, 86400000, offsetof(ctl_opts, wait_timeout_ms),
        "give up waiting after this long (exit 1)", "MS"},
};

static const config_opt ctl_opts_deposit[] = {
    CTL_OPT_GLOBAL,
    {"id", NULL, CONFIG_STR, NULL, 0, 0, offsetof(ctl_opts, id),
        "deposit id (idempotency key), a canonical lowercase UUID (default: a new random "
        "one)",
        "UUID"},
};

static const config_opt ctl_opts_list[] = {
    CTL_OPT_GLOBAL,
    {"state", NULL, CONFIG_STR, NULL, 0, 0, offsetof(ctl_opts, state),
        "only sagas in this state (case-insensitive)", "STATE"},
    {"limit", NULL, CONFIG_INT, "0", 0, CTL_LIST_LIMIT_MAX, offsetof(ctl_opts, limit),
        "at most N sagas, newest first (0: the server's default, 100)", "N"},
    {"attention", NULL, CONFIG_BOOL, NULL, 0, 0, offsetof(ctl_opts, attention),
        "only sagas flagged for an operator", NULL},
};

/* ListStock and ListAccounts return at most this many rows per call. */
#define CTL_ROWS_LIMIT_MAX 10000

static const config_opt ctl_opts_stock_list[] = {
    CTL_OPT_GLOBAL,
    {"reservations", NULL, CONFIG_BOOL, NULL, 0, 0, offsetof(ctl_opts, reservations),
        "also list the newest reservation rows", NULL},
    {"limit", NULL, CONFIG_INT, "1000", 1, CTL_ROWS_LIMIT_MAX, offsetof(ctl_opts, limit),
        "at most N reservation rows, newest first", "N"},
};

static const config_opt ctl_opts_accounts[] = {
    CTL_OPT_GLOBAL,
    {"charges", NULL, CONFIG_BOOL, NULL, 0, 0, offsetof(ctl_opts, charges),
        "also list the newest charge rows", NULL},
    {"limit", NULL, CONFIG_INT, "1000", 1, CTL_ROWS_LIMIT_MAX, offsetof(ctl_opts, limit),
        "at most N charge rows, newest first", "N"},
};

static const config_opt ctl_opts_report[] = {
    CTL_OPT_GLOBAL,
    {"limit", NULL, CONFIG_INT, "1000", 1, CTL_ROWS_LIMIT_MAX, offsetof(ctl_opts, limit),
        "at most N charge rows, newest first (the counts cover every row)", "N"},
};

static const config_opt ctl_opts_fault_set[] = {
    CTL_OPT_GLOBAL,
    {"method", NULL, CONFIG_STR, NULL, 0, 0, offsetof(ctl_opts, method),
        "only calls of this short method or command name, e.g. ReserveStock (default: every "
        "method)",
        "M"},
    {"count", NULL, CONFIG_INT, "0", 0, INT32_MAX, offsetof(ctl_opts, count),
        "fire on the next N matching calls (0: always)", "N"},
    {"delay", NULL, CONFIG_INT, "0", 0, CTL_FAULT_DELAY_MAX, offsetof(ctl_opts, delay_ms),
        "how long a delay fault holds each call", "MS"},
};

/* ---- small helpers ---- */

/* ctl_usage prints a usage error about the current verb and returns 2. */
static int ctl_usage(const ctl_cmd *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static int ctl_usage(const ctl_cmd *cmd, const char *fmt, ...)
{
	va_list ap;
	fputs("sagactl: error: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nhint: see 'sagactl %s%s--help'\n", cmd ? cmd->name : "", cmd ? " " : "");
	return CTL_EXIT_USAGE;
}

/* ctl_error prints "sagactl: error: <message>" and returns 1. */
static int ctl_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int ctl_error(const char *fmt, ...)
{
	va_list ap;
	fputs("sagactl: error: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return CTL_EXIT_ERROR;
}

/* ctl_parse_int reads a whole number with digits only (no sign, no spaces)
 * into *out. Returns 0, -EINVAL for bad text or -ERANGE outside min..max. */
static int ctl_parse_int(const char *text, int64_t min, int64_t max, int64_t *out)
{
	if (text[0] == '\0')
		return -EINVAL;
	int64_t v = 0;
	for (const char *p = text; *p != '\0'; p++) {
		if (*p < '0' || *p > '9')
			return -EINVAL;
		int d = *p - '0';
		if (v > (INT64_MAX - d) / 10)
			return -ERANGE;
		v = v * 10 + d;
	}
	if (v < min || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

/* ctl_iso_ms writes ms since the epoch as ISO-8601 UTC with milliseconds,
 * or "-" for 0. Returns buf (at least 32 bytes). */
static char *ctl_iso_ms(int64_t ms, char *buf, size_t len)
{
	if (ms <= 0) {
		snprintf(buf, len, "-");
		return buf;
	}
	time_t sec = (time_t)(ms / 1000);
	struct tm tm;
	if (gmtime_r(&sec, &tm) == NULL) {
		snprintf(buf, len, "%" PRId64, ms);
		return buf;
	}
	char when[24];
	strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf, len, "%s.%03dZ", when, (int)(ms % 1000));
	return buf;
}

/* ctl_money formats minor units; a small wrapper for readability. */
static char *ctl_money(int64_t minor, char *buf)
{
	return money_format(minor, buf, 32);
}

static const char *ctl_charge_status_name(int s)
{
	switch (s) {
	case SAGAS__V1__CHARGE_STATUS__CHARGE_STATUS_CHARGED:
		return "CHARGED";
	case SAGAS__V1__CHARGE_STATUS__CHARGE_STATUS_DECLINED:
		return "DECLINED";
	case SAGAS__V1__CHARGE_STATUS__CHARGE_STATUS_UNKNOWN_ACCOUNT:
		return "UNKNOWN_ACCOUNT";
	case SAGAS__V1__CHARGE_STATUS__CHARGE_STATUS_REFUNDED:
		return "REFUNDED";
	case SAGAS__V1__CHARGE_STATUS__CHARGE_STATUS_TOMBSTONE:
		return "TOMBSTONE";
	default:
		return "UNSPECIFIED";
	}
}

static const char *ctl_reservation_status_name(int s)
{
	switch (s) {
	case SAGAS__V1__RESERVATION_STATUS__RESERVATION_STATUS_RESERVED:
		return "RESERVED";
	case SAGAS__V1__RESERVATION_STATUS__RESERVATION_STATUS_OUT_OF_STOCK:
		return "OUT_OF_STOCK";
	case SAGAS__V1__RESERVATION_STATUS__RESERVATION_STATUS_UNKNOWN_SKU:
		return "UNKNOWN_SKU";
	case SAGAS__V1__RESERVATION_STATUS__RESERVATION_STATUS_RELEASED:
		return "RELEASED";
	case SAGAS__V1__RESERVATION_STATUS__RESERVATION_STATUS_TOMBSTONE:
		return "TOMBSTONE";
	default:
		return "UNSPECIFIED";
	}
}

/* ---- tables (psql-like) ---- */

/* A table of strings; an allocation failure is sticky and reported by
 * ctl_table_print, so that callers check once. */
typedef struct ctl_table {
	size_t ncols;
	const char *const *head;
	const char *align; /* one 'l' or 'r' per column */
	char **cells;      /* nrows * ncols, malloc'd */
	size_t nrows;
	size_t cap;
	bool oom;
} ctl_table;

/* ctl_table_row appends one row of t->ncols strings (copied). */
static void ctl_table_row(ctl_table *t, ...)
{
	if (t->oom)
		return;
	if (t->nrows == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 16;
		char **cells = realloc(t->cells, cap * t->ncols * sizeof *cells);
		if (cells == NULL) {
			t->oom = true;
			return;
		}
		t->cells = cells;
		t->cap = cap;
	}
	char **row = t->cells + t->nrows * t->ncols;
	va_list ap;
	va_start(ap, t);
	for (size_t i = 0; i < t->ncols; i++) {
		const char *s = va_arg(ap, const char *);
		row[i] = strdup(s ? s : "");
		if (row[i] == NULL)
			t->oom = true;
	}
	va_end(ap);
	t->nrows++;
}

/* ctl_width counts the code points of UTF-8 text (its width in a terminal,
 * near enough for names and numbers). */
static size_t ctl_width(const char *s)
{
	size_t n = 0;
	for (; *s != '\0'; s++)
		if (((unsigned char)*s & 0xc0) != 0x80)
			n++;
	return n;
}

static void ctl_pad(FILE *out, size_t n)
{
	while (n-- > 0)
		fputc(' ', out);
}

static void ctl_cell(FILE *out, const char *s, size_t width, char align, bool last)
{
	size_t w = ctl_width(s);
	size_t pad = width > w ? width - w : 0;
	fputc(' ', out);
	if (align == 'r')
		ctl_pad(out, pad);
	fputs(s, out);
	if (align != 'r' && !last)
		ctl_pad(out, pad);
	fputs(last ? "\n" : " |", out);
}

/* ctl_table_print writes the table as psql does, with a "(N rows)" footer.
 * Returns 0, or -ENOMEM when a row could not be stored. */
static int ctl_table_print(const ctl_table *t, FILE *out)
{
	if (t->oom)
		return -ENOMEM;
	size_t width[16] = {0};
	if (t->ncols > CTL_NELEM(width))
		return -EINVAL;
	for (size_t c = 0; c < t->ncols; c++) {
		width[c] = ctl_width(t->head[c]);
		for (size_t r = 0; r < t->nrows; r++) {
			size_t w = ctl_width(t->cells[r * t->ncols + c]);
			if (w > width[c])
				width[c] = w;
		}
	}
	for (size_t c = 0; c < t->ncols; c++)
		ctl_cell(out, t->head[c], width[c], 'l', c + 1 == t->ncols);
	for (size_t c = 0; c < t->ncols; c++) {
		for (size_t i = 0; i < width[c] + 2; i++)
			fputc('-', out);
		if (c + 1 < t->ncols)
			fputc('+', out);
	}
	fputc('\n', out);
	for (size_t r = 0; r < t->nrows; r++)
		for (size_t c = 0; c < t->ncols; c++)
			ctl_cell(out, t->cells[r * t->ncols + c], width[c], t->align[c],
			    c + 1 == t->ncols);
	fprintf(out, "(%zu %s)\n", t->nrows, t->nrows == 1 ? "row" : "rows");
	return 0;
}

static void ctl_table_fini(ctl_table *t)
{
	for (size_t i = 0; i < t->nrows * t->ncols; i++)
		free(t->cells[i]);
	free(t->cells);
	t->cells = NULL;
	t->nrows = t->cap = 0;
}

/* ctl_table_done prints then frees a table; returns an exit code. */
static int ctl_table_done(ctl_table *t)
{
	int rc = ctl_table_print(t, stdout);
	ctl_table_fini(t);
	if (rc != 0)
		return ctl_error("could not format the table: out of memory");
	return CTL_EXIT_OK;
}

/* ---- JSON ---- */

/* ctl_json_print writes `j` on one line to stdout and drops the reference.
 * A NULL `j` (a failed json_pack) is an error. Returns an exit code. */
static int ctl_json_print(json_t *j)
{
	if (j == NULL)
		return ctl_error("could not build the JSON output (out of memory or bad UTF-8 "
		                 "in a reply)");
	int rc = json_dumpf(j, stdout, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(j);
	if (rc != 0)
		return ctl_error("could not write the JSON output");
	fputc('\n', stdout);
	return CTL_EXIT_OK;
}

/* ctl_json_append appends `v` (stolen) to array `a`; false when either is
 * NULL or the append failed. */
static bool ctl_json_append(json_t *a, json_t *v)
{
	if (a == NULL || v == NULL) {
		json_decref(v);
		return false;
	}
	return json_array_append_new(a, v) == 0;
}

/* A saga with its order; the shape shared by start, get, list and report. */
static json_t *ctl_saga_json(const Sagas__V1__Saga *s)
{
	char amount[32], created[32], updated[32];
	const Sagas__V1__Order *o = s->order;
	return json_pack("{s:s, s:s, s:s, s:s, s:s, s:i, s:I, s:s, s:b, s:I, s:i, s:I, s:s, s:I, "
	                 "s:s, s:I, s:I}",
	    "saga_id", s->saga_id, "state", saga_state_name((saga_state)s->state), "reason",
	    s->reason, "customer", o->customer, "sku", o->sku, "qty", (int)o->qty, "amount_minor",
	    (json_int_t)o->amount, "amount", ctl_money(o->amount, amount), "attention",
	    (int)s->attention, "version", (json_int_t)s->version, "attempts", (int)s->attempts,
	    "created_unix_ms", (json_int_t)s->created_unix_ms, "created_at",
	    ctl_iso_ms(s->created_unix_ms, created, sizeof created), "updated_unix_ms",
	    (json_int_t)s->updated_unix_ms, "updated_at",
	    ctl_iso_ms(s->updated_unix_ms, updated, sizeof updated), "step_deadline_unix_ms",
	    (json_int_t)s->step_deadline_unix_ms, "next_attempt_unix_ms",
	    (json_int_t)s->next_attempt_unix_ms);
}

/* ---- RPC ---- */

/* ctl_client returns the (lazily opened) client of `svc`, or NULL after
 * printing an error; *rc is the exit code then. */
static rpc_client *ctl_client(ctl_ctx *c, ctl_svc svc, int *rc)
{
	if (c->client[svc] != NULL)
		return c->client[svc];
	const char *url = c->o.url[svc];
	if (!rpc_url_ok(url)) {
		*rc = ctl_usage(c->cmd,
		    "invalid --%s URL \"%s\": expected tls+tcp://HOST:PORT, tcp://HOST:PORT or "
		    "ipc://PATH",
		    ctl_svc_names[svc], url);
		return NULL;
	}
	if (tls_url(url)) {
		char err[512];
		tls_files f = {.cert = c->o.tls_cert, .key = c->o.tls_key, .ca = c->o.tls_ca};
		if (!c->o.tls_ca[0]) {
			*rc = ctl_usage(c->cmd,
			    "--%s %s is a TLS URL: give --tls-ca (and --tls-cert, --tls-key for a "
			    "role; docs/security.md)",
			    ctl_svc_names[svc], url);
			return NULL;
		}
		if (tls_client_new(&c->tls[svc], url, &f, err, sizeof err) != 0) {
			*rc = ctl_usage(c->cmd, "%s", err);
			return NULL;
		}
	}
	/* no nng resend: sagactl re-sends only the calls that carry their own
	 * idempotency key (StartSaga's saga id, Deposit's deposit id), itself */
	rpc_client_opts opts = {.resend_ms = 0, .connect_now = true, .tls = c->tls[svc]};
	int err = rpc_client_open(&c->client[svc], url, &opts);
	if (err == -ECONNREFUSED) {
		*rc = ctl_error("could not reach %s at %s: connection refused (is %s running?)",
		    ctl_svc_names[svc], url,
		    svc == CTL_SVC_ORCHESTRATOR ? "orchestratord"
		        : svc == CTL_SVC_STOCK  ? "stockd"
		                                : "paymentd");
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
			    "could not reach %s at %s: the TLS handshake failed (does it "
			    "trust the CA of --tls-cert, a CA of the role the listener "
			    "serves, and --tls-ca its certificate? docs/security.md)",
			    ctl_svc_names[svc], url);
		c->client[svc] = NULL;
		return NULL;
	}
	if (err == -EIO && !tls_url(url)) {
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
static int ctl_call(ctl_ctx *c, ctl_svc svc, const char *method, const ProtobufCMessage *req,
    const char *action, int64_t timeout_ms, bool quiet, rpc_result *res)
{
	int rc = CTL_EXIT_ERROR;
	memset(res, 0, sizeof *res);
	c->transient = false;
	rpc_client *cl = ctl_client(c, svc, &rc);
	if (cl == NULL)
		return rc;
	int err = rpc_call(cl, method, req, timeout_ms, res);
	if (err != 0)
		return ctl_error("could not %s: could not send the request to %s: %s", action,
		    ctl_svc_names[svc], strerror(-err));
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
static int ctl_bad_reply(ctl_ctx *c, ctl_svc svc, const char *what)
{
	return ctl_error(
	    "malformed %s reply from %s at %s", what, ctl_svc_names[svc], c->o.url[svc]);
}

/* ctl_saga_ok is true when a decoded saga has the parts the CLI prints. */
static bool ctl_saga_ok(const Sagas__V1__Saga *s)
{
	return s != NULL && s->order != NULL;
}

/* ---- human output of sagas ---- */

/* Who used a keyed call's key (StartSaga's saga id, Deposit's deposit id),
 * from the reply's "new" or "already existed" and the tries it took
 * (ctl_key_use_of). */
typedef enum ctl_key_use {
	CTL_KEY_NEW,   /* this call made it */
	CTL_KEY_OLD,   /* it existed before this command's only try */
	CTL_KEY_OURS,  /* it existed at a re-send, and the key was sagactl's own:
	                  this command's earlier try made it */
	CTL_KEY_MAYBE, /* it existed at a re-send, and the key was --id: this
	                  command's earlier try or an earlier call made it */
} ctl_key_use;

/* ctl_saga_print prints one saga as aligned lines; `created` is -1 (no
 * created line: get, wait, retry) or the ctl_key_use of a StartSaga. */
static void ctl_saga_print(const Sagas__V1__Saga *s, int created)
{
	char amount[32], t1[32], t2[32], t3[32], t4[32];
	const Sagas__V1__Order *o = s->order;
	printf("saga_id       %s\n", s->saga_id);
	printf("state         %s\n", saga_state_name((saga_state)s->state));
	printf("reason        %s\n", s->reason[0] ? s->reason : "-");
	printf("customer      %s\n", o->customer);
	printf("sku           %s\n", o->sku);
	printf("qty           %d\n", (int)o->qty);
	printf("amount        %s\n", ctl_money(o->amount, amount));
	printf("attention     %s\n", s->attention ? "yes" : "no");
	printf("version       %" PRId64 "\n", (int64_t)s->version);
	printf("attempts      %d\n", (int)s->attempts);
	printf("created_at    %s\n", ctl_iso_ms(s->created_unix_ms, t1, sizeof t1));
	printf("updated_at    %s\n", ctl_iso_ms(s->updated_unix_ms, t2, sizeof t2));
	printf("step_deadline %s\n", ctl_iso_ms(s->step_deadline_unix_ms, t3, sizeof t3));
	printf("next_attempt  %s\n", ctl_iso_ms(s->next_attempt_unix_ms, t4, sizeof t4));
	if (created == CTL_KEY_NEW)
		printf("created       yes\n");
	else if (created == CTL_KEY_OLD)
		printf("created       no (it already existed)\n");
	else if (created == CTL_KEY_OURS)
		printf("created       yes (the first reply was lost; the call re-sent with its "
		       "id found the saga)\n");
	else if (created == CTL_KEY_MAYBE)
		printf("created       no (it existed when the call was re-sent after a lost reply: "
		       "this command's first try or an earlier call with this --id made it)\n");
}

/* ---- verbs ---- */

/* ctl_parse_name validates CUSTOMER or SKU; returns 0 or a usage exit code. */
static int ctl_parse_name(ctl_ctx *c, const char *what, const char *text)
{
	if (valid_name(text))
		return 0;
	return ctl_usage(c->cmd,
	    "invalid %s \"%s\": expected 1..%d bytes of UTF-8 without control characters", what,
	    text, VALID_NAME_MAX);
}

/* ctl_parse_amount reads AMOUNT strictly; returns 0 or a usage exit code. */
static int ctl_parse_amount(ctl_ctx *c, const char *text, int64_t *out)
{
	int err = money_parse(text, false, out);
	if (err == 0)
		return 0;
	if (err == -ERANGE)
		return ctl_usage(c->cmd, "invalid AMOUNT \"%s\": out of range 0.01..%lld.00", text,
		    VALID_AMOUNT_MAX / 100);
	return ctl_usage(c->cmd,
	    "invalid AMOUNT \"%s\": expected a decimal in major units with at most two "
	    "decimals, e.g. 12.50",
	    text);
}

/* ctl_wait waits until saga `id` is terminal with WaitSaga calls (a long
 * poll: each waits up to CTL_WAIT_CALL_MS on the orchestrator), until
 * `deadline` (clock_mono_ms) at the latest. Returns 0
 * with the final reply in *out (free it), or an exit code after printing an
 * error (an RPC error, or --wait-timeout passed). */
static int ctl_wait(ctl_ctx *c, const char *id, int64_t deadline, Sagas__V1__WaitSagaReply **out)
{
	const char *method = "/sagas.v1.Orchestrator/WaitSaga";
	saga_state last = SAGA_STATE_UNSPECIFIED;
	bool answered_last = false; /* did the latest call get a reply? */
	Sagas__V1__WaitSagaRequest req = SAGAS__V1__WAIT_SAGA_REQUEST__INIT;
	req.saga_id = (char *)id;
	for (;;) {
		int64_t began = clock_mono_ms(), left = deadline - began;
		int64_t wait = left < CTL_WAIT_CALL_MS ? left : CTL_WAIT_CALL_MS;
		req.wait_ms = (int32_t)(wait > 1 ? wait : 1);
		/* the call's deadline leaves the orchestrator time to answer,
		 * but never runs far past --wait-timeout when it does not */
		int64_t t = req.wait_ms
		    + (c->o.timeout_ms > CTL_POLL_MIN_CALL_MS ? c->o.timeout_ms
		                                              : CTL_POLL_MIN_CALL_MS);
		if (t > left + CTL_WAIT_OVERRUN_MS)
			t = left + CTL_WAIT_OVERRUN_MS;
		rpc_result res;
		int rc = ctl_call(
		    c, CTL_SVC_ORCHESTRATOR, method, &req.base, "wait for saga", t, true, &res);
		if (rc > 0)
			return rc;
		answered_last = rc == 0;
		if (rc == 0) {
			Sagas__V1__WaitSagaReply *rep = sagas__v1__wait_saga_reply__unpack(
			    NULL, res.payload_len, res.payload);
			rpc_result_clear(&res);
			if (rep == NULL || !ctl_saga_ok(rep->saga)) {
				if (rep != NULL)
					sagas__v1__wait_saga_reply__free_unpacked(rep, NULL);
				return ctl_bad_reply(c, CTL_SVC_ORCHESTRATOR, "WaitSaga");
			}
			last = (saga_state)rep->saga->state;
			if (saga_is_terminal(last)) {
				*out = rep;
				return 0;
			}
			sagas__v1__wait_saga_reply__free_unpacked(rep, NULL);
		}
		/* rc < 0: the orchestrator did not answer in time; keep waiting */
		left = deadline - clock_mono_ms();
		if (left <= 0 && !answered_last)
			return ctl_error(
			    "saga %s: the orchestrator at %s stopped answering while "
			    "waiting (last seen %s); the saga resumes when it is back, "
			    "see 'sagactl get %s'",
			    id, c->o.url[CTL_SVC_ORCHESTRATOR],
			    last == SAGA_STATE_UNSPECIFIED ? "no reply" : saga_state_name(last),
			    id);
		if (left <= 0)
			return ctl_error("saga %s did not finish within %" PRId64
			                 " ms (last seen %s); it goes on, see 'sagactl get %s'",
			    id, c->o.wait_timeout_ms,
			    last == SAGA_STATE_UNSPECIFIED ? "no reply" : saga_state_name(last),
			    id);
		/* an answer that came back at once (the orchestrator holds too
		 * many waits, or was unreachable): pause before asking again */
		if (clock_mono_ms() - began < CTL_POLL_MS) {
			clock_sleep_us((left < CTL_POLL_MS ? left : CTL_POLL_MS) * 1000);
		}
	}
}

/* tries of a keyed call (StartSaga, Deposit) before giving up on transient
 * failures */
#define CTL_KEYED_TRIES 3

/* ctl_key fills `id` with the call's idempotency key: --id when given (it
 * must be a canonical lowercase UUID), else a new random one, so that the
 * call is harmless even if it is delivered twice. Returns 0, or the usage
 * exit code after printing the error. */
static int ctl_key(ctl_ctx *c, char id[VALID_UUID_LEN + 1])
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

/* ctl_call_keyed is ctl_call for a call that carries its own idempotency
 * key: a transient failure (no reply, DEADLINE_EXCEEDED, UNAVAILABLE; rule 3
 * of saga-semantics.md) is re-sent as it is, up to CTL_KEYED_TRIES tries
 * 100 ms, 200 ms, ... apart, so that the outcome of a call whose reply was
 * lost is settled instead of left unknown. *tries is how many were sent.
 * Returns as ctl_call (after the last try, c->transient says whether the
 * outcome is still unknown). */
/* ctl_key_use_of tells who used the key of a keyed call that took `tries`
 * tries and whose reply said the key was `used_before` (StartSaga's
 * created false, Deposit's duplicate true). */
static ctl_key_use ctl_key_use_of(const ctl_ctx *c, bool used_before, int tries)
{
	if (!used_before)
		return CTL_KEY_NEW;
	if (tries <= 1)
		return CTL_KEY_OLD;
	return c->own_key ? CTL_KEY_OURS : CTL_KEY_MAYBE;
}

static int ctl_call_keyed(ctl_ctx *c, ctl_svc svc, const char *method, const ProtobufCMessage *req,
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

static int ctl_start(ctl_ctx *c, char **args)
{
	int rc;
	int64_t qty = 0, amount = 0;
	if ((rc = ctl_parse_name(c, "CUSTOMER", args[0])) != 0
	    || (rc = ctl_parse_name(c, "SKU", args[1])) != 0)
		return rc;
	int err = ctl_parse_int(args[2], 1, VALID_QTY_MAX, &qty);
	if (err == -ERANGE)
		return ctl_usage(
		    c->cmd, "invalid QTY \"%s\": out of range 1..%d", args[2], VALID_QTY_MAX);
	if (err != 0)
		return ctl_usage(c->cmd, "invalid QTY \"%s\": expected a whole number 1..%d",
		    args[2], VALID_QTY_MAX);
	if ((rc = ctl_parse_amount(c, args[3], &amount)) != 0)
		return rc;
	char id[VALID_UUID_LEN + 1];
	if ((rc = ctl_key(c, id)) != 0)
		return rc;

	Sagas__V1__Order order = SAGAS__V1__ORDER__INIT;
	order.customer = args[0];
	order.sku = args[1];
	order.qty = (int32_t)qty;
	order.amount = amount;
	Sagas__V1__StartSagaRequest req = SAGAS__V1__START_SAGA_REQUEST__INIT;
	req.saga_id = id;
	req.order = &order;
	/* --wait: the StartSaga itself waits for the end (wait_ms), and
	 * WaitSaga calls go on waiting when that was not long enough */
	int64_t began = clock_mono_ms();
	if (c->o.wait)
		req.wait_ms
		    = (int32_t)(c->o.wait_timeout_ms < CTL_WAIT_CALL_MS ? c->o.wait_timeout_ms
		                                                        : CTL_WAIT_CALL_MS);
	rpc_result res;
	/* StartSaga is idempotent by saga id, so a transient failure (no reply,
	 * UNAVAILABLE) is retried with the same id: the outcome of a call whose
	 * reply was lost is settled instead of left unknown */
	int tries = 0;
	rc = ctl_call_keyed(c, CTL_SVC_ORCHESTRATOR, "/sagas.v1.Orchestrator/StartSaga", &req.base,
	    "start saga", c->o.timeout_ms + req.wait_ms, &res, &tries);
	if (rc != 0) {
		/* only when the outcome is unknown: a refusal is final */
		if (c->transient)
			fprintf(stderr,
			    "hint: the saga id was %s; 'sagactl get %s' tells whether it started, "
			    "and the same command with --id %s retries it safely\n",
			    id, id, id);
		return rc;
	}
	Sagas__V1__StartSagaReply *rep
	    = sagas__v1__start_saga_reply__unpack(NULL, res.payload_len, res.payload);
	rpc_result_clear(&res);
	Sagas__V1__WaitSagaReply *fin = NULL;
	if (rep == NULL || !ctl_saga_ok(rep->saga)) {
		rc = ctl_bad_reply(c, CTL_SVC_ORCHESTRATOR, "StartSaga");
		goto out_free_rep;
	}
	const Sagas__V1__Saga *shown = rep->saga;
	if (c->o.wait && !saga_is_terminal((saga_state)rep->saga->state)) {
		rc = ctl_wait(c, rep->saga->saga_id, began + c->o.wait_timeout_ms, &fin);
		if (rc != 0)
			goto out_free_rep;
		shown = fin->saga;
	}
	ctl_key_use use = ctl_key_use_of(c, !rep->created, tries);
	if (c->o.json) {
		rc = ctl_json_print(json_pack("{s:b, s:i, s:o}", "created",
		    use == CTL_KEY_NEW || use == CTL_KEY_OURS, "tries", tries, "saga",
		    ctl_saga_json(shown)));
	} else {
		ctl_saga_print(shown, (int)use);
		rc = CTL_EXIT_OK;
	}
	if (fin != NULL)
		sagas__v1__wait_saga_reply__free_unpacked(fin, NULL);
out_free_rep:
	if (rep != NULL)
		sagas__v1__start_saga_reply__free_unpacked(rep, NULL);
	return rc;
}

/* ctl_parse_id validates a saga id argument. */
static int ctl_parse_id(ctl_ctx *c, const char *text)
{
	if (valid_uuid(text))
		return 0;
	return ctl_usage(c->cmd,
	    "invalid ID \"%s\": expected a canonical lowercase UUID (8-4-4-4-12 hex digits)", text);
}

static int ctl_get(ctl_ctx *c, char **args)
{
	int rc = ctl_parse_id(c, args[0]);
	if (rc != 0)
		return rc;
	Sagas__V1__GetSagaRequest req = SAGAS__V1__GET_SAGA_REQUEST__INIT;
	req.saga_id = args[0];
	rpc_result res;
	rc = ctl_call(c, CTL_SVC_ORCHESTRATOR, "/sagas.v1.Orchestrator/GetSaga", &req.base,
	    "get saga", c->o.timeout_ms, false, &res);
	if (rc != 0)
		return rc;
	Sagas__V1__GetSagaReply *rep
	    = sagas__v1__get_saga_reply__unpack(NULL, res.payload_len, res.payload);
	rpc_result_clear(&res);
	if (rep == NULL || !ctl_saga_ok(rep->saga)) {
		rc = ctl_bad_reply(c, CTL_SVC_ORCHESTRATOR, "GetSaga");
		goto out_free_rep;
	}
	if (c->o.json) {
		rc = ctl_json_print(ctl_saga_json(rep->saga));
	} else {
		ctl_saga_print(rep->saga, -1);
		rc = CTL_EXIT_OK;
	}
out_free_rep:
	if (rep != NULL)
		sagas__v1__get_saga_reply__free_unpacked(rep, NULL);
	return rc;
}

/* ctl_wait_cmd: `sagactl wait ID`, the --wait of start for a saga that
 * runs already. */
static int ctl_wait_cmd(ctl_ctx *c, char **args)
{
	int rc = ctl_parse_id(c, args[0]);
	if (rc != 0)
		return rc;
	Sagas__V1__WaitSagaReply *fin = NULL;
	rc = ctl_wait(c, args[0], clock_mono_ms() + c->o.wait_timeout_ms, &fin);
	if (rc != 0)
		return rc;
	if (c->o.json) {
		rc = ctl_json_print(ctl_saga_json(fin->saga));
	} else {
		ctl_saga_print(fin->saga, -1);
		rc = CTL_EXIT_OK;
	}
	sagas__v1__wait_saga_reply__free_unpacked(fin, NULL);
	return rc;
}

/* ctl_list_sagas calls ListSagas. Returns 0 and *out (free it), or an exit
 * code after printing an error. */
static int ctl_list_sagas(
    ctl_ctx *c, saga_state state, int32_t limit, bool attention, Sagas__V1__ListSagasReply **out)
{
	Sagas__V1__ListSagasRequest req = SAGAS__V1__LIST_SAGAS_REQUEST__INIT;
	req.state = (Sagas__V1__SagaState)state;
	req.limit = limit;
	req.attention_only = attention;
	rpc_result res;
	int rc = ctl_call(c, CTL_SVC_ORCHESTRATOR, "/sagas.v1.Orchestrator/ListSagas", &req.base,
	    "list sagas", c->o.timeout_ms, false, &res);
	if (rc != 0)
		return rc;
	Sagas__V1__ListSagasReply *rep
	    = sagas__v1__list_sagas_reply__unpack(NULL, res.payload_len, res.payload);
	rpc_result_clear(&res);
	if (rep == NULL)
		return ctl_bad_reply(c, CTL_SVC_ORCHESTRATOR, "ListSagas");
	for (size_t i = 0; i < rep->n_sagas; i++) {
		if (!ctl_saga_ok(rep->sagas[i])) {
			sagas__v1__list_sagas_reply__free_unpacked(rep, NULL);
			return ctl_bad_reply(c, CTL_SVC_ORCHESTRATOR, "ListSagas");
		}
	}
	*out = rep;
	return 0;
}

static int ctl_list(ctl_ctx *c, char **args)
{
	saga_state state = SAGA_STATE_UNSPECIFIED;
	if (c->o.state[0] != '\0') {
		state = saga_state_parse(c->o.state);
		if (state == SAGA_STATE_UNSPECIFIED)
			return ctl_usage(c->cmd,
			    "invalid --state \"%s\": expected one of RESERVING, CHARGING, "
			    "SHIPPING, COMPLETED, REFUNDING, RELEASING, CANCELLED",
			    c->o.state);
	}
	Sagas__V1__ListSagasReply *rep = NULL;
	int rc = ctl_list_sagas(c, state, (int32_t)c->o.limit, c->o.attention, &rep);
	if (rc != 0)
		return rc;
	if (c->o.json) {
		json_t *a = json_array();
		bool ok = a != NULL;
		for (size_t i = 0; ok && i < rep->n_sagas; i++)
			ok = ctl_json_append(a, ctl_saga_json(rep->sagas[i]));
		if (!ok) {
			json_decref(a);
			a = NULL;
		}
		rc = ctl_json_print(a);
	} else {
		static const char *const head[] = {"saga_id", "state", "reason", "customer", "sku",
		    "qty", "amount", "attention", "updated_at"};
		ctl_table t = {.ncols = CTL_NELEM(head), .head = head, .align = "lllllrrll"};
		for (size_t i = 0; i < rep->n_sagas; i++) {
			const Sagas__V1__Saga *s = rep->sagas[i];
			char qty[16], amount[32], at[32];
			snprintf(qty, sizeof qty, "%d", (int)s->order->qty);
			ctl_table_row(&t, s->saga_id, saga_state_name((saga_state)s->state),
			    s->reason, s->order->customer, s->order->sku, qty,
			    ctl_money(s->order->amount, amount), s->attention ? "yes" : "",
			    ctl_iso_ms(s->updated_unix_ms, at, sizeof at));
		}
		rc = ctl_table_done(&t);
	}
	if (rep->truncated)
		fprintf(stderr,
		    "note: %zu sagas shown, more match: the reply is cut at one frame (about "
		    "1 MiB); use a smaller --limit or --state\n",
		    rep->n_sagas);
	sagas__v1__list_sagas_reply__free_unpacked(rep, NULL);
	return rc;
}

static int ctl_history(ctl_ctx *c, char **args)
{
	int rc = ctl_parse_id(c, args[0]);
	if (rc != 0)
		return rc;
	Sagas__V1__GetSagaHistoryRequest req = SAGAS__V1__GET_SAGA_HISTORY_REQUEST__INIT;
	req.saga_id = args[0];
	rpc_result res;
	rc = ctl_call(c, CTL_SVC_ORCHESTRATOR, "/sagas.v1.Orchestrator/GetSagaHistory", &req.base,
	    "get saga history", c->o.timeout_ms, false, &res);
	if (rc != 0)
		return rc;
	Sagas__V1__GetSagaHistoryReply *rep
	    = sagas__v1__get_saga_history_reply__unpack(NULL, res.payload_len, res.payload);
	rpc_result_clear(&res);
	if (rep == NULL)
		return ctl_bad_reply(c, CTL_SVC_ORCHESTRATOR, "GetSagaHistory");
	if (c->o.json) {
		json_t *a = json_array();
		bool ok = a != NULL;
		for (size_t i = 0; ok && i < rep->n_entries; i++) {
			const Sagas__V1__HistoryEntry *e = rep->entries[i];
			char at[32];
			ok = ctl_json_append(a,
			    json_pack("{s:I, s:I, s:s, s:s?, s:s, s:s, s:s}", "version",
			        (json_int_t)e->version, "at_unix_ms", (json_int_t)e->at_unix_ms,
			        "at", ctl_iso_ms(e->at_unix_ms, at, sizeof at), "from_state",
			        e->from_state == SAGAS__V1__SAGA_STATE__SAGA_STATE_UNSPECIFIED
			            ? NULL /* the start has no state before it */
			            : saga_state_name((saga_state)e->from_state),
			        "to_state", saga_state_name((saga_state)e->to_state), "event",
			        e->event, "reason", e->reason));
		}
		if (!ok) {
			json_decref(a);
			a = NULL;
		}
		rc = ctl_json_print(a);
	} else {
		static const char *const head[]
		    = {"version", "at", "transition", "event", "reason"};
		ctl_table t = {.ncols = CTL_NELEM(head), .head = head, .align = "rllll"};
		for (size_t i = 0; i < rep->n_entries; i++) {
			const Sagas__V1__HistoryEntry *e = rep->entries[i];
			char ver[24], at[32], tr[64];
			snprintf(ver, sizeof ver, "%" PRId64, (int64_t)e->version);
			snprintf(tr, sizeof tr, "%s -> %s",
			    e->from_state == SAGAS__V1__SAGA_STATE__SAGA_STATE_UNSPECIFIED
			        ? "-"
			        : saga_state_name((saga_state)e->from_state),
			    saga_state_name((saga_state)e->to_state));
			ctl_table_row(&t, ver, ctl_iso_ms(e->at_unix_ms, at, sizeof at), tr,
			    e->event, e->reason);
		}
		rc = ctl_table_done(&t);
	}
	sagas__v1__get_saga_history_reply__free_unpacked(rep, NULL);
	return rc;
}

static int ctl_stock_set(ctl_ctx *c, char **args)
{
	int rc = ctl_parse_name(c, "SKU", args[0]);
	if (rc != 0)
		return rc;
	int64_t on_hand = 0;
	int err = ctl_parse_int(args[1], 0, INT64_MAX, &on_hand);
	if (err != 0)
		return ctl_usage(
		    c->cmd, "invalid ON_HAND \"%s\": expected a whole number >= 0", args[1]);
	Sagas__V1__SetStockRequest req = SAGAS__V1__SET_STOCK_REQUEST__INIT;
	req.sku = args[0];
	req.on_hand = on_hand;
	rpc_result res;
	rc = ctl_call(c, CTL_SVC_STOCK, "/sagas.v1.Stock/SetStock", &req.base, "set stock",
	    c->o.timeout_ms, false, &res);
	if (rc != 0)
		return rc;
	Sagas__V1__SetStockReply *rep
	    = sagas__v1__set_stock_reply__unpack(NULL, res.payload_len, res.payload);
	rpc_result_clear(&res);
	if (rep == NULL)
		return ctl_bad_reply(c, CTL_SVC_STOCK, "SetStock");
	if (c->o.json) {
		rc = ctl_json_print(
		    json_pack("{s:s, s:I}", "sku", args[0], "on_hand", (json_int_t)rep->on_hand));
	} else {
		printf("%s on hand: %" PRId64 "\n", args[0], (int64_t)rep->on_hand);
		rc = CTL_EXIT_OK;
	}
	sagas__v1__set_stock_reply__free_unpacked(rep, NULL);
	return rc;
}

/* ctl_list_stock calls ListStock: the per-sku summary and, when
 * `reservations`, at most `limit` reservation rows, newest first. Returns 0
 * and *out (free it), or an exit code after printing an error. */
static int ctl_list_stock(
    ctl_ctx *c, bool reservations, int64_t limit, Sagas__V1__ListStockReply **out)
{
	Sagas__V1__ListStockRequest req = SAGAS__V1__LIST_STOCK_REQUEST__INIT;
	req.include_reservations = reservations;
	req.limit = reservations ? (int32_t)limit : 0;
	rpc_result res;
	int rc = ctl_call(c, CTL_SVC_STOCK, "/sagas.v1.Stock/ListStock", &req.base, "list stock",
	    c->o.timeout_ms, false, &res);
	if (rc != 0)
		return rc;
	*out = sagas__v1__list_stock_reply__unpack(NULL, res.payload_len, res.payload);
	rpc_result_clear(&res);
	if (*out == NULL)
		return ctl_bad_reply(c, CTL_SVC_STOCK, "ListStock");
	return 0;
}

/* ctl_truncated_note says that a listing shows only the newest rows. */
static void ctl_truncated_note(bool truncated, size_t shown)
{
	if (truncated)
		printf("(showing the newest %zu of more)\n", shown);
}

/* ctl_stock_item_json is the shape of one sku in `stock list` and `report`. */
static json_t *ctl_stock_item_json(const Sagas__V1__StockItem *it)
{
	return json_pack("{s:s, s:I, s:i, s:I}", "sku", it->sku, "on_hand", (json_int_t)it->on_hand,
	    "live_reservations", (int)it->live_reservations, "reserved_qty",
	    (json_int_t)it->reserved_qty);
}

/* ctl_stock_table adds the sku table of `rep` to stdout. */
static int ctl_stock_table(const Sagas__V1__ListStockReply *rep)
{
	static const char *const head[] = {"sku", "on_hand", "live_reservations", "reserved_qty"};
	ctl_table t = {.ncols = CTL_NELEM(head), .head = head, .align = "lrrr"};
	for (size_t i = 0; i < rep->n_items; i++) {
		const Sagas__V1__StockItem *it = rep->items[i];
		char oh[24], lr[16], rq[24];
		snprintf(oh, sizeof oh, "%" PRId64, (int64_t)it->on_hand);
		snprintf(lr, sizeof lr, "%d", (int)it->live_reservations);
		snprintf(rq, sizeof rq, "%" PRId64, (int64_t)it->reserved_qty);
		ctl_table_row(&t, it->sku, oh, lr, rq);
	}
	return ctl_table_done(&t);
}

static int ctl_stock_list(ctl_ctx *c, char **args)
{
	Sagas__V1__ListStockReply *rep = NULL;
	int rc = ctl_list_stock(c, c->o.reservations, c->o.limit, &rep);
	if (rc != 0)
		return rc;
	if (c->o.json) {
		json_t *items = json_array(), *resv = c->o.reservations ? json_array() : NULL;
		bool ok = items != NULL && (!c->o.reservations || resv != NULL);
		for (size_t i = 0; ok && i < rep->n_items; i++)
			ok = ctl_json_append(items, ctl_stock_item_json(rep->items[i]));
		for (size_t i = 0; ok && resv != NULL && i < rep->n_reservations; i++) {
			const Sagas__V1__Reservation *r = rep->reservations[i];
			ok = ctl_json_append(resv,
			    json_pack("{s:s, s:s, s:i, s:s}", "saga_id", r->saga_id, "sku", r->sku,
			        "qty", (int)r->qty, "status",
			        ctl_reservation_status_name(r->status)));
		}
		json_t *out = NULL;
		if (ok && resv != NULL)
			out = json_pack("{s:o, s:o, s:b}", "stock", items, "reservations", resv,
			    "reservations_truncated", (int)rep->reservations_truncated);
		else if (ok)
			out = json_pack("{s:o}", "stock", items);
		else {
			json_decref(items);
			json_decref(resv);
		}
		rc = ctl_json_print(out);
		goto out_free_rep;
	}
	rc = ctl_stock_table(rep);
	if (rc == 0 && c->o.reservations) {
		static const char *const head[] = {"saga_id", "sku", "qty", "status"};
		ctl_table t = {.ncols = CTL_NELEM(head), .head = head, .align = "llrl"};
		for (size_t i = 0; i < rep->n_reservations; i++) {
			const Sagas__V1__Reservation *r = rep->reservations[i];
			char qty[16];
			snprintf(qty, sizeof qty, "%d", (int)r->qty);
			ctl_table_row(
			    &t, r->saga_id, r->sku, qty, ctl_reservation_status_name(r->status));
		}
		printf("\n");
		rc = ctl_table_done(&t);
		if (rc == 0)
			ctl_truncated_note(rep->reservations_truncated, rep->n_reservations);
	}
out_free_rep:
	sagas__v1__list_stock_reply__free_unpacked(rep, NULL);
	return rc;
}

static int ctl_deposit(ctl_ctx *c, char **args)
{
	int rc;
	int64_t amount = 0;
	if ((rc = ctl_parse_name(c, "CUSTOMER", args[0])) != 0
	    || (rc = ctl_parse_amount(c, args[1], &amount)) != 0)
		return rc;
	char id[VALID_UUID_LEN + 1];
	if ((rc = ctl_key(c, id)) != 0)
		return rc;
	Sagas__V1__DepositRequest req = SAGAS__V1__DEPOSIT_REQUEST__INIT;
	req.customer = args[0];
	req.amount = amount;
	req.deposit_id = id;
	rpc_result res;
	/* keyed, so a transient failure (no reply, UNAVAILABLE) is re-sent with
	 * the same id, as StartSaga is: it adds once */
	int tries = 0;
	rc = ctl_call_keyed(c, CTL_SVC_PAYMENT, "/sagas.v1.Payment/Deposit", &req.base, "deposit",
	    c->o.timeout_ms, &res, &tries);
	if (rc != 0) {
		if (c->transient)
			fprintf(stderr,
			    "hint: the deposit id was %s; the same command with --id %s retries it "
			    "safely (it adds at most once)\n",
			    id, id);
		return rc;
	}
	Sagas__V1__DepositReply *rep
	    = sagas__v1__deposit_reply__unpack(NULL, res.payload_len, res.payload);
	rpc_result_clear(&res);
	if (rep == NULL)
		return ctl_bad_reply(c, CTL_SVC_PAYMENT, "Deposit");
	char a[32], b[32];
	ctl_key_use use = ctl_key_use_of(c, rep->duplicate, tries);
	if (c->o.json) {
		rc = ctl_json_print(json_pack("{s:s, s:s, s:I, s:s, s:I, s:s, s:b, s:b, s:i}",
		    "deposit_id", id, "customer", args[0], "amount_minor", (json_int_t)amount,
		    "amount", ctl_money(amount, a), "balance_minor", (json_int_t)rep->balance,
		    "balance", ctl_money(rep->balance, b), "duplicate", rep->duplicate ? 1 : 0,
		    "added", use == CTL_KEY_NEW || use == CTL_KEY_OURS, "tries", tries));
	} else if (use == CTL_KEY_OURS) {
		printf("deposited %s to %s; balance after it %s (deposit %s; the first reply was "
		       "lost, and the call re-sent with its id found it applied)\n",
		    ctl_money(amount, a), args[0], ctl_money(rep->balance, b), id);
		rc = CTL_EXIT_OK;
	} else if (use == CTL_KEY_MAYBE) {
		printf(
		    "deposit %s is applied (%s to %s), once: the call re-sent after a lost reply "
		    "found it applied by this command's first try or an earlier call with this "
		    "--id; balance after it %s\n",
		    id, ctl_money(amount, a), args[0], ctl_money(rep->balance, b));
		rc = CTL_EXIT_OK;
	} else if (use == CTL_KEY_OLD) {
		printf("deposit %s was already applied (%s to %s): nothing added; balance after it "
		       "%s\n",
		    id, ctl_money(amount, a), args[0], ctl_money(rep->balance, b));
		rc = CTL_EXIT_OK;
	} else {
		printf("deposited %s to %s; balance %s (deposit %s)\n", ctl_money(amount, a),
		    args[0], ctl_money(rep->balance, b), id);
		rc = CTL_EXIT_OK;
	}
	sagas__v1__deposit_reply__free_unpacked(rep, NULL);
	return rc;
}

/* ctl_list_accounts calls ListAccounts: every account with its aggregates
 * and, when `charges`, at most `limit` charge rows, newest first. Returns 0
 * and *out (free it), or an exit code after printing an error. */
static int ctl_list_accounts(
    ctl_ctx *c, bool charges, int64_t limit, Sagas__V1__ListAccountsReply **out)
{
	Sagas__V1__ListAccountsRequest req = SAGAS__V1__LIST_ACCOUNTS_REQUEST__INIT;
	req.include_charges = charges;
	req.limit = charges ? (int32_t)limit : 0;
	rpc_result res;
	int rc = ctl_call(c, CTL_SVC_PAYMENT, "/sagas.v1.Payment/ListAccounts", &req.base,
	    "list accounts", c->o.timeout_ms, false, &res);
	if (rc != 0)
		return rc;
	*out = sagas__v1__list_accounts_reply__unpack(NULL, res.payload_len, res.payload);
	rpc_result_clear(&res);
	if (*out == NULL)
		return ctl_bad_reply(c, CTL_SVC_PAYMENT, "ListAccounts");
	return 0;
}

/* ctl_accounts_json appends the accounts of `rep` to `accounts` and, when
 * `charges` is not NULL, its charge rows to `charges`; false on failure. */
static bool ctl_accounts_json(
    const Sagas__V1__ListAccountsReply *rep, json_t *accounts, json_t *charges)
{
	bool ok = accounts != NULL;
	for (size_t i = 0; ok && i < rep->n_accounts; i++) {
		const Sagas__V1__Account *a = rep->accounts[i];
		char b[32], ca[32];
		ok = ctl_json_append(accounts,
		    json_pack("{s:s, s:I, s:s, s:i, s:I, s:s}", "customer", a->customer,
		        "balance_minor", (json_int_t)a->balance, "balance",
		        ctl_money(a->balance, b), "charged_count", (int)a->charged_count,
		        "charged_amount_minor", (json_int_t)a->charged_amount, "charged_amount",
		        ctl_money(a->charged_amount, ca)));
	}
	for (size_t i = 0; ok && charges != NULL && i < rep->n_charges; i++) {
		const Sagas__V1__Charge *ch = rep->charges[i];
		char m[32];
		ok = ctl_json_append(charges,
		    json_pack("{s:s, s:s, s:I, s:s, s:s}", "saga_id", ch->saga_id, "customer",
		        ch->customer, "amount_minor", (json_int_t)ch->amount, "amount",
		        ctl_money(ch->amount, m), "status", ctl_charge_status_name(ch->status)));
	}
	return ok;
}

/* ctl_accounts_tables prints the account table of `rep` and, when
 * `charges`, its charge rows. */
static int ctl_accounts_tables(const Sagas__V1__ListAccountsReply *rep, bool charges)
{
	static const char *const ahead[] = {"customer", "balance", "charged", "charged_amount"};
	ctl_table t = {.ncols = CTL_NELEM(ahead), .head = ahead, .align = "lrrr"};
	for (size_t i = 0; i < rep->n_accounts; i++) {
		const Sagas__V1__Account *a = rep->accounts[i];
		char b[32], n[16], ca[32];
		snprintf(n, sizeof n, "%d", (int)a->charged_count);
		ctl_table_row(
		    &t, a->customer, ctl_money(a->balance, b), n, ctl_money(a->charged_amount, ca));
	}
	int rc = ctl_table_done(&t);
	if (rc != 0 || !charges)
		return rc;
	static const char *const chead[] = {"saga_id", "customer", "amount", "status"};
	ctl_table u = {.ncols = CTL_NELEM(chead), .head = chead, .align = "llrl"};
	for (size_t i = 0; i < rep->n_charges; i++) {
		const Sagas__V1__Charge *ch = rep->charges[i];
		char m[32];
		ctl_table_row(&u, ch->saga_id, ch->customer, ctl_money(ch->amount, m),
		    ctl_charge_status_name(ch->status));
	}
	printf("\n");
	rc = ctl_table_done(&u);
	if (rc == 0)
		ctl_truncated_note(rep->charges_truncated, rep->n_charges);
	return rc;
}

static int ctl_accounts(ctl_ctx *c, char **args)
{
	Sagas__V1__ListAccountsReply *rep = NULL;
	int rc = ctl_list_accounts(c, c->o.charges, c->o.limit, &rep);
	if (rc != 0)
		return rc;
	if (c->o.json) {
		json_t *accounts = json_array(), *charges = c->o.charges ? json_array() : NULL;
		bool ok = (!c->o.charges || charges != NULL)
		    && ctl_accounts_json(rep, accounts, charges);
		if (ok && charges != NULL) {
			rc = ctl_json_print(json_pack("{s:o, s:o, s:b}", "accounts", accounts,
			    "charges", charges, "charges_truncated", (int)rep->charges_truncated));
		} else if (ok) {
			rc = ctl_json_print(json_pack("{s:o}", "accounts", accounts));
		} else {
			json_decref(accounts);
			json_decref(charges);
			rc = ctl_json_print(NULL);
		}
	} else {
		rc = ctl_accounts_tables(rep, c->o.charges);
	}
	sagas__v1__list_accounts_reply__free_unpacked(rep, NULL);
	return rc;
}

/* Counts shown by `report`. */
typedef struct ctl_summary {
	int64_t by_state[SAGA_STATE_LAST + 1];
	int64_t sagas, attention, skus, live_reservations, accounts, charges, charged, refunded;
	bool truncated;
} ctl_summary;

static void ctl_summarize(ctl_summary *m, const Sagas__V1__ListSagasReply *sagas,
    const Sagas__V1__ListStockReply *stock, const Sagas__V1__ListAccountsReply *acc)
{
	memset(m, 0, sizeof *m);
	m->sagas = (int64_t)sagas->n_sagas;
	/* cut at the limit asked for, or earlier by the server to fit its
	 * reply in one frame (ListSagasReply.truncated) */
	m->truncated = sagas->truncated || sagas->n_sagas >= CTL_LIST_LIMIT_MAX;
	for (size_t i = 0; i < sagas->n_sagas; i++) {
		unsigned st = (unsigned)sagas->sagas[i]->state;
		if (st <= SAGA_STATE_LAST)
			m->by_state[st]++;
		if (sagas->sagas[i]->attention)
			m->attention++;
	}
	m->skus = (int64_t)stock->n_items;
	for (size_t i = 0; i < stock->n_items; i++)
		m->live_reservations += stock->items[i]->live_reservations;
	/* from the services' aggregates, not the (bounded) rows: exact
	 * however many sagas were recorded */
	m->accounts = (int64_t)acc->n_accounts;
	m->charges = acc->total_charges;
	for (size_t i = 0; i < acc->n_accounts; i++)
		m->charged += acc->accounts[i]->charged_count;
	m->refunded = acc->refunded_charges;
}

static json_t *ctl_summary_json(const ctl_summary *m)
{
	return json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, "
	                 "s:I, s:b}",
	    "sagas", (json_int_t)m->sagas, "reserving",
	    (json_int_t)m->by_state[SAGA_STATE_RESERVING], "charging",
	    (json_int_t)m->by_state[SAGA_STATE_CHARGING], "shipping",
	    (json_int_t)m->by_state[SAGA_STATE_SHIPPING], "completed",
	    (json_int_t)m->by_state[SAGA_STATE_COMPLETED], "refunding",
	    (json_int_t)m->by_state[SAGA_STATE_REFUNDING], "releasing",
	    (json_int_t)m->by_state[SAGA_STATE_RELEASING], "cancelled",
	    (json_int_t)m->by_state[SAGA_STATE_CANCELLED], "attention", (json_int_t)m->attention,
	    "skus", (json_int_t)m->skus, "live_reservations", (json_int_t)m->live_reservations,
	    "accounts", (json_int_t)m->accounts, "charges", (json_int_t)m->charges, "charged",
	    (json_int_t)m->charged, "refunded", (json_int_t)m->refunded, "truncated",
	    (int)m->truncated);
}

static int ctl_report_json(const Sagas__V1__ListSagasReply *sagas,
    const Sagas__V1__ListStockReply *stock, const Sagas__V1__ListAccountsReply *acc,
    const ctl_summary *m)
{
	json_t *js = json_array(), *jst = json_array(), *ja = json_array(), *jc = json_array();
	bool ok = js != NULL && jst != NULL;
	for (size_t i = 0; ok && i < sagas->n_sagas; i++)
		ok = ctl_json_append(js, ctl_saga_json(sagas->sagas[i]));
	for (size_t i = 0; ok && i < stock->n_items; i++)
		ok = ctl_json_append(jst, ctl_stock_item_json(stock->items[i]));
	ok = ok && ctl_accounts_json(acc, ja, jc);
	if (!ok) {
		json_decref(js);
		json_decref(jst);
		json_decref(ja);
		json_decref(jc);
		return ctl_json_print(NULL);
	}
	return ctl_json_print(json_pack("{s:o, s:o, s:o, s:o, s:b, s:o}", "sagas", js, "stock", jst,
	    "accounts", ja, "charges", jc, "charges_truncated", (int)acc->charges_truncated,
	    "summary", ctl_summary_json(m)));
}

static int ctl_report_human(const Sagas__V1__ListSagasReply *sagas,
    const Sagas__V1__ListStockReply *stock, const Sagas__V1__ListAccountsReply *acc,
    const ctl_summary *m)
{
	static const char *const head[]
	    = {"saga_id", "customer", "sku", "qty", "amount", "state", "reason", "attention"};
	ctl_table t = {.ncols = CTL_NELEM(head), .head = head, .align = "lllrrlll"};
	for (size_t i = 0; i < sagas->n_sagas; i++) {
		const Sagas__V1__Saga *s = sagas->sagas[i];
		char qty[16], amount[32];
		snprintf(qty, sizeof qty, "%d", (int)s->order->qty);
		ctl_table_row(&t, s->saga_id, s->order->customer, s->order->sku, qty,
		    ctl_money(s->order->amount, amount), saga_state_name((saga_state)s->state),
		    s->reason, s->attention ? "yes" : "");
	}
	if (m->truncated)
		printf("sagas (truncated: the newest %lld only)\n", (long long)m->sagas);
	else
		printf("sagas\n");
	int rc = ctl_table_done(&t);
	if (rc != 0)
		return rc;
	printf("\nstock\n");
	if ((rc = ctl_stock_table(stock)) != 0)
		return rc;
	printf("\naccounts and charges\n");
	if ((rc = ctl_accounts_tables(acc, true)) != 0)
		return rc;
	static const char *const shead[] = {"count", "value"};
	ctl_table u = {.ncols = CTL_NELEM(shead), .head = shead, .align = "lr"};
	struct {
		const char *name;
		int64_t v;
	} rows[] = {
	    {"sagas", m->sagas},
	    {"reserving", m->by_state[SAGA_STATE_RESERVING]},
	    {"charging", m->by_state[SAGA_STATE_CHARGING]},
	    {"shipping", m->by_state[SAGA_STATE_SHIPPING]},
	    {"completed", m->by_state[SAGA_STATE_COMPLETED]},
	    {"refunding", m->by_state[SAGA_STATE_REFUNDING]},
	    {"releasing", m->by_state[SAGA_STATE_RELEASING]},
	    {"cancelled", m->by_state[SAGA_STATE_CANCELLED]},
	    {"attention", m->attention},
	    {"live_reservations", m->live_reservations},
	    {"charges", m->charges},
	    {"charged", m->charged},
	    {"refunded", m->refunded},
	};
	for (size_t i = 0; i < CTL_NELEM(rows); i++) {
		char v[24];
		snprintf(v, sizeof v, "%" PRId64, rows[i].v);
		ctl_table_row(&u, rows[i].name, v);
	}
	printf("\nsummary\n");
	return ctl_table_done(&u);
}

static int ctl_report(ctl_ctx *c, char **args)
{
	Sagas__V1__ListSagasReply *sagas = NULL;
	Sagas__V1__ListStockReply *stock = NULL;
	Sagas__V1__ListAccountsReply *acc = NULL;
	int rc = ctl_list_sagas(c, SAGA_STATE_UNSPECIFIED, CTL_LIST_LIMIT_MAX, false, &sagas);
	if (rc != 0)
		return rc;
	if ((rc = ctl_list_stock(c, false, 0, &stock)) != 0)
		goto out_free_sagas;
	if ((rc = ctl_list_accounts(c, true, c->o.limit, &acc)) != 0)
		goto out_free_stock;
	ctl_summary m;
	ctl_summarize(&m, sagas, stock, acc);
	if (c->o.json)
		rc = ctl_report_json(sagas, stock, acc, &m);
	else
		rc = ctl_report_human(sagas, stock, acc, &m);
	sagas__v1__list_accounts_reply__free_unpacked(acc, NULL);
out_free_stock:
	sagas__v1__list_stock_reply__free_unpacked(stock, NULL);
out_free_sagas:
	sagas__v1__list_sagas_reply__free_unpacked(sagas, NULL);
	return rc;
}

static int ctl_retry(ctl_ctx *c, char **args)
{
	int rc = ctl_parse_id(c, args[0]);
	if (rc != 0)
		return rc;
	Sagas__V1__RetrySagaRequest req = SAGAS__V1__RETRY_SAGA_REQUEST__INIT;
	req.saga_id = args[0];
	rpc_result res;
	rc = ctl_call(c, CTL_SVC_ORCHESTRATOR, "/sagas.v1.Orchestrator/RetrySaga", &req.base,
	    "retry saga", c->o.timeout_ms, false, &res);
	if (rc != 0)
		return rc;
	Sagas__V1__RetrySagaReply *rep
	    = sagas__v1__retry_saga_reply__unpack(NULL, res.payload_len, res.payload);
	rpc_result_clear(&res);
	if (rep == NULL || !ctl_saga_ok(rep->saga)) {
		rc = ctl_bad_reply(c, CTL_SVC_ORCHESTRATOR, "RetrySaga");
		goto out_free_rep;
	}
	if (c->o.json) {
		rc = ctl_json_print(ctl_saga_json(rep->saga));
	} else {
		ctl_saga_print(rep->saga, -1);
		rc = CTL_EXIT_OK;
	}
out_free_rep:
	if (rep != NULL)
		sagas__v1__retry_saga_reply__free_unpacked(rep, NULL);
	return rc;
}

/* The fault kinds of `fault set`, as sagas.v1.FaultKind names them. */
static const struct {
	const char *name;
	Sagas__V1__FaultKind kind;
} ctl_fault_kinds[] = {
    {"delay", SAGAS__V1__FAULT_KIND__FAULT_KIND_DELAY},
    {"drop_reply", SAGAS__V1__FAULT_KIND__FAULT_KIND_DROP_REPLY},
    {"unavailable", SAGAS__V1__FAULT_KIND__FAULT_KIND_UNAVAILABLE},
    {"exit_after_commit", SAGAS__V1__FAULT_KIND__FAULT_KIND_EXIT_AFTER_COMMIT},
    {"fail_before_commit", SAGAS__V1__FAULT_KIND__FAULT_KIND_FAIL_BEFORE_COMMIT},
    {"exit_after_send", SAGAS__V1__FAULT_KIND__FAULT_KIND_EXIT_AFTER_SEND},
    {"drop_request", SAGAS__V1__FAULT_KIND__FAULT_KIND_DROP_REQUEST},
    {"duplicate_reply", SAGAS__V1__FAULT_KIND__FAULT_KIND_DUPLICATE_REPLY},
};

/* ctl_parse_service reads SERVICE into *out; returns 0 or a usage exit code. */
static int ctl_parse_service(ctl_ctx *c, const char *text, ctl_svc *out)
{
	for (int i = 0; i < CTL_SVC_COUNT; i++) {
		if (strcmp(text, ctl_svc_names[i]) == 0) {
			*out = (ctl_svc)i;
			return 0;
		}
	}
	return ctl_usage(
	    c->cmd, "invalid SERVICE \"%s\": expected one of orchestrator, stock, payment", text);
}

/* ctl_parse_fault_kind reads KIND into *out; returns 0 or a usage exit code. */
static int ctl_parse_fault_kind(ctl_ctx *c, const char *text, Sagas__V1__FaultKind *out)
{
	for (size_t i = 0; i < CTL_NELEM(ctl_fault_kinds); i++) {
		if (strcmp(text, ctl_fault_kinds[i].name) == 0) {
			*out = ctl_fault_kinds[i].kind;
			return 0;
		}
	}
	return ctl_usage(c->cmd,
	    "invalid KIND \"%s\": expected one of delay, drop_reply, unavailable, "
	    "exit_after_commit, fail_before_commit, exit_after_send, drop_request, "
	    "duplicate_reply",
	    text);
}

static int ctl_fault_set(ctl_ctx *c, char **args)
{
	ctl_svc svc = CTL_SVC_ORCHESTRATOR;
	Sagas__V1__FaultKind kind = SAGAS__V1__FAULT_KIND__FAULT_KIND_UNSPECIFIED;
	int rc;
	if ((rc = ctl_parse_service(c, args[0], &svc)) != 0
	    || (rc = ctl_parse_fault_kind(c, args[1], &kind)) != 0)
		return rc;
	if (c->o.method[0] != '\0' && !valid_name(c->o.method))
		return ctl_usage(c->cmd,
		    "invalid --method \"%s\": expected a short method or command name, e.g. "
		    "ReserveStock (1..%d bytes of UTF-8 without control characters)",
		    c->o.method, VALID_NAME_MAX);
	Sagas__V1__SetFaultRequest req = SAGAS__V1__SET_FAULT_REQUEST__INIT;
	req.kind = kind;
	req.method = c->o.method;
	req.delay_ms = c->o.delay_ms;
	req.count = (int32_t)c->o.count;
	rpc_result res;
	rc = ctl_call(c, svc, "/sagas.v1.Admin/SetFault", &req.base, "set fault", c->o.timeout_ms,
	    false, &res);
	if (rc != 0)
		return rc;
	Sagas__V1__SetFaultReply *rep
	    = sagas__v1__set_fault_reply__unpack(NULL, res.payload_len, res.payload);
	rpc_result_clear(&res);
	if (rep == NULL)
		return ctl_bad_reply(c, svc, "SetFault");
	if (c->o.json) {
		rc = ctl_json_print(json_pack("{s:s, s:s, s:s, s:I, s:I}", "service",
		    ctl_svc_names[svc], "kind", args[1], "method", c->o.method, "count",
		    (json_int_t)c->o.count, "delay_ms", (json_int_t)c->o.delay_ms));
	} else {
		char times[48];
		if (c->o.count == 0)
			snprintf(times, sizeof times, "every matching call");
		else
			snprintf(times, sizeof times, "the next %" PRId64 " matching call%s",
			    c->o.count, c->o.count == 1 ? "" : "s");
		printf("armed %s on %s for %s%s: fires on %s", args[1], ctl_svc_names[svc],
		    c->o.method[0] ? "method " : "every method", c->o.method, times);
		if (kind == SAGAS__V1__FAULT_KIND__FAULT_KIND_DELAY)
			printf(", holding each %" PRId64 " ms", c->o.delay_ms);
		printf("\n");
		rc = CTL_EXIT_OK;
	}
	sagas__v1__set_fault_reply__free_unpacked(rep, NULL);
	return rc;
}

static int ctl_fault_clear(ctl_ctx *c, char **args)
{
	ctl_svc svc = CTL_SVC_ORCHESTRATOR;
	int rc = ctl_parse_service(c, args[0], &svc);
	if (rc != 0)
		return rc;
	Sagas__V1__ClearFaultsRequest req = SAGAS__V1__CLEAR_FAULTS_REQUEST__INIT;
	rpc_result res;
	rc = ctl_call(c, svc, "/sagas.v1.Admin/ClearFaults", &req.base, "clear faults",
	    c->o.timeout_ms, false, &res);
	if (rc != 0)
		return rc;
	Sagas__V1__ClearFaultsReply *rep
	    = sagas__v1__clear_faults_reply__unpack(NULL, res.payload_len, res.payload);
	rpc_result_clear(&res);
	if (rep == NULL)
		return ctl_bad_reply(c, svc, "ClearFaults");
	if (c->o.json) {
		rc = ctl_json_print(
		    json_pack("{s:s, s:b}", "service", ctl_svc_names[svc], "cleared", 1));
	} else {
		printf("cleared every fault on %s\n", ctl_svc_names[svc]);
		rc = CTL_EXIT_OK;
	}
	sagas__v1__clear_faults_reply__free_unpacked(rep, NULL);
	return rc;
}

/* ctl_serving_status_name names a Health ServingStatus ("SERVING"). */
static const char *ctl_serving_status_name(int s)
{
	switch (s) {
	case SAGAS__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__SERVING_STATUS_SERVING:
		return "SERVING";
	case SAGAS__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__SERVING_STATUS_NOT_SERVING:
		return "NOT_SERVING";
	default:
		return "UNSPECIFIED";
	}
}

/* ctl_probe asks SERVICE's Health/Check: exit 0 when SERVING, 1 otherwise
 * (NOT_SERVING, unreachable, timed out, any error). */
static int ctl_probe(ctl_ctx *c, char **args)
{
	ctl_svc svc = CTL_SVC_ORCHESTRATOR;
	int rc = ctl_parse_service(c, args[0], &svc);
	if (rc != 0)
		return rc;
	Sagas__V1__HealthCheckRequest req = SAGAS__V1__HEALTH_CHECK_REQUEST__INIT;
	rpc_result res;
	rc = ctl_call(c, svc, "/sagas.v1.Health/Check", &req.base, "check health", c->o.timeout_ms,
	    false, &res);
	if (rc != 0)
		return rc;
	Sagas__V1__HealthCheckResponse *rep
	    = sagas__v1__health_check_response__unpack(NULL, res.payload_len, res.payload);
	rpc_result_clear(&res);
	if (rep == NULL)
		return ctl_bad_reply(c, svc, "Health/Check");
	const char *status = ctl_serving_status_name((int)rep->status);
	if (c->o.json) {
		rc = ctl_json_print(json_pack("{s:s, s:s, s:s, s:s}", "service", ctl_svc_names[svc],
		    "status", status, "version", rep->version, "commit", rep->commit));
	} else {
		printf("%s %s\n", ctl_svc_names[svc], status);
		rc = CTL_EXIT_OK;
	}
	if (rc == CTL_EXIT_OK
	    && rep->status
	        != SAGAS__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__SERVING_STATUS_SERVING)
		rc = CTL_EXIT_ERROR;
	sagas__v1__health_check_response__free_unpacked(rep, NULL);
	return rc;
}

/* ---- the verb table ---- */

static const char *const ctl_args_start[] = {"CUSTOMER", "SKU", "QTY", "AMOUNT", NULL};
static const char *const ctl_args_id[] = {"ID", NULL};
static const char *const ctl_args_none[] = {NULL};
static const char *const ctl_args_stock_set[] = {"SKU", "ON_HAND", NULL};
static const char *const ctl_args_deposit[] = {"CUSTOMER", "AMOUNT", NULL};
static const char *const ctl_args_fault_set[] = {"SERVICE", "KIND", NULL};
static const char *const ctl_args_fault_clear[] = {"SERVICE", NULL};
static const char *const ctl_args_probe[] = {"SERVICE", NULL};

static const ctl_cmd ctl_cmds[] = {
    {"start", "CUSTOMER SKU QTY AMOUNT", "start an order saga (--wait: until it ends)",
        "sagactl start CUSTOMER SKU QTY AMOUNT [OPTIONS]",
        "Start an order saga: CUSTOMER orders QTY (1..1000000) units of SKU for AMOUNT, a\n"
        "decimal in major units with at most two decimals (12.5 is 1250 minor units).\n"
        "Prints the saga and whether it was created (no: the id already existed).\n"
        "With --wait, waits (WaitSaga, no polling) until the saga is COMPLETED or\n"
        "CANCELLED and prints the final saga; either outcome exits 0.\n"
        "A try without a reply is re-sent with the same id (3 tries in all).\n"
        "--json: {\"created\":BOOL,\"tries\":N,\"saga\":SAGA}",
        ctl_opts_start, CTL_NELEM(ctl_opts_start), ctl_args_start, ctl_start},
    {"get", "ID", "show one saga", "sagactl get ID [OPTIONS]",
        "Show one saga.\n--json: SAGA (see sagactl --help)", ctl_opts_global,
        CTL_NELEM(ctl_opts_global), ctl_args_id, ctl_get},
    {"wait", "ID", "wait until a saga is COMPLETED or CANCELLED", "sagactl wait ID [OPTIONS]",
        "Wait (WaitSaga, no polling) until the saga is COMPLETED or CANCELLED and print\n"
        "it; either outcome exits 0. Exits 1 after --wait-timeout, with the state last\n"
        "seen; the saga goes on.\n--json: SAGA (see sagactl --help)",
        ctl_opts_wait, CTL_NELEM(ctl_opts_wait), ctl_args_id, ctl_wait_cmd},
    {"list", "", "list sagas, newest first (--state, --limit, --attention)",
        "sagactl list [OPTIONS]", "List sagas, newest first.\n--json: [SAGA, ...]", ctl_opts_list,
        CTL_NELEM(ctl_opts_list), ctl_args_none, ctl_list},
    {"history", "ID", "transitions of one saga: where it stopped and why",
        "sagactl history ID [OPTIONS]",
        "Show the transition history of a saga, oldest first: where it stopped and why.\n"
        "--json: [{\"version\",\"at_unix_ms\",\"at\",\"from_state\",\"to_state\",\"event\","
        "\"reason\"}, ...]",
        ctl_opts_global, CTL_NELEM(ctl_opts_global), ctl_args_id, ctl_history},
    {"retry", "ID", "re-arm an unfinished saga now (clears attention)",
        "sagactl retry ID [OPTIONS]",
        "Re-arm an unfinished saga: clear its attention flag and attempt count and make\n"
        "its next command due at once. Prints the saga as re-armed. A COMPLETED or\n"
        "CANCELLED saga cannot be retried (FAILED_PRECONDITION, exit 1).\n"
        "--json: SAGA (see sagactl --help)",
        ctl_opts_global, CTL_NELEM(ctl_opts_global), ctl_args_id, ctl_retry},
    {"stock set", "SKU ON_HAND", "admin: set the on-hand quantity of a sku",
        "sagactl stock set SKU ON_HAND [OPTIONS]",
        "Admin: set the on-hand quantity of SKU (creates the sku).\n"
        "--json: {\"sku\",\"on_hand\"}",
        ctl_opts_global, CTL_NELEM(ctl_opts_global), ctl_args_stock_set, ctl_stock_set},
    {"stock list", "", "admin: skus and live reservations (--reservations, --limit)",
        "sagactl stock list [--reservations [--limit N]] [OPTIONS]",
        "Admin: list every sku with its on-hand quantity and live reservations (counted\n"
        "over every reservation row). With --reservations, also the newest --limit N\n"
        "(default 1000, at most 10000) reservation rows, newest first; a note says when\n"
        "there are more.\n"
        "--json: {\"stock\":[{\"sku\",\"on_hand\",\"live_reservations\",\"reserved_qty\"}],\n"
        "         \"reservations\":[{\"saga_id\",\"sku\",\"qty\",\"status\"}],\n"
        "         \"reservations_truncated\":BOOL (both with --reservations)}",
        ctl_opts_stock_list, CTL_NELEM(ctl_opts_stock_list), ctl_args_none, ctl_stock_list},
    {"deposit", "CUSTOMER AMOUNT", "admin: add money to an account, once per --id",
        "sagactl deposit CUSTOMER AMOUNT [--id UUID] [OPTIONS]",
        "Admin: add AMOUNT (a decimal in major units) to the account of CUSTOMER (creates it).\n"
        "The deposit carries an id (--id, or a new random one), its idempotency key: a\n"
        "try without a reply is re-sent with it (3 tries in all, so up to about 3 x\n"
        "--timeout), and the same command with the same --id adds nothing again (it\n"
        "prints the balance right after the first). The same --id with another\n"
        "CUSTOMER or AMOUNT is refused (ALREADY_EXISTS); an empty --id is refused.\n"
        "--json: {\"deposit_id\",\"customer\",\"amount_minor\",\"amount\",\"balance_minor\",\n"
        "         \"balance\",\"duplicate\":BOOL,\"added\":BOOL,\"tries\":N}",
        ctl_opts_deposit, CTL_NELEM(ctl_opts_deposit), ctl_args_deposit, ctl_deposit},
    {"accounts", "", "admin: balances and charge counts (--charges, --limit)",
        "sagactl accounts [--charges [--limit N]] [OPTIONS]",
        "Admin: list accounts with their balance and their CHARGED charges (count and\n"
        "amount, over every charge row). With --charges, also the newest --limit N\n"
        "(default 1000, at most 10000) charge rows, newest first; a note says when\n"
        "there are more.\n"
        "--json: {\"accounts\":[{\"customer\",\"balance_minor\",\"balance\",\"charged_count\",\n"
        "         \"charged_amount_minor\",\"charged_amount\"}],\n"
        "         "
        "\"charges\":[{\"saga_id\",\"customer\",\"amount_minor\",\"amount\",\"status\"}],\n"
        "         \"charges_truncated\":BOOL (both with --charges)}",
        ctl_opts_accounts, CTL_NELEM(ctl_opts_accounts), ctl_args_none, ctl_accounts},
    {"report", "", "everything, with counts: the demo view", "sagactl report [--limit N] [OPTIONS]",
        "The state of the system: the newest 10000 sagas, every sku and account, the\n"
        "newest --limit N (default 1000, at most 10000) charge rows (a note says when\n"
        "there are more), and counts (sagas by state; charges = every charge row;\n"
        "charged, refunded = charge rows with that status; live_reservations over every\n"
        "sku), exact however many rows there are. Asks all three services.\n"
        "--json: {\"sagas\":[SAGA],\"stock\":[...],\"accounts\":[...],\"charges\":[...],\n"
        "         \"charges_truncated\":BOOL,\n"
        "         \"summary\":{\"sagas\",\"reserving\",\"charging\",\"completed\",\"refunding\",\n"
        "         \"releasing\",\"cancelled\",\"attention\",\"skus\",\"live_reservations\",\n"
        "         \"accounts\",\"charges\",\"charged\",\"refunded\",\"truncated\"}}",
        ctl_opts_report, CTL_NELEM(ctl_opts_report), ctl_args_none, ctl_report},
    {"fault set", "SERVICE KIND", "test: arm a fault point (--method, --count, --delay)",
        "sagactl fault set SERVICE KIND [--method M] [--count N] [--delay MS] [OPTIONS]",
        "Test: arm a fault point on SERVICE (orchestrator, stock or payment, at the URL of\n"
        "--orchestrator, --stock or --payment) through its Admin service. KIND is one of\n"
        "  delay               hold each call --delay MS before serving it\n"
        "  drop_reply          serve the call (apply and commit) but send no reply\n"
        "  unavailable         answer UNAVAILABLE without serving the call\n"
        "  exit_after_commit   exit the daemon right after the call committed\n"
        "  fail_before_commit  roll the call back just before COMMIT (UNAVAILABLE)\n"
        "  exit_after_send     orchestrator: exit once a command's reply came back,\n"
        "                      before it is stored\n"
        "  drop_request        drop the call unserved (the caller times out)\n"
        "  duplicate_reply     orchestrator: deliver a command's reply twice\n"
        "Faults stack; each fires on the matching calls until its --count runs out.\n"
        "--json: {\"service\",\"kind\",\"method\",\"count\",\"delay_ms\"}",
        ctl_opts_fault_set, CTL_NELEM(ctl_opts_fault_set), ctl_args_fault_set, ctl_fault_set},
    {"fault clear", "SERVICE", "test: disarm every fault point of a service",
        "sagactl fault clear SERVICE [OPTIONS]",
        "Test: disarm every fault point of SERVICE (orchestrator, stock or payment).\n"
        "--json: {\"service\",\"cleared\":true}",
        ctl_opts_global, CTL_NELEM(ctl_opts_global), ctl_args_fault_clear, ctl_fault_clear},
    {"probe", "SERVICE", "health check: exit 0 when SERVICE is SERVING",
        "sagactl probe SERVICE [OPTIONS]",
        "Ask SERVICE (orchestrator, stock or payment, at the URL of --orchestrator, --stock\n"
        "or --payment) for its health (sagas.v1.Health/Check) and print it: SERVING, or\n"
        "NOT_SERVING while its database is unreachable. Exits 0 when SERVING, 1 otherwise\n"
        "(NOT_SERVING, unreachable, timed out): a container health check.\n"
        "--json: {\"service\",\"status\",\"version\",\"commit\"}",
        ctl_opts_global, CTL_NELEM(ctl_opts_global), ctl_args_probe, ctl_probe},
};

static void ctl_print_help(FILE *out)
{
	fprintf(out,
	    "usage: sagactl [GLOBAL OPTIONS] VERB [ARGS] [OPTIONS]\n\n"
	    "Command-line client of the saga orchestrator (and admin client of the stock\n"
	    "and payment services). Global options may come before or after the verb.\n\n"
	    "verbs:\n");
	for (size_t i = 0; i < CTL_NELEM(ctl_cmds); i++) {
		char left[64];
		snprintf(left, sizeof left, "%s %s", ctl_cmds[i].name, ctl_cmds[i].synopsis);
		fprintf(out, "  %-32s %s\n", left, ctl_cmds[i].brief);
	}
	fprintf(out, "\nglobal options:\n");
	for (size_t i = 0; i < CTL_NELEM(ctl_opts_global); i++) {
		const config_opt *o = &ctl_opts_global[i];
		char flag[64];
		snprintf(flag, sizeof flag, "--%s%s%s", o->name, o->unit ? " " : "",
		    o->unit ? o->unit : "");
		fprintf(out, "  %-32s %s", flag, o->help);
		if (o->def && *o->def)
			fprintf(out, " (default %s)", o->def);
		if (o->env)
			fprintf(out, " [env %s]", o->env);
		fputc('\n', out);
	}
	fprintf(out, "  %-32s %s\n", "--config FILE",
	    "read name = value lines from FILE (docs/operations.md)");
	fprintf(out, "  %-32s %s\n", "--version", "show the version and commit and exit");
	fprintf(out,
	    "  %-32s %s\n\n"
	    "SAGA (--json of get, wait, list, start, retry, report): "
	    "{\"saga_id\",\"state\",\"reason\",\"customer\",\n"
	    "  "
	    "\"sku\",\"qty\",\"amount_minor\",\"amount\",\"attention\",\"version\",\"attempts\",\n"
	    "  \"created_unix_ms\",\"created_at\",\"updated_unix_ms\",\"updated_at\",\n"
	    "  \"step_deadline_unix_ms\",\"next_attempt_unix_ms\"}; money as integer minor units\n"
	    "  (*_minor) and as a decimal string.\n\n"
	    "exit status: 0 success, 1 error (RPC error, unreachable service, --wait timeout),\n"
	    "2 usage error. Run 'sagactl VERB --help' for a verb's arguments and options.\n",
	    "-h, --help", "show this help and exit");
}

/* ctl_takes_value is true when `arg` is a long option of `opts` (or
 * --config) written without "=" that consumes the next argument. */
static bool ctl_takes_value(const config_opt *opts, size_t n, const char *arg)
{
	if (strncmp(arg, "--", 2) != 0 || strchr(arg, '=') != NULL)
		return false;
	if (strcmp(arg + 2, "config") == 0)
		return true;
	for (size_t i = 0; i < n; i++)
		if (strcmp(arg + 2, opts[i].name) == 0)
			return opts[i].type != CONFIG_BOOL;
	return false;
}

/* ctl_find_verb returns the index of the first argument that is not an
 * option or an option's value, or argc. Sets *help when -h/--help precedes,
 * *version when --version does. */
static int ctl_find_verb(int argc, char **argv, bool *help, bool *version)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "--") == 0)
			return i + 1 < argc ? i + 1 : argc;
		if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0)
			*help = true;
		else if (version_is_flag(a))
			*version = true;
		else if (ctl_takes_value(ctl_opts_global, CTL_NELEM(ctl_opts_global), a))
			i++;
		else if (a[0] != '-' || a[1] == '\0')
			return i;
	}
	return argc;
}

/* ctl_looks_negative is true for arguments like "-5" or "-1.5" that getopt
 * would take for options but that are meant as (bad) numbers. */
static bool ctl_looks_negative(const char *a)
{
	return a[0] == '-' && ((a[1] >= '0' && a[1] <= '9') || a[1] == '.');
}

/* ctl_run_cmd parses the verb's own argv (argv[0] is the verb) and runs it.
 * Returns an exit code. */
static int ctl_run_cmd(const ctl_cmd *cmd, int argc, char **argv)
{
	int rc = CTL_EXIT_USAGE;
	ctl_ctx c = {.cmd = cmd};
	/* getopt would take "-5" for an option; hide such arguments behind
	 * distinct placeholders and put them back after parsing, so that the
	 * error names AMOUNT or QTY */
	char *marks = malloc((size_t)argc * 2 + 1);
	char **orig = calloc((size_t)argc, sizeof *orig);
	if (marks == NULL || orig == NULL) {
		rc = ctl_error("out of memory");
		goto out_free;
	}
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--") == 0)
			break;
		if (ctl_looks_negative(argv[i])
		    && !ctl_takes_value(cmd->opts, cmd->nopts, argv[i - 1])) {
			marks[2 * i] = 'x';
			marks[2 * i + 1] = '\0';
			orig[i] = argv[i];
			argv[i] = &marks[2 * i];
		}
	}
	int first = argc;
	int err = config_load(
	    cmd->opts, cmd->nopts, &c.o, argc, argv, cmd->usage, cmd->summary, NULL, &first);
	if (err == CONFIG_DONE_HELP) {
		rc = CTL_EXIT_OK;
		goto out_free;
	}
	if (err != 0) {
		fprintf(stderr, "hint: see 'sagactl %s --help'\n", cmd->name);
		goto out_free;
	}
	/* --id given, even empty (a script's unset variable), is the caller's
	 * key and is checked, never replaced by a new one; getopt has put the
	 * options before `first` (and takes abbreviations: --i, --id=) */
	for (int i = 1; i < first; i++)
		if (strncmp(argv[i], "--i", 3) == 0
		    && strncmp("--id", argv[i], strcspn(argv[i], "=")) == 0)
			c.id_given = true;
	char *args[CTL_MAX_ARGS];
	int nargs = argc - first;
	if (nargs > CTL_MAX_ARGS)
		nargs = CTL_MAX_ARGS;
	for (int i = 0; i < nargs; i++) {
		char *a = argv[first + i];
		if (a >= marks && a < marks + (size_t)argc * 2)
			a = orig[(a - marks) / 2];
		args[i] = a;
	}
	int want = 0;
	while (cmd->args[want] != NULL)
		want++;
	if (nargs < want) {
		rc = ctl_usage(
		    cmd, "missing argument %s (usage: %s)", cmd->args[nargs], cmd->usage);
		goto out_free;
	}
	if (nargs > want) {
		rc = ctl_usage(cmd, "unexpected argument \"%s\"", args[want]);
		goto out_free;
	}
	rc = cmd->run(&c, args);
	if (fflush(stdout) != 0 && rc == CTL_EXIT_OK)
		rc = ctl_error("could not write the output: %s", strerror(errno));
	for (int i = 0; i < CTL_SVC_COUNT; i++) {
		rpc_client_close(c.client[i]);
		tls_conf_free(c.tls[i]);
	}
out_free:
	free(orig);
	free(marks);
	return rc;
}

/* The verbs of two words: the first word and its subcommands. */
typedef struct ctl_group {
	const char *name;  /* "stock" */
	const char *subs;  /* "set or list", for errors */
	const char *usage; /* printed by 'sagactl stock --help' */
} ctl_group;

static const ctl_group ctl_groups[] = {
    {"stock", "set or list",
        "usage: sagactl stock set SKU ON_HAND [OPTIONS]\n"
        "       sagactl stock list [--reservations [--limit N]] [OPTIONS]\n\n"
        "Run 'sagactl stock set --help' or 'sagactl stock list --help' for details.\n"},
    {"fault", "set or clear",
        "usage: sagactl fault set SERVICE KIND [--method M] [--count N] [--delay MS] "
        "[OPTIONS]\n"
        "       sagactl fault clear SERVICE [OPTIONS]\n\n"
        "Run 'sagactl fault set --help' or 'sagactl fault clear --help' for details.\n"},
};

/* ctl_find_group returns the group named `word`, or NULL. */
static const ctl_group *ctl_find_group(const char *word)
{
	for (size_t i = 0; i < CTL_NELEM(ctl_groups); i++)
		if (strcmp(ctl_groups[i].name, word) == 0)
			return &ctl_groups[i];
	return NULL;
}

/* ctl_lookup finds the verb at argv[vi] (and for a group such as "stock",
 * its subverb at argv[vi + 1]); *words is how many arguments name it. NULL
 * when unknown. */
static const ctl_cmd *ctl_lookup(int argc, char **argv, int vi, int *words)
{
	char name[64];
	*words = 1;
	snprintf(name, sizeof name, "%s", argv[vi]);
	if (ctl_find_group(argv[vi]) != NULL && vi + 1 < argc) {
		snprintf(name, sizeof name, "%s %s", argv[vi], argv[vi + 1]);
		*words = 2;
	}
	for (size_t i = 0; i < CTL_NELEM(ctl_cmds); i++)
		if (strcmp(ctl_cmds[i].name, name) == 0)
			return &ctl_cmds[i];
	return NULL;
}

int main(int argc, char **argv)
{
	log_init("sagactl", LOG_LEVEL_ERROR);
	bool help = false, version = false;
	int vi = ctl_find_verb(argc, argv, &help, &version);
	if (vi >= argc) {
		if (version && !help) {
			version_print(stdout, "sagactl");
			return CTL_EXIT_OK;
		}
		if (help) {
			ctl_print_help(stdout);
			return CTL_EXIT_OK;
		}
		fprintf(stderr,
		    "sagactl: error: missing verb\nhint: see 'sagactl --help' for the verbs\n");
		return CTL_EXIT_USAGE;
	}
	int words = 1;
	const ctl_cmd *cmd = ctl_lookup(argc, argv, vi, &words);
	if (cmd == NULL) {
		const ctl_group *g = ctl_find_group(argv[vi]);
		if (g != NULL) {
			bool sub_help = vi + 1 < argc
			    && (strcmp(argv[vi + 1], "--help") == 0
			        || strcmp(argv[vi + 1], "-h") == 0);
			if (sub_help || help) {
				fputs(g->usage, stdout);
				return CTL_EXIT_OK;
			}
			if (vi + 1 >= argc)
				fprintf(stderr, "sagactl: error: missing %s subcommand (%s)\n",
				    g->name, g->subs);
			else
				fprintf(stderr,
				    "sagactl: error: unknown %s subcommand \"%s\" (expected %s)\n",
				    g->name, argv[vi + 1], g->subs);
			fprintf(stderr, "hint: see 'sagactl %s --help'\n", g->name);
			return CTL_EXIT_USAGE;
		}
		fprintf(stderr,
		    "sagactl: error: unknown verb \"%s\"\nhint: see 'sagactl --help' for the "
		    "verbs\n",
		    argv[vi]);
		return CTL_EXIT_USAGE;
	}
	/* the verb's argv: its name, the options before it, everything after it */
	char **vargv = calloc((size_t)argc + 1, sizeof *vargv);
	if (vargv == NULL)
		return ctl_error("out of memory");
	int vargc = 0;
	vargv[vargc++] = (char *)cmd->name;
	for (int i = 1; i < vi; i++)
		vargv[vargc++] = argv[i];
	for (int i = vi + words; i < argc; i++)
		vargv[vargc++] = argv[i];
	int rc = ctl_run_cmd(cmd, vargc, vargv);
	free(vargv);
	return rc;
}
