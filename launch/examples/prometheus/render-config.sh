#!/usr/bin/env bash
# Prints a Prometheus configuration that scrapes Strata ranks (job "strata",
# target label `rank` = the target's position) and loads the alert rules.
# prometheus.yml is its output for the local cluster's defaults;
# launch/local-cluster.sh --prometheus and tests/process/prometheus_test.sh
# render their own.
#
#   render-config.sh [--interval 15s] [--rules FILE] HOST:PORT...   (rank 0 first)
set -euo pipefail
INTERVAL=15s
RULES=strata-alerts.yml
while (($#)); do
  case "$1" in
    --interval) INTERVAL=$2; shift 2 ;;
    --rules) RULES=$2; shift 2 ;;
    -h|--help) sed -n '2,8p' "$0"; exit 0 ;;
    *) break ;;
  esac
done
(($#)) || { echo "render-config: name at least one HOST:PORT" >&2; exit 2; }
cat <<HEAD
# Scrapes a local Strata cluster: rank r serves /metrics on metrics.port + r.
# Rendered by launch/examples/prometheus/render-config.sh; for a real
# cluster use file-based discovery instead (prometheus-file-sd.yml).
global:
  scrape_interval: $INTERVAL
  evaluation_interval: $INTERVAL
rule_files:
  - $RULES
scrape_configs:
  - job_name: strata
    static_configs:
HEAD
rank=0
for target in "$@"; do
  printf '      - targets: ["%s"]\n        labels: {rank: "%d"}\n' "$target" "$rank"
  rank=$((rank + 1))
done
cat <<'TAIL'
  # The pool manager has no metrics endpoint yet; once it serves one, scrape it too:
  # - job_name: strata-pool-manager
  #   static_configs: [{targets: ["127.0.0.1:PORT"]}]
TAIL
