#!/usr/bin/env bash
# with_stack.sh CMD...: runs CMD against a fresh stack (PostgreSQL and the
# four daemons); CMD sees ORCH_URL, STOCK_URL, PAYMENT_URL, SHIPPING_URL, PG_PORT.
set -euo pipefail
source "$(dirname "$0")/../lib/stack.sh"
stack_start
rc=0
"$@" || rc=$?
if [ "$rc" -ne 0 ]; then
  for f in "$STACK_DIR"/*.log; do echo "== $f" >&2; tail -20 "$f" >&2; done
fi
exit "$rc"
