#!/usr/bin/env bash
# A WaitSaga whose client goes away does not keep its place: with
# --max-waits 3, three clients ask for a 60 s wait and disconnect; a fourth
# client's wait must then be held (not answered at once as "too many
# waits"), and end unfinished when its wait_ms runs out.
set -euo pipefail
source "$(dirname "$0")/../lib/stack.sh"
PY=/usr/bin/python3
command -v protoc >/dev/null && "$PY" -c 'import google.protobuf' 2>/dev/null ||
  { echo "wait_disconnect: needs protoc and python3-protobuf (scripts/deps.sh installs them)" >&2; exit 1; }
# a step deadline far past the test, so the saga below cannot end by it
# (with the default 5 s it was CANCELLED before the last wait on a loaded
# machine)
STACK_FAULTS=1 ORCH_FLAGS="--max-waits 3 --step-timeout 600000" stack_start
gen="$STACK_DIR/python"
bash "$STACK_ROOT/clients/python/generate.sh" "$gen" >/dev/null
ctl stock set D1 10 >/dev/null
ctl deposit dc 100.00 >/dev/null
# a saga that cannot finish while the test runs: every ReserveStock refused
ctl fault set stock unavailable --method ReserveStock >/dev/null
id=$(ctl start dc D1 1 1.00 --json | jq -r .saga.saga_id)

out=$(ORCH_URL="$ORCH_URL" "$PY" - "$gen" "$STACK_ROOT/clients/python" "$id" <<'PY'
import ctypes, sys, time
gen, clients, saga_id = sys.argv[1:4]
sys.path.insert(0, clients)
import sagas_client as sc
sc.use_generated(gen)
from sagas.v1 import orchestrator_pb2 as pb, rpc_pb2
import os
url = os.environ["ORCH_URL"]
lib = sc._nng()
for i in range(3):  # ask for a 60 s wait, then go away without the answer
    c = sc.Client(url, 1000)
    env = rpc_pb2.RequestEnvelope(method="/sagas.v1.Orchestrator/WaitSaga", request_id="gone%d" % i,
        payload=pb.WaitSagaRequest(saga_id=saga_id, wait_ms=60000).SerializeToString())
    frame = env.SerializeToString()
    buf = ctypes.create_string_buffer(frame, len(frame))
    assert lib.nng_send(c._sock, buf, len(frame), 0) == 0
    time.sleep(0.2)
    c.close()
time.sleep(0.5)
with sc.Client(url, 5000) as c:
    t0 = time.monotonic()
    rep = c.call("/sagas.v1.Orchestrator/WaitSaga", pb.WaitSagaRequest(saga_id=saga_id, wait_ms=1500),
                 pb.WaitSagaReply, timeout_ms=5000)
    print("held=%s finished=%s" % (time.monotonic() - t0 >= 1.2, rep.finished))
PY
)
echo "$out"
assert_eq "the live client's wait was held, and ended unfinished" "held=True finished=False" "$out"
finish
