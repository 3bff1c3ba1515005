#!/usr/bin/env bash
# Runs the seeded simulation (tests/sim/simulation.h) of rank zero's
# coordinator with its peer ranks over a simulated network and disks, for
# many seeds; every failure prints its seed and the command that replays it.
# Exits non-zero when any seed breaks an invariant.
#
#   ./launch/simulate.sh [--seeds N] [--first-seed S] [--time-limit SECONDS]
#       [--seed N --trace] [--planted-bug] [--build DIR]
#   --seeds defaults to 20000 (a few minutes on one core).
#   --seed N replays one seed with its event trace.
#   --planted-bug runs peers with a deliberately wrong serving rule (must fail).
#   --build is the build directory (default build).
set -euo pipefail
cd "$(dirname "$0")/.."
source launch/built-tool.sh
built_tool_args "$@"
built_tool_has --seeds --seed || ARGS+=(--seeds 20000)
SIM="$BUILD/tests/sim/strata_sim"
built_tool_require simulate "$SIM"
exec "$SIM" "${ARGS[@]}"
