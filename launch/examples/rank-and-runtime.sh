#!/usr/bin/env bash
# One rank of a job on this host: `strata rank` serving its attach socket
# and a `strata runtime` attached to it (rank zero's serves the synthetic
# load; a real deployment attaches its inference engine instead, see
# docs/embedding.md). Both get the same flags, so attach.socket must be set
# (the example strata.toml sets it). SIGTERM/SIGINT stop the runtime, then
# the rank (a clean drain); so does the runtime ending by itself. Exits with
# the rank's status, or the runtime's when only the runtime failed.
#
#   rank-and-runtime.sh STRATA [flags for both...]
set -euo pipefail
STRATA=$1
shift
"$STRATA" rank "$@" &
rank=$!
"$STRATA" runtime "$@" --workload serve &
runtime=$!
trap 'kill -TERM "$runtime" 2>/dev/null || true' INT TERM
while kill -0 "$runtime" 2>/dev/null; do wait "$runtime" || true; done  # a signal interrupts wait
runtime_rc=0
wait "$runtime" || runtime_rc=$?  # its saved status
kill -TERM "$rank" 2>/dev/null || true
rank_rc=0
wait "$rank" || rank_rc=$?
exit $((rank_rc != 0 ? rank_rc : runtime_rc))
