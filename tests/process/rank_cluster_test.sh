#!/usr/bin/env bash
# Process-level tests of `strata rank`: real processes on loopback, one
# `strata rank --attach-socket` and one `strata runtime` per rank
# (rank_cluster_lib.sh's start_rank; runtime_cluster_test.sh qualify covers
# phases 1-3). Run by ctest (tests/CMakeLists.txt):
#
#   rank_cluster_test.sh STRATA sigterm   2 ranks serving; once rank zero is
#       healthy and every runtime in lockstep, SIGTERM to every rank and
#       runtime (what a launcher does): each drains and exits 0.
#   rank_cluster_test.sh STRATA peer-killed  3 ranks qualifying; rank 2 and
#       its runtime are SIGKILLed once every runtime is in lockstep: within
#       20 s rank zero's runtime reports its failed phase (or had finished),
#       rank 1's runtime ends (no wait runs out its minute-long bound), and
#       rank zero's /healthz answers 503 naming rank 2. Within 20 s of the
#       kill rank zero has also unmapped its runtime's planes (its detach
#       waits for its own copies, not for the jobs the stopped store
#       abandoned: the old 30 s drain bound is never reached) and that
#       runtime has exited; no runtime restored a byte that differs.
#   rank_cluster_test.sh STRATA peer-alone  a peer whose rank zero never
#       comes: SIGTERM stops it and its runtime within 5 s (its rendezvous
#       join is cancelled, its runtime's attach retries end) and both exit 0.
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
  sigterm)
    start_rank 1 2 serve
    start_rank 0 2 serve
    for ((i = 0; i < 600; i++)); do
      healthy $((BASE + 10)) && break
      sleep 0.1
    done
    healthy $((BASE + 10)) || fail "rank zero never became healthy"
    serving 2 serve
    kill -TERM "${PIDS[@]}" "${RUNTIMES[@]}"
    wait_runtimes
    wait_all 0
    grep -q "stopped cleanly" "$DIR/rank0.serve.log" || fail "rank zero did not drain cleanly"
    echo "PASS: SIGTERM drained every rank and runtime and each exited 0"
    ;;
  peer-killed)
    for r in 1 2; do start_rank "$r" 3 qualify; done
    start_rank 0 3 qualify
    serving 3 qualify
    # PIDS and RUNTIMES: rank 1, rank 2, rank 0; each a timeout(1) whose child is the process.
    pkill -KILL -P "${PIDS[1]}" || fail "rank 2 was not running"
    pkill -KILL -P "${RUNTIMES[1]}" || true  # its runtime: the whole node is gone
    detach_by=$((SECONDS + 20))  # well under the 30 s drain bound and the runtime's 60 s Close
    # Runtime 1 ends (rank zero's runtime ends the lockstep); rank zero's
    # runtime reports its failed phase (or had finished every phase).
    zero_done() {
      ! kill -0 "${RUNTIMES[2]}" 2>/dev/null || grep -q ": FAIL" "$DIR/runtime0.qualify.log"
    }
    for ((i = 0; i < 200; i++)); do
      kill -0 "${RUNTIMES[0]}" 2>/dev/null || ! zero_done || break
      sleep 0.1
    done
    kill -0 "${RUNTIMES[0]}" 2>/dev/null && fail "rank 1's runtime still runs 20 s after rank 2 was killed"
    zero_done || fail "rank zero's runtime neither ended nor reported a failed phase 20 s after rank 2 was killed"
    answer=""
    for ((i = 0; i < 200; i++)); do  # rank zero publishes its health every second
      answer=$(health $((BASE + 10)) || true)
      [[ $answer == 503* ]] && break
      sleep 0.1
    done
    [[ $answer == 503*"rank 2"* ]] || fail "rank zero's /healthz does not name the lost rank 2: ${answer:-nothing}"
    # Rank zero's runtime detaches (or died with the test's kill): its rank
    # unmaps the planes once its own copies ended and the runtime exits.
    while ((SECONDS < detach_by)); do
      ! kill -0 "${RUNTIMES[2]}" 2>/dev/null && grep -q "detached; its planes are unmapped" \
        "$DIR/rank0.qualify.log" && break
      sleep 0.1
    done
    grep -q "detached; its planes are unmapped" "$DIR/rank0.qualify.log" ||
      fail "rank zero did not unmap its runtime's planes within 20 s of the kill"
    kill -0 "${RUNTIMES[2]}" 2>/dev/null && fail "rank zero's runtime still runs 20 s after the kill"
    grep -q "did not finish within the drain bound" "$DIR/rank0.qualify.log" &&
      fail "rank zero's detach ran out its drain bound"
    if grep -E "differs at byte|restored bytes differed" "$DIR"/runtime*.qualify.log; then
      fail "a runtime restored bytes that differ from what was stored"
    fi
    echo "PASS: with rank 2 killed, rank zero's runtime failed its phase and rank 1's ended within 20 s; rank zero answers $answer, and unmapped its runtime's planes and saw it exit within 20 s"
    ;;
  peer-alone)
    start_rank 1 2 serve
    wait_log "$DIR/rank1.serve.log" "joining rank zero" 60
    wait_log "$DIR/runtime1.serve.log" "attached to" 60  # it serves before it joins; then a
    kill -TERM "${PIDS[0]}" "${RUNTIMES[0]}"             # signal reaches the runtime's handler
    for ((i = 0; i < 50; i++)); do
      kill -0 "${PIDS[0]}" 2>/dev/null || kill -0 "${RUNTIMES[0]}" 2>/dev/null || break
      sleep 0.1
    done
    kill -0 "${PIDS[0]}" 2>/dev/null && fail "rank 1 still waits for rank zero 5 s after SIGTERM"
    kill -0 "${RUNTIMES[0]}" 2>/dev/null && fail "rank 1's runtime still waits 5 s after SIGTERM"
    wait_runtimes
    wait_all 0
    echo "PASS: a peer and its runtime without rank zero stopped at once on SIGTERM and exited 0"
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
    serving 2 serve
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
    pkill -KILL -P "${RUNTIMES[0]}" || true
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
    finish_run
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
      --metrics-port $((BASE + 10)) --prefix-cache-disk "$DIR/rank1" --attach-socket "$DIR/rank1.sock" \
      >"$DIR/nosecret.log" 2>&1 || rc=$?
    [[ $rc != 0 ]] || fail "a peer without a job secret started"
    grep -q "STRATA_JOB_SECRET" "$DIR/nosecret.log" || fail "the refusal does not name STRATA_JOB_SECRET"
    "$(dirname "$0")/../../launch/make-job-secret.sh" "$DIR/other.secret"
    start_rank 0 2 qualify
    WITH_RUNTIME=0 SECRET_FILE=$DIR/other.secret start_rank 1 2 serve  # another job's process, as rank 1
    stranger=${PIDS[1]}
    PIDS=("${PIDS[0]}")
    RUNTIMES=("${RUNTIMES[0]}")
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
    finish_run
    grep -q "not proven" "$DIR/rank0.qualify.log" || fail "rank zero did not log the refused hello"
    phases_passed "$DIR/summary.qualify.json" 2
    echo "PASS: no secret refused at start; another job's rank 1 refused; the real ranks passed"
    ;;
  *) fail "unknown mode $MODE" ;;
esac
