/* horizon: the retention rules (docs/saga-semantics.md, "Retention", rules
 * R1-R4), pure functions of times in ms since the epoch, shared by the
 * participants (their refusals and deletions), the orchestrator (what it
 * still sends, what it deletes) and the simulation (tests/sim/sim_retention.c).
 *
 * Every command carries its saga's start (`saga_started_unix_ms`, the
 * orchestrator database's clock at StartSaga). A participant refuses,
 * definitively and without effect, a command whose saga started before its
 * horizon (now - retention), so that once it has deleted a saga's record no
 * late copy of a command can apply it again; it deletes a record only when
 * the record is older than retention plus twice the tolerated clock error
 * (the record's created_at stands for its saga's start, which is at most one
 * clock error earlier, and its own clock may step back by at most one).
 * The orchestrator stops sending commands one clock error before the
 * horizon (a participant's clock may be that far ahead) and flags the saga
 * instead; it deletes a finished saga only after every participant may
 * have deleted its records, and keeps its id (a tombstone) until none can
 * still keep one, refusing a StartSaga that reuses it meanwhile (rule R5;
 * the participants also refuse a command whose start is not their record's).
 */
#ifndef SAGA_HORIZON_H
#define SAGA_HORIZON_H

#include <stdbool.h>
#include <stdint.h>

/* The retention settings, the same on every daemon of a deployment. */
typedef struct horizon_policy {
	int64_t retention_ms;    /* how long a saga's commands are taken and its
	                            records kept, from its start; 0: no horizon
	                            (unit tests; the daemons require > 0) */
	int64_t skew_ms;         /* >= 0; the tolerated error between any two of the
	                            clocks compared (databases' clocks, a clock's step) */
	int64_t id_retention_ms; /* the orchestrator's only: the longest retention of
	                            any participant, for which a deleted saga's id
	                            stays refused (rule R5); 0: retention_ms */
} horizon_policy;

/* Defaults: 7 days of retention, 5 minutes of clock error. */
#define HORIZON_RETENTION_DEFAULT_MS (7LL * 24 * 3600 * 1000)
#define HORIZON_SKEW_DEFAULT_MS      (5LL * 60 * 1000)

/* The error of a daemon's estimate of its database's clock (dbclock.h: half
 * a round trip, a few ms), allowed on top of skew_ms to a start ahead of
 * the participant's clock, so that --max-clock-skew 0 does not refuse a
 * saga's first command sent within ms of its start (ms). */
#define HORIZON_AHEAD_SLACK_MS 1000

/* horizon_refuses is true when a participant must refuse a command whose
 * saga started at `started_ms` (<= 0: the field is missing, an orchestrator
 * older than retention: refused too), its own clock reading `now_ms`
 * (rule R1): before the horizon, or ahead of its clock by more than the
 * tolerated error (horizon_ahead). */
bool horizon_refuses(const horizon_policy *p, int64_t started_ms, int64_t now_ms);

/* horizon_ahead is true when `started_ms` is later than `now_ms` plus the
 * tolerated clock error (and HORIZON_AHEAD_SLACK_MS): a start no clock
 * within skew of this one can have read (a clock fault, or a forged start).
 * Taken, such a command would stay young for ever: its record (created_at
 * on this clock) would be deleted by rule R2 while a late copy, carrying
 * the same start, would still be accepted and applied again. */
bool horizon_ahead(const horizon_policy *p, int64_t started_ms, int64_t now_ms);

/* horizon_record_cutoff_ms is the created_at before which a participant's
 * idempotency record (or tombstone) may be deleted at `now_ms`: now -
 * retention - 2 x skew (rule R2). */
int64_t horizon_record_cutoff_ms(const horizon_policy *p, int64_t now_ms);

/* horizon_may_send is true while the orchestrator may still send a command
 * of a saga created at `created_ms` (the value it sends as its start), its
 * clock reading `now_ms`: created >= now - retention + skew (rule R3). */
bool horizon_may_send(const horizon_policy *p, int64_t created_ms, int64_t now_ms);

/* horizon_saga_cutoff_ms is the created_at before which a finished saga
 * (and all its history) may be deleted at `now_ms`, if it also finished
 * before now - retention: now - retention - 4 x skew, past every
 * participant's record cutoff by 2 x skew (rule R4). */
int64_t horizon_saga_cutoff_ms(const horizon_policy *p, int64_t now_ms);

/* horizon_id_cutoff_ms is the created_at before which the orchestrator may
 * forget a deleted saga's id (its tombstone), and so start a new saga with
 * it, at `now_ms`: now - retention - id_retention - 4 x skew (rule R5). A
 * saga's last command goes at created + retention - skew at the latest
 * (R3), a participant's record of it is made by created + retention (its
 * clock up to one skew ahead) and deleted by record + id_retention + 2 x
 * skew (R2, id_retention >= its retention): so, with one more skew between
 * the two databases' clocks, no participant keeps any record of the saga
 * once its id is forgotten. */
int64_t horizon_id_cutoff_ms(const horizon_policy *p, int64_t now_ms);

/* horizon_policy_check: NULL when `p` is valid, else a static message. */
const char *horizon_policy_check(const horizon_policy *p);

#endif
