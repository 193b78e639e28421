# shellcheck shell=bash
# A real Prometheus (Debian's `prometheus`) for the metrics tests, on a
# claimed loopback port, its data and log in $STACK_DIR/prometheus; stopped
# by stack_stop's EXIT trap through prom_stop. Needs tests/lib/stack.sh
# (started) and curl and jq.
#
#   prom_start [RULE_FILE...]  scrapes every daemon of the stack (their
#                              ${STACK_METRICS_URL_OF[NAME]}) once a second,
#                              one job per kind (sagas-orchestrator,
#                              sagas-stock, ...), evaluating the rules each second
#   prom_query EXPR            the value of an instant query (one series;
#                              "none" when it has none, "many" when several)
#   prom_alerts                the firing alerts, one "name{labels}" a line

PROM_PID=""
PROM_URL=""

prom_start() {
  command -v prometheus >/dev/null || { echo "prom: prometheus is missing (apt-get install prometheus)" >&2; return 1; }
  local dir="$STACK_DIR/prometheus" port name job rules="" r
  mkdir -p "$dir"
  for r in "$@"; do rules+="  - $r"$'\n'; done
  {
    printf 'global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\n'
    [ -n "$rules" ] && printf 'rule_files:\n%s' "$rules"
    printf 'scrape_configs:\n'
    for job in orchestrator stock payment shipping; do
      printf '  - job_name: sagas-%s\n    static_configs:\n      - targets:\n' "$job"
      for name in "${!STACK_METRICS_URL_OF[@]}"; do
        case $job:$name in
        orchestrator:orch* | stock:stockd* | payment:paymentd* | shipping:shippingd*)
          printf '          - "%s"\n' "${STACK_METRICS_URL_OF[$name]#http://}" ;;
        esac
      done
    done
  } >"$dir/prometheus.yml"
  port=$(free_port)
  PROM_URL="http://127.0.0.1:$port"
  prometheus --config.file="$dir/prometheus.yml" --storage.tsdb.path="$dir/data" \
    --web.listen-address="127.0.0.1:$port" --log.level=warn >"$dir/prometheus.log" 2>&1 &
  PROM_PID=$!
  STACK_PIDS+=("$PROM_PID")
  STACK_PID_OF[prometheus]=$PROM_PID
  if ! wait_until 60 _prom_ready; then
    echo "prom: prometheus did not start; its log:" >&2
    tail -20 "$dir/prometheus.log" >&2
    return 1
  fi
}

_prom_ready() { curl -sf "$PROM_URL/-/ready"; }

prom_query() {
  local out
  out=$(curl -sf --max-time 5 "$PROM_URL/api/v1/query" --data-urlencode "query=$1") || { echo "error"; return 0; }
  jq -r 'if .data.result | length == 0 then "none"
         elif .data.result | length > 1 then "many"
         else .data.result[0].value[1] end' <<<"$out"
}

prom_alerts() {
  curl -sf --max-time 5 "$PROM_URL/api/v1/alerts" |
    jq -r '.data.alerts[] | select(.state == "firing") |
      "\(.labels.alertname){\([.labels | to_entries[] | select(.key != "alertname" and .key != "severity") | "\(.key)=\(.value)"] | join(","))}"' | sort
}
