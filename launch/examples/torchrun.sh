#!/usr/bin/env bash
# torchrun-style launch: the launcher exports RANK, WORLD_SIZE, LOCAL_RANK,
# MASTER_ADDR and MASTER_PORT; `strata rank` reads them. Run this on every
# host with the same --nnodes, --master_addr and --master_port.
set -euo pipefail
torchrun --nnodes "${NNODES:-2}" --nproc-per-node 1 --node-rank "${NODE_RANK:-0}" \
  --master-addr "${MASTER_ADDR:-10.0.0.1}" --master-port 29470 \
  --no-python ./build/strata rank --config ./launch/examples/strata.toml
