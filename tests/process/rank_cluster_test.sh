#!/usr/bin/env bash
# Process-level tests of `strata rank`: real processes, one per rank, on
# loopback. Run by ctest (tests/CMakeLists.txt):
#
#   rank_cluster_test.sh STRATA qualify   3 ranks: phases 1-2, then every
#       rank restarted for phase 3; every phase passes on rank zero, every
#       rank exits 0, holds the same record files (names and sizes) and moved
#       the same bytes (ranks share one geometry).
#   rank_cluster_test.sh STRATA sigterm   2 ranks serving; once rank zero is
#       healthy, SIGTERM to every rank (what a launcher does): each drains and
#       exits 0.
#   rank_cluster_test.sh STRATA peer-killed  3 ranks qualifying; rank 2 is
#       SIGKILLed as rank zero starts its phases: ranks 0 and 1 end by
#       themselves within 20 s (no wait runs out its minute-long bound).
#   rank_cluster_test.sh STRATA peer-alone  a peer whose rank zero never
#       comes: SIGTERM stops it within 5 s (its rendezvous join is cancelled)
#       and it exits 0.
#   rank_cluster_test.sh STRATA peer-stopped  2 ranks serving with a 3 s
#       silence timeout; the peer is SIGSTOPped (silent, its connections
#       still open): within 20 s rank zero's /healthz answers 503 naming the
#       silent peer, and its log says the link was closed as silent.
#   rank_cluster_test.sh STRATA tls       3 ranks over mutual TLS (certificates
#       from launch/make-certs.sh): phases 1-2 pass, every rank reports its
#       links as mutual TLS 1.3 and holds the same record files and bytes.
#   rank_cluster_test.sh STRATA stranger  a peer without any job secret
#       refuses to start, naming --job-secret-file and STRATA_JOB_SECRET; a
#       process of another job (another secret) claiming rank 1 is refused by
#       rank zero and exits; the real rank 1 then joins and phases 1-2 pass.
#
# Every wait is bounded; on failure the ranks' logs are printed.
set -euo pipefail
STRATA=$1
MODE=$2
# shellcheck source=tests/process/rank_cluster_lib.sh
source "$(dirname "$0")/rank_cluster_lib.sh"

case $MODE in
  qualify)
    for workload in qualify restore; do
      for r in 1 2; do start_rank "$r" 3 "$workload"; done
      start_rank 0 3 "$workload"
      wait_all 0
      same_files_on_every_rank 3
      same_bytes_on_every_rank 3 "$workload"
    done
    phases_passed "$DIR/summary.qualify.json" 2
    phases_passed "$DIR/summary.restore.json" 1
    echo "PASS: 3 ranks in 3 processes, phases 1-3, identical record files and bytes per rank"
    ;;
  sigterm)
    start_rank 1 2 serve
    start_rank 0 2 serve
    for ((i = 0; i < 600; i++)); do
      healthy $((BASE + 10)) && break
      sleep 0.1
    done
    healthy $((BASE + 10)) || fail "rank zero never became healthy"
    kill -TERM "${PIDS[@]}"
    wait_all 0
    grep -q "stopped cleanly" "$DIR/rank0.serve.log" || fail "rank zero did not drain cleanly"
    echo "PASS: SIGTERM drained every rank and each exited 0"
    ;;
  peer-killed)
    for r in 1 2; do start_rank "$r" 3 qualify; done
    start_rank 0 3 qualify
    for ((i = 0; i < 3000; i++)); do
      grep -q "coordinator for" "$DIR/rank0.qualify.log" 2>/dev/null && break
      sleep 0.01
    done
    grep -q "coordinator for" "$DIR/rank0.qualify.log" || fail "rank zero never started its phases"
    # PIDS: rank 1, rank 2, rank 0; each a timeout(1) whose child is the rank.
    local_r0=${PIDS[2]} local_r1=${PIDS[0]}
    pkill -KILL -P "${PIDS[1]}" || fail "rank 2 was not running"
    for ((i = 0; i < 200; i++)); do
      kill -0 "$local_r0" 2>/dev/null || kill -0 "$local_r1" 2>/dev/null || break
      sleep 0.1
    done
    for p in "$local_r0" "$local_r1"; do
      kill -0 "$p" 2>/dev/null && fail "a rank still runs 20 s after its peer was killed (pid $p)"
    done
    rc=0
    wait "$local_r0" || rc=$?
    # 0: the phases finished before the kill landed; 2: a phase failed.
    [[ $rc == 0 || $rc == 2 ]] || fail "rank zero exited with $rc"
    PIDS=()
    echo "PASS: with rank 2 killed, ranks 0 and 1 ended by themselves within 20 s (rank zero exit $rc)"
    ;;
  peer-alone)
    start_rank 1 2 serve
    for ((i = 0; i < 600; i++)); do
      grep -q "joining rank zero" "$DIR/rank1.serve.log" 2>/dev/null && break
      sleep 0.1
    done
    grep -q "joining rank zero" "$DIR/rank1.serve.log" || fail "rank 1 never started its join"
    kill -TERM "${PIDS[0]}"
    for ((i = 0; i < 50; i++)); do
      kill -0 "${PIDS[0]}" 2>/dev/null || break
      sleep 0.1
    done
    kill -0 "${PIDS[0]}" 2>/dev/null && fail "rank 1 still waits for rank zero 5 s after SIGTERM"
    wait_all 0
    echo "PASS: a peer without rank zero stopped at once on SIGTERM and exited 0"
    ;;
  peer-stopped)
    EXTRA=(--heartbeat-interval 500ms --silence-timeout 3s)
    start_rank 1 2 serve
    start_rank 0 2 serve
    for ((i = 0; i < 600; i++)); do
      healthy $((BASE + 10)) && break
      sleep 0.1
    done
    healthy $((BASE + 10)) || fail "rank zero never became healthy"
    # PIDS: rank 1, rank 0; each a timeout(1) whose child is the rank.
    pkill -STOP -P "${PIDS[0]}" || fail "rank 1 was not running"
    answer=""
    for ((i = 0; i < 200; i++)); do
      answer=$(health $((BASE + 10)) || true)
      [[ $answer == 503* ]] && break
      sleep 0.1
    done
    [[ $answer == 503* ]] || fail "rank zero's /healthz still answers '${answer:-nothing}' 20 s after rank 1 stopped"
    [[ $answer == *"rank 1"*"peer silent"* ]] || fail "/healthz does not name the silent peer: $answer"
    grep -q "peer silent" "$DIR/rank0.serve.log" || fail "rank zero's log does not say the link went silent"
    pkill -KILL -P "${PIDS[0]}" || true
    kill -TERM "${PIDS[1]}"
    rc=0
    wait "${PIDS[1]}" || rc=$?
    [[ $rc == 1 ]] || fail "rank zero exited with $rc after losing its peer, expected 1"
    PIDS=()
    echo "PASS: a SIGSTOPped peer was noticed within 20 s: /healthz answered $answer"
    ;;
  tls)
    TLS_DIR=$DIR/tls
    "$(dirname "$0")/../../launch/make-certs.sh" "$TLS_DIR" 3 >/dev/null
    for r in 1 2; do start_rank "$r" 3 qualify; done
    start_rank 0 3 qualify
    wait_all 0
    for r in 0 1 2; do
      grep -q "links mutual TLS 1.3" "$DIR/rank$r.qualify.log" || fail "rank $r's links are not TLS"
    done
    same_files_on_every_rank 3
    same_bytes_on_every_rank 3 qualify
    phases_passed "$DIR/summary.qualify.json" 2
    echo "PASS: 3 ranks over mutual TLS, phases 1-2, identical record files and bytes per rank"
    ;;
  stranger)
    rc=0
    timeout 60 "$STRATA" rank --rank 1 --world-size 2 --master-port "$BASE" --local-rank 1 \
      --metrics-port $((BASE + 10)) --prefix-cache-disk "$DIR/rank1" >"$DIR/nosecret.log" 2>&1 || rc=$?
    [[ $rc != 0 ]] || fail "a peer without a job secret started"
    grep -q "STRATA_JOB_SECRET" "$DIR/nosecret.log" || fail "the refusal does not name STRATA_JOB_SECRET"
    "$(dirname "$0")/../../launch/make-job-secret.sh" "$DIR/other.secret"
    start_rank 0 2 qualify
    SECRET_FILE=$DIR/other.secret start_rank 1 2 serve  # another job's process, as rank 1
    stranger=${PIDS[1]}
    PIDS=("${PIDS[0]}")
    for ((i = 0; i < 600; i++)); do
      kill -0 "$stranger" 2>/dev/null || break
      sleep 0.1
    done
    kill -0 "$stranger" 2>/dev/null && fail "the stranger still runs 60 s after it was started"
    rc=0
    wait "$stranger" || rc=$?
    [[ $rc != 0 ]] || fail "the stranger exited 0"
    grep -q "not proven" "$DIR/rank1.serve.log" || fail "the stranger's log does not say why it was refused"
    start_rank 1 2 qualify
    wait_all 0
    grep -q "not proven" "$DIR/rank0.qualify.log" || fail "rank zero did not log the refused hello"
    phases_passed "$DIR/summary.qualify.json" 2
    echo "PASS: no secret refused at start; another job's rank 1 refused; the real ranks passed"
    ;;
  *) fail "unknown mode $MODE" ;;
esac
