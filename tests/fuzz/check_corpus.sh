#!/usr/bin/env bash
# The seed corpus in the repository (tests/fuzz/corpus) is exactly what
# fuzz_seeds writes: a change of the protos or of a target's input format
# shows here. Regenerate with `make fuzz-corpus`.
#   check_corpus.sh FUZZ_SEEDS CORPUS_DIR
set -euo pipefail
seeds=$1 corpus=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$seeds" "$tmp/corpus"
if ! diff -r "$tmp/corpus" "$corpus" >"$tmp/diff" 2>&1; then
  cat "$tmp/diff" >&2
  echo "FAIL: tests/fuzz/corpus is not what fuzz_seeds writes: run 'make fuzz-corpus' and commit it" >&2
  exit 1
fi
echo "ok: the seed corpus ($(find "$corpus" -type f | wc -l) files) is current"
