#!/usr/bin/env bash
# docs/saga-states.md's table, between <!-- states:begin --> and
# <!-- states:end -->, is what `sagactl definitions table` derives from the
# order saga's definition (orchestrator/definitions/order.yaml) with the
# engine's own transition. Usage: check_states.sh SAGACTL SOURCE_DIR
set -euo pipefail
sagactl=$1 src=$2
doc=$src/docs/saga-states.md
want=$("$sagactl" definitions table "$src/orchestrator/definitions/order.yaml" --type order)
have=$(sed -n '/^<!-- states:begin -->$/,/^<!-- states:end -->$/p' "$doc" | sed '1d;$d')
if [ -z "$have" ]; then
  echo "FAIL: $doc has no table between <!-- states:begin --> and <!-- states:end -->" >&2
  exit 1
fi
if [ "$want" != "$have" ]; then
  echo "FAIL: $doc's state table is not the order saga's definition's; regenerate it with" >&2
  echo "  sagactl definitions table orchestrator/definitions/order.yaml" >&2
  diff <(echo "$have") <(echo "$want") >&2 || true
  exit 1
fi
echo "ok: docs/saga-states.md's table = sagactl definitions table ($(echo "$want" | wc -l) lines)"
