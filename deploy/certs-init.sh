#!/bin/sh
# compose.yaml's certs service: makes the CAs and certificates once
# (sagas-make-certs, scripts/make-certs.sh) into /certs/ca, the CA's volume,
# which only this service mounts, then gives each program a volume with only
# the files it needs (docs/security.md, "Certificates"): a daemon that is
# broken into holds its own key and the CAs it trusts, never another role's
# key or a CA's. Files already in /certs/ca are kept (your own certificates:
# SAGAS_CERTS); the copies are refreshed on every run.
#   sagas-certs-init HOST...
set -eu
sagas-make-certs /certs/ca "$@"
give() { # give DIR FILE...: copies FILE from /certs/ca into DIR, keys 0600
  dir=$1
  shift
  for f in "$@"; do
    cp /certs/ca/"$f" "$dir/$f.new"
    case $f in *.key) chmod 0600 "$dir/$f.new" ;; *) chmod 0644 "$dir/$f.new" ;; esac
    mv "$dir/$f.new" "$dir/$f"
  done
}
give /certs/stock stockd.crt stockd.key ca-orchestrator.crt ca-admin.crt ca-metrics.crt
give /certs/payment paymentd.crt paymentd.key ca-orchestrator.crt ca-admin.crt ca-metrics.crt
give /certs/shipping shippingd.crt shippingd.key ca-orchestrator.crt ca-admin.crt ca-metrics.crt
give /certs/orchestrator orchestratord.crt orchestratord.key ca-client.crt ca-admin.crt \
  orchestrator.crt orchestrator.key ca-server.crt ca-metrics.crt
give /certs/cli admin.crt admin.key ca-server.crt
# the metrics scraper: its client certificate, and the CA of the daemons'
# server certificates
give /certs/prometheus prometheus.crt prometheus.key ca-server.crt
echo "certs-init: each service's volume has only its own key and the CAs it trusts"
