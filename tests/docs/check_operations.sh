#!/usr/bin/env bash
# Every option each daemon's --help lists appears in docs/operations.md.
set -euo pipefail
bin=$1 doc=$2
missing=0
for b in orchestratord stockd paymentd shippingd gatewayd; do
  for opt in $("$bin/$b" --help | grep -oE '^  --[a-z-]+' | tr -d ' '); do
    if ! grep -q -- "$opt" "$doc"; then
      echo "FAIL: $b $opt is not documented in $doc" >&2
      missing=$((missing + 1))
    fi
  done
done
[ "$missing" -eq 0 ] && echo "every option is documented"
exit "$missing"
