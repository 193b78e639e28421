#!/usr/bin/env bash
# No C file of orchestratord (orchestrator/core, orchestrator/orchestratord)
# builds a participant's command by hand: the commands come from the
# definition's plans (orch_defs.h, saga_def_cmd.h; docs/saga-definitions.md,
# section 2 "Third landing"). Refused here: the generated request types of
# the participants' commands, their headers, and the order saga's command
# values (SAGA_CMD_RESERVE_STOCK ...; SAGA_CMD_NONE and SAGA_CMD_LAST are
# the engine's bounds). Checked first on a file that has them (a copy of
# the old codec), so that a pattern that matches nothing fails. And the
# engine names none of the order saga's states or its compiled transition.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
pattern='Sagas__V1__(ReserveStock|ReleaseStock|ChargePayment|RefundPayment|ShipOrder)Request|SAGAS__V1__(RESERVE_STOCK|RELEASE_STOCK|CHARGE_PAYMENT|REFUND_PAYMENT|SHIP_ORDER)_REQUEST|"sagas/v1/(stock|payment|shipping)\.pb-c\.h"|SAGA_CMD_(RESERVE_STOCK|RELEASE_STOCK|CHARGE_PAYMENT|REFUND_PAYMENT|SHIP_ORDER)'
probe=$(mktemp)
trap 'rm -f "$probe"' EXIT
cat >"$probe" <<'C'
#include "sagas/v1/stock.pb-c.h"
	case SAGA_CMD_RESERVE_STOCK: {
		Sagas__V1__ReserveStockRequest m = SAGAS__V1__RESERVE_STOCK_REQUEST__INIT;
C
n=$(grep -cE "$pattern" "$probe" || true)
if [ "$n" != 3 ]; then
  echo "FAIL: the pattern finds $n of the 3 lines of the probe"
  exit 1
fi
hits=$(grep -nE "$pattern" "$root"/orchestrator/core/*.[ch] "$root"/orchestrator/orchestratord/*.[ch] || true)
if [ -n "$hits" ]; then
  echo "FAIL: orchestratord's C names a participant's command (build it from the definition):"
  echo "$hits"
  exit 1
fi
# The engine decides over the flow of each saga's definition (the fourth
# landing): engine.c names none of the order saga's states, commands or its
# compiled transition.
order_machine='saga_command_of|saga_command_name|saga_state_name|saga_state_parse|saga_transition\(|saga_flow_order\b|saga_flow_order_transition|SAGA_STATE_[A-Z]+'
hits=$(grep -nE "$order_machine" "$root"/orchestrator/core/engine.c || true)
if [ -n "$hits" ]; then
  echo "FAIL: engine.c names the order saga's machine (decide over the saga's flow):"
  echo "$hits"
  exit 1
fi
echo "ok: no C file of orchestrator/core or orchestrator/orchestratord names a participant's command;"
echo "ok: engine.c decides over each saga's flow, naming none of the order saga's states"
