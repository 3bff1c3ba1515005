#!/usr/bin/env bash
# Runs every test of a build's strata_unit_tests in a few gtest shards, in
# parallel, instead of one process per test: under ASan a process costs about
# half a second to start and exit, which was most of the sanitized stage's
# time (docs/reliability.md, Sanitizers). ctest still lists each test of the
# binary (label `unit`) for running one alone.
#
#   launch/run-unit-shards.sh BUILD_DIR [SHARDS]
#
# Each shard's output goes to BUILD_DIR/unit-shards/shard-K.log. Exits
# non-zero when a shard fails (a failed test, a sanitizer report, a crash or
# the time bound), after printing the failing tests' output, or the shard's
# tail when it died inside a test. Skipped tests are then checked against
# tests/skip-allowlist.txt (launch/check-skips.sh reads the shard logs).
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${1:?usage: launch/run-unit-shards.sh BUILD_DIR [SHARDS]}
shards=${2:-$(($(nproc) * 2))}
binary="$build_dir/tests/strata_unit_tests"
[[ -x "$binary" ]] || { echo "run-unit-shards: $binary is not built" >&2; exit 1; }
log_dir="$build_dir/unit-shards"
rm -rf "$log_dir"
mkdir -p "$log_dir"
# A bound per shard: a hung test fails the run instead of stalling it.
bound_s=${STRATA_UNIT_SHARD_TIMEOUT_S:-1200}

pids=()
for ((k = 0; k < shards; k++)); do
  GTEST_TOTAL_SHARDS=$shards GTEST_SHARD_INDEX=$k GTEST_COLOR=no \
    timeout --signal=ABRT --kill-after=30 "$bound_s" "$binary" >"$log_dir/shard-$k.log" 2>&1 &
  pids+=($!)
done

failed=0
for ((k = 0; k < shards; k++)); do
  rc=0
  wait "${pids[$k]}" || rc=$?
  log="$log_dir/shard-$k.log"
  ((rc == 0)) && continue
  failed=1
  echo "== shard $k of $shards failed (exit $rc); its log: $log"
  # Each failed test's own output, from its RUN line to its FAILED line.
  awk '/^\[ RUN      \] /{buf=""; keep=1} keep{buf=buf $0 "\n"}
       /^\[  FAILED  \] .* \([0-9]+ ms\)$/{printf "%s", buf; keep=0}
       /^\[       OK \] /{keep=0}' "$log"
  # A shard that died inside a test (a sanitizer report, a crash, the bound)
  # never printed its summary: show where it stopped.
  grep -q '^\[==========\] .* ran\.' "$log" || { echo "-- last lines of shard $k:"; tail -n 60 "$log"; }
  # LeakSanitizer reports at exit, after the summary.
  grep -q 'LeakSanitizer' "$log" && sed -n '/LeakSanitizer/,$p' "$log" | head -n 80
done

total=$(cat "$log_dir"/shard-*.log | sed -nE 's/^\[==========\] ([0-9]+) tests? from .* ran\..*/\1/p' |
  awk '{s += $1} END {print s + 0}')
echo "run-unit-shards: $total tests in $shards shards ($build_dir)"
((failed == 0)) || { echo "run-unit-shards: a shard failed" >&2; exit 1; }
./launch/check-skips.sh "$log_dir"/shard-*.log
