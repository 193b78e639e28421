#!/usr/bin/env bash
# Runs every fuzz target of a libFuzzer build (make fuzz) for SECS seconds
# each, two at a time, under ASan and UBSan (docs/testing.md, "Fuzzing").
# What the code under test prints is closed off (-close_fd_mask=3); the
# fuzzer's and the sanitizers' reports and a broken property's line stay.
# Inputs may be as long as a request frame may be (64 KiB): libFuzzer cuts
# longer seeds and regression inputs to -max_len when it loads them, and a
# shorter bound hid a 30 KB frame that crashed every daemon.
# Leaks inside a library we use (not ours) are suppressed by tests/fuzz/lsan.supp.
# Inputs found go to BUILD/fuzz-work/<target>/corpus (the repository's
# corpus and regression inputs are read, never written); a crash, a leak or
# an input slower than 10 s fails the run, and its input is kept in
# BUILD/fuzz-work/<target>/ (crash-*, leak-*, timeout-*): once the bug is
# fixed, copy it into tests/fuzz/regressions/<target>/ so that the ordinary
# suite replays it.
#   run.sh BUILD SECS
set -uo pipefail
build=$1 secs=$2
root=$(cd "$(dirname "$0")/../.." && pwd)
targets=(fuzz_frame fuzz_stock fuzz_payment fuzz_shipping fuzz_orchestrator fuzz_config fuzz_parsers fuzz_reply
  fuzz_definitions)
work=$build/fuzz-work
mkdir -p "$work"

run_one() {
  local t=$1 w=$work/$1
  mkdir -p "$w/corpus"
  local dirs=("$w/corpus" "$root/tests/fuzz/corpus/$t")
  [ -d "$root/tests/fuzz/regressions/$t" ] && dirs+=("$root/tests/fuzz/regressions/$t")
  LSAN_OPTIONS="suppressions=$root/tests/fuzz/lsan.supp:print_suppressions=0${LSAN_OPTIONS:+:$LSAN_OPTIONS}" \
    "$build/bin/$t" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
    -close_fd_mask=3 -artifact_prefix="$w/" -print_final_stats=1 "${dirs[@]}" >"$w/log" 2>&1
  local rc=$?
  local stats
  stats=$(grep -E '^stat::number_of_executed_units|^stat::new_units_added' "$w/log" |
    awk -F: '{printf "%s=%s ", $3, $4}' | tr -d ' ' | sed 's/number_of_executed_units/runs/; s/new_units_added/ new/')
  if [ "$rc" -eq 0 ]; then
    echo "ok: $t ($secs s: $stats; $(grep -oE 'cov: [0-9]+' "$w/log" | tail -1 | sed 's/cov:/coverage/'))"
  else
    echo "FAIL: $t (exit $rc); the end of its log ($w/log):"
    grep -vE '^#[0-9]+' "$w/log" | tail -40
    ls "$w"/crash-* "$w"/leak-* "$w"/timeout-* "$w"/oom-* 2>/dev/null |
      sed 's/^/  input kept: /'
    echo "  once fixed, copy the input into tests/fuzz/regressions/$t/"
  fi
  return "$rc"
}

failed=0
pids=()
names=()
for t in "${targets[@]}"; do
  run_one "$t" >"$work/$t.result" 2>&1 &
  pids+=($!)
  names+=("$t")
  # two at a time (the machines have 2 cores)
  if [ "${#pids[@]}" -ge 2 ]; then
    wait "${pids[0]}" || failed=1
    cat "$work/${names[0]}.result"
    pids=("${pids[@]:1}")
    names=("${names[@]:1}")
  fi
done
for i in "${!pids[@]}"; do
  wait "${pids[$i]}" || failed=1
  cat "$work/${names[$i]}.result"
done
[ "$failed" -eq 0 ] && echo "fuzz: every target ran $secs s without a crash, a leak or a timeout"
exit "$failed"
