#include "dbclock.h"

#include <stdatomic.h>
#include <stdlib.h>

#include "clock.h"
#include "log.h"
#include "pg.h"

/* A sample whose round trip is at most this is always taken (ms); a longer
 * one only when the sample in use is older than DBCLOCK_MAX_AGE_MS, so a
 * loaded database cannot keep a good sample from being refreshed for long. */
#define DBCLOCK_GOOD_RTT_MS 5
#define DBCLOCK_MAX_AGE_MS  10000
/* The wall-clock skew from which a WARNING is logged (ms). */
#define DBCLOCK_WARN_SKEW_MS 1000

static atomic_llong dbclock_offset; /* database ms - clock_mono_ms */
static atomic_bool dbclock_ok;
static atomic_llong dbclock_rtt = -1;
static atomic_llong dbclock_taken_at;   /* clock_mono_ms of the sample in use */
static atomic_llong dbclock_warned = 0; /* the skew last warned of, 0 none */

int dbclock_sync(PGconn *conn)
{
	int64_t t0 = clock_mono_ms();
	int64_t w0 = clock_wall_ms();
	PGresult *r = NULL;
	int rc = pg_exec(
	    conn, "SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint", 0, NULL, &r);
	if (rc != 0)
		return rc;
	int64_t t1 = clock_mono_ms();
	int64_t w1 = clock_wall_ms();
	int64_t db = pg_get_i64(r, 0, 0);
	PQclear(r);
	int64_t rtt = t1 - t0;
	bool first = !atomic_load(&dbclock_ok);
	int64_t used = atomic_load(&dbclock_rtt);
	int64_t age = t1 - atomic_load(&dbclock_taken_at);
	if (!first && rtt > DBCLOCK_GOOD_RTT_MS && rtt > used && age < DBCLOCK_MAX_AGE_MS)
		return 0; /* keep the better sample */
	/* the database read its clock somewhere in [t0, t1]: the middle is off
	 * by at most rtt / 2 */
	atomic_store(&dbclock_offset, db - (t0 + t1) / 2);
	int64_t skew = db - (w0 + w1) / 2; /* database ms - clock_wall_ms */
	atomic_store(&dbclock_rtt, rtt);
	atomic_store(&dbclock_taken_at, t1);
	atomic_store(&dbclock_ok, true);
	int64_t warned = atomic_load(&dbclock_warned);
	if (llabs(skew) > DBCLOCK_WARN_SKEW_MS && llabs(skew - warned) > DBCLOCK_WARN_SKEW_MS) {
		atomic_store(&dbclock_warned, skew);
		log_warn(NULL,
		    "this host's clock is %lld ms %s the database's: sagas keep the database's "
		    "time (docs/operations.md, \"Clocks\")",
		    llabs(skew), skew > 0 ? "behind" : "ahead of");
	} else if (llabs(skew) <= DBCLOCK_WARN_SKEW_MS && warned != 0) {
		atomic_store(&dbclock_warned, 0);
		log_info(NULL, "this host's clock is within %d ms of the database's again",
		    DBCLOCK_WARN_SKEW_MS);
	}
	return 0;
}

int64_t dbclock_now_ms(void)
{
	if (!atomic_load(&dbclock_ok))
		return clock_wall_ms();
	return clock_mono_ms() + atomic_load(&dbclock_offset);
}

int64_t dbclock_floor_ms(void)
{
	if (!atomic_load(&dbclock_ok))
		return dbclock_now_ms();
	int64_t rtt = atomic_load(&dbclock_rtt);
	return dbclock_now_ms() - (rtt > 0 ? (rtt + 1) / 2 : 0) - 1;
}

bool dbclock_synced(void)
{
	return atomic_load(&dbclock_ok);
}

int64_t dbclock_rtt_ms(void)
{
	return atomic_load(&dbclock_rtt);
}
