#!/usr/bin/env bash
# malformed_frames.sh TEST_FRAMES: runs test_frames (its path) against a
# fresh stack, as with_stack.sh does, then checks that the refusals it
# provoked before any handler ran are logged (rate-limited WARNINGs) and
# counted in sagas_rpc_refusals_total{reason} by each daemon it called.
set -euo pipefail
source "$(dirname "$0")/../lib/stack.sh"
stack_start
rc=0
"$1" || rc=$?
if [ "$rc" -ne 0 ]; then
  for f in "$STACK_DIR"/*.log; do echo "== $f" >&2; tail -20 "$f" >&2; done
  exit "$rc"
fi
for d in stockd paymentd orchestratord; do
  page=$(stack_metrics "$d")
  for reason in malformed_envelope bad_field unknown_method malformed_payload; do
    if ! grep -q "refused a call ($reason)" "$STACK_DIR/$d.log"; then
      echo "FAIL: $d logged no refusal ($reason)" >&2
      exit 1
    fi
    if ! grep -Eq "^sagas_rpc_refusals_total\{reason=\"$reason\"\} [1-9]" <<<"$page"; then
      echo "FAIL: $d counted no refusal ($reason):" >&2
      grep sagas_rpc_refusals_total <<<"$page" >&2 || true
      exit 1
    fi
  done
done
echo "malformed_frames: refusals logged and counted"
