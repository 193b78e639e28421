/* pg: libpq helpers. Parameterised queries only, transactions, SQLSTATE
 * classification (the one place that maps PostgreSQL errors), connect with
 * retry. One PGconn per thread (house style); nothing here is shared.
 */
#ifndef SAGA_PG_H
#define SAGA_PG_H

#include <libpq-fe.h>
#include <stdbool.h>
#include <stdint.h>

/* Error classes of a failed statement, as negative return codes. */
enum pg_err {
	PG_OK = 0,
	PG_ERR_RETRY = -1001,        /* 40001 serialization_failure, 40P01 deadlock:
	                                retry the whole transaction */
	PG_ERR_UNIQUE = -1002,       /* 23505 unique_violation */
	PG_ERR_CHECK = -1003,        /* 23514 check_violation */
	PG_ERR_CONNECTION = -1004,   /* class 08, 57P01..57P03, 25006 (a
	                                read-only session: its server is a
	                                standby), or a broken connection:
	                                transient, reconnect */
	PG_ERR_OTHER = -1005,        /* anything else: a bug or bad data */
	PG_ERR_INJECTED = -1006,     /* a failure-injection point (fault.h) failed
	                                the transaction before COMMIT */
	PG_ERR_SCHEMA_NEWER = -1007, /* the database's schema is newer than
	                                this program knows (pg_apply_schema) */
	PG_ERR_CANCELED = -1008,     /* 57014 query_canceled: the session's
	                                statement_timeout fired, or a cancel
	                                request (PQcancel) ended the statement */
};

/* pg_err_name names a return code for logs: "connection lost",
 * "lost a race", ..., or strerror's text for a negative errno. Static
 * storage (per thread for errno texts). */
const char *pg_err_name(int rc);

/* pg_metrics_init registers the database metrics (sagas_db_commit_seconds,
 * sagas_db_errors_total{class}, sagas_db_reconnects_total) so that they are
 * exported from the start. Call once from a daemon's main. */
void pg_metrics_init(void);

/* pg_classify maps a SQLSTATE (5 chars, may be NULL when the connection
 * broke) to an enum pg_err value. */
int pg_classify(const char *sqlstate);

/* pg_one_line copies libpq's message `m` (several lines, tabs), or any text
 * read from the database, into `out` (len bytes, truncated to fit) as one
 * line for a log: runs of white space become one space, none at either
 * end, and other control bytes (ESC, BEL) '?'. Returns out. */
const char *pg_one_line(const char *m, char *out, size_t len);

/* The link timeout (docs/operations.md, "A database link that stalls"): how
 * long a database connection may go without an answer from its server
 * before both ends take it as dead. Every connection made here (pg_connect,
 * pg_connect_once, pg_ensure, pg_params_make's users) gets, unless its
 * conninfo says otherwise, TCP keepalives after half of it, probes every
 * eighth (at least 1 s) until it has passed, tcp_user_timeout of all of it
 * and a connect_timeout of it (libpq keywords keepalives, keepalives_idle,
 * keepalives_interval, keepalives_count, tcp_user_timeout,
 * connect_timeout); and its session sets the server's side to the same
 * (tcp_keepalives_idle, tcp_keepalives_interval, tcp_keepalives_count,
 * tcp_user_timeout), each only where the server still has its built-in
 * default (a value from postgresql.conf, ALTER ROLE or the conninfo's
 * `options` stays). So a link that stalls (packets dropped, no reset) ends
 * within about the timeout plus one probe interval at both ends: the
 * client's call fails with PG_ERR_CONNECTION, and PostgreSQL ends the
 * backend, which frees its advisory locks (elect.h). */
#define PG_LINK_TIMEOUT_DEFAULT_MS 20000
#define PG_LINK_TIMEOUT_MIN_MS     2000

/* pg_set_link_timeout sets the link timeout of the connections made from
 * now on, in ms (PG_LINK_TIMEOUT_MIN_MS or more; smaller values are taken
 * as the minimum). Call from main before connecting; until then it is
 * PG_LINK_TIMEOUT_DEFAULT_MS. */
void pg_set_link_timeout(int64_t ms);

/* pg_link_timeout_ms is the link timeout in use, in ms. */
int64_t pg_link_timeout_ms(void);

/* The keepalive settings a link timeout of `ms` gives: idle and interval in
 * seconds, the count of probes; tcp_user_timeout is `ms` itself. */
typedef struct pg_keepalive {
	int idle_s, interval_s, count;
} pg_keepalive;
pg_keepalive pg_keepalive_for(int64_t ms);

/* The keyword/value arrays of a connection to `conninfo` with the link
 * timeout's defaults in front (pg_params_make), for PQconnectdbParams or
 * PQconnectStartParams with expand_dbname = 1: the conninfo comes last, as
 * `dbname`, so every keyword it sets overrides the defaults. A caller may
 * append PG_PARAMS_EXTRA pairs of its own at index n (they then override
 * the conninfo's), then end the arrays with NULL at the new n. */
#define PG_PARAMS_EXTRA 2
typedef struct pg_params {
	const char *keys[8 + PG_PARAMS_EXTRA + 1];
	const char *vals[8 + PG_PARAMS_EXTRA + 1];
	int n;            /* entries in use, before the NULL that ends them */
	char text[5][24]; /* the numbers, as text (vals points here) */
} pg_params;

/* pg_link_server_sql writes into `buf` (len bytes; 512 is enough) the one
 * statement that sets the server's end of the link to the link timeout
 * where the server has its built-in default (a SELECT of set_config, one
 * row per setting changed). Every session made by pg_connect, pg_connect_once
 * and pg_ensure runs it; a caller that connects otherwise runs it itself. */
void pg_link_server_sql(char *buf, size_t len);

/* pg_params_make fills *p for `conninfo` (borrowed: it must outlive the
 * connect call) with the current link timeout. */
void pg_params_make(pg_params *p, const char *conninfo);

/* pg_connect warns at its first failed try when it may wait this long (ms). */
#define PG_CONNECT_WARN_WAIT_MS 1000

/* pg_conninfo_ok is true when libpq can parse `conninfo` (keyword/value or
 * URI); otherwise it writes libpq's reason, on one line, into `why` (len
 * bytes). A conninfo that cannot parse fails every connection the same way,
 * so the daemons refuse it at start as a bad option (exit 2). */
bool pg_conninfo_ok(const char *conninfo, char *why, size_t len);

/* pg_log_notices sends the notices of `conn`'s server (what passes the
 * session's client_min_messages) to the log, one WARNING line each, instead
 * of libpq's raw stderr. pg_connect and pg_ensure do it for theirs. */
void pg_log_notices(PGconn *conn);

/* pg_session_is_standby is true when `conn`'s server said it is a hot
 * standby (parameter in_hot_standby, reported by PostgreSQL 14 and later;
 * false for older servers, whose read-only sessions show as SQLSTATE 25006
 * instead). The daemons only write, so such a session is of no use to them
 * (docs/operations.md, "PostgreSQL failover"). */
bool pg_session_is_standby(const PGconn *conn);

/* pg_connect opens a connection to `conninfo` (libpq keyword/value or URI;
 * several hosts, host=a,b port=p,q, are tried in order by libpq, which with
 * target_session_attrs=read-write skips standbys), retrying with backoff
 * (50 ms doubling to 1 s) for up to `wait_ms` ms (the last sleep is cut to
 * end at the deadline, and one more try is made there). A session that
 * lands on a standby (pg_session_is_standby) counts as a failed try.
 * With wait_ms >= PG_CONNECT_WARN_WAIT_MS the first failure is logged at
 * WARNING with its reason. Returns the connection (caller owns it, PQfinish)
 * or NULL after logging the last error. */
PGconn *pg_connect(const char *conninfo, int64_t wait_ms);

/* pg_connect_once is one try of pg_connect, silent: the connection (set
 * up as pg_connect's, caller owns it, PQfinish), or NULL with libpq's
 * reason, on one line, in `why` (len bytes). For a caller that retries on
 * its own schedule and logs once per outage (the orchestrator's listener,
 * which must stay able to stop between tries). */
PGconn *pg_connect_once(const char *conninfo, char *why, size_t len);

/* pg_exec runs `sql` with `nparams` text parameters (NULL entries are SQL
 * NULL) and returns 0 with *out set (caller PQclear()s it; out may be NULL
 * to discard), or a negative enum pg_err after logging the server message at
 * debug level. Rows are returned as text. */
int pg_exec(PGconn *conn, const char *sql, int nparams, const char *const *params, PGresult **out)
    __attribute__((warn_unused_result));

/* pg_exec_within is pg_exec with a bound: when the whole result has not
 * come within `timeout_ms` ms (the server or the link stalled), it gives up
 * and returns PG_ERR_CONNECTION; the connection is then in the middle of a
 * query and of no further use: the caller PQfinishes it (which does not
 * block: it is left in non-blocking mode). Otherwise as pg_exec (the
 * connection back in blocking mode). */
int pg_exec_within(PGconn *conn, const char *sql, int nparams, const char *const *params,
    PGresult **out, int64_t timeout_ms) __attribute__((warn_unused_result));

/* pg_run is pg_exec for statements whose result is not needed. */
int pg_run(PGconn *conn, const char *sql, int nparams, const char *const *params)
    __attribute__((warn_unused_result));

/* pg_begin, pg_commit and pg_rollback wrap transaction control. pg_rollback
 * never fails loudly: it is called on error paths. Return 0 or enum pg_err. */
int pg_begin(PGconn *conn) __attribute__((warn_unused_result));
int pg_commit(PGconn *conn) __attribute__((warn_unused_result));
void pg_rollback(PGconn *conn);

/* pg_ensure reconnects `*conn` when its connection is bad, or when a
 * statement on it failed with SQLSTATE 25006 (its server is a standby: a
 * failover, docs/operations.md "PostgreSQL failover"): PQreset (libpq tries
 * every host of the conninfo again), then, if that failed or found a
 * standby, a fresh pg_connect with `conninfo` for up to wait_ms. A
 * reconnection is logged at LOG with the host and port reached ("reconnected
 * to database at HOST:PORT") and counted (sagas_db_reconnects_total); a
 * thread's first session made here (*conn NULL: a worker's that connects
 * lazily) is logged "connected to database at HOST:PORT", not counted: a
 * fresh start reconnects nothing (pg_failover's check that every daemon
 * reached the new primary reads both). Returns true when the connection is
 * usable afterwards. */
bool pg_ensure(PGconn **conn, const char *conninfo, int64_t wait_ms);

/* A database's schema, as the program that applies it knows it. */
typedef struct pg_schema {
	const char *what;     /* the component: "stock", "payment", "orchestrator" */
	const char *sql;      /* several idempotent statements, no parameters */
	const char *lock_key; /* advisory lock, a bigint as text */
	int version;          /* > 0: raised with every change of `sql` */
	const char *prog;     /* "stockd": recorded as who applied it, and named
	                         in the refusal */
} pg_schema;

/* pg_apply_schema applies `s` (docs/operations.md, "Upgrading") in one
 * transaction under its advisory lock, so daemons starting together apply
 * it one at a time; NOTICEs are silenced. The database records each
 * component's version in table schema_version (component, version,
 * applied_at, applied_by). A recorded version newer than s->version is
 * refused: nothing is changed, an error line names both versions, and
 * PG_ERR_SCHEMA_NEWER is returned. Otherwise the statements run (an older
 * or unversioned schema is migrated by them, as they are idempotent) and
 * the version is recorded. Returns 0 or an enum pg_err. */
int pg_apply_schema(PGconn *conn, const pg_schema *s) __attribute__((warn_unused_result));

/* pg_schema_try_again decides, after an apply of the schema of component
 * `what` ("stock", ...) that returned `rc`, whether to apply it once more on a new connection: true
 * for PG_ERR_CONNECTION (the server died or turned out read-only mid-apply: a failover) and
 * PG_ERR_RETRY (a deadlock with another instance on the database, e.g. a second orchestrator
 * starting) while the monotonic time `until_ms` is ahead, after a WARNING and a pause of
 * PG_SCHEMA_RETRY_MS (cut at until_ms). */
#define PG_SCHEMA_RETRY_MS 500
bool pg_schema_try_again(int rc, int64_t until_ms, const char *what);

/* pg_connect_and_apply_schema is pg_apply_schema on a connection of its own,
 * made with pg_connect and closed afterwards; a connection lost meanwhile
 * (pg_schema_try_again) is made again and the schema applied again (it is
 * idempotent), all within wait_ms. Returns as pg_apply_schema, or
 * PG_ERR_CONNECTION when no connection was made in time. */
int pg_connect_and_apply_schema(const char *conninfo, int64_t wait_ms, const pg_schema *s)
    __attribute__((warn_unused_result));

/* pg_ready makes `*conn` usable for a new call: reconnected after a lost
 * connection (pg_ensure, waiting up to wait_ms), and outside any
 * transaction (one left open by a bug is rolled back). Returns 0 or
 * PG_ERR_CONNECTION. */
int pg_ready(PGconn **conn, const char *conninfo, int64_t wait_ms)
    __attribute__((warn_unused_result));

/* pg_may_rerun is true when a call that failed with `rc` should run once
 * more on a fresh connection: a connection that went stale (the server
 * restarted, pg_terminate_backend) only fails when first used. It is true
 * at most once per call (*rerun_done) and only for PG_ERR_CONNECTION, after
 * reconnecting. Callers pass only work that is safe to repeat even if the
 * lost COMMIT went through: commands idempotent by saga id, absolute writes,
 * reads. */
bool pg_may_rerun(PGconn **conn, const char *conninfo, int64_t wait_ms, int rc, bool *rerun_done);

/* pg_get_i64 reads column `col` of row `row` as an int64 (0 when NULL). */
int64_t pg_get_i64(const PGresult *res, int row, int col);

/* A statement prepared once per session by pg_exec_stmt: a unique `name`
 * and its `sql`; both static storage. */
typedef struct pg_stmt {
	const char *name;
	const char *sql;
	bool commits; /* a write that commits by itself when run outside a
	                 transaction: timed in sagas_db_commit_seconds */
} pg_stmt;

/* pg_exec_stmt is pg_exec for a statement that is prepared on first use in
 * each session (PQprepare, remembered per thread, since each thread owns its
 * connection) and then run with PQexecPrepared: no parse or plan per call.
 * A new or reset connection (another backend pid) prepares again; a session
 * that lost the statement (SQLSTATE 26000) fails this call and prepares it
 * again on the next. At most PG_STMT_MAX statements per thread. Returns as
 * pg_exec. */
#define PG_STMT_MAX 32
int pg_exec_stmt(PGconn *conn, const pg_stmt *st, int nparams, const char *const *params,
    PGresult **out) __attribute__((warn_unused_result));

/* One statement of a pipeline (pg_pipeline): a prepared statement `st` with
 * its text parameters, or, when st is NULL, `sql` without parameters
 * ("BEGIN", "COMMIT"). */
typedef struct pg_call {
	const pg_stmt *st;
	const char *sql;
	int nparams;
	const char *const *params;
	PGresult *res; /* out: its result on success (caller PQclears), else NULL */
} pg_call;

/* pg_pipeline sends `n` statements (1..PG_PIPELINE_MAX) at once in libpq's
 * pipeline mode, with one sync, and reads their results: one round trip
 * instead of n. Statements are prepared on first use as in pg_exec_stmt.
 * When one fails, the ones after it are not run (inside a transaction,
 * the transaction is then aborted: the caller rolls back). Returns 0 with
 * every calls[i].res set, or the enum pg_err of the first failure with
 * every res NULL (PG_ERR_RETRY also when a statement had to be prepared
 * again: run the pipeline once more). */
#define PG_PIPELINE_MAX 8
int pg_pipeline(PGconn *conn, pg_call *calls, int n) __attribute__((warn_unused_result));

/* A growing text buffer for PostgreSQL array literals ("{...}"), the
 * parameters of set-based statements (unnest, = ANY). */
typedef struct pg_buf {
	char *p; /* NUL-terminated; malloc'd, freed by pg_buf_free */
	size_t len, cap;
	bool oom; /* an append ran out of memory: the text is incomplete */
	bool any; /* an element was added since pg_array_open */
} pg_buf;

/* pg_array_open starts an array literal ("{"); pg_array_add appends one
 * element, double-quoted with " and \ escaped, so any text (sku, customer
 * names) is safe; NULL adds an SQL NULL. pg_array_add_i64 appends a number.
 * pg_array_close ends it ("}"). Check b->oom before use (then -ENOMEM). */
void pg_array_open(pg_buf *b);
void pg_array_add(pg_buf *b, const char *elem);
void pg_array_add_i64(pg_buf *b, int64_t v);
void pg_array_close(pg_buf *b);

/* pg_buf_free frees the text and empties the buffer. */
void pg_buf_free(pg_buf *b);

/* The `n` array parameters of one set-based statement, one column each:
 * pg_arrays_open zeroes and opens all of `cols`; pg_arrays_close closes
 * them and points params[k] at each text (borrowed from cols[k]), and
 * returns 0, or -ENOMEM when an append ran out of memory; pg_arrays_free
 * frees them all. */
void pg_arrays_open(pg_buf *cols, int n);
int pg_arrays_close(pg_buf *cols, int n, const char **params) __attribute__((warn_unused_result));
void pg_arrays_free(pg_buf *cols, int n);

#endif
