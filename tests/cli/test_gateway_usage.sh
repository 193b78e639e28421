#!/usr/bin/env bash
# CLI test of gatewayd's options (docs/operations.md, "The HTTP gateway"):
# --help and --version exit 0; every bad value is refused at start with exit
# 2 and one line "gatewayd: error: ..." naming the option (and where it came
# from), before any socket is opened. Needs no PostgreSQL and no
# orchestratord.
#   usage: test_gateway_usage.sh BIN_DIR
set -euo pipefail

BIN=${1:?usage: test_gateway_usage.sh BIN_DIR}
GW=$BIN/gatewayd
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
failures=0

# expect WANT_RC PATTERN ARGS...: run gatewayd ARGS with a 10 s bound, check
# the exit code and that stderr matches the extended regex PATTERN
expect() {
	local want=$1 pattern=$2 rc=0
	shift 2
	timeout 10 "$GW" "$@" >"$TMP/out" 2>"$TMP/err" || rc=$?
	if [[ $rc -ne $want ]]; then
		echo "FAIL: gatewayd $* exited $rc, want $want; stderr: $(head -c 300 "$TMP/err")" >&2
		failures=$((failures + 1))
	elif ! grep -Eq -- "$pattern" "$TMP/err"; then
		echo "FAIL: gatewayd $*: stderr does not match /$pattern/: $(head -c 300 "$TMP/err")" >&2
		failures=$((failures + 1))
	else
		echo "ok: gatewayd $*"
	fi
}

# --help names every option; --version the version line
rc=0
"$GW" --help >"$TMP/help" 2>&1 || rc=$?
[ "$rc" -eq 0 ] || { echo "FAIL: --help exited $rc" >&2; failures=$((failures + 1)); }
for opt in --listen --admin-listen --tls-cert --tls-key --tls-ca --admin-tls-ca --orchestrator \
	--orchestrator-admin --orchestrator-tls-cert --orchestrator-tls-key --orchestrator-tls-ca \
	--orchestrator-admin-tls-cert --orchestrator-admin-tls-key --request-timeout --max-body \
	--log-level SAGA_GATEWAY_LISTEN "default http://127.0.0.1:7180"; do
	if ! grep -qF -- "$opt" "$TMP/help"; then
		echo "FAIL: --help does not mention $opt" >&2
		failures=$((failures + 1))
	fi
done
rc=0
out=$("$GW" --version 2>&1) || rc=$?
if [ "$rc" -ne 0 ] || ! grep -Eq '^gatewayd [0-9]+\.[0-9]+\.[0-9]+ \(commit [0-9a-f]{12}(-dirty)?|unknown\)' <<<"$out"; then
	echo "FAIL: --version: rc $rc: $out" >&2
	failures=$((failures + 1))
fi

expect 2 '^gatewayd: error: invalid value for listen: "http://0\.0\.0\.0:7180" is plain HTTP on an address other hosts can reach: use https:// with --tls-cert, --tls-key and --tls-ca' \
	--listen http://0.0.0.0:7180
expect 2 '^gatewayd: error: invalid value for admin-listen: "http://10\.1\.2\.3:7181" is plain HTTP on an address other hosts can reach: use https:// with --tls-cert, --tls-key and --admin-tls-ca' \
	--admin-listen http://10.1.2.3:7181
expect 2 '^gatewayd: error: invalid value for listen: "http://127\.evil\.example:1" is plain HTTP' \
	--listen http://127.evil.example:1
expect 2 '^gatewayd: error: invalid value for listen: "tcp://127\.0\.0\.1:7180": the scheme must be http:// \(loopback\) or https://$' \
	--listen tcp://127.0.0.1:7180
expect 2 '^gatewayd: error: invalid value for listen: "http://127\.0\.0\.1": the port must be given, 1 to 65535$' \
	--listen http://127.0.0.1
expect 2 '^gatewayd: error: invalid value for listen: "http://127\.0\.0\.1:7180/api": give no path' \
	--listen http://127.0.0.1:7180/api
expect 2 '^gatewayd: error: listen is https://0\.0\.0\.0:7180, which needs --tls-cert, --tls-key and --tls-ca \(missing: --tls-cert --tls-key --tls-ca; docs/security\.md\)$' \
	--listen https://0.0.0.0:7180
expect 2 '^gatewayd: error: admin-listen is https://0\.0\.0\.0:7181, which needs --tls-cert, --tls-key and --admin-tls-ca \(missing: --admin-tls-ca; docs/security\.md\)$' \
	--admin-listen https://0.0.0.0:7181 --tls-cert a --tls-key b
expect 2 '^gatewayd: error: invalid TLS files for listen https://0\.0\.0\.0:7180: could not read' \
	--listen https://0.0.0.0:7180 --tls-cert "$TMP/none.crt" --tls-key "$TMP/none.key" --tls-ca "$TMP/none.crt"
expect 2 '^gatewayd: error: tls-ca is set but listen http://127\.0\.0\.1:7180 is plain http://' \
	--tls-ca x
expect 2 '^gatewayd: error: listen and admin-listen are the same URL http://127\.0\.0\.1:7180: each listener serves one role$' \
	--admin-listen http://127.0.0.1:7180
expect 2 '^gatewayd: error: listen and admin-listen are both empty: nothing to serve$' \
	--listen ""
expect 2 '^gatewayd: error: invalid value for orchestrator: "foo" \(entry 2 of 2\): expected tls\+tcp://HOST:PORT, tcp://HOST:PORT or ipc://PATH$' \
	--orchestrator tcp://127.0.0.1:1,foo
expect 2 '^gatewayd: error: invalid value for orchestrator-admin: "" \(entry 2 of 2\): empty$' \
	--orchestrator-admin tcp://127.0.0.1:1,
expect 2 '^gatewayd: error: orchestrator tls\+tcp://127\.0\.0\.1:1 is a TLS URL: give --orchestrator-tls-ca, --orchestrator-tls-cert and its key' \
	--orchestrator tls+tcp://127.0.0.1:1
expect 2 '^gatewayd: error: invalid value for request-timeout \(from --request-timeout\): 99 is outside 100\.\.600000$' \
	--request-timeout 99
expect 2 '^gatewayd: error: invalid value for max-body \(from --max-body\): "64k" is not an integer$' \
	--max-body 64k
expect 2 '^gatewayd: error: invalid value for log-level: "verbose" \(debug, info, warn or error\)$' \
	--log-level verbose
expect 2 '^gatewayd: error: unknown option "--bogus"$' --bogus
SAGA_GATEWAY_MAX_BODY=12 expect 2 '^gatewayd: error: invalid value for max-body \(from SAGA_GATEWAY_MAX_BODY\): 12 is outside 1024\.\.1048576$'
printf 'request-timeout = 0\n' >"$TMP/bad.conf"
expect 2 "^gatewayd: error: invalid value for request-timeout \(from $TMP/bad.conf:1\): 0 is outside 100\.\.600000$" \
	--config "$TMP/bad.conf"
# a port taken: exit 1 after the log line naming it
python3 -c 'import socket,time,sys
s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(("127.0.0.1",0)); s.listen(1)
print(s.getsockname()[1], flush=True); time.sleep(20)' >"$TMP/port" &
holder=$!
for _ in $(seq 100); do [ -s "$TMP/port" ] && break; sleep 0.05; done
port=$(cat "$TMP/port")
expect 1 "could not start the client role's listener: could not listen on http://127\.0\.0\.1:$port: Address already in use" \
	--listen "http://127.0.0.1:$port"
kill "$holder" 2>/dev/null || true
wait "$holder" 2>/dev/null || true

if [ "$failures" -ne 0 ]; then
	echo "$failures failure(s)" >&2
	exit 1
fi
echo "all gatewayd option checks passed"
