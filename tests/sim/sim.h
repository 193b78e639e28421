/* sim: a deterministic simulation of the order saga.
 *
 * One orchestrator and the three participants (stock, payment, shipping)
 * run in one thread against a simulated clock and network. Their rules come
 * only from sim_rules.h (the production decisions); this module supplies
 * what the daemons do around them: the committed stores (saga rows,
 * idempotency records, stock, accounts and shipments), the volatile state
 * lost by a crash (commands in flight), the
 * sweep that claims due rows, and a network that drops, duplicates, delays
 * and reorders every command and reply.
 *
 * A sim_world is a flat value (no pointers): copying it with memcpy forks
 * the simulation, which the exhaustive explorer relies on. Times are
 * simulated ms. Everything is single-threaded.
 */
#ifndef SAGA_SIM_H
#define SAGA_SIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "payment_logic.h"
#include "saga.h"
#include "shipping_logic.h"
#include "stock_logic.h"

#define SIM_MAX_SAGAS     8
#define SIM_MAX_MSGS      96
#define SIM_MAX_CALLS     32
#define SIM_NSKU          3 /* the last one does not exist at the participant */
#define SIM_NACCT         4 /* the last one does not exist at the participant */
#define SIM_VIOLATION_MAX 200

typedef enum sim_node {
	SIM_ORCH = 0,
	SIM_STOCK = 1,
	SIM_PAYMENT = 2,
	SIM_SHIPPING = 3,
	SIM_NODES = 4,
} sim_node;

/* One order, as given to StartSaga. */
typedef struct sim_order {
	int sku;      /* index in sim_sku_names */
	int customer; /* index in sim_customer_names */
	int32_t qty;
	int64_t amount; /* minor units */
	int64_t start_ms;
} sim_order;

/* A committed saga row (the orchestrator's store). */
typedef struct sim_row {
	bool exists;
	saga s;
	int64_t version;
	int64_t epoch;      /* the claim's fencing epoch (rule 10): 1 at the start,
	                       +1 at every claim of the sweep */
	int64_t created_ms; /* the database's clock at the insert (created_at) */
} sim_row;

/* A command awaiting its reply: volatile, lost by an orchestrator crash. */
typedef struct sim_call {
	bool used;
	uint32_t id;
	int saga;
	saga_command cmd;
	sim_row row; /* the row as it was when the command was sent */
	int64_t expire_ms;
} sim_call;

/* A message on the wire: a command to a participant or a reply to the
 * orchestrator. */
typedef struct sim_msg {
	bool used;
	bool reply;
	int saga;
	saga_command cmd;
	uint32_t call;            /* the call a reply completes */
	int64_t timeout_ms;       /* a command's timeout (a duration, rule T3) */
	int64_t deadline_wall_ms; /* the sender's absolute deadline (its own wall
	                             clock), read only by the broken variant
	                             absolute_deadline */
	int code;                 /* rpc status code (status.h), replies only */
	char reason[SAGA_REASON_MAX];
	int64_t at_ms; /* delivery time (random mode) */
	uint64_t seq;  /* tie-break between equal delivery times */
	bool forged;   /* sent by an attacker with `roles`, not the orchestrator:
	                  its reply goes nowhere (docs/security.md) */
	bool stalled;  /* a reply that reached a frozen orchestrator, decided on
	                  when it wakes (sim_faults.stall); stalls once */
	unsigned roles;
} sim_msg;

/* Faults of one run; all probabilities in [0, 1]. */
typedef struct sim_faults {
	double drop;            /* a message is lost */
	double dup;             /* a message is delivered twice (or more) */
	double slow;            /* a message takes a long time (past deadlines) */
	double unavailable;     /* a participant answers UNAVAILABLE, applies nothing */
	double crash_commit;    /* a participant crashes after commit, before reply */
	double crash_before;    /* a participant crashes before commit */
	double orch_crash_send; /* the orchestrator crashes after commit, before send */
	double db_fail;         /* an orchestrator commit fails: nothing written */
	double dup_reply;       /* the engine queues a reply twice */
	double stall;           /* the orchestrator holding a reply freezes past
	                           the saga's lease (SIGSTOP, a pause, cut off
	                           from the database) while another one's sweep
	                           claims the saga; it decides when it wakes */
	int64_t crash_every_ms; /* mean time between random crashes; 0 = none */
} sim_faults;

/* The orchestrator's timing: its policy (tries' timeouts and leases
 * included) and engine settings. */
typedef struct sim_timing {
	saga_policy policy;
	int64_t sweep_ms; /* sweep interval */
} sim_timing;

typedef struct sim_world {
	int64_t now;
	sim_timing timing;
	uint64_t rng;
	bool explore; /* exhaustive mode: no random faults, constant jitter,
	                 crashed nodes restart at once */
	bool calm;    /* faults have stopped */
	int net_max;  /* exhaustive fixed-point mode: at most this many messages
	                 on the wire, a send past it is lost (a fault the model
	                 has anyway); 0 = no bound but SIM_MAX_MSGS */
	uint64_t seq;
	uint32_t next_call;
	sim_faults faults;
	int64_t next_fault_ms;
	int64_t calm_at_ms;

	int nsagas;
	sim_order orders[SIM_MAX_SAGAS];
	bool started[SIM_MAX_SAGAS];

	/* orchestrator */
	bool up[SIM_NODES];
	int64_t restart_ms[SIM_NODES];
	int64_t next_sweep_ms;
	sim_row rows[SIM_MAX_SAGAS];
	sim_call calls[SIM_MAX_CALLS];

	/* stock participant (committed) */
	stock_record srec[SIM_MAX_SAGAS];
	bool sku_exists[SIM_NSKU];
	int64_t on_hand[SIM_NSKU];
	int64_t init_on_hand[SIM_NSKU];

	/* payment participant (committed) */
	payment_record prec[SIM_MAX_SAGAS];
	bool acct_exists[SIM_NACCT];
	int64_t balance[SIM_NACCT];
	int64_t init_balance[SIM_NACCT];

	/* shipping participant (committed): one shipment per saga id */
	shipping_record shrec[SIM_MAX_SAGAS];

	sim_msg msgs[SIM_MAX_MSGS];

	/* clocks (rules T1, T3): each node's wall clock is w->now plus its
	 * offset; the database's is w->now itself, and the orchestrator's
	 * estimate of it (dbclock.h) is off by db_err_ms */
	int64_t clock_off_ms[SIM_NODES];
	int64_t db_err_ms;
	/* slow participants (rule T4): a participant applies a command when it
	 * arrives and answers serve_ms later (0: at once) */
	int64_t serve_ms[SIM_NODES];
	bool slow_only; /* no fault but slow participants, from the start */
	/* an attacker (docs/security.md): until calm, about every
	 * forge_every_ms it sends a participant a step or compensation of a
	 * saga with a client's or an admin's role; its own PRNG, so that seeds
	 * without it run as before. 0 = no attacker */
	uint64_t forge_rng;
	int64_t forge_every_ms;
	int64_t next_forge_ms;
	uint32_t forged_refused; /* forged commands the roles table refused */
	uint32_t fenced;         /* transitions refused by their epoch (rule 10) */

	/* ghost state for the checks: effects applied per (saga, command) */
	uint8_t effects[SIM_MAX_SAGAS][SAGA_CMD_LAST + 1];
	/* ghost: the orchestrator committed the saga's row past the pivot
	 * (into SHIPPING, on the charge's success, which paymentd recorded):
	 * from then on no compensation may be sent (rule 3) */
	bool past_pivot[SIM_MAX_SAGAS];
	uint64_t steps;
	int64_t ended_ms; /* when every saga had ended after calm; 0 = not yet */
	bool violated;
	char violation[SIM_VIOLATION_MAX];
} sim_world;

/* The daemon defaults (orchestrator/orchestratord/main.c); a random run may draw others. */
extern const sim_timing sim_default_timing;
#define SIM_LIVENESS_MS 60000 /* after calm, every saga ends within this */

extern const char *const sim_sku_names[SIM_NSKU];
extern const char *const sim_customer_names[SIM_NACCT];

/* --- trace --- */

/* sim_trace appends one line (printf format) stamped with `w`'s clock to
 * the trace ring; a no-op while tracing is off. */
void sim_trace(const sim_world *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* sim_trace_enable turns the ring on or off and empties it. */
void sim_trace_enable(bool on);

/* sim_trace_print writes the last `n` lines of the ring to stderr. */
void sim_trace_print(int n);

/* --- building a world --- */

/* sim_world_init fills *w with an empty world seeded with `seed`: every
 * node up, no orders, fault-free. */
void sim_world_init(sim_world *w, uint64_t seed);

/* sim_rand returns the next number of w's PRNG (splitmix64). */
uint64_t sim_rand(sim_world *w);

/* sim_world_random fills *w for a random run of `seed`: stock, accounts,
 * 1..SIM_MAX_SAGAS orders (exactly `nsagas` when > 0), fault rates. */
void sim_world_random(sim_world *w, uint64_t seed, int nsagas);

/* --- actions: each is one step of the simulation, then the invariants
 * are checked (w->violated, w->violation) --- */

/* sim_start_saga runs StartSaga for order `i` on the orchestrator (which
 * must be up): the row is written leased, then ReserveStock is sent. */
void sim_start_saga(sim_world *w, int i);

/* sim_deliver delivers message `m` at w->now. A command is decided by its
 * participant (if up), which commits then replies; `fault` selects a fault
 * at that point: 0 none, 1 the participant answers UNAVAILABLE, 2 it
 * crashes after commit before the reply, 3 it crashes before commit. For a
 * reply, fault 2 crashes the orchestrator after it commits the decision,
 * before it sends the next command, and fault 3 has the engine decide on
 * the reply twice. */
void sim_deliver(sim_world *w, int m, int fault);

/* sim_drop loses message `m`. */
void sim_drop(sim_world *w, int m);

/* sim_net_count is how many messages are on the wire. */
int sim_net_count(const sim_world *w);

/* sim_duplicate copies message `m` (delivered at `at_ms`); returns false
 * when the network is full. */
bool sim_duplicate(sim_world *w, int m, int64_t at_ms);

/* sim_timeout ends call `c` with no reply (a transport error). The clock
 * moves to the call's expiry if it is still ahead. */
void sim_timeout(sim_world *w, int c);

/* sim_sweep runs the orchestrator's sweep at w->now: due rows are claimed,
 * deadlines become events, the rest are (re)sent. With crash_after_commit,
 * the orchestrator crashes after committing the deadline decisions, before
 * sending. */
void sim_sweep(sim_world *w, bool crash_after_commit);

/* sim_crash crashes `node` until `restart_ms` (volatile state lost). */
void sim_crash(sim_world *w, sim_node node, int64_t restart_ms);

/* sim_restart brings `node` back up at w->now. */
void sim_restart(sim_world *w, sim_node node);

/* sim_next_due_ms is the earliest next_attempt_ms of a non-terminal row,
 * INT64_MAX when none. */
int64_t sim_next_due_ms(const sim_world *w);

/* --- running --- */

/* sim_check verifies the safety invariants of saga-semantics.md on the
 * committed state; the first failure sets w->violated and w->violation.
 * Returns !w->violated. */
bool sim_check(sim_world *w);

/* sim_check_send verifies, when the orchestrator sends `cmd` for saga `i`,
 * that it is no compensation of a saga past the pivot (after the pivot,
 * only forward: rule 3). Sets w->violated on a failure. */
void sim_check_send(sim_world *w, int i, saga_command cmd);

/* sim_all_terminal is true when every order was started and its saga is
 * COMPLETED or CANCELLED. */
bool sim_all_terminal(const sim_world *w);

/* sim_net_empty is true when no message is on the wire. */
bool sim_net_empty(const sim_world *w);

/* sim_step advances the random-mode run by one event (the earliest due
 * delivery, timeout, sweep, start, restart or fault). Returns false when
 * nothing is left to do. */
bool sim_step(sim_world *w);

/* sim_run_to_end runs `w` (random mode) until faults stop at w->calm_at_ms
 * and then every saga ends and the network drains. Returns 0 when every
 * invariant held, -1 on a violation (w->violation says which). `max_steps`
 * bounds the run (exceeding it is a liveness violation). */
int sim_run_to_end(sim_world *w, uint64_t max_steps);

/* sim_make_calm stops all faults at w->now: nodes restart, messages on the
 * wire arrive in their current order within a few ms. */
void sim_make_calm(sim_world *w);

/* sim_hash is a hash of the decision-relevant state of `w` (not its PRNG,
 * step counter or trace), for the explorer's visited set. Times enter as
 * distances from w->now: a state and its shift in time hash alike. */
uint64_t sim_hash(const sim_world *w);

/* sim_hash_abstract is sim_hash under the abstraction that makes the state
 * space of the fixed-point exploration finite (docs/testing.md,
 * "Simulation"): attempt counters saturate at `attempts_sat` (past it no
 * decision depends on them: backoff and try timeouts are capped and the
 * attention flag is up), row versions enter only as whether a call's
 * snapshot is the row's current version (the commit check, rule 7, is an
 * equality), and every time before w->now counts as "past" (decisions only
 * compare a passed time with now). */
uint64_t sim_hash_abstract(const sim_world *w, int32_t attempts_sat);

/* sim_attempts_saturation is the attempt count past which no decision of
 * w's policy changes (saga_backoff_ms, the try timeouts, attention_after),
 * for sim_hash_abstract. */
int32_t sim_attempts_saturation(const sim_world *w);

#endif
