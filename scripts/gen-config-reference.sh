#!/usr/bin/env bash
# Rewrites the option tables of docs/operations.md from each daemon's --help
# (between the "<!-- config:begin -->" and "<!-- config:end -->" markers).
#   scripts/gen-config-reference.sh [BIN_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build/bin}
doc=docs/operations.md
tmp=$(mktemp)
{
  sed -n '1,/<!-- config:begin -->/p' "$doc"
  for b in orchestratord stockd paymentd shippingd gatewayd; do
    echo "### $b"
    echo '```'
    "$bin/$b" --help | sed -n '/^options:/,$p'
    echo '```'
    echo
  done
  sed -n '/<!-- config:end -->/,$p' "$doc"
} >"$tmp"
mv "$tmp" "$doc"
