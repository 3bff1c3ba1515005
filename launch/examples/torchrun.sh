#!/usr/bin/env bash
# torchrun-style launch: the launcher exports RANK, WORLD_SIZE, LOCAL_RANK,
# MASTER_ADDR and MASTER_PORT; `strata rank` and its attached `strata
# runtime` (rank-and-runtime.sh) read them. Run this on every
# host with the same --nnodes, --master_addr and --master_port, and the same
# job secret: make one per job (./launch/make-job-secret.sh FILE), copy FILE
# to every host (mode 0600) and set STRATA_JOB_SECRET_FILE to it, or export
# STRATA_JOB_SECRET (docs/operations.md, "Job secret").
set -euo pipefail
SECRET=()
if [[ -n ${STRATA_JOB_SECRET_FILE:-} ]]; then
  SECRET=(--job-secret-file "$STRATA_JOB_SECRET_FILE")
elif [[ -z ${STRATA_JOB_SECRET:-} ]]; then
  echo "torchrun.sh: set STRATA_JOB_SECRET_FILE or STRATA_JOB_SECRET, the same on every host" >&2
  exit 2
fi
torchrun --nnodes "${NNODES:-2}" --nproc-per-node 1 --node-rank "${NODE_RANK:-0}" \
  --master-addr "${MASTER_ADDR:-10.0.0.1}" --master-port 29470 \
  --no-python ./launch/examples/rank-and-runtime.sh ./build/strata \
  --config ./launch/examples/strata.toml "${SECRET[@]}"
