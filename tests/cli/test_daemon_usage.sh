#!/usr/bin/env bash
# CLI test of the daemons' options: every bad value is refused at start with
# exit 2 and one line "PROGRAM: error: ..." naming the option and where it
# came from (docs/operations.md, "Configuration"), before any database or
# socket is touched. Needs no PostgreSQL.
#   usage: test_daemon_usage.sh BIN_DIR
set -euo pipefail

BIN=${1:?usage: test_daemon_usage.sh BIN_DIR}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
failures=0

# expect PROG WANT_RC PATTERN ARGS...: run PROG ARGS with a 10 s bound (a
# refused value must not wait for a database), check the exit code and
# that stderr matches the extended regex PATTERN
expect() {
	local prog=$1 want=$2 pattern=$3 rc=0
	shift 3
	timeout 10 "$BIN/$prog" "$@" >"$TMP/out" 2>"$TMP/err" || rc=$?
	if [[ $rc -ne $want ]]; then
		echo "FAIL: $prog $* exited $rc, want $want; stderr: $(head -c 300 "$TMP/err")" >&2
		failures=$((failures + 1))
	elif ! grep -Eq -- "$pattern" "$TMP/err"; then
		echo "FAIL: $prog $*: stderr does not match /$pattern/: $(head -c 300 "$TMP/err")" >&2
		failures=$((failures + 1))
	fi
}

printf 'workers = 70\n' >"$TMP/bad.conf"
for d in orchestratord stockd paymentd shippingd; do
	expect $d 2 "^$d: error: invalid value for workers \(from --workers\): \" 5\" is not an integer$" --workers " 5"
	expect $d 2 "^$d: error: invalid value for workers \(from --workers\): \"\+5\" is not an integer$" --workers +5
	expect $d 2 "^$d: error: invalid value for workers \(from --workers\): 65 is outside 1\.\.64$" --workers 65
	expect $d 2 "^$d: error: invalid value for db: invalid connection option \"bogus\"$" --db "dbname=x bogus=1"
	expect $d 2 "^$d: error: invalid value for log-level: \"verbose\" \(debug, info, warn or error\)$" --log-level verbose
	expect $d 2 "^$d: error: invalid value for fault: unknown kind \"x\" \(delay, .*duplicate_reply\)$" --enable-fault-injection --fault x
	# failure injection is off unless asked for (docs/security.md)
	expect $d 2 "^$d: error: fault: failure injection is off; --fault needs --enable-fault-injection \(tests only\)$" --fault unavailable
	# a plain listener other hosts can reach, a TLS one without its files
	expect $d 2 "^$d: error: invalid value for listen: \"tcp://0\.0\.0\.0:1\" is plain TCP on an address other hosts can reach" --listen tcp://0.0.0.0:1
	expect $d 2 "^$d: error: invalid value for admin-listen: \"tcp://10\.1\.2\.3:1\" is plain TCP" --admin-listen tcp://10.1.2.3:1
	expect $d 2 "^$d: error: invalid value for listen: \"ws://127\.0\.0\.1:1/x\": a daemon does not listen on ws://" --listen ws://127.0.0.1:1/x
	expect $d 2 "^$d: error: listen is tls\+tcp://127\.0\.0\.1:1, which needs --tls-cert, --tls-key and --tls-ca" --listen tls+tcp://127.0.0.1:1
	expect $d 2 "^$d: error: admin-listen is tls\+tcp://127\.0\.0\.1:2, which needs --tls-cert, --tls-key and --admin-tls-ca" --admin-listen tls+tcp://127.0.0.1:2 --tls-cert a --tls-key b
	# a password on the command line is readable by every user (ps)
	expect $d 2 "^$d: error: invalid value for db \(from the command line\): it holds a password" --db "dbname=x password=secret"
	expect $d 2 "^$d: error: invalid value for db \(from the command line\): it holds a password" --db=postgresql://u:secret@h/x
	expect $d 2 "^$d: error: invalid value for workers \(from $TMP/bad.conf:1\): 70 is outside 1\.\.64$" --config "$TMP/bad.conf"
	expect $d 2 "^$d: error: option --config must be spelled in full \(--config FILE\)$" --conf "$TMP/bad.conf"
	expect $d 2 "^$d: error: could not read config file \"$TMP\": a directory$" --config "$TMP"
	expect $d 2 "^$d: error: unknown option \"--bogus\"$" --bogus
	# retention (docs/saga-semantics.md, "Retention"): each value in range,
	# the pair refused before the database is touched (a participant used
	# to check it after connecting and applying its schema)
	expect $d 2 "^$d: error: --retention and --max-clock-skew: retention must be at least 4 x the tolerated clock error$" --retention 3600 --max-clock-skew 901
	expect $d 2 "^$d: error: invalid value for max-clock-skew \(from --max-clock-skew\): -1 is outside 0\.\.86400$" --max-clock-skew -1
	expect $d 2 "^$d: error: invalid value for retention \(from --retention\): 99999999999999999999 is outside 3600\.\.3153600000$" --retention 99999999999999999999
	# a name that starts with "127." is not loopback (DNS may send it anywhere)
	expect $d 2 "^$d: error: invalid value for listen: \"tcp://127\.evil\.example:1\" is plain TCP" --listen tcp://127.evil.example:1
	# --metrics-listen: plain http on loopback only, https with its files
	expect $d 2 "^$d: error: invalid value for metrics-listen: \"http://0\.0\.0\.0:9470\" is plain HTTP on an address other hosts can reach" --metrics-listen http://0.0.0.0:9470
	expect $d 2 "^$d: error: invalid value for metrics-listen: \"http://127\.evil\.example:9470\" is plain HTTP" --metrics-listen http://127.evil.example:9470
	expect $d 2 "^$d: error: invalid value for metrics-listen: \"http://127\.0\.0\.1\": the port must be given" --metrics-listen http://127.0.0.1
	expect $d 2 "^$d: error: invalid value for metrics-listen: \"http://127\.0\.0\.1:9470/m\": give no path" --metrics-listen http://127.0.0.1:9470/m
	expect $d 2 "^$d: error: invalid value for metrics-listen: \"tcp://127\.0\.0\.1:9470\": the scheme must be" --metrics-listen tcp://127.0.0.1:9470
	expect $d 2 "^$d: error: metrics-listen is https://0\.0\.0\.0:9470, which needs --tls-cert, --tls-key and --metrics-tls-ca \(missing: --tls-cert --tls-key --metrics-tls-ca" --metrics-listen https://0.0.0.0:9470
	expect $d 2 "^$d: error: metrics-tls-ca is set but metrics-listen http://127\.0\.0\.1:9470 is plain http://" --metrics-listen http://127.0.0.1:9470 --metrics-tls-ca x
	expect $d 2 "^$d: error: invalid TLS files for metrics-listen https://0\.0\.0\.0:9470: could not read" --metrics-listen https://0.0.0.0:9470 --tls-cert "$TMP/none.crt" --tls-key "$TMP/none.key" --metrics-tls-ca "$TMP/none.crt"
done
# the environment's value is refused even though the flag would win later
SAGA_STOCK_WORKERS=" 3" expect stockd 2 '^stockd: error: invalid value for workers \(from SAGA_STOCK_WORKERS\): " 3" is not an integer$' \
	--workers 2
# rule T4's one refused combination: a retry may not wait less than the
# first try; the default (0) follows a long --request-timeout, so a setting
# that started before --request-timeout-max existed still starts (it goes
# on to the database, which is not there: exit 1, not 2)
expect orchestratord 2 '^orchestratord: error: request-timeout-max \(2000\) is below request-timeout \(3000\): .* raise request-timeout-max to at least 3000, or set it to 0' \
	--request-timeout 3000 --request-timeout-max 2000
expect orchestratord 1 'could not connect' --request-timeout 40000 --db "host=127.0.0.1 port=1" --db-wait 0
# a participant's replicas (a comma-separated list): each entry passes the
# rules of a single URL, and the error names the bad one (docs/operations.md,
# "Replicas")
expect orchestratord 2 '^orchestratord: error: invalid value for stock: "foo" \(entry 2 of 2\): expected tls\+tcp://HOST:PORT, tcp://HOST:PORT or ipc://PATH$' \
	--stock tcp://127.0.0.1:1,foo
expect orchestratord 2 '^orchestratord: error: invalid value for payment: "" \(entry 2 of 3\): empty$' \
	--payment "tcp://127.0.0.1:1,,tcp://127.0.0.1:2"
expect orchestratord 2 '^orchestratord: error: invalid value for shipping: "tcp://127\.0\.0\.1:1" \(entry 2 of 2\): the same URL as entry 1$' \
	--shipping "tcp://127.0.0.1:1, tcp://127.0.0.1:1"
expect orchestratord 2 '^orchestratord: error: tls\+tcp://127\.0\.0\.1:2 is a TLS URL, which needs --participant-tls-cert' \
	--stock "tcp://127.0.0.1:1,tls+tcp://127.0.0.1:2"
expect orchestratord 2 '^orchestratord: error: invalid value for stock: "tcp://127.0.0.1:1,.*": 17 URLs: at most 16$' \
	--stock "$(printf 'tcp://127.0.0.1:%d,' $(seq 1 16))tcp://127.0.0.1:99"
# --links (docs/operations.md, "Several saga types"): NAME=URLS entries, each
# list checked as the others, no name twice or one of the three
expect orchestratord 2 '^orchestratord: error: invalid value for --links: entry "hotel" is not NAME=URL\[,URL\.\.\.\]' \
	--links hotel
expect orchestratord 2 '^orchestratord: error: invalid value for --links: entry "Hotel=tcp://127.0.0.1:1" is not NAME=URL' \
	--links "Hotel=tcp://127.0.0.1:1"
expect orchestratord 2 '^orchestratord: error: invalid value for --links: stock is named twice \(or is --stock\)$' \
	--links "stock=tcp://127.0.0.1:1"
expect orchestratord 2 '^orchestratord: error: invalid value for --links: hotel is named twice \(or is --hotel\)$' \
	--links "hotel=tcp://127.0.0.1:1;hotel=tcp://127.0.0.1:2"
expect orchestratord 2 '^orchestratord: error: invalid value for --links: more than 5 links$' \
	--links "a=tcp://127.0.0.1:1;b=tcp://127.0.0.1:2;c=tcp://127.0.0.1:3;d=tcp://127.0.0.1:4;e=tcp://127.0.0.1:5;f=tcp://127.0.0.1:6"
expect orchestratord 2 '^orchestratord: error: invalid value for hotel: "foo": expected' \
	--links "hotel=foo"
if [[ $failures -ne 0 ]]; then
	echo "$failures failure(s)" >&2
	exit 1
fi
echo "daemon usage: ok"
