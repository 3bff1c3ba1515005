#!/usr/bin/env bash
# Starts N ranks on this host, each a `strata rank --attach-socket` (disk
# tier) and its `strata runtime` (rank zero's serves a light synthetic load),
# and leaves them running until Ctrl-C, which stops every runtime, then
# every rank with a clean drain. With --prometheus it also starts Prometheus
# on loopback (port --prometheus-port, default 9090) scraping every rank with
# Strata's alert rules (launch/examples/prometheus), and prints its URL.
#
#   ./launch/local-cluster.sh [--ranks N] [--dir DIR] [--master-port P] [--metrics-port M]
#                             [--prometheus] [--prometheus-port P]
set -euo pipefail
cd "$(dirname "$0")/.."
RANKS=2
DIR=/var/tmp/strata-cluster
MASTER_PORT=29470
METRICS_PORT=9470
PROMETHEUS=0
PROMETHEUS_PORT=9090
while (($#)); do
  case "$1" in
    --ranks) RANKS=$2; shift 2 ;;
    --dir) DIR=$2; shift 2 ;;
    --master-port) MASTER_PORT=$2; shift 2 ;;
    --metrics-port) METRICS_PORT=$2; shift 2 ;;
    --prometheus) PROMETHEUS=1; shift ;;
    --prometheus-port) PROMETHEUS_PORT=$2; shift 2 ;;
    -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
    *) echo "local-cluster: unknown option $1" >&2; exit 2 ;;
  esac
done
./launch/bootstrap.sh
STRATA=${STRATA_BUILD_DIR:-build}/strata
mkdir -p "$DIR"
# One secret for this cluster; every rank proves it at the rendezvous.
./launch/make-job-secret.sh "$DIR/job.secret"
unset STRATA_JOB_SECRET  # the file above is the ranks' only source
pids=()      # the ranks (and prometheus)
runtimes=()  # their runtimes
stop() {
  echo "local-cluster: stopping ${#runtimes[@]} runtimes, then ${#pids[@]} ranks"
  kill -TERM "${runtimes[@]}" 2>/dev/null || true
  wait "${runtimes[@]}" 2>/dev/null || true
  kill -TERM "${pids[@]}" 2>/dev/null || true
  wait "${pids[@]}" "${runtimes[@]}" 2>/dev/null || true
}
trap stop INT TERM
for ((r = RANKS - 1; r >= 0; r--)); do
  shared=(--rank "$r" --world-size "$RANKS" --local-rank "$r" --master-port "$MASTER_PORT"
    --metrics-port "$METRICS_PORT" --job-secret-file "$DIR/job.secret" --attach-socket "$DIR/rank$r.sock")
  "$STRATA" rank "${shared[@]}" --prefix-cache-disk "$DIR/rank$r" >"$DIR/rank$r.log" 2>&1 &
  pids+=($!)
  echo "rank $r: pid $!, metrics http://127.0.0.1:$((METRICS_PORT + r))/metrics, log $DIR/rank$r.log"
  "$STRATA" runtime "${shared[@]}" --workload serve >"$DIR/runtime$r.log" 2>&1 &
  runtimes+=($!)
  echo "runtime of rank $r: pid $!, log $DIR/runtime$r.log"
done
if ((PROMETHEUS)); then
  command -v prometheus >/dev/null ||
    { echo "local-cluster: prometheus is not installed (launch/bootstrap.sh installs it)" >&2; stop; exit 1; }
  targets=()
  for ((r = 0; r < RANKS; r++)); do targets+=("127.0.0.1:$((METRICS_PORT + r))"); done
  ./launch/examples/prometheus/render-config.sh --interval 5s \
    --rules "$PWD/launch/examples/prometheus/strata-alerts.yml" "${targets[@]}" >"$DIR/prometheus.yml"
  prometheus --config.file="$DIR/prometheus.yml" --storage.tsdb.path="$DIR/prometheus" \
    --web.listen-address="127.0.0.1:$PROMETHEUS_PORT" >"$DIR/prometheus.log" 2>&1 &
  pids+=($!)
  echo "prometheus: pid $!, http://127.0.0.1:$PROMETHEUS_PORT (alerts: /alerts), log $DIR/prometheus.log"
fi
echo "local-cluster: $RANKS ranks running; Ctrl-C stops them"
wait "${pids[@]}" "${runtimes[@]}"
