#!/usr/bin/env bash
# Runs the seeded simulation (tests/sim/simulation.h) of rank zero's
# coordinator with its peer ranks over a simulated network and disks, for
# many seeds; every failure prints its seed and the command that replays it.
# Exits non-zero when any seed breaks an invariant.
#
#   ./launch/simulate.sh [--seeds N] [--first-seed S] [--time-limit SECONDS]
#       [--seed N --trace] [--build DIR]
#   --seeds defaults to 20000 (a few minutes on one core).
#   --seed N replays one seed with its event trace.
#   --build is the build directory (default build).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=build
ARGS=()
while (($#)); do
  case "$1" in
    --build) BUILD=$2; shift 2 ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) ARGS+=("$1"); shift ;;
  esac
done
[[ " ${ARGS[*]} " == *" --seeds "* || " ${ARGS[*]} " == *" --seed "* ]] || ARGS+=(--seeds 20000)
SIM="$BUILD/tests/sim/strata_sim"
[[ -x $SIM ]] || { echo "simulate: no $SIM; build first (ninja -C $BUILD)" >&2; exit 2; }
exec "$SIM" "${ARGS[@]}"
