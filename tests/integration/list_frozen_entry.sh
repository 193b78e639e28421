#!/usr/bin/env bash
# A URL list with an entry that never answers (issue 20; rpc.h,
# rpc_client_open_urls): orchestrator A frozen (SIGSTOP: the kernel still
# accepts its connections, the handshake never comes) and a "host" that
# drops connection attempts (a listener whose backlog is full). sagactl
# and the Python client, given the list with the dead entry first, are
# answered by the live orchestrator B: exact states, within the call's own
# --timeout (bounded here by `timeout 30`; before, each dialed the entries
# one after another and waited 10 s on a frozen one, ~2 min on a silent
# host). A list where no entry answers fails with a clear error naming the
# list.
set -euo pipefail
source "$(dirname "$0")/../lib/stack.sh"
stack_start
stack_start_orchestrator_as orchestratord2
B=${STACK_URL_OF[orchestratord2]}
ctl stock set A1 5 >/dev/null
ctl deposit ali 500.00 >/dev/null
id=$(ctl start ali A1 1 10.00 --wait --json | jq -r .saga.saga_id)
gen="$STACK_DIR/python"
bash "$STACK_ROOT/clients/python/generate.sh" "$gen" >/dev/null

# a host that drops connection attempts: a listener that never accepts,
# its backlog filled
SILENT_PORT=$(_stack_free_port)
python3 - "$SILENT_PORT" >"$STACK_DIR/silent.log" 2>&1 <<'PY' &
import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(0)
fill = []
for _ in range(8):
    c = socket.socket(); c.setblocking(False)
    try: c.connect(("127.0.0.1", int(sys.argv[1])))
    except BlockingIOError: pass
    fill.append(c)
print("ready", flush=True)
time.sleep(600)
PY
silent=$!
_silent_ready() { grep -q ready "$STACK_DIR/silent.log"; }
wait_until 10 _silent_ready
SILENT="tcp://127.0.0.1:$SILENT_PORT"

kill -STOP "${STACK_PID_OF[orchestratord]}"
for first in "$ORCH_URL" "$SILENT"; do
  rc=0
  out=$(timeout 30 "$SAGA_BIN_DIR/sagactl" --orchestrator "$first,$B" --timeout 3000 get "$id" --json) || rc=$?
  assert_eq "sagactl get through [$first (dead), B]: exit code" 0 "$rc"
  assert_eq "sagactl get through [$first (dead), B]: the saga" "COMPLETED" "$(jq -r .state <<<"$out")"
  rc=0
  out=$(timeout 30 /usr/bin/python3 "$STACK_ROOT/clients/python/start_order.py" --gen "$gen" \
    --orchestrator "$first,$B" --timeout 3000 ali A1 1 1000) || rc=$?
  assert_eq "Python client through [$first (dead), B]: exit code" 0 "$rc"
  assert_eq "Python client through [$first (dead), B]: the order" COMPLETED \
    "$(awk '$1 == "state" {print $2}' <<<"$out")"
done
# no entry answers: an error naming the list, after --timeout
rc=0
err=$(timeout 30 "$SAGA_BIN_DIR/sagactl" --orchestrator "$ORCH_URL,$SILENT" --timeout 1000 get "$id" 2>&1 >/dev/null) || rc=$?
assert_eq "sagactl with every entry dead: exit code" 1 "$rc"
assert_eq "sagactl with every entry dead: the error" yes \
  "$(grep -qF "could not reach orchestrator at any of $ORCH_URL,$SILENT within 1000 ms" <<<"$err" && echo yes || echo "no: $err")"
kill -CONT "${STACK_PID_OF[orchestratord]}"
kill "$silent" 2>/dev/null || true
finish
