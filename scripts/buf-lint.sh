#!/usr/bin/env bash
# Lints proto/ with buf (buf.yaml: STANDARD rules) and checks it for breaking
# changes against the previous commit's protos, when there is one.
# buf comes from the npm registry (@bufbuild/buf), installed into .buf-tools/
# (gitignored) on first use. Exit status: 0 clean, 1 lint or breaking
# errors, 77 skipped (no npm, or npm could not fetch the package).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tools=${BUF_TOOLS_DIR:-$root/.buf-tools}
buf=$tools/node_modules/.bin/buf
SKIP=77
cd "$root"

if [ ! -x "$buf" ]; then
  if ! command -v npm >/dev/null; then
    echo "buf-lint: SKIPPED: npm not found (scripts/deps.sh installs it)"; exit $SKIP
  fi
  echo "buf-lint: installing @bufbuild/buf into $tools"
  mkdir -p "$tools"
  if ! npm install --prefix "$tools" --no-audit --no-fund --loglevel=error @bufbuild/buf >"$tools/install.log" 2>&1 ||
    [ ! -x "$buf" ]; then
    echo "buf-lint: SKIPPED: npm could not install @bufbuild/buf (no registry?):"
    tail -5 "$tools/install.log" 2>/dev/null || true
    exit $SKIP
  fi
fi
echo "buf-lint: $("$buf" --version 2>&1 | head -1)"

rc=0
echo "buf-lint: buf lint proto"
"$buf" lint proto || rc=1

# breaking: against HEAD~1 when that commit has protos (the working tree is
# what is checked, so run it before committing too)
if git rev-parse -q --verify 'HEAD~1^{commit}' >/dev/null 2>&1 &&
  [ -n "$(git ls-tree -r --name-only HEAD~1 -- proto 2>/dev/null | grep '\.proto$' || true)" ]; then
  echo "buf-lint: buf breaking proto --against '.git#ref=HEAD~1,subdir=proto'"
  "$buf" breaking proto --against '.git#ref=HEAD~1,subdir=proto' || rc=1
else
  echo "buf-lint: breaking check skipped: no previous commit with protos"
fi
[ "$rc" -eq 0 ] && echo "buf-lint: clean"
exit "$rc"
