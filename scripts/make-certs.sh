#!/usr/bin/env bash
# make-certs.sh DIR [DAEMON=HOST | HOST]...: makes the certificates of a
# deployment with mutual TLS (docs/security.md, "Certificates") into DIR,
# with openssl:
#
#   ca-server.crt         signs every daemon's server certificate; the callers
#                         trust it (sagactl --tls-ca, --participant-tls-ca)
#   ca-orchestrator.crt   signs the orchestrator's client certificate; stockd,
#                         paymentd and shippingd trust it on --listen (--tls-ca)
#   ca-admin.crt          signs operators' certificates; every daemon trusts
#                         it on --admin-listen (--admin-tls-ca)
#   ca-client.crt         signs applications' certificates; orchestratord
#                         trusts it on --listen (--tls-ca)
#   ca-metrics.crt        signs the metrics scraper's certificate; every
#                         daemon trusts it on an https --metrics-listen
#                         (--metrics-tls-ca)
#   stockd, paymentd, shippingd, orchestratord, gatewayd .crt/.key   server
#                         certificates, each naming its daemon (DNS:stockd)
#                         and only the hosts given for it
#   orchestrator, admin, client .crt/.key       client certificates, one per role
#   prometheus.crt/.key   the scraper's client certificate (signed by ca-metrics)
#
# Names: a caller checks the name it dials (the URL's host, or its
# ?server_name=NAME) against the server's certificate, so a certificate
# must name only its own service: one that also named paymentd's host would
# let stockd's key serve as paymentd. DAEMON=HOST adds HOST to DAEMON's
# certificate only (stockd=stock stockd=stock2 paymentd=payment ...). A
# bare HOST goes into every server certificate: only for one machine where
# every daemon is dialed by that name (the tests' localhost and 127.0.0.1);
# there any daemon's key can serve as any other at that name. Without
# arguments each certificate names only its daemon (callers dial
# tls+tcp://ADDRESS:PORT?server_name=stockd, or a host name resolving to
# it). An existing server certificate that names another daemon's host (its
# name or a DAEMON=HOST of another daemon) is refused (exit 1): delete its
# .crt and .key to have a new one made.
#
# A role is which CA signed a certificate: one CA per role, because nng
# 1.5.2 cannot tell a server whose certificate a client showed, only that
# its CA verified it. Keys are EC P-256, certificates valid DAYS days
# (environment, default 825). Files that exist are kept, so running it
# again adds only what is missing (rotate: see docs/security.md). Keys are
# written mode 0600 (KEY_MODE to change, e.g. 0640 for a group).
set -euo pipefail
usage="usage: make-certs.sh DIR [DAEMON=HOST | HOST]... (DAEMON: stockd, paymentd, shippingd, orchestratord, gatewayd; docs/security.md, \"Certificates\")"
case "${1:-}" in
  -h | --help) echo "$usage"; exit 0 ;;
  '' | -*) echo "$usage" >&2; exit 2 ;;
esac
dir=$1
shift
days=${DAYS:-825}
key_mode=${KEY_MODE:-0600}
mkdir -p "$dir"
cd "$dir"
umask 077

newkey() { [ -e "$1.key" ] || { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1.key" 2>/dev/null; chmod "$key_mode" "$1.key"; }; }

ca() { # ca NAME
  newkey "$1"
  [ -e "$1.crt" ] || openssl req -x509 -new -key "$1.key" -sha256 -days "$days" \
    -subj "/CN=sagas $1" -addext basicConstraints=critical,CA:true \
    -addext keyUsage=critical,keyCertSign,cRLSign -out "$1.crt" 2>/dev/null
}

leaf() { # leaf NAME CA EXTKEYUSAGE [SAN]
  local name=$1 ca=$2 usage=$3 san=${4:-}
  newkey "$name"
  [ -e "$name.crt" ] && return 0
  local ext
  ext=$(mktemp)
  {
    echo "basicConstraints=critical,CA:false"
    echo "keyUsage=critical,digitalSignature"
    echo "extendedKeyUsage=$usage"
    [ -z "$san" ] || echo "subjectAltName=$san"
  } >"$ext"
  openssl req -new -key "$name.key" -subj "/CN=$name" 2>/dev/null |
    openssl x509 -req -CA "$ca.crt" -CAkey "$ca.key" -CAcreateserial -sha256 -days "$days" \
      -extfile "$ext" -out "$name.crt" 2>/dev/null
  rm -f "$ext"
}

for c in ca-server ca-orchestrator ca-admin ca-client; do ca "$c"; done
daemons=(stockd paymentd shippingd orchestratord gatewayd)
declare -A own     # daemon -> its hosts, space-separated (its name first)
declare -A owner   # host -> the daemon it was given for ("*": every one)
for d in "${daemons[@]}"; do own[$d]=$d owner[$d]=$d; done
for a in "$@"; do
  if [[ "$a" == *=* ]]; then
    d=${a%%=*} h=${a#*=}
    [ -n "${own[$d]:-}" ] || { echo "make-certs.sh: $a: no daemon $d (${daemons[*]})" >&2; exit 2; }
  else
    d='*' h=$a
  fi
  [[ "$h" =~ ^[A-Za-z0-9._-]+$ ]] || { echo "make-certs.sh: $a: not a host name or address" >&2; exit 2; }
  # names compare as TLS compares them: case-blind, a trailing dot dropped
  h=${h,,}
  h=${h%.}
  if [ -n "${owner[$h]:-}" ] && [ "${owner[$h]}" != "$d" ]; then
    echo "make-certs.sh: $h is given for ${owner[$h]} and for $d: a name belongs to one daemon (or, bare, to all)" >&2
    exit 2
  fi
  owner[$h]=$d
  if [ "$d" = '*' ]; then
    for e in "${daemons[@]}"; do own[$e]+=" $h"; done
  else
    own[$d]+=" $h"
  fi
done
for d in "${daemons[@]}"; do
  san=""
  for h in ${own[$d]}; do
    # mbedTLS 2.28 (Debian's nng) matches the name dialed only against DNS
    # entries, so an address is listed as one as well
    san="${san:+$san,}DNS:$h"
    [[ "$h" =~ ^[0-9.]+$ ]] && san="$san,IP:$h"
  done
  leaf "$d" ca-server serverAuth "$san"
  # a certificate kept from before (or your own) must not name another
  # daemon's host
  names=$(openssl x509 -in "$d.crt" -noout -ext subjectAltName 2>/dev/null |
    tr ',' '\n' | sed -n 's/^ *DNS://p' | tr 'A-Z' 'a-z' | sed 's/\.$//')
  for h in $names; do
    o=${owner[$h]:-}
    if [ -n "$o" ] && [ "$o" != '*' ] && [ "$o" != "$d" ]; then
      echo "make-certs.sh: $dir/$d.crt also names $h, a host of $o: the key of $d could serve as $o; delete $d.crt and $d.key and run again" >&2
      exit 1
    fi
  done
  # and a kept certificate must name every host asked for it now (a kept
  # file is never changed: a host added later would fail every handshake)
  for h in ${own[$d]}; do
    if ! grep -qxF -- "$h" <<<"$names"; then
      echo "make-certs.sh: $dir/$d.crt, kept from before, does not name $h: delete $d.crt and $d.key and run again to have it made with every host given for $d" >&2
      exit 1
    fi
  done
done
leaf orchestrator ca-orchestrator clientAuth
leaf admin ca-admin clientAuth
leaf client ca-client clientAuth
# the metrics scraper (Prometheus): its own CA, so a scraper's certificate
# reaches /metrics and nothing else
ca ca-metrics
leaf prometheus ca-metrics clientAuth
chmod 0644 ./*.crt
rm -f ./*.srl
echo "certificates in $dir"
