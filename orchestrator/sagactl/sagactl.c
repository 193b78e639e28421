/* sagactl: the command-line client of the saga orchestrator, and the admin
 * client of the stock, payment and shipping participants.
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
 * This file: main, the option and verb tables, argument parsing and help;
 * the verbs and their output live in the other sagactl_*.c files
 * (sagactl.h names them).
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "sagactl.h"
#include "version.h"

const char *const ctl_svc_names[CTL_SVC_COUNT] = {"orchestrator", "stock", "payment", "shipping"};

/* ---- option tables ---- */

#define CTL_OPT_GLOBAL                                                                             \
	{"orchestrator", "SAGA_ORCHESTRATOR_URL", CONFIG_STR, "tcp://127.0.0.1:7101", 0, 0,        \
	    offsetof(ctl_opts, url[CTL_SVC_ORCHESTRATOR]),                                         \
	    "orchestrator URL, or a comma-separated list of several orchestrators' URLs",          \
	    "URL[,URL...]"},                                                                       \
	    {"stock", "SAGA_STOCK_URL", CONFIG_STR, "tcp://127.0.0.1:7102", 0, 0,                  \
	        offsetof(ctl_opts, url[CTL_SVC_STOCK]),                                            \
	        "stock service URL (or a comma-separated list of its replicas')", "URL[,URL...]"}, \
	    {"payment", "SAGA_PAYMENT_URL", CONFIG_STR, "tcp://127.0.0.1:7103", 0, 0,              \
	        offsetof(ctl_opts, url[CTL_SVC_PAYMENT]),                                          \
	        "payment service URL (or a comma-separated list of its replicas')",                \
	        "URL[,URL...]"},                                                                   \
	    {"shipping", "SAGA_SHIPPING_URL", CONFIG_STR, "tcp://127.0.0.1:7104", 0, 0,            \
	        offsetof(ctl_opts, url[CTL_SVC_SHIPPING]),                                         \
	        "shipping service URL (or a comma-separated list of its replicas')",               \
	        "URL[,URL...]"},                                                                   \
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

static const config_opt ctl_opts_global[] = {CTL_OPT_GLOBAL};

static const config_opt ctl_opts_wait[] = {
    CTL_OPT_GLOBAL,
    {"wait-timeout", NULL, CONFIG_INT, "30000", 1, 86400000, offsetof(ctl_opts, wait_timeout_ms),
        "give up waiting after this long (exit 1)", "MS"},
};

static const config_opt ctl_opts_defs[] = {
    CTL_OPT_GLOBAL,
    {"model", NULL, CONFIG_BOOL, NULL, 0, 0, offsetof(ctl_opts, model),
        "also explore every state of one saga of each type (the fixed point)", NULL},
    {"max-states", NULL, CONFIG_INT, "2000000", 1000, 20000000, offsetof(ctl_opts, max_states),
        "--model: explore at most this many states per type (about 250 bytes each)", "N"},
    {"max-seconds", NULL, CONFIG_INT, "60", 1, 3600, offsetof(ctl_opts, max_seconds),
        "--model: explore for at most this long per type", "S"},
};

static const config_opt ctl_opts_retry[] = {
    CTL_OPT_GLOBAL,
    {"attention", NULL, CONFIG_BOOL, NULL, 0, 0, offsetof(ctl_opts, attention),
        "no ID: the sagas flagged for an operator", NULL},
    {"state", NULL, CONFIG_STR, NULL, 0, 0, offsetof(ctl_opts, state),
        "no ID: the sagas in this state (any saga type's state names)", "STATE"},
    {"type", NULL, CONFIG_STR, NULL, 0, 0, offsetof(ctl_opts, type),
        "no ID: the sagas of this type", "TYPE"},
    {"customer", NULL, CONFIG_STR, "", 0, 0, offsetof(ctl_opts, customer),
        "no ID: this customer's sagas", "CUSTOMER"},
    {"older-than", NULL, CONFIG_INT, "0", 0, 315360000000, offsetof(ctl_opts, older_than_ms),
        "no ID: the sagas created longer ago than this", "MS"},
    {"overdue", NULL, CONFIG_BOOL, NULL, 0, 0, offsetof(ctl_opts, overdue),
        "no ID: the sagas 'list --overdue' shows (the orchestrator's margins)", NULL},
    {"dry-run", NULL, CONFIG_BOOL, NULL, 0, 0, offsetof(ctl_opts, dry_run),
        "no ID: count the matching sagas, re-arm none", NULL},
    {"rate", NULL, CONFIG_INT, "50", 1, 10000, offsetof(ctl_opts, rate),
        "no ID: re-arm at most this many sagas a second", "N"},
    {"reason", NULL, CONFIG_STR, "", 0, 0, offsetof(ctl_opts, reason),
        "why, kept in the audit trail with each re-arm (optional)", "TEXT"},
};

static const config_opt ctl_opts_cancel[] = {
    CTL_OPT_GLOBAL,
    {"reason", NULL, CONFIG_STR, "", 0, 0, offsetof(ctl_opts, reason),
        "why (required; kept in the audit trail and the saga's history)", "TEXT"},
    {"id", NULL, CONFIG_STR, NULL, 0, 0, offsetof(ctl_opts, id),
        "the cancel's idempotency key, a canonical lowercase UUID (default: a new random "
        "one): the same command with the same --id is answered as the first",
        "UUID"},
};

static const config_opt ctl_opts_audit[] = {
    CTL_OPT_GLOBAL,
    {"saga", NULL, CONFIG_STR, "", 0, 0, offsetof(ctl_opts, saga), "only the actions on this saga",
        "ID"},
    {"action", NULL, CONFIG_STR, "", 0, 0, offsetof(ctl_opts, action),
        "only this action: cancel or retry", "ACTION"},
    {"limit", NULL, CONFIG_INT, "100", 1, 1000, offsetof(ctl_opts, limit), "the newest this many",
        "N"},
    {"before-id", NULL, CONFIG_INT, "0", 0, INT64_MAX, offsetof(ctl_opts, before_id),
        "the entries older than this id (the note of the page before says it)", "ID"},
};

static const config_opt ctl_opts_table[] = {
    {"type", NULL, CONFIG_STR, NULL, 0, 0, offsetof(ctl_opts, type),
        "only this saga type of the file (default: every type)", "TYPE"},
};

static const config_opt ctl_opts_start[] = {
    CTL_OPT_GLOBAL,
    {"id", NULL, CONFIG_STR, NULL, 0, 0, offsetof(ctl_opts, id),
        "saga id, a canonical lowercase UUID (default: a new random one)", "UUID"},
    {"wait", NULL, CONFIG_BOOL, NULL, 0, 0, offsetof(ctl_opts, wait),
        "wait until the saga is COMPLETED or CANCELLED", NULL},
    {"wait-timeout", NULL, CONFIG_INT, "30000", 1, 86400000, offsetof(ctl_opts, wait_timeout_ms),
        "give up waiting after this long (exit 1)", "MS"},
    {"type", NULL, CONFIG_STR, NULL, 0, 0, offsetof(ctl_opts, type),
        "the saga type to start, one of the orchestrator's definitions (default: order); "
        "its input is the order CUSTOMER SKU QTY AMOUNT, or --input",
        "TYPE"},
    {"input", NULL, CONFIG_STR, NULL, 0, 0, offsetof(ctl_opts, input),
        "the saga's input as a JSON object of its type's input message (proto3 JSON "
        "names), instead of CUSTOMER SKU QTY AMOUNT",
        "JSON"},
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
        "only sagas in this state (case-insensitive; any saga type's state names)", "STATE"},
    {"type", NULL, CONFIG_STR, NULL, 0, 0, offsetof(ctl_opts, type),
        "only sagas of this type (order, booking, ...: the orchestrator's definitions)", "TYPE"},
    {"limit", NULL, CONFIG_INT, "0", 0, CTL_LIST_LIMIT_MAX, offsetof(ctl_opts, limit),
        "at most N sagas, newest first (0: the server's default, 100)", "N"},
    {"attention", NULL, CONFIG_BOOL, NULL, 0, 0, offsetof(ctl_opts, attention),
        "only sagas flagged for an operator", NULL},
    {"overdue", NULL, CONFIG_BOOL, NULL, 0, 0, offsetof(ctl_opts, overdue),
        "only unfinished sagas past their step deadline by --margin, compensations failing "
        "3 tries or more, or unchanged for --stuck-after; a why column says which",
        NULL},
    {"margin", NULL, CONFIG_INT, "0", 0, 31536000000, offsetof(ctl_opts, margin_ms),
        "with --overdue: past_deadline when the deadline passed longer ago than this (0: the "
        "orchestrator's --overdue-margin, 60 s by default)",
        "MS"},
    {"stuck-after", NULL, CONFIG_INT, "0", 0, 31536000000, offsetof(ctl_opts, stuck_after_ms),
        "with --overdue: stuck when the saga has not changed for longer than this (0: the "
        "orchestrator's --stuck-after, 10 min by default)",
        "MS"},
    {"older-than", NULL, CONFIG_INT, "0", 0, 315360000000, offsetof(ctl_opts, older_than_ms),
        "only sagas created longer ago than this (0: any age)", "MS"},
    {"page-token", NULL, CONFIG_STR, NULL, 0, 0, offsetof(ctl_opts, page_token),
        "go on after the page that printed this token (\"\": the first page)", "TOKEN"},
    {"all", NULL, CONFIG_BOOL, NULL, 0, 0, offsetof(ctl_opts, all),
        "follow the pages to the end (--limit is then the size of a page)", NULL},
    {"customer", NULL, CONFIG_STR, "", 0, 0, offsetof(ctl_opts, customer),
        "only this customer's sagas", "CUSTOMER"},
};

static const config_opt ctl_opts_watch[] = {
    CTL_OPT_GLOBAL,
    {"cursor-file", NULL, CONFIG_STR, "", 0, 0, offsetof(ctl_opts, cursor_file),
        "go on from the cursor saved in FILE (when it exists) and save the cursor there after "
        "every page",
        "FILE"},
    {"after", NULL, CONFIG_STR, "", 0, 0, offsetof(ctl_opts, after),
        "go on after this cursor (printed on stderr at the end, or saved by --cursor-file); a "
        "cursor already in --cursor-file comes first",
        "CURSOR"},
    {"from-start", NULL, CONFIG_BOOL, NULL, 0, 0, offsetof(ctl_opts, from_start),
        "without a cursor: from the first transition ever stored (default: from now on)", NULL},
    {"follow", NULL, CONFIG_BOOL, NULL, 0, 0, offsetof(ctl_opts, follow),
        "keep following until SIGINT or SIGTERM, also while the orchestrator does not answer "
        "(tried again every second, or --poll-interval when longer) (default: stop when caught "
        "up)",
        NULL},
    {"poll-interval", NULL, CONFIG_INT, "500", 10, 3600000, offsetof(ctl_opts, poll_ms),
        "with --follow: how long to wait after a page with nothing more ready", "MS"},
    {"limit", NULL, CONFIG_INT, "0", 0, 10000, offsetof(ctl_opts, limit),
        "transitions per page (0: the orchestrator's default, 1000)", "N"},
};

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

static const config_opt ctl_opts_shipments[] = {
    CTL_OPT_GLOBAL,
    {"limit", NULL, CONFIG_INT, "1000", 1, CTL_ROWS_LIMIT_MAX, offsetof(ctl_opts, limit),
        "at most N shipment rows, newest first (the total counts every row)", "N"},
};

static const config_opt ctl_opts_report[] = {
    CTL_OPT_GLOBAL,
    {"limit", NULL, CONFIG_INT, "1000", 1, CTL_ROWS_LIMIT_MAX, offsetof(ctl_opts, limit),
        "at most N charge rows and N shipment rows, newest first (the counts cover every "
        "row)",
        "N"},
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

static const config_opt ctl_opts_retention[] = {
    CTL_OPT_GLOBAL,
    {"dry-run", NULL, CONFIG_BOOL, NULL, 0, 0, offsetof(ctl_opts, dry_run),
        "count what a pass would delete now, delete nothing", NULL},
    {"target", NULL, CONFIG_STR, "orchestrator", 0, 0, offsetof(ctl_opts, target),
        "the daemon whose database to clean: orchestrator, stock, payment or shipping (at the "
        "URL of that option)",
        "SERVICE"},
};

/* ---- errors and arguments ---- */

/* ctl_usage prints a usage error about the current verb and returns 2. */
/* ctl_vmessage prints "sagactl: error: <message>" with the message
 * escaped (ctl_esc: it may hold a server's message or an argument). */
static void ctl_vmessage(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));

static void ctl_vmessage(const char *fmt, va_list ap)
{
	va_list again;
	va_copy(again, ap);
	int n = vsnprintf(NULL, 0, fmt, ap);
	char *msg = n >= 0 ? malloc((size_t)n + 1) : NULL;
	if (msg != NULL)
		vsnprintf(msg, (size_t)n + 1, fmt, again);
	va_end(again);
	fprintf(stderr, "sagactl: error: %s\n", msg ? ctl_esc(msg) : "(out of memory)");
	free(msg);
}

/* ctl_usage prints a usage error about the current verb and returns 2. */
int ctl_usage(const ctl_cmd *cmd, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	ctl_vmessage(fmt, ap);
	va_end(ap);
	fprintf(stderr, "hint: see 'sagactl %s%s--help'\n", cmd ? cmd->name : "", cmd ? " " : "");
	return CTL_EXIT_USAGE;
}

/* ctl_error prints "sagactl: error: <message>" and returns 1. */
int ctl_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	ctl_vmessage(fmt, ap);
	va_end(ap);
	return CTL_EXIT_ERROR;
}

/* ctl_parse_int reads a whole number with digits only (no sign, no spaces)
 * into *out. Returns 0, -EINVAL for bad text or -ERANGE outside min..max. */
int ctl_parse_int(const char *text, int64_t min, int64_t max, int64_t *out)
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

/* ctl_parse_name validates CUSTOMER or SKU; returns 0 or a usage exit code. */
int ctl_parse_name(ctl_ctx *c, const char *what, const char *text)
{
	if (valid_name(text))
		return 0;
	return ctl_usage(c->cmd, "invalid %s \"%s\": expected " VALID_NAME_RULE, what, text);
}

/* ctl_parse_amount reads AMOUNT strictly; returns 0 or a usage exit code. */
int ctl_parse_amount(ctl_ctx *c, const char *text, int64_t *out)
{
	int err = money_parse(text, false, out);
	if (err == 0)
		return 0;
	int64_t abs;
	if (text[0] == '-' && money_parse(text + 1, true, &abs) != -EINVAL)
		return ctl_usage(c->cmd, "invalid AMOUNT \"%s\": must be positive, 0.01..%lld.00",
		    text, VALID_AMOUNT_MAX / 100);
	if (err == -ERANGE)
		return ctl_usage(c->cmd, "invalid AMOUNT \"%s\": out of range 0.01..%lld.00", text,
		    VALID_AMOUNT_MAX / 100);
	return ctl_usage(c->cmd,
	    "invalid AMOUNT \"%s\": expected a decimal in major units with at most two "
	    "decimals, e.g. 12.50",
	    text);
}

/* ctl_parse_id validates a saga id argument. */
int ctl_parse_id(ctl_ctx *c, const char *text)
{
	if (valid_uuid(text))
		return 0;
	return ctl_usage(c->cmd,
	    "invalid ID \"%s\": expected a canonical lowercase UUID (8-4-4-4-12 hex digits)", text);
}

/* ---- the verb table ---- */

static const char *const ctl_args_start[] = {"CUSTOMER", "SKU", "QTY", "AMOUNT", NULL};
static const char *const ctl_args_id[] = {"ID", NULL};
static const char *const ctl_args_file[] = {"FILE", NULL};
static const char *const ctl_args_none[] = {NULL};
static const char *const ctl_args_stock_set[] = {"SKU", "ON_HAND", NULL};
static const char *const ctl_args_deposit[] = {"CUSTOMER", "AMOUNT", NULL};
static const char *const ctl_args_fault_set[] = {"SERVICE", "KIND", NULL};
static const char *const ctl_args_fault_clear[] = {"SERVICE", NULL};
static const char *const ctl_args_probe[] = {"SERVICE", NULL};

static const ctl_cmd ctl_cmds[] = {
    {"start", "CUSTOMER SKU QTY AMOUNT", "start an order saga (--wait: until it ends)",
        "sagactl start CUSTOMER SKU QTY AMOUNT [--type TYPE] [OPTIONS], or "
        "sagactl start --type TYPE --input JSON [OPTIONS]",
        "Start an order saga: CUSTOMER orders QTY (1..1000000) units of SKU for AMOUNT, a\n"
        "decimal in major units with at most two decimals (12.5 is 1250 minor units).\n"
        "--type starts a saga of another type of the orchestrator's definitions with\n"
        "that order as its input, or with --input, a JSON object of the type's input\n"
        "message (at most 511 bytes here; the API takes more), e.g. with\n"
        "tests/definitions/trip.yaml: --type trip --input '{\"customer\":\"c1\",\"room\":\"R1\",\n"
        "\"nights\":2,\"flight\":\"F1\",\"seats\":1,\"amount\":\"12000\"}'\n"
        "(docs/saga-definitions.md, \"A saga's input\"; amounts there in minor units).\n"
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
    {"list", "", "list sagas, newest first (--state, --attention, --overdue, --all, ...)",
        "sagactl list [OPTIONS]",
        "List sagas, newest first (by created_at, then saga_id), a page of --limit at a\n"
        "time. When more match, the next page's token is printed on stderr; give it to\n"
        "--page-token for the next page, or use --all to follow the pages to the end.\n"
        "Each saga is listed once across pages, even while new sagas start.\n"
        "--type and --state take any saga type's names (docs/saga-definitions.md).\n"
        "--overdue lists the unfinished sagas to look at, with why: past_deadline,\n"
        "compensation_failing, stuck, retrying (docs/operations.md, \"Finding a stuck\n"
        "saga\").\n"
        "--json: [SAGA, ...]; with --page-token, --all or --overdue:\n"
        "{\"sagas\":[SAGA, ...],\"next_page_token\":\"...\"} (\"\" when no more), and\n"
        "with --overdue \"overdue_margin_ms\" and \"stuck_after_ms\" (the margins applied)\n"
        "and each SAGA's \"overdue\": [why, ...]",
        ctl_opts_list, CTL_NELEM(ctl_opts_list), ctl_args_none, ctl_list},
    {"history", "ID", "transitions of one saga, and its current step's tries",
        "sagactl history ID [OPTIONS]",
        "Show the transition history of a saga, oldest first: where it stopped and why.\n"
        "For an unfinished saga, then its current step: the count of failed tries, when\n"
        "the last one failed, the next try, the step deadline and the attention flag\n"
        "(a failed try writes no history row, so versions skip numbers).\n"
        "--json: [{\"version\",\"at_unix_ms\",\"at\",\"from_state\",\"to_state\",\"event\","
        "\"reason\",\"actor\",\"note\"}, ...]\n"
        "(the transitions only: the tries are in sagactl get ID --json, \"attempts\",\n"
        "\"updated_unix_ms\", \"next_attempt_unix_ms\", \"step_deadline_unix_ms\")",
        ctl_opts_global, CTL_NELEM(ctl_opts_global), ctl_args_id, ctl_history},
    {"watch", "", "follow every saga's transitions as they commit (--follow, --cursor-file)",
        "sagactl watch [OPTIONS]",
        "Print the transitions of all sagas (WatchHistory), each transaction's once, in the\n"
        "order they became visible: one line each, at, saga id, version, from -> to, event,\n"
        "reason. Starts from now on, or --from-start, or after --after CURSOR, or from the\n"
        "cursor in --cursor-file, which is saved after every page: a watch stopped and\n"
        "started again with the same file misses nothing and repeats nothing (a kill -9\n"
        "between a page and its save repeats that page). Without --follow it stops when\n"
        "caught up and prints the cursor on stderr (\"cursor: ...\") unless --cursor-file.\n"
        "--json: one line per transition, {\"saga_id\",\"version\",\"at_unix_ms\",\"at\",\n"
        "\"from_state\",\"to_state\",\"event\",\"reason\"}",
        ctl_opts_watch, CTL_NELEM(ctl_opts_watch), ctl_args_none, ctl_watch},
    {"retry", "ID", "re-arm an unfinished saga now, or every one a filter selects",
        "sagactl retry ID [OPTIONS], or sagactl retry FILTERS [--dry-run] [--rate N] [OPTIONS]",
        "Re-arm an unfinished saga: clear its attention flag and attempt count and make\n"
        "its next command due at once. Prints the saga as re-armed. A COMPLETED or\n"
        "CANCELLED saga cannot be retried (FAILED_PRECONDITION, exit 1).\n"
        "--json: SAGA (see sagactl --help)\n"
        "\n"
        "With no ID, re-arm every unfinished saga the filters select (the filters of\n"
        "'list': --attention, --state, --type, --customer, --older-than, --overdue; at\n"
        "least one), e.g. after an outage: 'sagactl retry --attention --dry-run' counts\n"
        "them, 'sagactl retry --attention' re-arms them, at most --rate a second so the\n"
        "participant that was down is not stampeded. The matches are read first; one\n"
        "that finished or was deleted meanwhile is counted as such. Prints\n"
        "\"re-armed N of M matching sagas in T s (F had finished meanwhile, G were deleted,\n"
        "E failed)\"; exit 0, or 1 when any failed (each said on stderr). A refusal of\n"
        "the role stops at the first saga.\n"
        "--json: {\"dry_run\",\"matched\",\"rearmed\",\"finished\",\"gone\",\"failed\",\n"
        "\"seconds\" (the re-arming's),\"saga_ids\" (with --dry-run: the matching ids; else [])}",
        ctl_opts_retry, CTL_NELEM(ctl_opts_retry), ctl_args_id, ctl_retry},
    {"cancel", "ID", "cancel a saga before its pivot (compensates what may have acted)",
        "sagactl cancel ID --reason TEXT [--id UUID] [OPTIONS]",
        "Cancel a saga on request (admin role; docs/saga-semantics.md, rule 11): before\n"
        "its pivot has succeeded it compensates from the step it is at, exactly as that\n"
        "step's deadline would (reason cancel_requested), and ends CANCELLED. Once the\n"
        "pivot has succeeded it is refused, nothing changed: FAILED_PRECONDITION\n"
        "past_pivot (exit 1); so is a saga compensating already (compensating) or ended\n"
        "(cancelled, past_pivot). A cancel racing the pivot's reply is decided by which\n"
        "the orchestrator records first. Idempotent by --id: the same command with the\n"
        "same --id answers as the first and changes nothing. The reason and the caller\n"
        "are kept in the audit trail (sagactl audit) and shown by sagactl history.\n"
        "--json: SAGA (see sagactl --help) with \"replayed\"",
        ctl_opts_cancel, CTL_NELEM(ctl_opts_cancel), ctl_args_id, ctl_cancel},
    {"audit", "", "the operators' actions, newest first: who, when, why, on what",
        "sagactl audit [--saga ID] [--action cancel|retry] [--limit N] [OPTIONS]",
        "List the audit trail (admin role): every operator action that changed a saga\n"
        "(cancel, retry), newest first: when, the action, the saga and the version it\n"
        "wrote, the saga's state after it, who asked (the caller's role and address)\n"
        "and why. Retention deletes no audit row. When more entries match than --limit,\n"
        "a note on stderr gives the --before-id of the next page.\n"
        "--json: [{\"id\",\"at_unix_ms\",\"at\",\"action\",\"role\",\"peer\",\"reason\",\n"
        "\"saga_id\",\"version\",\"request_id\",\"outcome\"}, ...]",
        ctl_opts_audit, CTL_NELEM(ctl_opts_audit), ctl_args_none, ctl_audit},
    {"definitions check", "FILE", "check a saga definition file (no server needed)",
        "sagactl definitions check FILE [--model [--max-states N] [--max-seconds S]]",
        "Load and validate a saga definition file (docs/saga-definitions.md): every rule\n"
        "of \"Validation at start\". Prints each saga type with its version (SHA-256\n"
        "of its canonical definition) and one line per step: name, kind, state,\n"
        "compensating state, participant:command/compensation, deadline.\n"
        "Exits 0; on the first refusal prints FILE:LINE:COLUMN: PATH: message and\n"
        "exits 1. Needs no server: the connection options (--orchestrator, --stock,\n"
        "--payment, --shipping, --timeout, --tls-*) are ignored.\n"
        "--model: also check each type's flow with the model (docs/testing.md, \"The\n"
        "generic model\"): every state one saga can reach under crashes, lost,\n"
        "duplicated and reordered messages, refusals and deadlines, explored to the\n"
        "fixed point with orchestratord's own transition; checks that each saga ends\n"
        "with every step applied once or compensated, that nothing is compensated\n"
        "after the pivot, and that it can always end. On a violation prints the\n"
        "check and a shortest path to it, and exits 1; exits 1 too when --max-states\n"
        "(default 2000000, about 500 MB) or --max-seconds (default 60) stops it before\n"
        "the fixed point (a group of many members can take more states than that).\n"
        "--json: {\"types\":[{\"name\",\"version\",\"input\",\"completed\",\"cancelled\",\n"
        "  \"steps\":[{\"name\",\"kind\",\"state\",\"compensating\",\"participant\",\"command\",\n"
        "  \"compensation\",\"deadline_ms\" (ms, \"default\", or null for "
        "retriable),\"retry\":{\"base_ms\",\"cap_ms\",\"attention_after\"} (each a\n"
        "  number or \"default\"),\"group\"}]}]}\n"
        "  (compensating, compensation and group null when absent)",
        ctl_opts_defs, CTL_NELEM(ctl_opts_defs), ctl_args_file, ctl_definitions_check},
    {"definitions table", "FILE", "print a saga type's state table (no server needed)",
        "sagactl definitions table FILE [--type TYPE]",
        "Print the state table of each saga type of a definition file (or of --type\n"
        "TYPE) in Markdown, as docs/saga-states.md shows the order saga's: one row per\n"
        "state with the command in flight and the state that follows its success, a\n"
        "definitive refusal and its step deadline. Every cell is what orchestratord's\n"
        "own transition does there, so the table is the engine's, not a copy of it.\n"
        "A file of several types prints a '### TYPE' heading before each table\n"
        "(Markdown only: no --json; 'definitions check --json' gives the steps).\n"
        "Exits 0; 1 when the file is not valid (as 'definitions check') or has no\n"
        "type TYPE.",
        ctl_opts_table, CTL_NELEM(ctl_opts_table), ctl_args_file, ctl_definitions_table},
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
    {"shipments", "", "admin: shipments, newest first, and their total (--limit)",
        "sagactl shipments [--limit N] [OPTIONS]",
        "Admin: the shipments of the shipping service: their total (every shipment row)\n"
        "and the newest --limit N (default 1000, at most 10000) rows, newest first; a\n"
        "note says when there are more.\n"
        "--json: "
        "{\"total\":N,\"shipments\":[{\"saga_id\",\"customer\",\"sku\",\"qty\",\"status\",\n"
        "         \"created_unix_ms\",\"created_at\"}],\"truncated\":BOOL}",
        ctl_opts_shipments, CTL_NELEM(ctl_opts_shipments), ctl_args_none, ctl_shipments},
    {"report", "", "everything, with counts: the demo view", "sagactl report [--limit N] [OPTIONS]",
        "The state of the system: the newest 10000 sagas, every sku and account, the\n"
        "newest --limit N (default 1000, at most 10000) charge rows and shipment rows (a\n"
        "note says when there are more), and counts (sagas by state; charges = every\n"
        "charge row; charged, refunded = charge rows with that status;\n"
        "live_reservations over every sku; shipments = every shipment row), exact\n"
        "however many rows there are. Asks all four services: one that cannot be\n"
        "reached is an error (exit 1).\n"
        "--json: {\"sagas\":[SAGA],\"stock\":[...],\"accounts\":[...],\"charges\":[...],\n"
        "         \"charges_truncated\":BOOL,\n"
        "         \"shipments\":{\"total\":N,\"shipments\":[...],\"truncated\":BOOL},\n"
        "         (\"shipments\" as in 'sagactl shipments --json')\n"
        "         \"summary\":{\"sagas\",\"reserving\",\"charging\",\"shipping\",\"completed\",\n"
        "         \"refunding\",\"releasing\",\"cancelled\",\"attention\",\"skus\",\n"
        "         \"live_reservations\",\"accounts\",\"charges\",\"charged\",\"refunded\",\n"
        "         \"shipments\",\"truncated\"}}",
        ctl_opts_report, CTL_NELEM(ctl_opts_report), ctl_args_none, ctl_report},
    {"fault set", "SERVICE KIND", "test: arm a fault point (--method, --count, --delay)",
        "sagactl fault set SERVICE KIND [--method M] [--count N] [--delay MS] [OPTIONS]",
        "Test: arm a fault point on SERVICE (orchestrator, stock, payment or shipping, at\n"
        "the URL of --orchestrator, --stock, --payment or --shipping) through its Admin\n"
        "service. KIND is one of\n"
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
        "Test: disarm every fault point of SERVICE (orchestrator, stock, payment or\n"
        "shipping).\n"
        "--json: {\"service\",\"cleared\":true}",
        ctl_opts_global, CTL_NELEM(ctl_opts_global), ctl_args_fault_clear, ctl_fault_clear},
    {"retention", "", "delete (or, --dry-run, count) what is past --retention now",
        "sagactl retention [--dry-run] [--target SERVICE] [OPTIONS]",
        "Run one retention pass now on the daemon --target names (orchestrator, the\n"
        "default, stock, payment or shipping) through its Admin service\n"
        "(sagas.v1.Admin/RunRetention, admin role), beside its background job: the\n"
        "orchestrator deletes the finished sagas past its --retention plus 4 x\n"
        "--max-clock-skew with all their history, a participant its expired\n"
        "idempotency records (docs/operations.md, \"Retention\"). With --dry-run it\n"
        "deletes nothing and counts what a pass would delete now. A long pass may\n"
        "need a longer --timeout; an interrupted one keeps what it deleted.\n"
        "Prints \"deleted N sagas and M saga_history rows\" (a participant: \"deleted N\n"
        "reservations\"), or \"dry run: would delete ...\"; the orchestrator adds\n"
        "\"; forgot K saga ids\" when saga id tombstones (rule R5) went too.\n"
        "--json: {\"service\",\"dry_run\",\"table\",\"deleted\",\"other_table\","
        "\"other_deleted\"}, and the orchestrator's \"ids_table\", \"ids_deleted\"",
        ctl_opts_retention, CTL_NELEM(ctl_opts_retention), ctl_args_none, ctl_retention},
    {"probe", "SERVICE", "health check: exit 0 when SERVICE is SERVING",
        "sagactl probe SERVICE [OPTIONS]",
        "Ask SERVICE (orchestrator, stock, payment or shipping, at the URL of\n"
        "--orchestrator, --stock, --payment or --shipping) for its health\n"
        "(sagas.v1.Health/Check) and print it: SERVING, or NOT_SERVING while its\n"
        "database is unreachable. Exits 0 when SERVING, 1 otherwise\n"
        "(NOT_SERVING, unreachable, timed out): a container health check.\n"
        "--json: {\"service\",\"status\",\"version\",\"commit\"}",
        ctl_opts_global, CTL_NELEM(ctl_opts_global), ctl_args_probe, ctl_probe},
};

static void ctl_print_help(FILE *out)
{
	fprintf(out,
	    "usage: sagactl [GLOBAL OPTIONS] VERB [ARGS] [OPTIONS]\n\n"
	    "Command-line client of the saga orchestrator (and admin client of the stock,\n"
	    "payment and shipping services). Global options may come before or after the\n"
	    "verb.\n\n"
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
	    "SAGA, a saga in --json (get, wait, retry and cancel print one; start, list and "
	    "report\n"
	    "  hold them as each verb's --help says):\n  "
	    "{\"saga_id\",\"state\",\"reason\",\"customer\",\n"
	    "  "
	    "\"sku\",\"qty\",\"amount_minor\",\"amount\",\"attention\",\"version\",\"attempts\",\n"
	    "  \"created_unix_ms\",\"created_at\",\"updated_unix_ms\",\"updated_at\",\n"
	    "  \"step_deadline_unix_ms\",\"next_attempt_unix_ms\",\"epoch\",\"lease_owner\"}; "
	    "money as\n"
	    "  integer minor units"
	    " (*_minor) and as a decimal string.\n\n"
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
	for (int i = 1; i < first; i++)
		if (strncmp(argv[i], "--pag", 5) == 0
		    && strncmp("--page-token", argv[i], strcspn(argv[i], "=")) == 0)
			c.page_token_given = true;
	for (int i = 1; i < first; i++)
		if (strncmp(argv[i], "--r", 3) == 0
		    && strncmp("--rate", argv[i], strcspn(argv[i], "=")) == 0)
			c.rate_given = true;
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
	/* start --input JSON: the input is the option, not the order's four */
	if (cmd->run == ctl_start && c.o.input[0] != '\0')
		want = 0;
	/* retry with no ID: the sagas its filters select */
	if (cmd->run == ctl_retry && nargs == 0) {
		want = 0;
		args[0] = NULL;
	}
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
		rpc_urls_free(&c.urls[i]);
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
    {"definitions", "check or table",
        "usage: sagactl definitions check FILE [--model]\n"
        "       sagactl definitions table FILE [--type TYPE]\n\n"
        "Run 'sagactl definitions check --help' or 'sagactl definitions table --help' for\n"
        "details.\n"},
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
				    g->name, ctl_esc(argv[vi + 1]), g->subs);
			fprintf(stderr, "hint: see 'sagactl %s --help'\n", g->name);
			return CTL_EXIT_USAGE;
		}
		fprintf(stderr,
		    "sagactl: error: unknown verb \"%s\"\nhint: see 'sagactl --help' for the "
		    "verbs\n",
		    ctl_esc(argv[vi]));
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
