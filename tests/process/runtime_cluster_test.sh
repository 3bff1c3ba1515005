#!/usr/bin/env bash
# The qualification with attached runtime processes: 3 `strata rank`
# processes (one per rank, each serving --attach-socket) plus 3 `strata
# runtime` processes (one per rank) on loopback. Rank zero's runtime makes
# the store calls over its rank's attach channel and drives the peers'
# runtimes over the runtime's own lockstep channel; each peer's runtime
# shares its memfd planes with its rank and computes and checks its own
# rank's pages. Run by ctest (tests/CMakeLists.txt):
#
#   runtime_cluster_test.sh STRATA qualify  phases 1-2, then every process
#       restarted for phase 3: every phase passes on rank zero's runtime
#       (restored bytes checked on every rank), every process exits 0, and
#       every rank holds the same record files (names and sizes) and moved
#       the same bytes; each rank ran its own GPUDirect probe, and its
#       startup line says its record jobs run staged and why.
#   runtime_cluster_test.sh STRATA serve  rank zero's runtime serves turns;
#       once a record reached rank 2, SIGTERM to rank zero's runtime ends it
#       with 0, the peers' runtimes are told and exit 0, then SIGTERM drains
#       every rank and each exits 0.
#   runtime_cluster_test.sh STRATA direct  every rank with transport =
#       "direct" on host planes: each refuses its own startup (exit 1) with
#       its probe's reason, before any peer joined.
#
# Every wait is bounded; on failure the logs are printed.
set -euo pipefail
STRATA=$1
MODE=$2
# shellcheck source=tests/process/rank_cluster_lib.sh
source "$(dirname "$0")/rank_cluster_lib.sh"
WORLD=3

run_phase() {  # workload: every rank and its runtime; rank zero's runtime runs the workload
  for ((r = 1; r < WORLD; r++)); do start_rank "$r" "$WORLD" "$1"; done
  start_rank 0 "$WORLD" "$1"
  finish_run
}

case $MODE in
  qualify)
    run_phase qualify
    same_files_on_every_rank "$WORLD"
    same_bytes_on_every_rank "$WORLD" qualify
    run_phase restore
    same_files_on_every_rank "$WORLD"
    phases_passed "$DIR/summary.qualify.json" 2
    phases_passed "$DIR/summary.restore.json" 1
    for ((r = 0; r < WORLD; r++)); do
      grep -q "transport staged (direct refused: the page planes are not in GPU memory)" \
        "$DIR/rank$r.qualify.log" || fail "rank $r did not say which transport it runs and why"
    done
    for ((r = 1; r < WORLD; r++)); do
      grep -q "restored bytes checked here" "$DIR/runtime$r.qualify.log" ||
        fail "rank $r's runtime did not report its checks"
    done
    echo "PASS: 3 ranks + 3 attached runtime processes, phases 1-3, identical record files and bytes per rank"
    ;;
  serve)
    for ((r = 1; r < WORLD; r++)); do start_rank "$r" "$WORLD" serve; done
    start_rank 0 "$WORLD" serve
    # Serving: a record on a peer means turns were published through every rank.
    for ((i = 0; i < 600; i++)); do
      [[ -n $(find "$DIR/rank2" -name '*.ckpt' 2>/dev/null | head -n 1) ]] && break
      kill -0 "${RUNTIMES[2]}" 2>/dev/null || fail "rank zero's runtime ended by itself"
      sleep 0.1
    done
    [[ -n $(find "$DIR/rank2" -name '*.ckpt' | head -n 1) ]] || fail "no record reached rank 2 in 60 s"
    kill -TERM "${RUNTIMES[2]}"
    wait_runtimes
    grep -q "rank zero's runtime finished" "$DIR/runtime1.serve.log" ||
      fail "rank 1's runtime was not told rank zero's finished"
    kill -TERM "${PIDS[@]}"
    wait_all 0
    echo "PASS: SIGTERM ended rank zero's serving runtime, the peers' runtimes followed, every process exited 0"
    ;;
  direct)
    WITH_RUNTIME=0
    EXTRA=(--prefix-cache-transport direct)
    for ((r = 0; r < WORLD; r++)); do start_rank "$r" "$WORLD" direct; done
    wait_all 1
    for ((r = 0; r < WORLD; r++)); do
      grep -q 'startup failed: .*transport = "direct" refused: the page planes are not in GPU memory' \
        "$DIR/rank$r.direct.log" || fail "rank $r did not refuse the direct transport with its reason"
    done
    echo "PASS: transport = \"direct\" on host planes: every rank refused its own startup, naming why"
    ;;
  *) fail "unknown mode $MODE" ;;
esac
