#!/usr/bin/env bash
# Fails when a test was skipped that tests/skip-allowlist.txt does not name
# (with its reason). Reads the logs given as arguments: a ctest log (the
# "(Skipped)" lines of its "The following tests did not run:" section) or a
# gtest binary's output (its "[  SKIPPED ] Suite.Name (N ms)" lines, as
# launch/run-unit-shards.sh writes them).
set -euo pipefail
cd "$(dirname "$0")/.."
(($#)) || { echo "usage: launch/check-skips.sh LOG..." >&2; exit 1; }
allow=tests/skip-allowlist.txt
mapfile -t patterns < <(grep -vE '^\s*(#|$)' "$allow" | sed -E 's/[[:space:]]+#.*$//')
if grep -vE '^\s*(#|$)' "$allow" | grep -v '#' >&2; then
  echo "check-skips: the entries above in $allow give no reason" >&2
  exit 1
fi
mapfile -t skipped < <(sed -nE -e 's/^[[:space:]]*[0-9]+ - (.*) \(Skipped\)$/\1/p' \
  -e 's/^\[  SKIPPED \] ([^ ,]+)(, where .*)? \([0-9]+ ms\)$/\1/p' "$@" | sed -E 's/[[:space:]]+#.*$//')
bad=0
for name in "${skipped[@]}"; do
  ok=0
  for p in "${patterns[@]}"; do
    if [[ "$name" =~ ^($p)$ ]]; then ok=1; break; fi
  done
  if ((!ok)); then
    echo "check-skips: '$name' was skipped and is not on $allow" >&2
    bad=1
  fi
done
((bad == 0)) || exit 1
echo "check-skips: ${#skipped[@]} skipped tests, all on the allowlist"
