#!/usr/bin/env bash
# SP interop: nanomsg, an implementation of the SP protocols independent of
# nng, as a REQ client against the orchestrator's nng REP socket. Two
# clients: nanomsg_req (libnanomsg, envelope built and reply decoded with
# the generated C code) and nanocat --req (nanomsg-utils) sending a request
# frame from a file. Both must get a ReplyEnvelope with code 0 (OK) and the
# sagas of the stack. It stays on the plain loopback listener (every role,
# docs/security.md): nanomsg has no TLS, so it cannot speak to a tls+tcp://
# one.
#   nanomsg.sh PATH/TO/nanomsg_req
set -euo pipefail
source "$(dirname "$0")/../lib/stack.sh"
req=${1:?usage: nanomsg.sh PATH/TO/nanomsg_req}
[ -x "$req" ] || { echo "nanomsg: $req was not built (libnanomsg-dev missing? scripts/deps.sh installs it)" >&2; exit 1; }

stack_start
ctl stock set N1 5 >/dev/null
ctl deposit nano 100.00 >/dev/null
id=55555555-5555-4555-8555-555555555555
ctl start nano N1 1 10.00 --id "$id" --wait >/dev/null

out=$("$req" "$ORCH_URL")
echo "$out"
assert_eq "libnanomsg REQ: reply code" "code=0 sagas=1" "$(head -1 <<<"$out")"
assert_eq "libnanomsg REQ: the saga" "saga $id" "$(sed -n 2p <<<"$out")"

if command -v nanocat >/dev/null; then
  "$req" --envelope "$STACK_DIR/request.bin"
  nanocat --req --connect "$ORCH_URL" --file "$STACK_DIR/request.bin" --raw \
    --recv-timeout 5 >"$STACK_DIR/reply.bin"
  out=$("$req" --decode "$STACK_DIR/reply.bin")
  echo "$out"
  assert_eq "nanocat --req: reply code" "code=0 sagas=1" "$(head -1 <<<"$out")"
else
  echo "FAIL: nanocat not found (nanomsg-utils; scripts/deps.sh installs it)" >&2
  FAILURES=$((FAILURES + 1))
fi
finish
