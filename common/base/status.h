/* status: RPC status codes with the numbers of gRPC's codes (google.rpc.Code,
 * docs/protocol.md). Header-only so the pure decision libraries can use the
 * numbers without linking the transport. */
#ifndef SAGA_STATUS_H
#define SAGA_STATUS_H

enum rpc_code {
	RPC_OK = 0,
	RPC_CANCELLED = 1,
	RPC_UNKNOWN = 2,
	RPC_INVALID_ARGUMENT = 3,
	RPC_DEADLINE_EXCEEDED = 4,
	RPC_NOT_FOUND = 5,
	RPC_ALREADY_EXISTS = 6,
	RPC_PERMISSION_DENIED = 7,
	RPC_RESOURCE_EXHAUSTED = 8,
	RPC_FAILED_PRECONDITION = 9,
	RPC_ABORTED = 10,
	RPC_OUT_OF_RANGE = 11,
	RPC_UNIMPLEMENTED = 12,
	RPC_INTERNAL = 13,
	RPC_UNAVAILABLE = 14,
	RPC_DATA_LOSS = 15,
	RPC_UNAUTHENTICATED = 16,
};

/* Stable reason strings carried in ReplyEnvelope.reason and saga rows. */
#define REASON_OUT_OF_STOCK     "out_of_stock"
#define REASON_UNKNOWN_SKU      "unknown_sku"
#define REASON_PAYMENT_DECLINED "payment_declined"
#define REASON_UNKNOWN_ACCOUNT  "unknown_account"
#define REASON_TOMBSTONE        "tombstone"
#define REASON_KEY_MISMATCH     "key_mismatch"
#define REASON_TIMEOUT          "timeout"
/* a command of a saga that started before the participant's retention
 * horizon (docs/saga-semantics.md, rule R1), or without its start */
#define REASON_PAST_HORIZON "past_horizon"
/* a command whose saga id names another saga, with another start, whose
 * record the participant still keeps (docs/saga-semantics.md, rule R5) */
#define REASON_SAGA_ID_REUSED "saga_id_reused"
/* StartSaga with the id of a saga that retention deleted, kept as a
 * tombstone for as long as a participant may remember it (rule R5) */
#define REASON_SAGA_ID_RETIRED "saga_id_retired"
/* a saga an operator cancelled before its pivot succeeded (CancelSaga,
 * docs/saga-semantics.md, rule 11): the reason its compensations run for */
#define REASON_CANCEL_REQUESTED "cancel_requested"
/* CancelSaga refused: the pivot has succeeded, the saga only moves forward
 * (rule 3), or it has completed */
#define REASON_PAST_PIVOT "past_pivot"
/* CancelSaga refused: the saga is compensating already (for its own reason) */
#define REASON_COMPENSATING "compensating"
/* CancelSaga refused: the saga has ended cancelled already */
#define REASON_CANCELLED "cancelled"

#endif
