/* orch_metrics: orchestratord's own metrics (docs/operations.md, "Metrics"),
 * called by the engine, the API and the report at the edges: saga.c stays
 * pure. Per process (start at zero with it): sagas started and finished,
 * saga durations, commands by result and their round trips, step tries and
 * retries, commands in flight. From the database (one elected orchestrator
 * at a time, report.h): open sagas by state, attention, overdue.
 * Thread-safe.
 */
#ifndef SAGA_ORCH_METRICS_H
#define SAGA_ORCH_METRICS_H

#include <stdbool.h>
#include <stdint.h>

#include "saga.h"
#include "store.h"

/* orch_metrics_init registers every series at 0 (commands by command and
 * result, sagas finished by the outcomes the state machine can reach), so
 * that rate() sees the first event. Call once from main. */
void orch_metrics_init(void);

/* orch_metrics_command counts one answered (or timed out) try of the
 * command of method `cmd` ("ReserveStock": the label, bounded by the
 * table of methods), as
 * rpc_result gives it (`code` an rpc status code, status.h; `transport`
 * true when no reply came), and its round trip `rtt_us` (microseconds; < 0:
 * not known). Its result label is the state machine's own classification
 * (saga_event_from_reply, rule 3): `ok`, `refused` (definitive), `error`
 * (an answer that is neither); with no reply, `timeout` (DEADLINE_EXCEEDED)
 * or `unreachable` (no connection to any replica). */
void orch_metrics_command(const char *cmd, int code, bool transport, int64_t rtt_us);

/* The labels `type` and `step` below are names of the definitions the
 * orchestrator runs (at most SAGA_DEF_RUN_TYPES types of at most
 * SAGA_DEF_MAX_STEPS steps each: bounded cardinality, as `command` by the
 * table of methods). */

/* orch_metrics_started counts `n` sagas of saga type `type` ("order")
 * stored by StartSaga (new ones, not the duplicates answered from their
 * row). */
void orch_metrics_started(const char *type, int64_t n);

/* orch_metrics_step_done records that step `step` (its definition's name,
 * "reserve") of a saga of type `type`, of method `cmd`, ended (its state
 * changed) after `tries` tries (>= 1). */
void orch_metrics_step_done(const char *type, const char *step, const char *cmd, int32_t tries);

/* orch_metrics_finished counts a saga of type `type` that reached `state`
 * (the name of a terminal state: COMPLETED or CANCELLED for the order saga,
 * its definition's for another type) with `reason` (a stable reason,
 * saga.c; "" when none) and its duration `duration_ms` (creation to end, by
 * the database's clock). */
void orch_metrics_finished(
    const char *type, const char *state, const char *reason, int64_t duration_ms);

/* orch_metrics_retry counts a try of method `cmd`'s command that failed and is to be tried
 * again (its state did not change). */
void orch_metrics_retry(const char *cmd);

/* orch_metrics_in_flight sets the commands this process has sent and not
 * yet had answered (the sum over its engines is what is exported: each
 * engine sets its own slot, `engine` 0..ORCH_METRICS_ENGINES-1). */
#define ORCH_METRICS_ENGINES 16
void orch_metrics_in_flight(int engine, int64_t n);

/* orch_metrics_gauges publishes the database gauges `g` (store_read_gauges,
 * borrowed), read at `read_unix_s` (unix time, seconds); with g NULL it
 * hides them instead (this process does not hold the gauge lock: another
 * orchestrator exports them). */
void orch_metrics_gauges(const store_gauges *g, double read_unix_s);

#endif
