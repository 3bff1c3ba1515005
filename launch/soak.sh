#!/usr/bin/env bash
# Runs the crash soak (tests/soak/crash_soak.sh) against this tree's build:
# a local multi-rank cluster SIGKILLed at random moments and restarted, with
# record sets, byte-exact restores and leftover temporary files checked after
# every restart. Exits non-zero on any violation.
#
#   ./launch/soak.sh [--duration SECONDS] [--ranks N] [--seed N] [--dir DIR] [--keep]
#       [--build DIR]
#   --duration defaults to 300 (five minutes); hours: --duration 14400.
#   --build is the build directory holding the strata binary (default build).
set -euo pipefail
cd "$(dirname "$0")/.."
source launch/built-tool.sh
built_tool_args "$@"
built_tool_has --duration || ARGS+=(--duration 300)
STRATA="$BUILD/strata"
built_tool_require soak "$STRATA"
exec bash tests/soak/crash_soak.sh "$STRATA" "${ARGS[@]}"
