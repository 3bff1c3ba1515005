#!/usr/bin/env bash
# The README's test command: install what is missing, build, run every test
# (a skipped test must be on tests/skip-allowlist.txt): the unit tests under
# ASan + UBSan (their own build, build-asan, in gtest shards; the plain build
# leaves them out so they compile once), every other test through ctest in the
# plain build; then a
# bounded fuzz run (launch/fuzz.sh --smoke), the format and lint checks. Exits
# non-zero on any failure.
#
#   STRATA_SKIP_SANITIZERS=1  runs the unit tests in the plain build instead,
#                             for a quicker local run only: .ci/run never
#                             skips the sanitizers
#   STRATA_SANITIZE=1         the plain build is itself sanitized: everything
#                             runs there
#   STRATA_SANITIZE_BUILD_DIR the sanitized unit tests' build directory
#                             (default: build-asan)
set -euo pipefail
cd "$(dirname "$0")/.."
# Each stage's header says when it started (seconds since this script did).
stage() { echo "== $1 (at ${SECONDS} s)"; }
sanitized_unit_stage=1
if [[ "${STRATA_SANITIZE:-0}" == 1 || "${STRATA_SKIP_SANITIZERS:-0}" == 1 ]]; then
  sanitized_unit_stage=0
fi
STRATA_UNIT_TESTS=$((1 - sanitized_unit_stage)) ./launch/bootstrap.sh

BUILD_DIR=${STRATA_BUILD_DIR:-build}
stage "ctest"
ctest_log="$BUILD_DIR/ctest.log"
ctest --test-dir "$BUILD_DIR" --output-on-failure -j"$(nproc)" --timeout 600 | tee "$ctest_log"

stage "skipped tests (tests/skip-allowlist.txt)"
./launch/check-skips.sh "$ctest_log"

# ~900 unit tests in a few gtest shards (launch/run-unit-shards.sh: one
# process per test cost half a second each under ASan), with every
# LeakSanitizer / ASan / UBSan report fatal; docs/reliability.md (Sanitizers)
# has the measured times.
SAN_DIR=${STRATA_SANITIZE_BUILD_DIR:-build-asan}
if [[ "${STRATA_SANITIZE:-0}" == 1 ]]; then
  echo "== unit tests under ASan + UBSan: ran above (STRATA_SANITIZE=1)"
elif [[ "${STRATA_SKIP_SANITIZERS:-0}" == 1 ]]; then
  echo "== unit tests under ASan + UBSan: SKIPPED (STRATA_SKIP_SANITIZERS=1); they ran above, plain"
else
  stage "unit tests under ASan + UBSan ($SAN_DIR)"
  [[ -f "$SAN_DIR/build.ninja" ]] || cmake -G Ninja -S . -B "$SAN_DIR" -DSTRATA_SANITIZE=ON >/dev/null
  nice cmake --build "$SAN_DIR" --target strata_unit_tests -- -j"$(nproc)" |
    { grep -vE '^\[[0-9]+/[0-9]+\] ' || true; }
  UBSAN_OPTIONS=print_stacktrace=1 ./launch/run-unit-shards.sh "$SAN_DIR"
fi

stage "fuzz smoke (libFuzzer)"
./launch/fuzz.sh --smoke

stage "format check (clang-format)"
./launch/check-format.sh

stage "lint (clang-tidy)"
./launch/check-tidy.sh "$BUILD_DIR"
echo "test.sh: all checks passed in ${SECONDS} s"
