#!/usr/bin/env bash
# Each TLS link checks the name it dials (docs/security.md, "Certificates",
# issue 32): every server certificate names only its own daemon
# (scripts/make-certs.sh without hosts), and every caller dials 127.0.0.1
# with ?server_name=DAEMON (STACK_TLS_NAMES=1). A paymentd presenting
# stockd's certificate at the URL the orchestrator dials as paymentd (a
# real paymentd on the payment database: a command that reached it would
# charge) is refused at the handshake: no command answered, nothing
# charged, the saga refunds and is CANCELLED once the real paymentd is
# back. The right certificate at the same address works.
set -euo pipefail
here=$(dirname "$0")
source "$here/../lib/stack.sh"

# shellcheck disable=SC2034 # read by stack.sh
STACK_TLS=1 STACK_TLS_NAMES=1
stack_start
C=$STACK_DIR/certs
sans() { openssl x509 -in "$C/$1.crt" -noout -ext subjectAltName | sed -n 2p | tr -d ' '; }
assert_eq "stockd's certificate names stockd only" "DNS:stockd" "$(sans stockd)"
assert_eq "paymentd's certificate names paymentd only" "DNS:paymentd" "$(sans paymentd)"
assert_eq "orchestratord's certificate names orchestratord only" "DNS:orchestratord" "$(sans orchestratord)"
pay_port=${STACK_PORT_OF[paymentd]}

ctl stock set A1 10 >/dev/null
ctl deposit ali 500.00 >/dev/null
# the right certificates everywhere: a saga completes (sagactl dialed the
# orchestrator as orchestratord, the orchestrator each participant by name)
S1=7a5e0000-0000-4000-8000-000000000001
ctl start ali A1 2 200.00 --id "$S1" --wait >/dev/null
assert_eq "saga 1" "COMPLETED" "$(psql_db sagas_orchestrator "SELECT state FROM sagas WHERE saga_id = '$S1'")"
assert_eq "ali charged once" "30000" "$(psql_db sagas_payment "SELECT balance FROM accounts WHERE customer = 'ali'")"

# cmd URL VERB ARGS...: sagacmd with the orchestrator's certificate: its
# first output word
cmd() {
  local out
  out=$(SAGACMD_TLS_CA="$C/ca-server.crt" SAGACMD_TLS_CERT="$C/orchestrator.crt" \
    SAGACMD_TLS_KEY="$C/orchestrator.key" "$SAGA_BIN_DIR/sagacmd" "$@" 2>/dev/null || true)
  echo "${out%% *}"
}
X=7a5e0000-0000-4000-8000-0000000000ff
# stockd's listener dialed as paymentd: refused; as stockd: answered
assert_eq "stockd's listener dialed as paymentd" HANDSHAKE_REFUSED \
  "$(cmd "tls+tcp://127.0.0.1:${STACK_PORT_OF[stockd]}?server_name=paymentd" charge "$X" ali 100)"
assert_eq "stockd's listener dialed as stockd" OK \
  "$(cmd "tls+tcp://127.0.0.1:${STACK_PORT_OF[stockd]}?server_name=stockd" reserve "$X" NOSKU 1 | sed 's/NOT_FOUND\|FAILED_PRECONDITION\|INVALID_ARGUMENT/OK/')"
# the orchestrator's admin listener dialed as another daemon: sagactl refuses
out=$("$SAGA_BIN_DIR/sagactl" --orchestrator "$(_stack_listen_url "$ORCH_ADMIN_URL")?server_name=paymentd" \
  "${STACK_CTL_TLS[@]}" --timeout 3000 get "$S1" 2>&1 || true)
assert_eq "sagactl to the orchestrator dialed as paymentd" "handshake failed" \
  "$(grep -o 'handshake failed' <<<"$out" | head -1)"

# the attack: paymentd replaced by one presenting stockd's certificate and
# key at paymentd's address (the orchestrator dials it as paymentd)
stack_kill paymentd
PAYMENT_FLAGS="--tls-cert $C/stockd.crt --tls-key $C/stockd.key" stack_start_payment
assert_eq "the fake answers a caller that dials it as stockd (it is a working paymentd)" \
  DECLINED_OR_UNKNOWN \
  "$(cmd "tls+tcp://127.0.0.1:$pay_port?server_name=stockd" charge "$X" nobody 100 |
    sed 's/^\(OK\|NOT_FOUND\|FAILED_PRECONDITION\)$/DECLINED_OR_UNKNOWN/')"
assert_eq "the fake dialed as paymentd" HANDSHAKE_REFUSED \
  "$(cmd "tls+tcp://127.0.0.1:$pay_port?server_name=paymentd" charge "$X" ali 100)"

S2=7a5e0000-0000-4000-8000-000000000002
ctl start ali A1 2 200.00 --id "$S2" >/dev/null
# its charge step runs out (5 s) without an answer: the orchestrator then
# owes a refund (the charge might have landed) and waits for paymentd
s2_state() { psql_db sagas_orchestrator "SELECT state FROM sagas WHERE saga_id = '$S2'"; }
s2_past_charging() { [[ "$(s2_state)" =~ ^(REFUNDING|RELEASING|SHIPPING|COMPLETED|CANCELLED)$ ]]; }
wait_until 60 s2_past_charging || true
assert_eq "saga 2 with the fake paymentd" REFUNDING "$(s2_state)"
assert_eq "nothing charged by the fake" "30000|0" \
  "$(psql_db sagas_payment "SELECT (SELECT balance FROM accounts WHERE customer = 'ali'),
     (SELECT count(*) FROM charges WHERE saga_id = '$S2')")"
# (the one it answered is the test's own, dialed as stockd above)
assert_eq "no ChargePayment of the orchestrator answered by the fake" 1 \
  "$(stack_metrics paymentd | awk '/^sagas_rpc_requests_total\{.*ChargePayment/ {n += $2} END {print n + 0}')"

# the real paymentd back at the same address: the refund of a charge that
# never happened is answered, and the saga ends CANCELLED, the stock back
stack_kill paymentd
PAYMENT_FLAGS="" stack_start_payment
s2_done() { [ "$(s2_state)" = CANCELLED ]; }
wait_until 60 s2_done || true
assert_eq "saga 2 after the real paymentd came back" CANCELLED "$(s2_state)"
assert_eq "ali never charged for saga 2" "30000|0" \
  "$(psql_db sagas_payment "SELECT (SELECT balance FROM accounts WHERE customer = 'ali'),
     (SELECT count(*) FROM charges WHERE saga_id = '$S2' AND status = 'CHARGED')")"
assert_eq "A1's reservation released" 8 "$(psql_db sagas_stock "SELECT on_hand FROM stock WHERE sku = 'A1'")"
# and a new saga works again, by name
S3=7a5e0000-0000-4000-8000-000000000003
ctl start ali A1 1 50.00 --id "$S3" --wait >/dev/null
assert_eq "saga 3" "COMPLETED 25000" \
  "$(psql_db sagas_orchestrator "SELECT state FROM sagas WHERE saga_id = '$S3'") $(psql_db sagas_payment "SELECT balance FROM accounts WHERE customer = 'ali'")"
finish
