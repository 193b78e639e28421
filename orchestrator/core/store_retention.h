/* store_retention: the orchestrator's batch of the retention job
 * (retention.h): the deletion of finished sagas with all their history,
 * rule R4 of docs/saga-semantics.md, "Retention" (horizon.h). Its SQL is
 * the function saga_retention_batch of sql/schema.sql.
 */
#ifndef SAGA_STORE_RETENTION_H
#define SAGA_STORE_RETENTION_H

#include <libpq-fe.h>
#include <stdbool.h>
#include <stdint.h>

#include "retention.h"

/* store_retention_batch is the orchestrator's retention_batch_fn. `arg` is
 * the deployment's const horizon_policy * (borrowed). At `now_ms` (ms since
 * the epoch, the database's clock) a saga may be deleted when it is
 * finished (COMPLETED or CANCELLED; one in any other state never is,
 * however old), was created before horizon_saga_cutoff_ms(p, now_ms)
 * (now - retention - 4 x skew) and last written, so finished, before
 * now_ms - p->retention_ms (rule R4). Not dry: in one transaction (one
 * statement, on `conn`, outside any transaction of the caller's), deletes
 * at most `limit` (> 0) of them, oldest first, each with all its
 * saga_history rows, leaving its id and start in saga_ids_retired (rule
 * R5), skipping any row another transaction holds; then deletes at most
 * `limit` of those tombstones whose saga was created before
 * horizon_id_cutoff_ms(p, now_ms); *out gets n[0] sagas, n[1] history rows
 * and n[2] tombstones deleted. Dry: deletes nothing and counts every such
 * saga, its history rows and every such tombstone (limit ignored). Returns 0
 * or a negative enum pg_err (nothing deleted; *out zero). */
int store_retention_batch(
    void *arg, PGconn *conn, int64_t now_ms, int limit, bool dry, retention_counts *out);

#endif
