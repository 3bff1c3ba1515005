#!/usr/bin/env bash
# The main job: install what is missing, build, then qualify a local cluster
# of N ranks, one `strata rank` process per rank, each with the synthetic
# runtime attached as a `strata runtime` process of its own:
#   1. GPU-cache hit with no host hit        (disk tier, rank zero coordinates)
#   2. host restore after GPU eviction       (same processes)
#   3. restart every rank, restore from disk (new processes, same directories)
#   4. one process holding every rank, memory + disk (composite store):
#      phases 1-2 with records spilled under memory pressure, then drain to
#      disk, read-through into memory, memory hits
#   5. two instances sharing through a pool manager (`strata pool`): instance
#      A, one process with a small memory tier, runs phases 1-2 and its tier
#      evicts records to the manager; then instance B, a new process that
#      never saw them, replays A's conversations and restores each from the
#      pool (docs/pool.md); a table says what each put and claimed
# After each phase the record files are compared across ranks and every
# restored byte is checked. Exits non-zero on any failure; the failing
# rank's log tail is printed.
#
#   ./launch/demo.sh [--ranks N] [--single-process] [--dir DIR] [--preset NAME]
#                    [--memory SIZE] [--pool-memory SIZE] [--gpus 0,1,...] [--tls] [--keep]
#   --single-process runs phases 1-3 with every rank in one process.
#   --tls runs the rendezvous and record links of phases 1-3 over mutual TLS,
#   with a throwaway CA and per-rank certificates (launch/make-certs.sh).
#   --memory is phase 4's memory tier (default 16MiB: below the tiny preset's
#   working set, so records spill to disk under pressure; scale it with the preset).
#   --pool-memory is each phase-5 instance's memory tier (default 2MiB: small
#   enough with the tiny preset that every conversation reaches the pool).
#   --gpus puts the planes in GPU memory: rank r on the r-th listed device
#   (round robin when fewer), CudaTransfers under every store; each `strata
#   runtime` shares its planes as CUDA VMM allocations.
set -euo pipefail
cd "$(dirname "$0")/.."

RANKS=2
DIR=""
PRESET=tiny
KEEP=0
SINGLE=0
MEMORY=16MiB
POOL_MEMORY=2MiB
GPUS=none
TLS=0
while (($#)); do
  case "$1" in
    --ranks) RANKS=$2; shift 2 ;;
    --dir) DIR=$2; shift 2 ;;
    --preset) PRESET=$2; shift 2 ;;
    --keep) KEEP=1; shift ;;
    --single-process) SINGLE=1; shift ;;
    --memory) MEMORY=$2; shift 2 ;;
    --pool-memory) POOL_MEMORY=$2; shift 2 ;;
    --gpus) GPUS=$2; shift 2 ;;
    --tls) TLS=1; shift ;;
    -h|--help) sed -n '2,31p' "$0"; exit 0 ;;
    *) echo "demo: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
((RANKS >= 1)) || { echo "demo: --ranks must be at least 1" >&2; exit 2; }
IFS=, read -r -a GPU_LIST <<<"$GPUS"
gpu_of() {  # rank -> its device ordinal, or none
  [[ $GPUS == none ]] && { echo none; return; }
  echo "${GPU_LIST[$(($1 % ${#GPU_LIST[@]}))]}"
}

# STRATA_BIN: a prebuilt strata (e.g. gpu-run/strata on a GPU machine), no bootstrap.
[[ -n ${STRATA_BIN:-} ]] || ./launch/bootstrap.sh
STRATA=${STRATA_BIN:-${STRATA_BUILD_DIR:-build}/strata}
DIR=${DIR:-/var/tmp/strata-demo-$$}
mkdir -p "$DIR"
[[ $KEEP == 1 ]] || trap 'rm -rf "$DIR"' EXIT
# Ports for this run: rendezvous, and metrics from there (rank r serves on +r;
# rank zero's runtime's lockstep on +2000).
BASE=$((10000 + RANDOM % 20000))  # below the ephemeral range (32768+)
MASTER_PORT=$BASE
METRICS_PORT=$((BASE + 10))
if [[ $TLS == 1 ]]; then
  ./launch/make-certs.sh "$DIR/tls" "$RANKS"
fi
# One secret per run: every rank in a separate process proves it at the rendezvous.
./launch/make-job-secret.sh "$DIR/job.secret"
unset STRATA_JOB_SECRET  # the file above is the ranks' only source
SECRET=(--job-secret-file "$DIR/job.secret")
tls_of() {  # rank -> its --tls-* flags, or nothing
  [[ $TLS == 1 ]] || return 0
  echo "--tls-cert $DIR/tls/rank$1.crt --tls-key $DIR/tls/rank$1.key --tls-ca $DIR/tls/ca.crt"
}

run_single() {  # $1 = workload: every rank in one process, disk tier
  "$STRATA" rank --world-size "$RANKS" --single-process --metrics-port "$METRICS_PORT" --gpus "$GPUS" \
    --prefix-cache-disk "$DIR/ranks" --prefix-cache-disk-limit 2GiB --preset "$PRESET" \
    --workload "$1" --summary-json "$DIR/summary.$1.json"
}

rank_flags() {  # rank -> the flags a rank and its runtime process share
  # shellcheck disable=SC2046  # tls_of gives separate words (paths without spaces)
  echo --rank "$1" --world-size "$RANKS" --master-port "$MASTER_PORT" --gpus "$(gpu_of "$1")" \
    $(tls_of "$1") "${SECRET[@]}" --local-rank "$1" --metrics-port "$METRICS_PORT" --preset "$PRESET"
}

record_listing() {  # rank -> "name size" of each of its record files (one namespace directory)
  (cd "$DIR/rank$1"/*/ && find . -name '*.ckpt' -printf '%f %s\n' | sort)
}

same_records_on_every_rank() {  # every rank's record files must match rank 0's
  local zero
  zero=$(record_listing 0)
  [[ -n $zero ]] || { echo "demo: rank 0 holds no record files" >&2; return 1; }
  for ((r = 1; r < RANKS; r++)); do
    [[ $(record_listing "$r") == "$zero" ]] ||
      { echo "demo: rank $r's record files differ from rank 0's" >&2; return 1; }
  done
  echo "demo: every rank holds the same $(wc -l <<<"$zero") record files"
}

# $1 = workload. Host planes: one `strata rank` per rank serving its attach
# socket plus one `strata runtime` per rank attached there; rank zero's
# runtime runs the workload in front, then every rank is stopped (SIGTERM)
# and the record directories compared.
run_cluster() {
  local workload=$1 ranks=() runtimes=() rc=0
  for ((r = 0; r < RANKS; r++)); do
    # shellcheck disable=SC2046
    "$STRATA" rank $(rank_flags "$r") --attach-socket "$DIR/rank$r.sock" --prefix-cache-disk "$DIR/rank$r" \
      --prefix-cache-disk-limit 2GiB >"$DIR/rank$r.$workload.log" 2>&1 &
    ranks+=($!)
  done
  for ((r = 1; r < RANKS; r++)); do
    # shellcheck disable=SC2046
    "$STRATA" runtime $(rank_flags "$r") --attach-socket "$DIR/rank$r.sock" >"$DIR/runtime$r.$workload.log" 2>&1 &
    runtimes+=($!)
  done
  # shellcheck disable=SC2046
  "$STRATA" runtime $(rank_flags 0) --attach-socket "$DIR/rank0.sock" --workload "$workload" \
    --summary-json "$DIR/summary.$workload.json" || rc=$?
  for p in "${runtimes[@]}"; do
    wait "$p" || { echo "demo: a peer's runtime exited with $? (log: $DIR/)" >&2; rc=1; }
  done
  kill -TERM "${ranks[@]}" 2>/dev/null || true
  for p in "${ranks[@]}"; do
    wait "$p" || { echo "demo: a rank exited with $? (log: $DIR/)" >&2; rc=1; }
  done
  if ((rc != 0)); then
    for ((r = 0; r < RANKS; r++)); do tail -n 5 "$DIR/rank$r.$workload.log" >&2; done
    for ((r = 1; r < RANKS; r++)); do tail -n 5 "$DIR/runtime$r.$workload.log" >&2; done
    return $rc
  fi
  grep -h "bytes over [0-9]* ranks" "$DIR/rank0.$workload.log" || true
  for ((r = 1; r < RANKS; r++)); do  # each peer's share, next to rank zero's per-rank figure
    grep -h "record jobs on this rank" "$DIR/rank$r.$workload.log" || true
  done
  same_records_on_every_rank
}

# Phase 5 (docs/pool.md). POOL_PORT: the manager's /metrics.
POOL_PORT=$((BASE + 500))
pool_sample() {  # metric sample name -> its value at the manager (0 when absent)
  { curl -sf "http://127.0.0.1:$POOL_PORT/metrics" || true; } | awk -v n="$1" '$1 == n { v = $2 } END { print v + 0 }'
}
host_hits() {  # summary JSON -> host hits over its phases
  grep -o '"host_hits": [0-9]*' "$1" | awk '{ s += $2 } END { print s + 0 }'
}
mib() { awk -v b="$1" 'BEGIN { printf "%.2f", b / 1048576 }'; }

# $1 = instance name, $2 = workload: one `strata rank` process of one rank
# with a memory tier joined to the pool (it waits up to 10 s for the
# manager). Returns 0: passed; 3: only missed conversations failed (a
# lookup that misses the pool's 2 ms lookup grace recomputes, docs/pool.md,
# which a loaded machine can cause); 1: anything else.
run_pool_instance() {
  local rc=0
  "$STRATA" rank --world-size 1 --single-process --metrics-port 0 --gpus "$(gpu_of 0)" \
    --prefix-cache-memory "$POOL_MEMORY" --prefix-cache-pool "$DIR/pool/pool.sock" \
    --prefix-cache-pool-instance "$1" --preset "$PRESET" --workload "$2" \
    --summary-json "$DIR/summary.pool.$1.json" >"$DIR/pool/$1.log" 2>&1 || rc=$?
  ((rc == 0)) && return 0
  grep -h "FAIL" "$DIR/pool/$1.log" >&2 || tail -n 5 "$DIR/pool/$1.log" >&2
  if grep -q "FAIL — conversation [0-9]* missed" "$DIR/pool/$1.log"; then return 3; fi
  return 1
}

# One manager, then instance a (qualify: it stores, its tier evicts to the
# pool, it restores) and instance b (restore: a's conversations, from the
# pool), one after the other; prints the table. Returns run_pool_instance's codes.
run_pool_once() {
  local manager rc=0 puts_a claims_a bytes_a puts claims bytes
  rm -rf "$DIR/pool" && mkdir -p "$DIR/pool"
  "$STRATA" pool --name demo --socket "$DIR/pool/pool.sock" --slot-kib 256 --slots 1024 \
    --no-huge-pages --metrics-port "$POOL_PORT" >"$DIR/pool/manager.log" 2>&1 &
  manager=$!
  run_pool_instance a qualify || rc=$?
  if ((rc == 0)); then
    puts_a=$(pool_sample 'strata_pool_puts_total{stage="committed"}')
    claims_a=$(pool_sample strata_pool_claims_total)
    bytes_a=$(pool_sample strata_pool_claimed_bytes_total)
    run_pool_instance b restore || rc=$?
  fi
  if ((rc == 0)); then
    puts=$(pool_sample 'strata_pool_puts_total{stage="committed"}')
    claims=$(pool_sample strata_pool_claims_total)
    bytes=$(pool_sample strata_pool_claimed_bytes_total)
    printf '%-9s %-9s %-7s %9s %13s %7s %12s\n' instance workload result "host hits" \
      "puts to pool" claims "claimed MiB"
    printf '%-9s %-9s %-7s %9s %13s %7s %12s\n' a qualify PASS \
      "$(host_hits "$DIR/summary.pool.a.json")" "$puts_a" "$claims_a" "$(mib "$bytes_a")"
    printf '%-9s %-9s %-7s %9s %13s %7s %12s\n' b restore PASS \
      "$(host_hits "$DIR/summary.pool.b.json")" "$((puts - puts_a))" "$((claims - claims_a))" \
      "$(mib "$((bytes - bytes_a))")"
    echo "pool: $(pool_sample strata_pool_records) records held; b restored from the pool what only a computed"
    ((claims > claims_a)) || { echo "demo: instance b claimed nothing from the pool" >&2; rc=1; }
  fi
  kill -TERM "$manager" 2>/dev/null || true
  wait "$manager" || { echo "demo: the pool manager exited with $? (log: $DIR/pool/)" >&2; rc=1; }
  return $rc
}

# Phase 5, at most 3 attempts: another only after missed conversations.
run_pool_phase() {
  local attempt rc
  for attempt in 1 2 3; do
    rc=0
    run_pool_once || rc=$?
    ((rc == 3)) || return $rc
    echo "demo: phase 5, attempt $attempt: a conversation missed (a lookup past the pool's" \
      "lookup grace on a loaded machine, or a record that never reached the pool: is" \
      "--pool-memory small enough?)" >&2
  done
  echo "demo: phase 5 failed 3 times (logs: $DIR/pool/)" >&2
  return 1
}

launch_ranks=run_cluster
layout="one process per rank + one strata runtime per rank"
[[ $TLS == 1 ]] && layout+=", mutual TLS"
if [[ $SINGLE == 1 || $RANKS == 1 ]]; then
  launch_ranks=run_single
  layout="one process"
fi
echo "== phases 1-2: $RANKS ranks ($layout), disk tier, preset $PRESET"
$launch_ranks qualify
echo "== phase 3: every rank restarted on the same record directories"
$launch_ranks restore
echo "== phase 4: one process holding all $RANKS ranks, memory + disk (composite)"
"$STRATA" rank --world-size "$RANKS" --single-process --metrics-port "$METRICS_PORT" --gpus "$GPUS" \
  --prefix-cache-memory "$MEMORY" --prefix-cache-disk "$DIR/composite" --prefix-cache-disk-limit 2GiB \
  --prefix-cache-drain-on-shutdown \
  --preset "$PRESET" --workload qualify --summary-json "$DIR/summary.composite.json"
echo "== phase 5: two instances sharing through a pool manager, memory tiers of $POOL_MEMORY"
run_pool_phase
echo
echo "demo: all phases passed (summaries: $DIR/summary.*.json$([[ $KEEP == 1 ]] || echo ', removed on exit'))"
