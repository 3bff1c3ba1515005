#!/usr/bin/env bash
# Fails when ctest skipped a test that tests/skip-allowlist.txt does not name
# (with its reason). Reads the ctest log given as $1: the "(Skipped)" lines of
# its "The following tests did not run:" section.
set -euo pipefail
cd "$(dirname "$0")/.."
log=$1
allow=tests/skip-allowlist.txt
mapfile -t patterns < <(grep -vE '^\s*(#|$)' "$allow" | sed -E 's/[[:space:]]+#.*$//')
if grep -vE '^\s*(#|$)' "$allow" | grep -v '#' >&2; then
  echo "check-skips: the entries above in $allow give no reason" >&2
  exit 1
fi
mapfile -t skipped < <(sed -nE 's/^[[:space:]]*[0-9]+ - (.*) \(Skipped\)$/\1/p' "$log" | sed -E 's/[[:space:]]+#.*$//')
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
