#!/usr/bin/env bash
# DNS rebinding in a real browser (docs/security.md, "DNS rebinding"; issue
# 32): Debian's chromium, headless (tests/lib/cdp.py), goes through a proxy
# that rebinds the name evil.example to loopback (tests/lib/rebind_proxy.py):
# the attacker's page is served for http://evil.example:PORT/rebind.html,
# then everything else its script asks of its own origin reaches the
# listener on PORT with Host: evil.example:PORT, as after a real rebinding.
#   - on gatewayd's client listener the page lists the sagas, POSTs a
#     StartSaga charging "victim" 777.00, retries a saga and reads /metrics:
#     each answered 421 (misdirected), seen by the page; on the admin
#     listener the same; on each daemon's /metrics, 421;
#   - nothing changed: no saga, no charge, the retried saga's row as it was;
#     sagas_http_refusals_total{listener,reason="host"} of each listener is
#     exactly the number of requests the proxy delivered to it;
#   - a control: the same page under a name the proxy delivers with the
#     listener's own Host (local.example) reads the list (200): the path
#     through the browser and the proxy works, the Host alone refuses;
#   - without rebinding, a page of evil.example calling the gateway at
#     127.0.0.1 with a "simple" cross-origin POST (text/plain, no
#     preflight) is refused for its Origin (403, counted) and reads nothing.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../lib/stack.sh"

PY=/usr/bin/python3 # Debian's, with python3-websockets
"$PY" -c 'import websockets' 2>/dev/null ||
  { echo "FAIL: rebind_browser: python3-websockets missing (scripts/deps.sh installs it)" >&2; exit 1; }
command -v chromium >/dev/null ||
  { echo "FAIL: rebind_browser: chromium missing (scripts/deps.sh installs it)" >&2; exit 1; }

STACK_GATEWAY=1
stack_start
ctl stock set A1 100 >/dev/null
ctl deposit victim 1000.00 >/dev/null
q() { psql_db sagas_orchestrator "$1"; }
charges() { psql_db sagas_payment "SELECT count(*) FROM charges"; }
port_of() { sed 's|.*:||' <<<"$1"; }
refusals() { # DAEMON LISTENER REASON
  stack_metrics "$1" | awk -v k="sagas_http_refusals_total{listener=\"$2\",reason=\"$3\"}" '$1 == k { print $2 }'
}

ID=eb000000-0000-4000-8000-000000000001
X=eb000000-0000-4000-8000-000000000002
R=eb000000-0000-4000-8000-0000000000a1
q "INSERT INTO sagas (saga_id, state, customer, sku, qty, amount, attention, next_attempt_at, retry_at, attempts)
   VALUES ('$R', 'RELEASING', 'ret', 'A1', 1, 100, true, now() + interval '1 hour', now() + interval '1 hour', 12)" >/dev/null
row_r() { q "SELECT version, attention, attempts, state FROM sagas WHERE saga_id = '$R'"; }
before_r=$(row_r) sagas_before=$(q "SELECT count(*) FROM sagas") charges_before=$(charges)

GW=$(port_of "$GATEWAY_URL") GWA=$(port_of "$GATEWAY_ADMIN_URL")
declare -A mport
ports="$GW,$GWA"
for d in gatewayd orchestratord stockd paymentd shippingd; do
  mport[$d]=$(port_of "${STACK_METRICS_URL_OF[$d]}")
  ports+=",${mport[$d]}"
done

# ---- the proxy ----
plog=$STACK_DIR/rebind_proxy.log pport=$STACK_DIR/rebind_proxy.port
: >"$plog"
"$PY" "$here/../lib/rebind_proxy.py" --name evil.example --trusted-name local.example \
  --ports "$ports" --pages "$here/rebind_pages" --log "$plog" --port-file "$pport" \
  >"$STACK_DIR/rebind_proxy.out" 2>&1 &
proxy_pid=$!
trap 'kill "$proxy_pid" 2>/dev/null || true; stack_stop' EXIT
wait_until 10 test -s "$pport"
PROXY="http://127.0.0.1:$(cat "$pport")"
echo "proxy: $PROXY (rebinds evil.example to 127.0.0.1, ports $ports)"

# browse STEPS...: one chromium session through the proxy
browse() {
  "$PY" "$here/../lib/cdp.py" --timeout 20 --browser-arg="--proxy-server=$PROXY" "$@" ||
    { echo "FAIL: rebind_browser: the browser session failed (cdp.py exit $?)" >&2; exit 1; }
}
OUT='document.getElementById("out").textContent'
# attack PORT [QUERY]: the page on evil.example:PORT; prints what it saw
attack() { browse --goto "http://evil.example:$1/rebind.html?${2:-}" --wait 'body[data-done]' --eval "$OUT" | jq -r .; }
# delivered PORT: how many requests the proxy delivered to the listener
delivered() { awk -v p="$1" '$1 == p' "$plog" | wc -l | tr -d ' '; }

# ---- the control: its own Host through the same browser and proxy ----
out=$(browse --goto "http://local.example:$GW/rebind.html?mode=read" --wait 'body[data-done]' --eval "$OUT" | jq -r .)
echo "control: $out"
assert_eq "control (local.example, Host 127.0.0.1:$GW): the list is read" "200" "$(jq -r .list <<<"$out")"
assert_eq "control: it holds R" "yes" "$(jq -r .listBody <<<"$out" | grep -q sagas && echo yes || echo no)"
control=$(delivered "$GW")
assert_eq "control: one request delivered" "1" "$control"

# ---- rebinding: the client and admin listeners ----
for l in client admin; do
  p=$GW
  [ "$l" = admin ] && p=$GWA
  out=$(attack "$p" "id=$ID&r=$R")
  echo "$l (evil.example:$p): $out"
  assert_eq "$l: the page's list, StartSaga, RetrySaga, /metrics" "421 421 421 421" \
    "$(jq -r '"\(.list) \(.start) \(.retry) \(.metrics)"' <<<"$out")"
  assert_eq "$l: the reason the page reads" "misdirected misdirected" \
    "$(jq -r '"\(.listReason) \(.startReason)"' <<<"$out")"
done
# chromium sends a request answered 421 once more, on a new connection (421
# is how an HTTP/2 server says "not on this connection"): the page's 4
# calls are 8 requests, all refused and all counted
assert_eq "client: delivered: the control's 1 and the page's 4 twice, those refused" "9 8" \
  "$(delivered "$GW") $(awk -v p="$GW" '$1 == p && $4 == 421' "$plog" | wc -l | tr -d ' ')"
assert_eq "client: refusals for the Host = what the page sent" "8" "$(refusals gatewayd client host)"
assert_eq "admin: refusals for the Host = what the page sent" "$(delivered "$GWA")" "$(refusals gatewayd admin host)"
assert_eq "admin: 4 calls delivered, twice each" "8" "$(delivered "$GWA")"

# ---- rebinding: every daemon's /metrics ----
for d in gatewayd orchestratord stockd paymentd shippingd; do
  out=$(attack "${mport[$d]}" "mode=read")
  assert_eq "$d /metrics through evil.example: refused" "421" "$(jq -r .list <<<"$out")"
  assert_eq "$d /metrics: refusals for the Host = what was delivered" \
    "$(delivered "${mport[$d]}")" "$(refusals "$d" metrics host)"
  assert_eq "$d /metrics: one call delivered, twice" "2" "$(delivered "${mport[$d]}")"
done

# ---- no rebinding: a cross-origin "simple" POST to 127.0.0.1 ----
origin_before=$(refusals gatewayd client origin)
out=$(browse --allow-errors --goto "http://evil.example:8081/cross.html?gw=$GW&id=$X" \
  --wait 'body[data-done]' --eval "$OUT" | jq -r .)
echo "cross-origin: $out"
assert_eq "cross-origin: the POST went (opaque), the list was not readable" "opaque blocked" \
  "$(jq -r '"\(.post) \(.read)"' <<<"$out")"
assert_eq "cross-origin: the POST refused for its Origin (counted)" "$((origin_before + 1))" \
  "$(refusals gatewayd client origin)"

# ---- nothing changed ----
assert_eq "no saga started (sagas rows)" "$sagas_before" "$(q "SELECT count(*) FROM sagas")"
assert_eq "no saga $ID or $X" "0" "$(q "SELECT count(*) FROM sagas WHERE saga_id IN ('$ID', '$X')")"
assert_eq "no charge" "$charges_before" "$(charges)"
assert_eq "victim's balance (cents)" "100000" "$(psql_db sagas_payment "SELECT balance FROM accounts WHERE customer = 'victim'")"
assert_eq "R's row unchanged" "$before_r" "$(row_r)"
finish
