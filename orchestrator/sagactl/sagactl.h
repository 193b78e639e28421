/* sagactl's internal header: the types its files share and the contracts of
 * the functions one file offers the others. Not a library: only the sagactl
 * files include it.
 *
 *   sagactl.c        main, the option and verb tables, argument parsing, help
 *   sagactl_out.c    output: tables, JSON, money, times, status names
 *   sagactl_rpc.c    calls: the clients of the services, errors, keyed calls
 *   sagactl_saga.c   the saga verbs: start, get, wait, list, history, retry
 *   sagactl_admin.c  the admin verbs: stock, deposit, accounts, shipments,
 *                    fault, probe, retention
 *   sagactl_report.c report: every service's view, with counts
 *
 * Every function runs on sagactl's one thread. Functions that return an
 * `int` exit code print their error first (stderr, "sagactl: error: ...").
 * Protobuf lives in these files because they are the CLI's codec: every
 * reply payload is unpacked with the NULL allocator, checked for NULL and
 * freed.
 */
#ifndef SAGACTL_H
#define SAGACTL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "config.h"
#include "rpc.h"
#include "saga.h"
#include "tls.h"
#include "valid.h"

#include "sagas/v1/orchestrator.pb-c.h"
#include "sagas/v1/payment.pb-c.h"
#include "sagas/v1/shipping.pb-c.h"
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
/* ListStock, ListAccounts and ListShipments return at most this many rows
 * per call. */
#define CTL_ROWS_LIMIT_MAX 10000

#define CTL_NELEM(a) (sizeof(a) / sizeof((a)[0]))

/* The services sagactl talks to. */
typedef enum ctl_svc {
	CTL_SVC_ORCHESTRATOR = 0,
	CTL_SVC_STOCK = 1,
	CTL_SVC_PAYMENT = 2,
	CTL_SVC_SHIPPING = 3,
	CTL_SVC_COUNT = 4,
} ctl_svc;

/* "orchestrator", "stock", "payment", "shipping": the SERVICE arguments and
 * the names of the URL options. */
extern const char *const ctl_svc_names[CTL_SVC_COUNT];

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
	bool overdue;           /* list --overdue */
	int64_t margin_ms;      /* list --margin (0: the orchestrator's) */
	int64_t stuck_after_ms; /* list --stuck-after (0: the orchestrator's) */
	int64_t older_than_ms;  /* list --older-than (0: any age) */
	char page_token[CONFIG_STR_MAX];
	bool all; /* list --all: follow the pages to the end */
	/* watch */
	char after[CONFIG_STR_MAX];       /* --after: a cursor to go on from */
	char cursor_file[CONFIG_STR_MAX]; /* --cursor-file: resume from, save to */
	bool from_start;                  /* --from-start: from the first transition */
	bool follow;                      /* --follow: keep polling */
	int64_t poll_ms;                  /* --poll-interval */
	char customer[CONFIG_STR_MAX];    /* list --customer */
	bool reservations;
	bool charges;
	char method[CONFIG_STR_MAX];
	int64_t count;
	int64_t delay_ms;
	bool dry_run;                /* retention, retry --dry-run */
	int64_t rate;                /* retry --rate: re-arms a second */
	char target[CONFIG_STR_MAX]; /* retention --target: a SERVICE name */
	char type[CONFIG_STR_MAX];   /* start --type */
	char input[CONFIG_STR_MAX];  /* start --input: the type's input as JSON */
	bool model;                  /* definitions check --model */
	int64_t max_states;          /* definitions check --max-states */
	int64_t max_seconds;         /* definitions check --max-seconds */
	char tls_cert[CONFIG_STR_MAX];
	char tls_key[CONFIG_STR_MAX];
	char tls_ca[CONFIG_STR_MAX];
	char reason[CONFIG_STR_MAX]; /* cancel, retry --reason: the operator's words */
	char saga[CONFIG_STR_MAX];   /* audit --saga */
	char action[CONFIG_STR_MAX]; /* audit --action */
	int64_t before_id;           /* audit --before-id */
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
	rpc_urls urls[CTL_SVC_COUNT]; /* the parsed --orchestrator, --stock, ...:
	                                 one URL or a list of replicas', each
	                                 tls+tcp:// one with its TLS configuration */
	bool transient;        /* the last failed ctl_call got no answer, DEADLINE_EXCEEDED or
	                          UNAVAILABLE: its outcome is unknown */
	bool refused;          /* the last failed ctl_call found nobody listening (its first
	                          connection was refused): nothing was sent */
	bool unreached;        /* the last failed ctl_call's first connection was reset,
	                          closed or timed out while it was set up (a daemon
	                          stopping or starting): nothing was sent */
	bool id_given;         /* --id was on the command line (even as "") */
	bool page_token_given; /* --page-token was on the command line (even as "") */
	bool rate_given;       /* --rate was on the command line (retry) */
	bool own_key;          /* ctl_key made the call's key: nobody else has it */
};

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

/* ---- sagactl.c: errors and argument parsing ---- */

/* ctl_usage prints a usage error about verb `cmd` (NULL: none) with a hint
 * to its --help and returns CTL_EXIT_USAGE. */
int ctl_usage(const ctl_cmd *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ctl_error prints "sagactl: error: <message>" and returns CTL_EXIT_ERROR. */
int ctl_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ctl_parse_int reads a whole number with digits only (no sign, no spaces)
 * into *out. Returns 0, -EINVAL for bad text or -ERANGE outside min..max. */
int ctl_parse_int(const char *text, int64_t min, int64_t max, int64_t *out);

/* ctl_parse_name validates CUSTOMER or SKU (`what`); returns 0 or a usage
 * exit code. */
int ctl_parse_name(ctl_ctx *c, const char *what, const char *text);

/* ctl_parse_amount reads AMOUNT (a decimal in major units) strictly into
 * *out (minor units); returns 0 or a usage exit code. */
int ctl_parse_amount(ctl_ctx *c, const char *text, int64_t *out);

/* ctl_parse_id validates a saga id argument; returns 0 or a usage exit code. */
int ctl_parse_id(ctl_ctx *c, const char *text);

/* ---- sagactl_out.c: output ---- */

/* ctl_iso_ms writes ms since the epoch as ISO-8601 UTC with milliseconds,
 * or "-" for 0. Returns buf (at least 32 bytes). */
char *ctl_iso_ms(int64_t ms, char *buf, size_t len);

/* ctl_money formats minor units as a decimal into buf (32 bytes); returns buf. */
char *ctl_money(int64_t minor, char *buf);

/* ctl_esc returns `s` (NULL: "") escaped for a terminal by valid_escape:
 * every text a server sent (a name, a reason, a message, a token), and
 * every echo of an argument, goes through it (or through ctl_table_row,
 * ctl_error and ctl_usage, which use it) before it reaches the human
 * output; --json has JSON's own escapes. The text lives in one of
 * CTL_ESC_RING buffers that later calls reuse: use it in one printf's
 * arguments, at most CTL_ESC_RING times there. Out of memory: "?". */
#define CTL_ESC_RING 8
const char *ctl_esc(const char *s);

/* Names of status values ("CHARGED", "RESERVED", "SHIPPED", "SERVING");
 * "UNSPECIFIED" for unknown values. Static storage. */
const char *ctl_charge_status_name(int s);
const char *ctl_reservation_status_name(int s);
const char *ctl_shipment_status_name(int s);
const char *ctl_serving_status_name(int s);

/* A table of strings printed as psql does; an allocation failure is sticky
 * and reported by ctl_table_done, so that callers check once. Initialise
 * ncols, head and align; the rest zero. */
typedef struct ctl_table {
	size_t ncols; /* at most 16 */
	const char *const *head;
	const char *align; /* one 'l' or 'r' per column */
	char **cells;      /* nrows * ncols, malloc'd */
	size_t nrows;
	size_t cap;
	bool oom;
} ctl_table;

/* ctl_table_row appends one row of t->ncols strings (copied; NULL is ""). */
void ctl_table_row(ctl_table *t, ...);

/* ctl_table_done prints the table to stdout with a "(N rows)" footer, then
 * frees it; returns an exit code. */
int ctl_table_done(ctl_table *t);

/* ctl_table_fini frees a table without printing it. */
void ctl_table_fini(ctl_table *t);

/* ctl_truncated_note prints, when `truncated`, that a listing shows only the
 * newest `shown` rows. */
void ctl_truncated_note(bool truncated, size_t shown);

/* ctl_json_print writes `j` on one line to stdout and drops the reference.
 * A NULL `j` (a failed json_pack) is an error. Returns an exit code. */
int ctl_json_print(json_t *j);

/* ctl_json_append appends `v` (stolen) to array `a`; false when either is
 * NULL or the append failed. */
bool ctl_json_append(json_t *a, json_t *v);

/* ctl_saga_json is a saga with its order, the shape shared by start, get,
 * list and report; a new reference, NULL on failure. */
json_t *ctl_saga_json(const Sagas__V1__Saga *s);

/* ctl_state: the name of saga s's state (GetSaga's state_name, which an
 * orchestrator of any saga type sends; the SagaState's name from an older
 * one). Borrowed from s, or static. */
const char *ctl_state(const Sagas__V1__Saga *s);

/* ctl_hist_state: the name of a history entry's from (from true) or to
 * state, as ctl_state; NULL for the start's from. */
const char *ctl_hist_state(const Sagas__V1__HistoryEntry *e, bool from);

/* ctl_saga_print prints one saga as aligned lines; `created` is -1 (no
 * created line: get, wait, retry) or the ctl_key_use of a StartSaga. */
void ctl_saga_print(const Sagas__V1__Saga *s, int created);

/* ---- sagactl_rpc.c: calls ---- */

/* ctl_call sends one request to `svc` and waits up to `timeout_ms`. On an OK
 * reply returns 0 with the payload in *res (clear it with rpc_result_clear).
 * Otherwise prints "sagactl: error: could not <action>: ..." (or "could not reach"
 * for a transport failure) unless `quiet`, clears *res and returns an exit
 * code. With `quiet`, a transient failure (no reply, DEADLINE_EXCEEDED,
 * UNAVAILABLE) returns -1 without printing, for callers that poll. */
int ctl_call(ctl_ctx *c, ctl_svc svc, const char *method, const ProtobufCMessage *req,
    const char *action, int64_t timeout_ms, bool quiet, rpc_result *res);

/* ctl_call_keyed is ctl_call for a call that carries its own idempotency
 * key: a transient failure (no reply, DEADLINE_EXCEEDED, UNAVAILABLE; rule 3
 * of saga-semantics.md) is re-sent as it is, up to CTL_KEYED_TRIES tries
 * 100 ms, 200 ms, ... apart, so that the outcome of a call whose reply was
 * lost is settled instead of left unknown. *tries is how many were sent.
 * Returns as ctl_call (after the last try, c->transient says whether the
 * outcome is still unknown). */
int ctl_call_keyed(ctl_ctx *c, ctl_svc svc, const char *method, const ProtobufCMessage *req,
    const char *action, int64_t timeout_ms, rpc_result *res, int *tries);

/* ctl_key fills `id` with the call's idempotency key: --id when given (it
 * must be a canonical lowercase UUID), else a new random one, so that the
 * call is harmless even if it is delivered twice. Returns 0, or the usage
 * exit code after printing the error. */
int ctl_key(ctl_ctx *c, char id[VALID_UUID_LEN + 1]);

/* ctl_key_use_of tells who used the key of a keyed call that took `tries`
 * tries and whose reply said the key was `used_before` (StartSaga's
 * created false, Deposit's duplicate true). */
ctl_key_use ctl_key_use_of(const ctl_ctx *c, bool used_before, int tries);

/* ctl_bad_reply reports a reply payload of `svc` that did not decode;
 * returns CTL_EXIT_ERROR. */
int ctl_bad_reply(ctl_ctx *c, ctl_svc svc, const char *what);

/* ctl_saga_ok is true when a decoded saga has the parts the CLI prints. */
bool ctl_saga_ok(const Sagas__V1__Saga *s);

/* ---- sagactl_saga.c: the saga verbs ---- */

/* ctl_list_sagas calls ListSagas for the first page. Returns 0 and *out
 * (free it), or an exit code after printing an error. */
int ctl_list_sagas(
    ctl_ctx *c, saga_state state, int32_t limit, bool attention, Sagas__V1__ListSagasReply **out);

/* ctl_list_page calls ListSagas with `req` (one page). Returns 0 and *out
 * (free it), or an exit code after printing an error. */
int ctl_list_page(
    ctl_ctx *c, const Sagas__V1__ListSagasRequest *req, Sagas__V1__ListSagasReply **out);

/* CTL_STATE_NAME_MAX: the bytes of a --state name sent as state_name. */
#define CTL_STATE_NAME_MAX 72

/* ctl_list_filter fills *req (initialised here) with the filters of `list`
 * from c->o (--state, --type, --attention, --overdue, --margin,
 * --stuck-after, --older-than, --customer, --limit); `state_name` is the
 * caller's buffer req->state_name points to; the strings borrow c->o.
 * Returns 0, or CTL_EXIT_USAGE after printing a bad --state or --margin
 * without --overdue. */
int ctl_list_filter(
    ctl_ctx *c, Sagas__V1__ListSagasRequest *req, char state_name[CTL_STATE_NAME_MAX]);

/* ctl_try sends one request to `svc` and waits up to `timeout_ms`: 0 with
 * whatever came back in *res (any code, transport failures included;
 * clear it with rpc_result_clear), printing nothing; an exit code after
 * printing an error when no request could be sent. */
int ctl_try(ctl_ctx *c, ctl_svc svc, const char *method, const ProtobufCMessage *req,
    int64_t timeout_ms, rpc_result *res);

/* The verbs' actions: parse args (the verb's positional arguments) and
 * c->o, call, print; return an exit code. */
int ctl_start(ctl_ctx *c, char **args);
int ctl_get(ctl_ctx *c, char **args);
int ctl_wait_cmd(ctl_ctx *c, char **args);
int ctl_list(ctl_ctx *c, char **args);
int ctl_history(ctl_ctx *c, char **args);
int ctl_retry(ctl_ctx *c, char **args);

/* ---- sagactl_ops.c: cancel and the audit trail (issue 36) ---- */

/* ctl_cancel: CancelSaga of args[0] with --reason (required) and --id (the
 * request's idempotency key; default a new one), re-sent on a transient
 * failure; prints the saga (--json: SAGA with "replayed"). Returns an exit
 * code: 1 for a refusal (FAILED_PRECONDITION past_pivot, ...). */
int ctl_cancel(ctl_ctx *c, char **args);

/* ctl_audit: ListAudit, newest first, --saga, --action, --limit; prints a
 * table (--json: an array of entries). Returns an exit code. */
int ctl_audit(ctl_ctx *c, char **args);

/* CTL_NOTE_MAX: an operator's reason, at most (bytes; the orchestrator's
 * limit) */
#define CTL_NOTE_MAX 255

/* ctl_reason_check checks --reason as the orchestrator will (valid_note),
 * before anything is sent: "" is fine unless `required`. Returns 0 or the
 * usage exit code after printing the error. */
int ctl_reason_check(ctl_ctx *c, bool required);

/* ---- sagactl_retry.c ---- */
/* retry with no ID: re-arms every unfinished saga the filters of `list`
 * select (at least one is required), at most --rate a second, or with
 * --dry-run only counts them; prints what it did. Exit 0 when every
 * matching saga was re-armed or had finished meanwhile, 1 otherwise. */
int ctl_retry_many(ctl_ctx *c);

/* ctl_retry_filtered is true when c->o holds any of retry's filters
 * (--attention, --overdue, --state, --type, --customer, --older-than above
 * 0): the one list both retry ID (which refuses them) and retry FILTERS
 * (which needs one) read. */
bool ctl_retry_filtered(const ctl_ctx *c);

/* ---- sagactl_watch.c ---- */
int ctl_watch(ctl_ctx *c, char **args);

/* ---- sagactl_admin.c: the admin verbs ---- */

/* ctl_list_stock calls ListStock: the per-sku summary and, when
 * `reservations`, at most `limit` reservation rows, newest first. Returns 0
 * and *out (free it), or an exit code after printing an error. */
int ctl_list_stock(ctl_ctx *c, bool reservations, int64_t limit, Sagas__V1__ListStockReply **out);

/* ctl_stock_item_json is the shape of one sku in `stock list` and `report`. */
json_t *ctl_stock_item_json(const Sagas__V1__StockItem *it);

/* ctl_stock_table prints the sku table of `rep`; returns an exit code. */
int ctl_stock_table(const Sagas__V1__ListStockReply *rep);

/* ctl_list_accounts calls ListAccounts: every account with its aggregates
 * and, when `charges`, at most `limit` charge rows, newest first. Returns 0
 * and *out (free it), or an exit code after printing an error. */
int ctl_list_accounts(ctl_ctx *c, bool charges, int64_t limit, Sagas__V1__ListAccountsReply **out);

/* ctl_accounts_json appends the accounts of `rep` to `accounts` and, when
 * `charges` is not NULL, its charge rows to `charges`; false on failure. */
bool ctl_accounts_json(const Sagas__V1__ListAccountsReply *rep, json_t *accounts, json_t *charges);

/* ctl_accounts_tables prints the account table of `rep` and, when
 * `charges`, its charge rows; returns an exit code. */
int ctl_accounts_tables(const Sagas__V1__ListAccountsReply *rep, bool charges);

/* ctl_list_shipments calls ListShipments: the count of every shipment and
 * at most `limit` shipment rows, newest first. Returns 0 and *out (free
 * it), or an exit code after printing an error. */
int ctl_list_shipments(ctl_ctx *c, int64_t limit, Sagas__V1__ListShipmentsReply **out);

/* ctl_shipments_json appends the shipment rows of `rep` to `rows`; false on
 * failure. */
bool ctl_shipments_json(const Sagas__V1__ListShipmentsReply *rep, json_t *rows);

/* ctl_shipments_table prints the shipment rows of `rep` and the truncation
 * note; returns an exit code. */
int ctl_shipments_table(const Sagas__V1__ListShipmentsReply *rep);

int ctl_stock_set(ctl_ctx *c, char **args);
int ctl_stock_list(ctl_ctx *c, char **args);
int ctl_deposit(ctl_ctx *c, char **args);
int ctl_accounts(ctl_ctx *c, char **args);
int ctl_shipments(ctl_ctx *c, char **args);
int ctl_fault_set(ctl_ctx *c, char **args);
int ctl_fault_clear(ctl_ctx *c, char **args);
int ctl_probe(ctl_ctx *c, char **args);
/* ctl_retention calls /sagas.v1.Admin/RunRetention (dry with --dry-run) on
 * the daemon --target names (default orchestrator) and prints what it
 * deleted, or would delete; returns an exit code. */
int ctl_retention(ctl_ctx *c, char **args);

/* ---- sagactl_defs.c ---- */
/* definitions check FILE: no server; exit 0 when the file validates, else
 * the error (FILE:LINE:COLUMN: PATH: message) and exit 1. */
int ctl_definitions_check(ctl_ctx *c, char **args);
/* definitions table FILE [--type T]: no server; prints each type's (or
 * T's) state table in Markdown (saga_def_table); exit 0, or 1 when the
 * file does not validate or has no type T. */
int ctl_definitions_table(ctl_ctx *c, char **args);

/* ---- sagactl_report.c ---- */

int ctl_report(ctl_ctx *c, char **args);

#endif
