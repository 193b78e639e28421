/* dbclock: the database's clock, kept on this host.
 *
 * Every time the orchestrator stores or compares (step deadlines, leases,
 * retry times, the sweep's "now", created_at and history times) is on one
 * clock, PostgreSQL's, which every orchestrator sharing the database reads
 * alike (docs/saga-semantics.md, rule T1). Asking the database for every
 * "now" would cost a round trip, so the offset between the database's clock
 * and this host's monotonic clock is measured (dbclock_sync) and "now" is
 * this host's monotonic clock plus that offset. The error is at most half
 * the round trip of the measurement; a step of this host's wall clock
 * (NTP, an operator, libfaketime) changes nothing. Thread-safe.
 */
#ifndef SAGA_DBCLOCK_H
#define SAGA_DBCLOCK_H

#include <libpq-fe.h>
#include <stdbool.h>
#include <stdint.h>

/* dbclock_sync reads the database's clock (clock_timestamp()) on `conn`
 * and, when the round trip was short enough to trust (or the last sample is
 * old), takes the new offset. Logs a WARNING when this host's wall clock
 * and the database's differ by more than a second (once, and again when the
 * difference moves by more than a second). Returns 0, or a negative enum
 * pg_err from pg.h (then the offset is unchanged). */
int dbclock_sync(PGconn *conn) __attribute__((warn_unused_result));

/* dbclock_now_ms returns the database's clock now, in ms since the Unix
 * epoch, as estimated on this host; before the first dbclock_sync, this
 * host's wall clock. */
int64_t dbclock_now_ms(void);

/* dbclock_floor_ms returns the database's clock now at the earliest (ms
 * since the Unix epoch): dbclock_now_ms less the estimate's error, half
 * the round trip of the sample in use and 1 ms of rounding. What the engine
 * decides with, so that a step deadline is never found passed before the
 * database's clock has passed it (rule T2: a deadline's transition is
 * written at it or after it); before the first sync, dbclock_now_ms. */
int64_t dbclock_floor_ms(void);

/* dbclock_synced is true once a dbclock_sync has succeeded. */
bool dbclock_synced(void);

/* dbclock_rtt_ms returns the round trip of the sample in use, in ms
 * (its error is at most half of it); -1 before the first sync. */
int64_t dbclock_rtt_ms(void);

#endif
