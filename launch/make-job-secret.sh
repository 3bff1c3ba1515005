#!/usr/bin/env bash
# Makes a fresh job secret (docs/operations.md, "Job secret"): 32 random
# bytes as 64 hex characters in FILE, mode 0600, created without a moment in
# which others could read it. Pass FILE to every rank of one job with
# --job-secret-file (or its contents as STRATA_JOB_SECRET); one job, one secret.
#
#   ./launch/make-job-secret.sh FILE
set -euo pipefail
(($# == 1)) || { echo "usage: $0 FILE" >&2; exit 2; }
FILE=$1
mkdir -p "$(dirname "$FILE")"
(
  umask 077
  head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$FILE.tmp.$$"
)
mv -f "$FILE.tmp.$$" "$FILE"
