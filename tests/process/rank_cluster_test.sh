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
DIR=$(mktemp -d "${STRATA_TEST_DIR:-/var/tmp}/strata-process-test-XXXXXX")
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
  [[ -n ${KEEP_TEST_DIR:-} ]] || rm -rf "$DIR"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*" >&2
  for f in "$DIR"/*.log; do [[ -e $f ]] && { echo "--- $f" >&2; tail -n 20 "$f" >&2; }; done
  exit 1
}
# Ports: the rendezvous, then metrics on +10+rank and runtime services on
# +1010+rank; a random base keeps concurrent runs apart.
BASE=$((10000 + RANDOM % 20000))  # below the ephemeral range (32768+)

TLS_DIR=""  # set: every rank gets --tls-* flags for its certificate there
# The job's secret, which every rank proves at the rendezvous (from this
# file only: one from the caller's environment would be a second source).
unset STRATA_JOB_SECRET
"$(dirname "$0")/../../launch/make-job-secret.sh" "$DIR/job.secret"
SECRET_FILE=$DIR/job.secret

EXTRA=()  # more flags for every rank

start_rank() {  # rank world workload -> background process, pid in PIDS
  local r=$1 world=$2 workload=$3 tls=()
  [[ -z $TLS_DIR ]] ||
    tls=(--tls-cert "$TLS_DIR/rank$r.crt" --tls-key "$TLS_DIR/rank$r.key" --tls-ca "$TLS_DIR/ca.crt")
  timeout 300 "$STRATA" rank --rank "$r" --world-size "$world" --master-port "$BASE" "${tls[@]}" \
    --job-secret-file "$SECRET_FILE" \
    --local-rank "$r" --metrics-port $((BASE + 10)) --prefix-cache-disk "$DIR/rank$r" \
    --prefix-cache-disk-limit 256MiB --connect-timeout 60s --log-level "${STRATA_TEST_LOG_LEVEL:-info}" --workload "$workload" \
    --summary-json "$DIR/summary.$workload.json" "${EXTRA[@]}" >"$DIR/rank$r.$workload.log" 2>&1 &
  PIDS+=($!)
}

wait_all() {  # expected exit code; waits for every pid in PIDS
  local want=$1 rc
  for p in "${PIDS[@]}"; do
    rc=0
    wait "$p" || rc=$?
    [[ $rc == "$want" ]] || fail "a rank exited with $rc, expected $want"
  done
  PIDS=()
}

listing() {  # "name size" of each record file of rank $1
  (cd "$DIR/rank$1"/*/ && find . -name '*.ckpt' -printf '%f %s\n' | sort)
}

same_files_on_every_rank() {  # world
  local zero
  zero=$(listing 0)
  [[ -n $zero ]] || fail "rank 0 holds no record files"
  for ((r = 1; r < $1; r++)); do
    [[ $(listing "$r") == "$zero" ]] || fail "rank $r's record files differ from rank 0's"
  done
}

same_bytes_on_every_rank() {  # world workload: each peer moved rank zero's per-rank share
  local share moved
  share=$(sed -n 's/.*bytes over [0-9]* ranks: \([0-9]*\) bytes per rank.*/\1/p' "$DIR/rank0.$2.log")
  [[ -n $share && $share -gt 0 ]] || fail "rank 0 reported no record bytes for $2"
  for ((r = 1; r < $1; r++)); do
    moved=$(sed -n 's/.*failed, \([0-9]*\) bytes moved.*/\1/p' "$DIR/rank$r.$2.log")
    [[ $moved == "$share" ]] || fail "rank $r moved ${moved:-no} bytes in $2, rank 0's share is $share"
  done
}

phases_passed() {  # summary json, expected phase count
  local passed
  passed=$(grep -c '"ok": true' "$1" || true)
  grep -q '"ok": false' "$1" && fail "a phase failed: $(cat "$1")"
  [[ $passed == "$2" ]] || fail "expected $2 passing phases in $1, found $passed"
}

healthy() {  # port -> 0 when /healthz answers 200 (a subshell: a refused connect ends only it)
  (
    exec 3<>"/dev/tcp/127.0.0.1/$1" || exit 1
    printf 'GET /healthz HTTP/1.0\r\nHost: localhost\r\n\r\n' >&3
    read -r -t 5 status <&3 || exit 1
    [[ $status == *" 200"* ]]
  ) 2>/dev/null
}

health() {  # port -> "STATUS BODY" of /healthz, or nothing when it does not answer
  (
    exec 3<>"/dev/tcp/127.0.0.1/$1" || exit 1
    printf 'GET /healthz HTTP/1.0\r\nHost: localhost\r\n\r\n' >&3
    timeout 5 cat <&3 | tr -d '\r' | awk 'NR == 1 { status = $2 } body { print status, $0; exit } /^$/ { body = 1 }'
  ) 2>/dev/null
}

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
