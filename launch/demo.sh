#!/usr/bin/env bash
# The README's main command: install what is missing, build, and run the main
# job. Until the multi-rank cluster lands (issue 7), this demonstrates what
# exists: the synthetic geometries, their layout fingerprints, namespace
# identities, record directory names and prefix keys.
set -euo pipefail
cd "$(dirname "$0")/.."
./launch/bootstrap.sh
BUILD_DIR=${STRATA_BUILD_DIR:-build}
"$BUILD_DIR/strata" version
echo
echo "== geometry presets"
"$BUILD_DIR/strata" layout --list
for preset in tiny qwen-like deepseek-like; do
  echo
  echo "== $preset, 2 ranks"
  "$BUILD_DIR/strata" layout --preset "$preset" --ranks 2 --model "synthetic/$preset"
done
