#!/usr/bin/env bash
# Every C file git tracks is formatted as .clang-format says (house style:
# CI checks formatting with clang-format's dry run). Exit 77 (skipped) when
# clang-format is not installed.
set -euo pipefail
cd "$1"
command -v clang-format >/dev/null || { echo "clang-format not installed: skipped"; exit 77; }
bad=0
for f in $(git ls-files '*.c' '*.h'); do
  if ! clang-format --dry-run --Werror "$f" >/dev/null 2>&1; then
    echo "not formatted: $f (run: clang-format -i $f)"
    bad=$((bad + 1))
  fi
done
[ "$bad" -eq 0 ] && echo "every C file is formatted"
exit "$bad"
