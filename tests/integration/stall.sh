#!/usr/bin/env bash
# Stalls (docs/security.md, "Bounded resources"), over mutual TLS:
# - 300 TCP connections to a TLS port that never start their handshake are
#   closed after about RPC_HANDSHAKE_TIMEOUT_MS (10 s), in a few log lines,
#   while an admin call on the same port goes through;
# - a peer with a certificate that sends Health calls without ever reading a
#   reply is dropped about RPC_SEND_TIMEOUT_MS (5 s) after the server could
#   no longer hand it one: the daemon takes calls on that listener again,
#   and a saga started meanwhile completes;
# - a peer that piles calls on a Health-only listener is closed, a batch
#   frame there is refused whole, and any call there but Health is
#   UNAUTHENTICATED and changes nothing.
set -euo pipefail
here=$(dirname "$0")
source "$here/../lib/stack.sh"
STACK_TLS=1
HPORT=$(_stack_free_port)
STOCK_FLAGS="--health-listen tcp://127.0.0.1:$HPORT"
stack_start
C=$STACK_DIR/certs
ctl stock set S1 10 >/dev/null
ctl deposit sam 100.00 >/dev/null
port=${STOCK_ADMIN_URL##*:}

# 1. handshakes that never start
python3 "$STACK_ROOT/tests/tools/sp_noread.py" 127.0.0.1 "$port" handshake >"$STACK_DIR/hs.json" &
hs=$!
sleep 2
assert_eq "an admin call during the handshake flood" 1 "$(ctl stock list | grep -c '^ S1 ')"
wait "$hs"
j=$(cat "$STACK_DIR/hs.json")
echo "handshake flood: $j"
assert_eq "every stalled handshake closed" 300 "$(jq .closed <<<"$j")"
assert_eq "closed about 10 s after they opened" yes "$(jq '.first_s >= 6 and .last_s <= 13.5' <<<"$j" | sed 's/true/yes/')"
assert_eq "one log line for them" yes \
  "$(n=$(grep -c 'had not finished their TLS handshake' "$STACK_DIR/stockd.log"); [ "$n" -ge 1 ] && [ "$n" -le 3 ] && echo yes || echo "no: $n")"

# 2. a peer that never reads, with the admin certificate: about 5 s after
# its replies back up the daemon drops its connection and takes calls
# again (the peer may only notice later: its kernel still holds the bytes)
python3 "$STACK_ROOT/tests/tools/sp_noread.py" 127.0.0.1 "$port" noread \
  "$C/admin.crt" "$C/admin.key" "$C/ca-server.crt" >"$STACK_DIR/nr.json" &
nr=$!
sleep 3
S=57a11000-0000-4000-8000-000000000001
ctl start sam S1 1 1.00 --id "$S" --wait >/dev/null 2>&1 || true
wait_until 20 grep -q 'closed a connection that read no reply for 5000 ms' "$STACK_DIR/stockd.log"
assert_eq "logged" yes "$(n=$(grep -c 'read no reply' "$STACK_DIR/stockd.log"); [ "$n" -ge 1 ] && [ "$n" -le 2 ] && echo yes || echo "no: $n")"
assert_eq "an admin call on the same listener, the peer still connected" 1 "$(ctl stock list | grep -c '^ S1 ')"
completed() { [ "$(psql_db sagas_orchestrator "SELECT state FROM sagas WHERE saga_id = '$1'")" = COMPLETED ]; }
wait_until 30 completed "$S"
assert_eq "a saga started meanwhile completed" COMPLETED \
  "$(psql_db sagas_orchestrator "SELECT state FROM sagas WHERE saga_id = '$S'")"
kill "$nr" 2>/dev/null || true
wait "$nr" 2>/dev/null || true

# 3. calls piled on the Health-only listener
out=$(python3 - "$HPORT" <<'PY'
import socket, struct, sys, time
sys.path.insert(0, "")
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall(b"\x00SP\x00\x00\x30\x00\x00"); s.recv(8)
m = b"/sagas.v1.Health/Check"
def frame(n):
    body = struct.pack(">I", 0x80000000 | n) + b"\x0a" + bytes([len(m)]) + m
    return struct.pack(">Q", len(body)) + body
s.sendall(b"".join(frame(i) for i in range(50)))
s.settimeout(5)
got = b""
try:
    while True:
        d = s.recv(65536)
        if not d: break
        got += d
except OSError:
    pass
print("closed" if len(got) < 50 * 20 else "answered all")
PY
)
assert_eq "50 piled Health calls: the connection is closed" closed "$out"
assert_eq "the Health listener still answers a probe" 0 \
  "$("$SAGA_BIN_DIR/sagactl" probe stock --stock "tcp://127.0.0.1:$HPORT" >/dev/null 2>&1; echo $?)"
# a batch frame there (128 Health calls in one frame went under the rate,
# which counts frames: attack review) is refused whole, UNAUTHENTICATED
out=$(python3 - "$HPORT" <<'PY'
import socket, struct, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall(b"\x00SP\x00\x00\x30\x00\x00"); s.recv(8)
def ld(field, b): return bytes([field << 3 | 2, len(b)]) + b
call = ld(1, b"/sagas.v1.Health/Check")
env = ld(1, b"/sagas.v1.Rpc/Batch") + ld(2, b"r1") + b"".join(ld(5, call) for _ in range(3))
body = struct.pack(">I", 0x80000001) + env
s.sendall(struct.pack(">Q", len(body)) + body)
s.settimeout(5)
n = struct.unpack(">Q", s.recv(8))[0]
got = b""
while len(got) < n:
    got += s.recv(n - len(got))
rep = got[4:]
# ReplyEnvelope: code = field 2 (varint), replies = field 6
code = rep[rep.index(b"\x10") + 1] if b"\x10" in rep else 0
print(code, b"\x32" in rep)
PY
)
assert_eq "a batch on the Health listener: UNAUTHENTICATED, no call answered" "16 False" "$out"
# 4. the Health-only listener gives no role: every other call there is
# UNAUTHENTICATED and changes nothing (docs/security.md, "Roles")
before=$(psql_db sagas_stock "SELECT sku || '|' || on_hand FROM stock ORDER BY sku")
assert_eq "SetStock via the Health listener" 1 \
  "$("$SAGA_BIN_DIR/sagactl" --stock "tcp://127.0.0.1:$HPORT" stock set S1 999 2>&1 | grep -c 'UNAUTHENTICATED (unauthenticated)')"
assert_eq "SetFault via the Health listener" 1 \
  "$("$SAGA_BIN_DIR/sagactl" --stock "tcp://127.0.0.1:$HPORT" fault set stock unavailable 2>&1 | grep -c 'UNAUTHENTICATED')"
assert_eq "ReserveStock via the Health listener" UNAUTHENTICATED \
  "$("$SAGA_BIN_DIR/sagacmd" "tcp://127.0.0.1:$HPORT" reserve 57a11000-0000-4000-8000-000000000009 S1 1 | cut -d' ' -f1)"
assert_eq "no stock row changed" "$before" "$(psql_db sagas_stock "SELECT sku || '|' || on_hand FROM stock ORDER BY sku")"
assert_eq "no reservation made" 0 \
  "$(psql_db sagas_stock "SELECT count(*) FROM reservations WHERE saga_id = '57a11000-0000-4000-8000-000000000009'")"
# (logged once for the three: one address, one line per 10 s)
assert_eq "logged with the peer" 1 \
  "$(grep -c 'WARNING: refused /sagas.v1.Stock/SetStock: UNAUTHENTICATED (no verified identity) (peer 127.0.0.1:' "$STACK_DIR/stockd.log")"
finish
