#!/usr/bin/env bash
# CLI test: sagactl's argument parsing, help, usage errors (exit 2) and the
# unreachable-orchestrator path (exit 1). Needs no daemon.
#   usage: test_cli_usage.sh PATH/TO/sagactl
set -euo pipefail

SAGACTL=${1:?usage: test_cli_usage.sh PATH/TO/sagactl}
OUT=$(mktemp)
ERR=$(mktemp)
trap 'rm -f "$OUT" "$ERR"' EXIT
# a port nobody listens on, so that no call can reach a real daemon
export SAGA_ORCHESTRATOR_URL=tcp://127.0.0.1:1
export SAGA_STOCK_URL=tcp://127.0.0.1:1
export SAGA_PAYMENT_URL=tcp://127.0.0.1:1
export SAGA_SHIPPING_URL=tcp://127.0.0.1:1

failures=0
fail() {
	echo "FAIL: $*" >&2
	echo "  stdout: $(head -c 400 "$OUT")" >&2
	echo "  stderr: $(head -c 400 "$ERR")" >&2
	failures=$((failures + 1))
}

# expect CODE PATTERN ARGS...: run sagactl ARGS, check the exit code and that
# stdout+stderr match the extended regex PATTERN ("" matches anything).
expect() {
	local want=$1 pattern=$2
	shift 2
	local rc=0
	"$SAGACTL" "$@" >"$OUT" 2>"$ERR" || rc=$?
	if [[ $rc -ne $want ]]; then
		fail "sagactl $* exited $rc, want $want"
		return 0
	fi
	if [[ -n $pattern ]] && ! cat "$OUT" "$ERR" | grep -Eq -- "$pattern"; then
		fail "sagactl $* output does not match /$pattern/"
	fi
	return 0
}

# help: exit 0, usage on stdout
expect 0 '^usage: sagactl' --help
expect 0 '^usage: sagactl' -h
for verb in start get wait list history retry "stock set" "stock list" deposit accounts shipments \
	report "fault set" "fault clear" probe "definitions check"; do
	# shellcheck disable=SC2086 # "stock set" is two words on purpose
	expect 0 "^usage: sagactl $verb" $verb --help
done
expect 0 'stock set' stock --help
expect 0 'fault set' fault --help
expect 0 '^usage: sagactl start' --json start --help
expect 0 'verbs:' --help
expect 0 'report' --help
expect 0 'retry ID' --help
expect 0 'fault set SERVICE KIND' --help
expect 0 'fault clear SERVICE' --help
expect 0 'shipments .*admin: shipments' --help
expect 0 '--shipping URL\[,URL\.\.\.\] .*tcp://127\.0\.0\.1:7104.*SAGA_SHIPPING_URL' --help

# no verb, unknown verb
expect 2 'missing verb'
expect 2 'unknown verb ""' ""
expect 2 'missing verb' --json
expect 2 'unknown verb "frob"' frob
expect 2 'missing stock subcommand' stock
expect 2 'unknown stock subcommand "frob"' stock frob
expect 2 'missing fault subcommand \(set or clear\)' fault
expect 2 'unknown fault subcommand "frob"' fault frob
expect 2 'unknown option "--bogus"' get --bogus 1b4e28ba-2fa1-11d2-883f-0016d3cca427

# nothing printed on stdout for a usage error
"$SAGACTL" frob >"$OUT" 2>"$ERR" || true
[[ -s $OUT ]] && fail "usage error wrote to stdout"

# AMOUNT: strict decimal in major units
for amount in 12.005 1e3 -5 abc "" 12. .5 "1 2" +5 0 0.00 99999999999999999; do
	expect 2 "invalid AMOUNT \"$(printf '%s' "$amount" | sed 's/[.+]/\\&/g')\"" \
		start ali A1 2 "$amount"
	expect 2 'invalid AMOUNT' deposit ali "$amount"
done

# QTY: whole number 1..1000000
for qty in 0 -1 1.5 99999999 1000001 abc "" 1e3; do
	expect 2 "invalid QTY \"$(printf '%s' "$qty" | sed 's/[.+]/\\&/g')\"" start ali A1 "$qty" 10.00
done

# CUSTOMER, SKU
expect 2 'invalid CUSTOMER' start "" A1 1 10
expect 2 'invalid SKU' start ali "$(printf 'a%.0s' {1..65})" 1 10
expect 2 'invalid CUSTOMER' deposit "$(printf 'a\tb')" 10

# --id and ID
expect 2 'invalid --id "XYZ"' start ali A1 2 10.00 --id XYZ
expect 2 'invalid --id' start ali A1 2 10.00 --id 1B4E28BA-2FA1-11D2-883F-0016D3CCA427
expect 2 'invalid ID "nope"' get nope
expect 2 'invalid ID' history 1234
expect 2 'missing argument ID' get
expect 2 'unexpected argument "extra"' get 1b4e28ba-2fa1-11d2-883f-0016d3cca427 extra
expect 2 'missing argument AMOUNT' start ali A1 2
expect 2 'invalid AMOUNT "-5.00": must be positive' deposit ali -5.00

# --state (case-insensitive; unknown lists the valid states)
# any saga type's state names are names: a value that is not one is refused
expect 2 'invalid --state "no;such": a state.s name is a letter, then letters, digits or _' list --state 'no;such'
expect 2 'invalid --state' list --state 9LIVES
expect 2 'limit' list --limit -1
expect 2 'limit' list --limit 10001
# list's overdue and paging flags (issue 21)
expect 0 '--overdue .*why column' list --help
expect 0 '--margin MS' list --help
expect 0 '--stuck-after MS' list --help
expect 0 '--older-than MS' list --help
expect 0 '--page-token TOKEN' list --help
expect 0 '--all .*follow the pages' list --help
expect 0 'next_page_token' list --help
expect 2 'margin' list --overdue --margin -1
expect 2 'margin' list --overdue --margin 1s
expect 2 'margin' list --overdue --margin 31536000001
expect 2 'stuck-after' list --overdue --stuck-after abc
expect 2 'stuck-after' list --overdue --stuck-after 31536000001
expect 2 'older-than' list --older-than -5
expect 2 'older-than' list --older-than 10m
expect 2 'older-than' list --older-than 315360000001
expect 2 '--margin and --stuck-after go with --overdue' list --margin 1000
expect 2 '--margin and --stuck-after go with --overdue' list --stuck-after 1000
expect 2 'margin' list --overdue --margin
expect 2 'all' list --all=maybe
expect 2 'page-token' list --page-token
expect 1 'could not reach orchestrator' --timeout 300 list --overdue --margin 1000 --stuck-after 5000 --older-than 60000 --page-token x --all
# --limit of the row listings: 1..10000 rows
for verb in "stock list --reservations" "accounts --charges" shipments report; do
	# shellcheck disable=SC2086 # the verb is several words on purpose
	expect 2 'invalid value for limit \(from --limit\): 0 is outside 1..10000' $verb --limit 0
	# shellcheck disable=SC2086
	expect 2 'limit' $verb --limit 10001
	# shellcheck disable=SC2086
	expect 2 'limit' $verb --limit abc
done
expect 0 'stock list \[--reservations \[--limit N\]\]' stock list --help
expect 0 'reservations_truncated' stock list --help
expect 0 'accounts \[--charges \[--limit N\]\]' accounts --help
expect 0 'charges_truncated' accounts --help
expect 0 'charged_count' accounts --help
expect 0 'report \[--limit N\]' report --help
expect 0 'charges_truncated' report --help
expect 0 'shipments \[--limit N\]' shipments --help
expect 0 '"total":N,"shipments":\[' shipments --help
expect 0 '"shipments":\{"total":N' report --help
expect 0 'shipping' probe --help
# shipments: usage errors name the option or the argument
expect 2 'limit' shipments --limit -1
expect 2 'limit' shipments --limit ""
expect 2 'unknown option "--charges"' shipments --charges
expect 2 'unknown option "--bogus"' shipments --bogus
expect 2 'unexpected argument "extra"' shipments extra
expect 2 'invalid --shipping URL "foo"' --shipping foo shipments
expect 2 'invalid --shipping URL "foo"' shipments --shipping foo --json
expect 2 '--shipping tls\+tcp://127\.0\.0\.1:1 is a TLS URL: give --tls-ca' \
	--shipping tls+tcp://127.0.0.1:1 shipments
# --state knows SHIPPING (sagas.v1.SagaState 7)
expect 2 'invalid --state "foo bar".*RESERVING.*BOOKED' list --state 'foo bar'
expect 1 'could not reach orchestrator' --timeout 300 list --state shipping
expect 2 'timeout' --timeout 0 list
expect 2 'timeout' get --timeout abc 1b4e28ba-2fa1-11d2-883f-0016d3cca427

# ON_HAND
expect 2 'invalid ON_HAND "-3"' stock set A1 -3
expect 2 'invalid ON_HAND "x"' stock set A1 x

# retry ID, retry FILTERS
expect 2 'invalid ID "nope"' retry nope
expect 2 'invalid ID "1B4E28BA' retry 1B4E28BA-2FA1-11D2-883F-0016D3CCA427
expect 2 'retry needs an ID, or filters to select sagas by' retry
expect 2 'retry ID re-arms that saga; the filters' retry 1b4e28ba-2fa1-11d2-883f-0016d3cca427 --attention
expect 2 'retry ID re-arms that saga; the filters' retry 1b4e28ba-2fa1-11d2-883f-0016d3cca427 --rate 5
expect 2 '0 is outside 1..10000' retry --attention --rate 0
expect 2 'unexpected argument "extra"' retry 1b4e28ba-2fa1-11d2-883f-0016d3cca427 extra

# fault set SERVICE KIND, fault clear SERVICE: unknown values list the valid ones
expect 2 'invalid SERVICE "frob".*orchestrator.*stock.*payment.*shipping' fault set frob delay
expect 2 'invalid SERVICE "Stock"' fault set Stock unavailable
expect 2 'invalid SERVICE "frob".*orchestrator.*stock.*payment.*shipping' fault clear frob
expect 2 'invalid SERVICE "frob".*shipping' probe frob
expect 2 'invalid SERVICE ""' fault clear ""
expect 2 'invalid KIND "frob".*delay.*drop_reply.*unavailable.*exit_after_commit.*fail_before_commit.*exit_after_send' \
	fault set stock frob
expect 2 'invalid KIND "DELAY"' fault set payment DELAY
expect 2 'missing argument KIND' fault set stock
expect 2 'missing argument SERVICE' fault clear
expect 2 'unexpected argument "delay"' fault clear stock delay
expect 2 'count' fault set stock unavailable --count -1
expect 2 'count' fault set stock unavailable --count abc
expect 2 'count' fault set stock unavailable --count 2147483648
expect 2 'delay' fault set stock delay --delay 600001
expect 2 'delay' fault set stock delay --delay -5
expect 2 'invalid --method' fault set stock unavailable --method "$(printf 'a\tb')"
expect 2 'invalid --stock URL "foo"' --stock foo fault set stock unavailable
expect 2 'invalid --payment URL "foo"' fault clear payment --payment foo

# a bad URL is a usage error
expect 2 'invalid --orchestrator URL "foo"' --orchestrator foo get 1b4e28ba-2fa1-11d2-883f-0016d3cca427
# a list of URLs (several orchestrators, a participant's replicas): each
# entry is checked as a single URL is, and the error names the bad one
expect 2 'invalid --orchestrator URL "foo" \(entry 2 of 2\): expected tls\+tcp://HOST:PORT' \
	--orchestrator tcp://127.0.0.1:1,foo get 1b4e28ba-2fa1-11d2-883f-0016d3cca427
expect 2 'invalid --orchestrator URL "" \(entry 1 of 2\): empty' \
	--orchestrator ,tcp://127.0.0.1:1 get 1b4e28ba-2fa1-11d2-883f-0016d3cca427
expect 2 'invalid --stock URL "tcp://127.0.0.1:1" \(entry 2 of 2\): the same URL as entry 1' \
	--stock tcp://127.0.0.1:1,tcp://127.0.0.1:1 stock list
expect 2 'invalid --orchestrator URL "tcp://127.0.0.1:1 tcp://127.0.0.1:2": expected' \
	--orchestrator "tcp://127.0.0.1:1 tcp://127.0.0.1:2" get 1b4e28ba-2fa1-11d2-883f-0016d3cca427
expect 2 '--orchestrator tls\+tcp://127\.0\.0\.1:2 is a TLS URL: give --tls-ca' \
	--orchestrator tcp://127.0.0.1:1,tls+tcp://127.0.0.1:2 get 1b4e28ba-2fa1-11d2-883f-0016d3cca427
SAGA_ORCHESTRATOR_URL=tcp://127.0.0.1:1,bar expect 2 'invalid --orchestrator URL "bar" \(entry 2 of 2\)' \
	get 1b4e28ba-2fa1-11d2-883f-0016d3cca427

# unreachable services: exit 1 after --timeout with a clear message; global
# options before or after the verb; the environment gives the default URL
UNREACH='could not reach orchestrator at tcp://127.0.0.1:1: connection refused'
expect 1 "$UNREACH" --orchestrator tcp://127.0.0.1:1 --timeout 300 start ali A1 2 12.5
expect 1 "$UNREACH" start ali A1 2 12.5 --timeout 300 --orchestrator tcp://127.0.0.1:1
expect 1 "$UNREACH" --timeout 300 list --state completed
expect 1 "$UNREACH" --timeout 300 list --state CaNcElLeD --json
expect 1 "$UNREACH" --timeout 300 get 1b4e28ba-2fa1-11d2-883f-0016d3cca427
expect 1 "$UNREACH" --timeout 300 history 1b4e28ba-2fa1-11d2-883f-0016d3cca427
expect 1 "$UNREACH" --timeout 300 report --json
expect 1 "$UNREACH" --timeout 300 start ali A1 2 12.5 --wait --wait-timeout 500
expect 1 'could not reach stock at tcp://127.0.0.1:1: connection refused' --timeout 300 stock list
expect 1 'could not reach stock' --timeout 300 stock set A1 5
expect 1 'could not reach payment at tcp://127.0.0.1:1: connection refused' --timeout 300 accounts
expect 1 'could not reach payment' --timeout 300 deposit ali 500.00
expect 2 'invalid --id "nope": expected a canonical lowercase UUID' deposit ali 5.00 --id nope
# an empty --id (a script's unset variable) is refused, not replaced by a new key
expect 2 'invalid --id "": expected a canonical lowercase UUID' deposit ali 5.00 --id ""
expect 2 'invalid --id "": expected a canonical lowercase UUID' deposit ali 5.00 --id=
expect 2 'invalid --id "": expected a canonical lowercase UUID' start ali A1 1 5.00 --id ""
expect 2 'invalid --id "": expected a canonical lowercase UUID' deposit ali 5.00 --i ""
# start has --id and --input: a prefix of both is named as such
expect 2 'ambiguous option "--i": --id or --input' start ali A1 1 5.00 --i ""
# start --input JSON: the input is the option, no CUSTOMER SKU QTY AMOUNT
expect 2 'unexpected argument "ali"' start --type trip --input '{}' ali
expect 1 "$UNREACH" --timeout 300 start --type trip --input '{"customer":"ali"}'
expect 2 'invalid --id' deposit ali 5.00 --id 1B4E28BA-2FA1-11D2-883F-0016D3CCA427
expect 1 "$UNREACH" --timeout 300 retry 1b4e28ba-2fa1-11d2-883f-0016d3cca427
expect 1 'could not reach stock at tcp://127.0.0.1:1: connection refused' --timeout 300 fault set stock \
	unavailable --method ReserveStock --count 2
expect 1 'could not reach payment' --timeout 300 fault set payment delay --delay 100 --json
expect 1 "$UNREACH" --timeout 300 fault clear orchestrator
SHIPUNREACH='could not reach shipping at tcp://127.0.0.1:1: connection refused \(is shippingd running\?\)'
expect 1 "$SHIPUNREACH" --timeout 300 shipments
expect 1 "$SHIPUNREACH" --timeout 300 shipments --json --limit 5
expect 1 'could not reach shipping' --timeout 300 probe shipping
expect 1 'could not reach shipping' --timeout 300 fault set shipping unavailable --method ShipOrder
expect 1 'could not reach shipping' --timeout 300 fault clear shipping
# an error writes nothing to stdout, even with --json
"$SAGACTL" --timeout 300 --json report >"$OUT" 2>"$ERR" || true
[[ -s $OUT ]] && fail "an error wrote to stdout"

# the timeout is honoured: well under 3 s for --timeout 300
start=$(date +%s%N)
"$SAGACTL" --timeout 300 get 1b4e28ba-2fa1-11d2-883f-0016d3cca427 >/dev/null 2>&1 || true
elapsed_ms=$((($(date +%s%N) - start) / 1000000))
((elapsed_ms < 3000)) || fail "--timeout 300 took ${elapsed_ms} ms"

if ((failures > 0)); then
	echo "$failures failure(s)" >&2
	exit 1
fi
echo "ok"
