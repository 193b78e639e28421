#!/usr/bin/env bash
# Installs the Debian packages the project needs, only those missing.
# Uses sudo when not root. Safe to run again. `deps.sh fuzz` adds what
# `make fuzz` needs (clang and its libFuzzer and sanitizer runtimes).
# prometheus is for promtool (ctest prometheus_rules) and the real
# Prometheus the tests start themselves: it is installed without starting
# its service (a policy-rc.d that forbids it, for the install only).
# chromium and python3-websockets are for the console's browser test
# (tests/integration/console_browser.sh drives headless chromium through
# tests/lib/cdp.py); `make test` installs the main list, so they are in it.
# nftables is for the stalled database link of tests/integration/db_stall.sh.
set -euo pipefail

pkgs=(build-essential cmake pkg-config libnng-dev libmbedtls-dev nng-utils libprotobuf-c-dev
  protobuf-c-compiler libpq-dev uuid-dev libcmocka-dev libjansson-dev libfyaml-dev uthash-dev
  libmicrohttpd-dev libgnutls28-dev libunistring-dev
  protobuf-compiler python3-protobuf libnanomsg-dev nanomsg-utils
  postgresql jq util-linux clang-format docker-compose faketime libfaketime openssl nftables
  prometheus curl
  chromium python3-websockets)
# npm only fetches buf for the proto lint: a Node.js that is already there
# (not from Debian) is used as it is, since Debian's npm conflicts with it
command -v npm >/dev/null 2>&1 || pkgs+=(npm)
[ "${1:-}" = fuzz ] && pkgs+=(clang libclang-rt-14-dev)

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "deps: installing ${missing[*]}"
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
# Debian's prometheus (and postgresql) start their service through
# invoke-rc.d / deb-systemd-invoke, which ask /usr/sbin/policy-rc.d first:
# one that exits 101 (action forbidden) while we install, unless the
# machine has its own, removed after
policy=/usr/sbin/policy-rc.d
if [[ " ${missing[*]} " == *" prometheus "* ]] && [ ! -e "$policy" ]; then
  printf '#!/bin/sh\n# scripts/deps.sh: no service started while it installs\nexit 101\n' |
    $sudo tee "$policy" >/dev/null
  $sudo chmod 0755 "$policy"
  trap '$sudo rm -f "$policy"' EXIT
fi
$sudo apt-get update -q
$sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
