#!/usr/bin/env bash
# The README's test command: install what is missing, build, run every test
# through ctest (a skipped test must be on tests/skip-allowlist.txt), a bounded fuzz run (launch/fuzz.sh --smoke), then the format
# and lint checks. Exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."
./launch/bootstrap.sh

BUILD_DIR=${STRATA_BUILD_DIR:-build}
echo "== ctest"
ctest_log="$BUILD_DIR/ctest.log"
ctest --test-dir "$BUILD_DIR" --output-on-failure -j"$(nproc)" --timeout 600 | tee "$ctest_log"

echo "== skipped tests (tests/skip-allowlist.txt)"
./launch/check-skips.sh "$ctest_log"

echo "== fuzz smoke (libFuzzer)"
./launch/fuzz.sh --smoke

echo "== format check (clang-format)"
./launch/check-format.sh

echo "== lint (clang-tidy)"
./launch/check-tidy.sh "$BUILD_DIR"
echo "test.sh: all checks passed"
