#!/usr/bin/env bash
# The main job: install what is missing, build, then qualify a local
# multi-rank cluster with the synthetic runtime:
#   1. GPU-cache hit with no host hit        (N rank processes, disk tier)
#   2. host restore after GPU eviction       (same processes)
#   3. restart every rank, restore from disk (new processes, same directories)
#   4. one process holding every rank        (memory and disk tiers)
# After each phase every rank must hold the same record files and every
# restored byte must be right. Exits non-zero on any failure.
#
#   ./launch/demo.sh [--ranks N] [--dir DIR] [--preset NAME] [--keep]
set -euo pipefail
cd "$(dirname "$0")/.."

RANKS=2
DIR=""
PRESET=tiny
KEEP=0
while (($#)); do
  case "$1" in
    --ranks) RANKS=$2; shift 2 ;;
    --dir) DIR=$2; shift 2 ;;
    --preset) PRESET=$2; shift 2 ;;
    --keep) KEEP=1; shift ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) echo "demo: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
((RANKS >= 1)) || { echo "demo: --ranks must be at least 1" >&2; exit 2; }

./launch/bootstrap.sh
STRATA=${STRATA_BUILD_DIR:-build}/strata
DIR=${DIR:-/var/tmp/strata-demo-$$}
mkdir -p "$DIR"
[[ $KEEP == 1 ]] || trap 'rm -rf "$DIR"' EXIT
# Ports for this run: rendezvous, and metrics from there (rank r serves on +r,
# its runtime service on +1000+r).
BASE=$((20000 + RANDOM % 20000))
MASTER_PORT=$BASE
METRICS_PORT=$((BASE + 10))

run_cluster() {  # $1 = workload; starts ranks 1..N-1 in the background, rank 0 in front
  local workload=$1 pids=() rc=0
  for ((r = 1; r < RANKS; r++)); do
    "$STRATA" rank --rank "$r" --world-size "$RANKS" --master-port "$MASTER_PORT" \
      --local-rank "$r" --metrics-port "$METRICS_PORT" --prefix-cache-disk "$DIR/rank$r" \
      --prefix-cache-disk-limit 2GiB --preset "$PRESET" >"$DIR/rank$r.$workload.log" 2>&1 &
    pids+=($!)
  done
  "$STRATA" rank --rank 0 --world-size "$RANKS" --master-port "$MASTER_PORT" \
    --metrics-port "$METRICS_PORT" --prefix-cache-disk "$DIR/rank0" \
    --prefix-cache-disk-limit 2GiB --preset "$PRESET" --workload "$workload" \
    --summary-json "$DIR/summary.$workload.json" || rc=$?
  for p in "${pids[@]}"; do
    wait "$p" || { echo "demo: a peer exited with $? (log: $DIR/)" >&2; rc=1; }
  done
  if ((rc != 0)); then
    for ((r = 1; r < RANKS; r++)); do tail -n 5 "$DIR/rank$r.$workload.log" >&2; done
  fi
  return $rc
}

echo "== phases 1-2: $RANKS rank processes, disk tier, preset $PRESET"
run_cluster qualify
echo "== phase 3: every rank restarted on the same record directories"
run_cluster restore
echo "== phase 4: one process holding all $RANKS ranks, memory and disk tiers"
"$STRATA" rank --world-size "$RANKS" --single-process --metrics-port "$METRICS_PORT" \
  --prefix-cache-memory 64MiB --prefix-cache-disk "$DIR/single" --prefix-cache-disk-limit 2GiB \
  --preset "$PRESET" --workload qualify --summary-json "$DIR/summary.single.json"
echo
echo "demo: all phases passed (summaries: $DIR/summary.*.json$([[ $KEEP == 1 ]] || echo ', removed on exit'))"
