#!/usr/bin/env bash
# Runs clang-tidy (.clang-tidy) over every tracked .cc file in the module
# folders, in parallel, against the build's compile_commands.json, with clang's
# thread-safety analysis (-Wthread-safety) on: a GUARDED_BY member touched
# without its mutex (store/base/mutex.h) fails the check like any lint error.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${1:-build}
mapfile -t files < <(git ls-files 'store/**.cc' 'cuda/**.cc' 'wire/**.cc' 'rank_agent/**.cc' \
  'coordinator/**.cc' 'launch/**.cc')
((${#files[@]})) || exit 0
log=$(mktemp)
trap 'rm -f "$log"' EXIT
status=0
printf '%s\n' "${files[@]}" |
  xargs -P "$(nproc)" -n 4 clang-tidy -p "$BUILD_DIR" --quiet --extra-arg=-Wthread-safety >"$log" 2>&1 || status=$?
grep -vE '^[0-9]+ warnings? generated|^Suppressed [0-9]+ warnings|^Use -header-filter|^$' "$log" || true
[[ $status -eq 0 ]] || { echo "lint: clang-tidy reported problems" >&2; exit 1; }
echo "lint: ${#files[@]} files clean"
