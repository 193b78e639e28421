#!/usr/bin/env bash
# bench/compare.sh: the PostgreSQL limit against the saga system, in one run
# on one machine (docs/benchmarks.md).
#
#   1. a throwaway PostgreSQL cluster with durable settings (fsync=on,
#      synchronous_commit=on), started by scripts/pg.sh with PG_FAST=0
#   2. pgbench on it: BEGIN; UPDATE one row by key; INSERT one history row;
#      COMMIT (a custom script, prepared protocol), 1 client and 64 clients;
#      the 64-client figure is L
#   3. orchestratord, stockd, paymentd on that cluster and sagabench at
#      C=1, C=64 (RUNS times each), then an open-loop run at half the C=64
#      peak (for p99), then a burst of RSS_SAGAS sagas in flight at once for
#      the orchestrator's resident size
#   4. every figure, with its ratio to L, and how busy the machine was for
#      2 s before and after the runs (a WARNING above 10%: another process
#      shares the cores)
#
# Each pgbench and sagabench run starts with a CHECKPOINT, so that none pays
# for a checkpoint the WAL of the runs before it would start.
#
# Environment: SAGA_BIN_DIR (default build/bin), PGB_SECS (15), BENCH_SECS
# (12), RUNS (3), MIX (0: share of declined/out-of-stock sagas), DETECT
# (start: StartSaga with wait_ms; wait: then WaitSaga; poll: GetSaga), RSS_SAGAS
# (10000; 0 skips the burst), ORCH_FLAGS, STOCK_FLAGS, PAYMENT_FLAGS (extra
# daemon flags), KEEP_STACK=1 keeps the cluster and logs. Results also go to
# $OUT (default /tmp/sagas-compare.<pid>.txt) as JSON lines.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export SAGA_BIN_DIR=${SAGA_BIN_DIR:-$ROOT/build/bin}
PGB_SECS=${PGB_SECS:-15}
BENCH_SECS=${BENCH_SECS:-12}
RUNS=${RUNS:-3}
MIX=${MIX:-0}
RSS_SAGAS=${RSS_SAGAS:-10000}
OUT=${OUT:-/tmp/sagas-compare.$$.txt}
BENCH=$SAGA_BIN_DIR/sagabench

for t in pgbench psql; do
  command -v "$t" >/dev/null || { echo "compare: $t is missing (apt-get install postgresql-client)" >&2; exit 2; }
done
[ -x "$BENCH" ] || { echo "compare: $BENCH is missing: build first (make bench builds it)" >&2; exit 2; }

# shellcheck source=../tests/lib/stack.sh
source "$ROOT/tests/lib/stack.sh"
: >"$OUT"

say() { printf '%s\n' "$*"; }
jget() { # jget KEY JSON: a number of a flat key of sagabench's --json output
  printf '%s' "$2" | grep -o "\"$1\":[-0-9.e]*" | head -1 | cut -d: -f2
}
lat() { # lat P JSON: latency percentile (p50, p90, p99, max) in ms
  printf '%s' "$2" | grep -o '"latency_ms":{[^}]*}' | grep -o "\"$1\":[0-9.]*" | cut -d: -f2
}
stats() { # stats V...: "median (min..max)"
  printf '%s\n' "$@" | sort -g | awk '{v[NR]=$1} END {
    m = (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2;
    printf "%.1f (%.1f..%.1f)", m, v[1], v[NR] }'
}
median() { printf '%s\n' "$@" | sort -g | awk '{v[NR]=$1} END { print (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2 }'; }

busy() { # busy: percent of all cores busy over 2 s (/proc/stat), before or after the runs
  local a b
  read -r -a a < <(head -1 /proc/stat)
  sleep 2
  read -r -a b < <(head -1 /proc/stat)
  awk -v u="$(( b[1] + b[2] + b[3] + b[6] + b[7] + b[8] - a[1] - a[2] - a[3] - a[6] - a[7] - a[8] ))" \
    -v i="$(( b[4] + b[5] - a[4] - a[5] ))" 'BEGIN { printf "%.0f", ((u + i) > 0 ? 100 * u / (u + i) : 0) }'
}
warn_busy() { # warn_busy PCT WHEN: a loud line when something else used the machine
  [ "$1" -le 10 ] ||
    say "WARNING: the machine was $1% busy $2 with nothing of this benchmark running: another process shares the cores, and every figure below is lower than this machine gives"
}

say "== machine"
BUSY_BEFORE=$(busy)
say "nproc $(nproc); $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'); load average $(cut -d' ' -f1-3 /proc/loadavg); ${BUSY_BEFORE}% busy before the runs"
warn_busy "$BUSY_BEFORE" "before the runs"

say "== PostgreSQL (throwaway cluster, durable settings)"
PG_FAST=0 stack_start
q() { psql -h 127.0.0.1 -p "$PG_PORT" -U postgres -d postgres -qAtc "$1"; }
say "$(q 'SELECT version()' | cut -d' ' -f1-2); fsync=$(q 'SHOW fsync') synchronous_commit=$(q 'SHOW synchronous_commit') full_page_writes=$(q 'SHOW full_page_writes') wal_sync_method=$(q 'SHOW wal_sync_method') commit_delay=$(q 'SHOW commit_delay') shared_buffers=$(q 'SHOW shared_buffers')"
[ "$(q 'SHOW fsync')" = on ] && [ "$(q 'SHOW synchronous_commit')" = on ] ||
  { echo "compare: the cluster is not durable" >&2; exit 1; }

say "== pgbench: BEGIN; UPDATE one row by key; INSERT one history row; COMMIT (${PGB_SECS} s each, -M prepared)"
q "CREATE DATABASE pgbench_step" >/dev/null
pq() { psql -h 127.0.0.1 -p "$PG_PORT" -U postgres -d pgbench_step -qAtc "$1"; }
pq "CREATE TABLE step_rows (id int PRIMARY KEY, val bigint NOT NULL, version bigint NOT NULL DEFAULT 0);
    INSERT INTO step_rows SELECT g, 0, 0 FROM generate_series(1, 100000) g;
    CREATE TABLE step_history (id bigserial PRIMARY KEY, row_id int NOT NULL, delta int NOT NULL, at timestamptz NOT NULL DEFAULT now());" >/dev/null
pq "VACUUM ANALYZE step_rows" >/dev/null
cat >"$STACK_DIR/step.sql" <<'SQL'
\set id random(1, 100000)
\set delta random(-1000, 1000)
BEGIN;
UPDATE step_rows SET val = val + :delta, version = version + 1 WHERE id = :id;
INSERT INTO step_history (row_id, delta) VALUES (:id, :delta);
COMMIT;
SQL
pgb() { # pgb CLIENTS: tps
  q "CHECKPOINT" >/dev/null # every measurement starts from the same state
  pgbench -h 127.0.0.1 -p "$PG_PORT" -U postgres -n -M prepared -f "$STACK_DIR/step.sql" \
    -c "$1" -j "$(( $1 < 2 ? 1 : 2 ))" -T "$PGB_SECS" pgbench_step 2>/dev/null |
    awk '/^tps = / {print $3; exit}'
}
PGB1=$(pgb 1)
L=$(pgb 64)
say "pgbench  1 client : $PGB1 tps"
say "pgbench 64 clients: $L tps   = L"
echo "{\"pgbench_1\":$PGB1,\"pgbench_64\":$L}" >>"$OUT"

ORCH_PID=${STACK_PID_OF[orchestratord]}
run() { # run LABEL ARGS...: one sagabench run; prints its JSON
  local label=$1; shift
  local j
  q "CHECKPOINT" >/dev/null # nor does it pay for the WAL of the runs before it
  if ! j=$("$BENCH" -o "$ORCH_URL" -s "$STOCK_URL" -p "$PAYMENT_URL" --mix "$MIX" --detect "${DETECT:-start}" --json --no-progress \
      --label "$label" "$@"); then
    echo "compare: sagabench $label failed (an invariant or the run); its output:" >&2
    echo "$j" >&2
    exit 1
  fi
  echo "$j" >>"$OUT"
  echo "$j"
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", (b > 0) ? a / b : 0 }'; }

say "== sagabench (daemons: default flags ${ORCH_FLAGS:+orchestratord $ORCH_FLAGS }${STOCK_FLAGS:+stockd $STOCK_FLAGS }${PAYMENT_FLAGS:+paymentd $PAYMENT_FLAGS}; mix $MIX; ${DETECT:-start}: latency = StartSaga sent -> its saga's end received)"
C1_SPS=(); C1_P50=(); C64_SPS=(); C64_P50=(); C64_P99=()
for r in $(seq 1 "$RUNS"); do
  j=$(run "c1-$r" -c 1 -n 100000 -d "$(awk -v s="$BENCH_SECS" 'BEGIN{print s/2}')")
  C1_SPS+=("$(jget sagas_per_s "$j")"); C1_P50+=("$(lat p50 "$j")")
  say "run $r C=1 : $(jget sagas_per_s "$j") sagas/s, p50 $(lat p50 "$j") ms, p99 $(lat p99 "$j") ms"
  j=$(run "c64-$r" -c 64 -n 1000000 -d "$BENCH_SECS")
  C64_SPS+=("$(jget sagas_per_s "$j")"); C64_P50+=("$(lat p50 "$j")"); C64_P99+=("$(lat p99 "$j")")
  say "run $r C=64: $(jget sagas_per_s "$j") sagas/s, p50 $(lat p50 "$j") ms, p99 $(lat p99 "$j") ms"
done
PEAK=$(median "${C64_SPS[@]}")
HALF=$(awk -v p="$PEAK" 'BEGIN { h = p / 2; printf "%.1f", h < 1 ? 1 : h }')
H_SPS=(); H_P50=(); H_P99=()
for r in $(seq 1 "$RUNS"); do
  j=$(run "half-$r" --rate "$HALF" -c 10000 -n 1000000 -d "$BENCH_SECS")
  H_SPS+=("$(jget sagas_per_s "$j")"); H_P50+=("$(lat p50 "$j")"); H_P99+=("$(lat p99 "$j")")
  say "run $r rate $HALF/s: $(jget sagas_per_s "$j") sagas/s, p50 $(lat p50 "$j") ms, p99 $(lat p99 "$j") ms"
done

RSS_LINE="skipped (RSS_SAGAS=0)"
if [ "$RSS_SAGAS" -gt 0 ]; then
  # sample the orchestrator's resident size while RSS_SAGAS sagas are in flight
  ( maxkb=0
    while kill -0 "$ORCH_PID" 2>/dev/null && [ ! -f "$STACK_DIR/rss.stop" ]; do
      kb=$(awk '/^VmRSS/ {print $2}' "/proc/$ORCH_PID/status" 2>/dev/null || echo 0)
      [ "${kb:-0}" -gt "$maxkb" ] && maxkb=$kb && echo "$maxkb" >"$STACK_DIR/rss.max"
      sleep 0.1
    done ) &
  sampler=$!
  j=$(run "burst" -c "$RSS_SAGAS" -n "$RSS_SAGAS" --call-timeout 120000 -t 240)
  touch "$STACK_DIR/rss.stop"; wait "$sampler" 2>/dev/null || true
  RSS_KB=$(cat "$STACK_DIR/rss.max" 2>/dev/null || echo 0)
  RSS_LINE="$(awk -v k="$RSS_KB" 'BEGIN{printf "%.1f MiB", k/1024}') peak VmRSS with $RSS_SAGAS sagas started at once ($(jget sagas_per_s "$j") sagas/s, p99 $(lat p99 "$j") ms)"
  echo "{\"orchestrator_rss_kb\":$RSS_KB,\"sagas\":$RSS_SAGAS}" >>"$OUT"
fi

say ""
say "== summary (durable: fsync=on, synchronous_commit=on; median (min..max) of $RUNS runs)"
say "L (pgbench, 64 clients)        $L tps   (1 client: $PGB1 tps)"
say "sagas/s at C=1                 $(stats "${C1_SPS[@]}")   ratio to L $(ratio "$(median "${C1_SPS[@]}")" "$L")"
say "sagas/s at C=64                $(stats "${C64_SPS[@]}")   ratio to L $(ratio "$PEAK" "$L")"
say "p50 ms at C=1                  $(stats "${C1_P50[@]}")"
say "p50 / p99 ms at C=64           $(stats "${C64_P50[@]}") / $(stats "${C64_P99[@]}")"
say "p99 ms at half peak ($HALF/s)  $(stats "${H_P99[@]}")   (p50 $(stats "${H_P50[@]}"))"
say "orchestrator RSS               $RSS_LINE"
say "invariants                     held after every run (sagabench exits non-zero otherwise)"
stack_stop
BUSY_AFTER=$(busy)
say "machine                        ${BUSY_BEFORE}% busy before the runs, ${BUSY_AFTER}% after (this benchmark's processes stopped)"
warn_busy "$BUSY_AFTER" "after the runs"
say "JSON lines of every run: $OUT"
