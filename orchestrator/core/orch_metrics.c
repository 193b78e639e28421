/* orch_metrics: orchestratord's metrics (orch_metrics.h). */
#include "orch_metrics.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "metrics.h"
#include "status.h"

static const double ORCH_DURATION_BUCKETS[] = {
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600, 21600, 86400};
static const double ORCH_TRIES_BUCKETS[] = {1, 2, 3, 5, 10, 20, 50, 100};

static const metric_def M_STARTED = {"sagas_started_total",
    "Sagas stored by StartSaga in this process (not the duplicates answered from their row), "
    "by saga type",
    METRIC_COUNTER, "type", NULL, 0};
static const metric_def M_FINISHED = {"sagas_finished_total",
    "Sagas this process moved to a terminal state, by saga type, state and reason (\"\" for "
    "COMPLETED)",
    METRIC_COUNTER, "type,state,reason", NULL, 0};
static const metric_def M_DURATION = {"sagas_duration_seconds",
    "From a saga's start to its end (the database's clock), by saga type and terminal state",
    METRIC_HISTOGRAM, "type,state", ORCH_DURATION_BUCKETS,
    sizeof ORCH_DURATION_BUCKETS / sizeof ORCH_DURATION_BUCKETS[0]};
static const metric_def M_COMMANDS = {"sagas_commands_total",
    "Tries of a command that were answered or timed out, by command and result (ok, refused, "
    "error, timeout, unreachable)",
    METRIC_COUNTER, "command,result", NULL, 0};
static const metric_def M_COMMAND_SECONDS = {"sagas_command_seconds",
    "Round trip of each try of a command, sent to answered (or timed out)", METRIC_HISTOGRAM,
    "command", METRICS_LATENCY_BUCKETS, METRICS_LATENCY_NBUCKETS};
static const metric_def M_STEP_TRIES = {"sagas_step_tries",
    "Tries a step took until its state changed (1: the first try settled it), by saga type, "
    "step (the definition's name) and command",
    METRIC_HISTOGRAM, "type,step,command", ORCH_TRIES_BUCKETS,
    sizeof ORCH_TRIES_BUCKETS / sizeof ORCH_TRIES_BUCKETS[0]};
static const metric_def M_RETRIES = {"sagas_step_retries_total",
    "Tries of a command that failed and are tried again (the saga stays in its state)",
    METRIC_COUNTER, "command", NULL, 0};
static const metric_def M_IN_FLIGHT = {"sagas_in_flight",
    "Commands this process has sent and not yet had answered", METRIC_GAUGE, "", NULL, 0};
static const metric_def M_OPEN = {"sagas_open",
    "Unfinished sagas by saga type and state (its definition's name), in the database (read "
    "by one orchestrator every --gauge-interval)",
    METRIC_GAUGE, "type,state", NULL, 0};
static const metric_def M_ATTENTION = {"sagas_attention",
    "Unfinished sagas flagged for attention (a compensation or the retriable step failing "
    "again and again), in the database",
    METRIC_GAUGE, "", NULL, 0};
static const metric_def M_OVERDUE = {"sagas_overdue",
    "Unfinished sagas overdue, by why (sagactl list --overdue): past_deadline, "
    "compensation_failing, stuck, retrying; in the database",
    METRIC_GAUGE, "reason", NULL, 0};
static const metric_def M_GAUGES_TS = {"sagas_db_gauges_timestamp_seconds",
    "When the database gauges were last read (unix time, seconds)", METRIC_GAUGE, "", NULL, 0};

static const char *const ORCH_RESULTS[] = {"ok", "refused", "error", "timeout", "unreachable"};

static _Atomic int64_t orch_inflight[ORCH_METRICS_ENGINES];

/* the other types' (type, state) series of sagas_open published so far: set
 * to 0 when a read no longer has them (a gauge, not a stale value) */
static pthread_mutex_t orch_open_mtx = PTHREAD_MUTEX_INITIALIZER;
static store_open_other orch_open_seen[STORE_OPEN_OTHERS];
static size_t orch_open_nseen;

/* orch_open_others publishes g's other types' open sagas, and 0 for a pair
 * published before that g no longer has. */
static void orch_open_others(const store_gauges *g)
{
	pthread_mutex_lock(&orch_open_mtx);
	for (size_t i = 0; i < orch_open_nseen; i++) {
		bool now = false;
		for (size_t k = 0; k < g->nothers && !now; k++)
			now = strcmp(g->others[k].type, orch_open_seen[i].type) == 0
			    && strcmp(g->others[k].state, orch_open_seen[i].state) == 0;
		if (!now) {
			const char *v[2] = {orch_open_seen[i].type, orch_open_seen[i].state};
			metric_set(metric_get(&M_OPEN, v), 0);
		}
	}
	for (size_t k = 0; k < g->nothers; k++) {
		const char *v[2] = {g->others[k].type, g->others[k].state};
		metric_set(metric_get(&M_OPEN, v), g->others[k].n);
		bool seen = false;
		for (size_t i = 0; i < orch_open_nseen && !seen; i++)
			seen = strcmp(g->others[k].type, orch_open_seen[i].type) == 0
			    && strcmp(g->others[k].state, orch_open_seen[i].state) == 0;
		if (!seen && orch_open_nseen < STORE_OPEN_OTHERS)
			orch_open_seen[orch_open_nseen++] = g->others[k];
	}
	pthread_mutex_unlock(&orch_open_mtx);
}

void orch_metrics_init(void)
{
	for (int c = 1; c <= SAGA_CMD_LAST; c++) {
		const char *cmd = saga_command_name((saga_command)c);
		for (size_t r = 0; r < sizeof ORCH_RESULTS / sizeof ORCH_RESULTS[0]; r++) {
			const char *v[2] = {cmd, ORCH_RESULTS[r]};
			metric_add(metric_get(&M_COMMANDS, v), 0);
		}
		metric_add(metric_get1(&M_RETRIES, cmd), 0);
	}
	metric_add(metric_get1(&M_STARTED, "order"), 0);
	static const char *const finished[][3]
	    = {{"order", "COMPLETED", ""}, {"order", "CANCELLED", "out_of_stock"},
	        {"order", "CANCELLED", "payment_declined"}, {"order", "CANCELLED", "timeout"}};
	for (size_t i = 0; i < sizeof finished / sizeof finished[0]; i++)
		metric_add(metric_get(&M_FINISHED, finished[i]), 0);
	metric_set(metric_get(&M_IN_FLIGHT, NULL), 0);
	orch_metrics_gauges(NULL, 0);
}

void orch_metrics_command(const char *cmd, int code, bool transport, int64_t rtt_us)
{
	const char *result;
	if (transport)
		result = code == RPC_DEADLINE_EXCEEDED ? "timeout" : "unreachable";
	else
		switch (saga_event_from_reply(SAGA_CMD_NONE, code, NULL, false).kind) {
		case SAGA_EV_SUCCESS:
			result = "ok";
			break;
		case SAGA_EV_REFUSED:
			result = "refused";
			break;
		default:
			result = "error";
			break;
		}
	const char *v[2] = {cmd, result};
	metric_inc(metric_get(&M_COMMANDS, v));
	if (rtt_us >= 0)
		metric_observe(metric_get1(&M_COMMAND_SECONDS, v[0]), (double)rtt_us / 1e6);
}

void orch_metrics_started(const char *type, int64_t n)
{
	metric_add(metric_get1(&M_STARTED, type), n);
}

void orch_metrics_step_done(const char *type, const char *step, const char *cmd, int32_t tries)
{
	const char *v[3] = {type, step, cmd};
	metric_observe(metric_get(&M_STEP_TRIES, v), tries);
}

void orch_metrics_finished(
    const char *type, const char *state, const char *reason, int64_t duration_ms)
{
	const char *v[3] = {type, state, reason};
	metric_inc(metric_get(&M_FINISHED, v));
	metric_observe(
	    metric_get(&M_DURATION, v), duration_ms > 0 ? (double)duration_ms / 1000.0 : 0.0);
}

void orch_metrics_retry(const char *cmd)
{
	metric_inc(metric_get1(&M_RETRIES, cmd));
}

void orch_metrics_in_flight(int engine, int64_t n)
{
	if (engine < 0 || engine >= ORCH_METRICS_ENGINES)
		return;
	atomic_store_explicit(&orch_inflight[engine], n, memory_order_relaxed);
	int64_t sum = 0;
	for (int i = 0; i < ORCH_METRICS_ENGINES; i++)
		sum += atomic_load_explicit(&orch_inflight[i], memory_order_relaxed);
	metric_set(metric_get(&M_IN_FLIGHT, NULL), sum);
}

void orch_metrics_gauges(const store_gauges *g, double read_unix_s)
{
	const metric_def *defs[] = {&M_OPEN, &M_ATTENTION, &M_OVERDUE, &M_GAUGES_TS};
	if (g == NULL) {
		for (size_t i = 0; i < sizeof defs / sizeof defs[0]; i++)
			metrics_hide(defs[i], true);
		return;
	}
	for (int s = 1; s <= SAGA_STATE_LAST; s++)
		if (!saga_is_terminal((saga_state)s)) {
			const char *v[2] = {"order", saga_state_name((saga_state)s)};
			metric_set(metric_get(&M_OPEN, v), g->open[s]);
		}
	orch_open_others(g);
	metric_set(metric_get(&M_ATTENTION, NULL), g->attention);
	for (int r = 0; r < STORE_OVERDUE_N; r++)
		metric_set(metric_get1(&M_OVERDUE, store_overdue_name((store_overdue_reason)r)),
		    g->overdue[r]);
	metric_set_f(metric_get(&M_GAUGES_TS, NULL), read_unix_s);
	for (size_t i = 0; i < sizeof defs / sizeof defs[0]; i++)
		metrics_hide(defs[i], false);
}
