/* bench: what the parts of sagabench share (sagabench.c: main and its
 * helpers; options.c: the command line; run.c: the clients, the seeding and
 * the run; checks.c: the invariants; report.c: the figures and the
 * report): the types of a run, the options, and each step of main.
 */
#ifndef SAGA_BENCH_H
#define SAGA_BENCH_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "rpc.h"
#include "sagas/v1/orchestrator.pb-c.h"

#define ST_COMPLETED SAGAS__V1__SAGA_STATE__SAGA_STATE_COMPLETED
#define ST_CANCELLED SAGAS__V1__SAGA_STATE__SAGA_STATE_CANCELLED

enum kind { K_GOOD = 0, K_OOS = 1, K_DECLINE = 2 };
enum phase { P_IDLE = 0, P_STARTING, P_START_RETRY, P_POLL_WAIT, P_POLLING, P_DONE, P_FAILED };

/* StartSaga retries after a transient failure: how many, and their backoff
 * (exponential from 10 ms, capped), so a database restart of a few seconds
 * is ridden out instead of hammered. */
#define BENCH_START_TRIES          30
#define BENCH_START_BACKOFF_US     10000
#define BENCH_START_BACKOFF_MAX_US 1000000

typedef struct saga_slot {
	char id[40];
	uint8_t kind;
	uint8_t phase;
	uint8_t start_tries;
	int sku;               /* index into the good skus, -1 for the out-of-stock one */
	int customer;          /* index into the customers, -1 for the broke one */
	int state;             /* terminal state observed */
	int64_t t_sent_us;     /* first StartSaga sent (monotonic) */
	int64_t t_sent_wall;   /* same, wall ms */
	int64_t t_end_us;      /* terminal state observed (monotonic) */
	int64_t t_commit_wall; /* updated_unix_ms of the terminal row */
	int64_t next_poll_us;
	int64_t t_asked_us; /* when the latest GetSaga/WaitSaga was sent */
	int32_t next_q;     /* poll FIFO link, -1 = none */
	uint32_t polls;
} saga_slot;

/* a completed call, queued by the nng callback */
typedef struct done_item {
	struct done_item *next;
	int32_t idx;
	bool is_start;
	int code;
	bool transport;
	int state;
	int64_t updated_ms;
	int64_t t_us;
	char reason[RPC_REASON_MAX];
} done_item;

enum { DETECT_START, DETECT_WAIT, DETECT_POLL };

typedef struct options {
	const char *orch, *stock, *payment;
	const char *tls_cert, *tls_key, *tls_ca; /* for tls+tcp:// URLs */
	long n;
	long c;
	double rate;
	double mix;
	int detect;       /* DETECT_START, DETECT_WAIT or DETECT_POLL */
	double poll_ms;   /* <= 0: auto */
	long poll_window; /* most GetSaga (WaitSaga) calls in flight at once; 0: auto */
	long skus, customers;
	int32_t qty;
	int64_t amount;
	double timeout_s;
	double duration_s; /* stop starting after this long; 0 = run all N */
	bool json;
	int progress; /* -1 auto (isatty), 0 off, 1 on */
	const char *label;
	const char *log_path; /* --log: one line per finished saga; NULL: none */
	int64_t call_timeout_ms;
} options;

/* the options (bench_options), read by every part */
extern options opt;

/* One invariant checked at the end. */
typedef struct check {
	const char *name;
	bool ok;
	char detail[200];
} check;

/* One run of the benchmark: what each step of main leaves for the next.
 * Allocations are freed by bench_close. */
typedef struct bench {
	/* the sagas of the run and its name (bench_plan) */
	saga_slot *slots;
	char tag[24];    /* names of this run: skus and customers */
	uint32_t run_hi; /* the first 8 hex digits of every saga id of this run */
	/* the clients and their parsed lists (bench_connect) */
	rpc_client *orch, *stock, *pay;
	rpc_urls urls[3];
	/* what each sku and customer needs, and was seeded with (bench_seed) */
	int64_t *sku_need, *cust_need;
	int64_t *sku_init, *cust_init;
	int64_t broke_init;
	/* the run (bench_run) */
	int64_t t0, t0_wall_ms;
	bool timed_out;
	long n_started, n_ended, n_failed_start, n_start_retries, n_poll_errors;
	uint64_t n_polls;
	char last_start_error[160];
	/* the figures (bench_figures) */
	FILE *logf; /* --log, open from bench_log_open to bench_figures */
	bool log_failed;
	long completed, cancelled, cancelled_oos, cancelled_decline, cancelled_other, unfinished;
	int64_t *lat, *clat; /* latencies, us, sorted */
	size_t nl, ncl;
	uint64_t polls_done_sagas;
	double elapsed, sps, cps;
	/* the invariants (bench_check) */
	check checks[16];
	int nchecks;
	bool all_ok;
} bench;

/* die prints "sagabench: " and the message on stderr and exits with
 * `code`. */
void die(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3), noreturn));

/* now_us is the monotonic clock in us, wall_ms the wall clock in unix ms. */
int64_t now_us(void);
int64_t wall_ms(void);

/* bench_options parses the command line and the environment into `opt`,
 * exiting 0 after --help or --version and 2 on a usage error. */
void bench_options(int argc, char **argv);

/* bench_log_open opens --log for writing (exits 2 when it cannot). */
void bench_log_open(bench *b);

/* bench_init names the run (b->run_hi, b->tag) and readies the queue of
 * replies. bench_connect opens the three clients (exits 3 when a daemon
 * cannot be reached). bench_plan makes the sagas: their ids, kinds, skus and
 * customers. bench_seed gives every sku and customer enough for its good
 * sagas (exits 3 when a daemon refuses). bench_run runs the sagas until they
 * ended or --timeout. bench_close closes the clients and frees the run. */
void bench_init(bench *b);
void bench_connect(bench *b);
void bench_plan(bench *b);
void bench_seed(bench *b);
void bench_run(bench *b);
void bench_close(bench *b);

/* call_sync makes a blocking call, exiting 3 unless it answers OK; `what`
 * names it in the message. res->payload is the caller's (rpc_result_clear). */
void call_sync(rpc_client *c, const char *what, const char *method, const ProtobufCMessage *req,
    rpc_result *res);

/* bench_figures counts the outcomes and the latencies, and writes --log.
 * bench_check checks the invariants against the participants' listings
 * (exits 3 when one cannot be read). bench_report prints the report (text
 * or --json) and, when an invariant failed, says which on stderr.
 * bench_status is the exit status: 0, 1 when an invariant failed, else 3
 * when the run failed (sagas unfinished, --log not written). */
void bench_figures(bench *b);
void bench_check(bench *b);
void bench_report(const bench *b);
int bench_status(const bench *b);

#endif
