/* codec: the orchestrator's outgoing commands as protobuf requests (built
 * by the definition's plans, saga_def_cmd.h), and its saga rows as
 * sagas.v1.Saga, history and audit entries. The only place, with the API's
 * handlers (api*.c), where the orchestrator touches generated protobuf code.
 */
#ifndef SAGA_CODEC_H
#define SAGA_CODEC_H

#include <stdint.h>

#include "rpc.h"
#include "saga.h"
#include "saga_def_cmd.h"
#include "sagas/v1/orchestrator.pb-c.h"
#include "store.h"

/* codec_send_command sends the command of plan `plan` (orch_defs.h: the
 * method and its request mapped from the saga's input by the definition)
 * for saga `row` with `timeout_ms`: added to `batch` (rpc_batch_add, sent
 * with the batch) when it is not NULL, else at once with rpc_call_async on
 * `client`. The input is the row's order (codec_order_of), or its own
 * encoded input (saga_row.input, decoded as the plan's input message);
 * nothing is kept after the call. Returns what those return: 0 when `done`
 * will run once, a negative errno otherwise (-EINVAL for a NULL or empty
 * plan, -EBADMSG for an input that does not decode). */
int codec_send_command(rpc_client *client, rpc_batch *batch, const saga_def_cmd *plan,
    const saga_row *row, int64_t timeout_ms, rpc_done_fn done, void *arg)
    __attribute__((warn_unused_result));

/* codec_order_of fills `o` with the order input of saga `row` (its typed
 * columns: the order type's input until the row stores its input, schema
 * 9) without copies: the strings point into `row`, which must outlive the
 * packing of `o`. */
void codec_order_of(Sagas__V1__Order *o, const saga_row *row);

/* codec_saga_to_pb fills `m` and `o` from `row` without copies: the
 * strings point into `row`, which must outlive the packing of `m`. */
void codec_saga_to_pb(Sagas__V1__Saga *m, Sagas__V1__Order *o, saga_row *row);

/* codec_history_to_pb fills `m` from `h` without copies: the strings point
 * into `h`, which must outlive the packing of `m`. */
void codec_history_to_pb(Sagas__V1__HistoryEntry *m, store_history_entry *h);

/* codec_audit_to_pb fills `m` from audit row `e` (ListAudit) without
 * copies: the strings point into `e`, which must outlive `m`. */
void codec_audit_to_pb(Sagas__V1__AuditEntry *m, store_audit_entry *e);

/* codec_reply_start fills `r` with the StartSagaReply of `row` (the saga
 * as stored), `created` and `finished` (COMPLETED or CANCELLED). The
 * payload is malloc'd into r (rpc_reply_ok); on -ENOMEM r is INTERNAL. */
int codec_reply_start(rpc_reply *r, const saga_row *row, bool created, bool finished);

/* codec_reply_wait fills `r` with the WaitSagaReply of `row` and
 * `finished`, as codec_reply_start. */
int codec_reply_wait(rpc_reply *r, const saga_row *row, bool finished);

#endif
