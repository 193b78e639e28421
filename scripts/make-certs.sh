#!/usr/bin/env bash
# make-certs.sh DIR [HOST...]: makes the certificates of a deployment with
# mutual TLS (docs/security.md, "Certificates") into DIR, with openssl:
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
#   stockd, paymentd, shippingd, orchestratord, gatewayd .crt/.key   server certificates, valid
#                         for each HOST given (default: the daemon's name,
#                         localhost and 127.0.0.1)
#   orchestrator, admin, client .crt/.key       client certificates, one per role
#   prometheus.crt/.key   the scraper's client certificate (signed by ca-metrics)
#
# A role is which CA signed a certificate: one CA per role, because nng
# 1.5.2 cannot tell a server whose certificate a client showed, only that
# its CA verified it. Keys are EC P-256, certificates valid DAYS days
# (environment, default 825). Files that exist are kept, so running it
# again adds only what is missing (rotate: see docs/security.md). Keys are
# written mode 0600 (KEY_MODE to change, e.g. 0640 for a group).
set -euo pipefail
dir=${1:?usage: make-certs.sh DIR [HOST...]}
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
for d in stockd paymentd shippingd orchestratord gatewayd; do
  san="DNS:$d"
  hosts=("$@")
  [ ${#hosts[@]} -gt 0 ] || hosts=(localhost 127.0.0.1)
  for h in "${hosts[@]}"; do
    # mbedTLS 2.28 (Debian's nng) matches the name dialed only against DNS
    # entries, so an address is listed as one as well
    san="$san,DNS:$h"
    [[ "$h" =~ ^[0-9.]+$ ]] && san="$san,IP:$h"
  done
  leaf "$d" ca-server serverAuth "$san"
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
