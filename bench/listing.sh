#!/usr/bin/env bash
# bench/listing.sh: what listings cost at size, and what they cost the saga
# path (docs/benchmarks.md, "Listings at size"; issue 32). On one stack
# (durable PostgreSQL, the four daemons and gatewayd):
#   1. LISTING_SAGAS finished sagas (default 1,000,000; 10,000,000 for the
#      size the issue names) loaded in one INSERT ... generate_series over
#      the last week, one in twenty CANCELLED, 1,000 customers; ANALYZE;
#   2. quiet: each ListSagas filter LISTING_CALLS times through gatewayd
#      (HTTP keep-alive, one at a time): its p50, p99, max; then StartSaga
#      (POST /v1/sagas, no wait) LISTING_STARTS times: its p50, p99;
#   3. busy: the same while 8 clients list without a pause (the slowest
#      filters of the issue: customer=nobody, state=CANCELLED&limit=1000,
#      created_after, created_before, older_than), each on its own
#      connection: each filter's p99 and StartSaga's, and how many of the 8
#      clients' listings were answered and how many refused (429,
#      RESOURCE_EXHAUSTED: --max-listings).
# It prints numbers; it does not pass or fail on them. Runs on any build: a
# build from before issue 32 (no sagas.cancelled) is loaded the same way,
# for a before/after (SAGA_BIN_DIR=/path/to/old/build/bin).
#
# Environment: SAGA_BIN_DIR (default build/bin), LISTING_SAGAS (1000000),
# LISTING_CALLS (30), LISTING_STARTS (300), LISTING_BUSY (8), ORCH_FLAGS,
# PG_FAST (0), KEEP_STACK=1 keeps the cluster and logs.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export SAGA_BIN_DIR=${SAGA_BIN_DIR:-$ROOT/build/bin}
SAGAS=${LISTING_SAGAS:-1000000}
CALLS=${LISTING_CALLS:-30}
STARTS=${LISTING_STARTS:-300}
BUSY=${LISTING_BUSY:-8}
command -v python3 >/dev/null || { echo "listing: python3 is missing" >&2; exit 2; }
source "$ROOT/tests/lib/stack.sh"
PG_FAST=${PG_FAST:-0}
STACK_GATEWAY=1
stack_start >/dev/null

ctl stock set A1 100000000 >/dev/null
ctl deposit ali 100000000.00 >/dev/null
has_cancelled=$(psql_db sagas_orchestrator "SELECT count(*) FROM pg_attribute
  WHERE attrelid = 'sagas'::regclass AND attname = 'cancelled' AND NOT attisdropped")
t0=$(date +%s)
psql_db sagas_orchestrator "INSERT INTO sagas (saga_id, state, reason, customer, sku, qty, amount,
    version, finished, $([ "$has_cancelled" = 1 ] && echo 'cancelled,') created_at, updated_at)
  SELECT md5('lb' || g)::uuid, CASE WHEN g % 20 = 0 THEN 'CANCELLED' ELSE 'COMPLETED' END,
         CASE WHEN g % 20 = 0 THEN 'out_of_stock' ELSE '' END, 'c' || (g % 1000), 'K' || (g % 50),
         1, 1000, 4, true, $([ "$has_cancelled" = 1 ] && echo 'g % 20 = 0,')
         now() - interval '1 hour' - (g * (604800.0 / $SAGAS)) * interval '1 s',
         now() - interval '1 hour' - (g * (604800.0 / $SAGAS)) * interval '1 s' + interval '2 s'
  FROM generate_series(1, $SAGAS) AS g" >/dev/null
psql_db sagas_orchestrator "VACUUM ANALYZE sagas" >/dev/null
echo "[bench-listing] loaded $SAGAS sagas in $(($(date +%s) - t0)) s ($( [ "$has_cancelled" = 1 ] && echo "schema with sagas.cancelled" || echo "schema of before issue 32"))"
now_ms=$(psql_db sagas_orchestrator "SELECT (extract(epoch from now()) * 1000)::bigint")

python3 - "${GATEWAY_URL#http://}" "$now_ms" "$CALLS" "$STARTS" "$BUSY" <<'PY'
import http.client, json, sys, threading, time
target, now_ms, calls, starts, busy = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
day = 86400000
filters = [
    ("none", "limit=100"),
    ("customer=c7", "customer=c7&limit=100"),
    ("customer=nobody", "customer=nobody&limit=100"),
    ("state=CANCELLED&limit=1000", "state=CANCELLED&limit=1000"),
    ("state=COMPLETED&limit=1000", "state=COMPLETED&limit=1000"),
    ("state=RESERVING", "state=RESERVING"),
    ("attention", "attention_only=true"),
    ("overdue", "overdue=true"),
    ("created_after (2 days)", "created_after_unix_ms=%d&limit=1000" % (now_ms - 2 * day)),
    ("created_before (5 days)", "created_before_unix_ms=%d&limit=1000" % (now_ms - 5 * day)),
    ("older_than (3 days)", "older_than_ms=%d&limit=1000" % (3 * day)),
    ("counts by state", "limit=1&with_counts=true"),
]
heavy = [f[1] for f in filters if f[0].startswith(("customer=nobody", "state=CANCELLED", "created_", "older_than"))]

def conn():
    return http.client.HTTPConnection(target, timeout=120)

def call(c, method, path, body=None):
    t = time.monotonic()
    hdr = {"Content-Type": "application/json"} if body else {}
    c.request(method, path, body=body, headers=hdr)
    r = c.getresponse()
    r.read()
    return r.status, (time.monotonic() - t) * 1000

def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))] if xs else float("nan")

def measure(label):
    c = conn()
    print("[bench-listing] %s: ListSagas through gatewayd, %d calls each (ms)" % (label, calls))
    print("  %-28s %9s %9s %9s %s" % ("filter", "p50", "p99", "max", "statuses"))
    for name, q in filters:
        lat, st = [], {}
        for _ in range(calls):
            try:
                s, ms = call(c, "GET", "/v1/sagas?" + q)
            except Exception:
                c, s, ms = conn(), "error", float("nan")
            st[s] = st.get(s, 0) + 1
            if s == 200:
                lat.append(ms)
        print("  %-28s %9.1f %9.1f %9.1f %s" % (name, pct(lat, 50), pct(lat, 99), max(lat) if lat else float("nan"),
                                                  " ".join("%s:%d" % kv for kv in sorted(st.items(), key=str))))
    lat, st = [], {}
    for i in range(starts):
        body = json.dumps({"order": {"customer": "ali", "sku": "A1", "qty": 1, "amount": "1"}})
        try:
            s, ms = call(c, "POST", "/v1/sagas", body)
        except Exception:
            c, s, ms = conn(), "error", float("nan")
        st[s] = st.get(s, 0) + 1
        if s in (200, 201):
            lat.append(ms)
        time.sleep(0.02)
    print("  %-28s %9.1f %9.1f %9.1f %s" % ("StartSaga (POST, no wait)", pct(lat, 50), pct(lat, 99),
                                              max(lat) if lat else float("nan"),
                                              " ".join("%s:%d" % kv for kv in sorted(st.items(), key=str))))

measure("quiet")
stop = threading.Event()
done = {"answered": 0, "refused": 0, "other": 0}
lock = threading.Lock()
def lister(k):
    c, i = conn(), k
    while not stop.is_set():
        try:
            s, _ = call(c, "GET", "/v1/sagas?" + heavy[i % len(heavy)])
        except Exception:
            c, s = conn(), "error"
        i += 1
        with lock:
            done["answered" if s == 200 else "refused" if s == 429 else "other"] += 1
ts = [threading.Thread(target=lister, args=(k,), daemon=True) for k in range(busy)]
for t in ts:
    t.start()
time.sleep(1)
measure("busy (%d clients listing without a pause)" % busy)
stop.set()
for t in ts:
    t.join(timeout=150)
print("[bench-listing] the %d busy clients' listings: answered %d, refused 429 %d, other %d"
      % (busy, done["answered"], done["refused"], done["other"]))
PY
stack_stop
