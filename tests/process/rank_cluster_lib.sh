# Shared by the process tests (rank_cluster_test.sh, runtime_cluster_test.sh, prometheus_test.sh,
# tests/soak/crash_soak.sh):
# a temporary directory removed on exit with every rank killed, bounded
# waits, and `strata rank` processes on loopback. Source it after setting
# STRATA (the binary); set -euo pipefail is the caller's.
#
# Every rank is a `strata rank --attach-socket` plus its `strata runtime`
# (start_rank). Ports: the rendezvous at BASE, metrics on BASE+10+rank, rank
# zero's `strata runtime` lockstep at BASE+2010; a random base keeps
# concurrent runs apart.
DIR=$(mktemp -d "${STRATA_TEST_DIR:-/var/tmp}/strata-process-test-XXXXXX")
PIDS=()
RUNTIMES=()  # the `strata runtime` of each rank start_rank started, index for index with PIDS
cleanup() {
  for p in "${PIDS[@]}" "${RUNTIMES[@]}"; do
    [[ -n $p ]] || continue
    pkill -KILL -P "$p" 2>/dev/null || true  # the process timeout(1) runs
    kill -KILL "$p" 2>/dev/null || true
  done
  [[ -n ${KEEP_TEST_DIR:-} ]] || rm -rf "$DIR"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*" >&2
  for f in "$DIR"/*.log; do [[ -e $f ]] && { echo "--- $f" >&2; tail -n 20 "$f" >&2; }; done
  exit 1
}
BASE=$((10000 + RANDOM % 20000))  # below the ephemeral range (32768+)

TLS_DIR=""  # set: every rank gets --tls-* flags for its certificate there
# The job's secret, which every rank proves at the rendezvous (from this
# file only: one from the caller's environment would be a second source).
unset STRATA_JOB_SECRET
"$(dirname "${BASH_SOURCE[0]}")/../../launch/make-job-secret.sh" "$DIR/job.secret"
SECRET_FILE=$DIR/job.secret

EXTRA=()  # more flags for every rank
WRAP=()   # while set: a command start_rank runs timeout(1) under; it must exec its arguments
WITH_RUNTIME=1  # 0: start_rank starts the rank alone (a process that never gets to attach)

runtime_flags() {  # rank world -> the flags a rank and its `strata runtime` share
  echo --rank "$1" --world-size "$2" --master-port "$BASE" --job-secret-file "$SECRET_FILE" \
    --local-rank "$1" --metrics-port $((BASE + 10)) --connect-timeout 60s \
    --attach-socket "$DIR/rank$1.sock" --log-level "${STRATA_TEST_LOG_LEVEL:-info}"
}

# One rank of the job: `strata rank --attach-socket` (pid in PIDS) and its
# `strata runtime` (pid in RUNTIMES; log runtime$r.$workload.log). Rank
# zero's runtime runs `workload` and writes summary.$workload.json; a peer's
# shares its planes and checks its pages as rank zero's runtime tells it.
# DISK_LIMIT (default 256MiB): the disk limit start_rank gives a rank.
# LINGER (default 0: exit at once): the rank's metrics.linger_after_failure.
start_rank() {  # rank world workload -> background processes
  local r=$1 world=$2 workload=$3 tls=() lead=()
  [[ -z $TLS_DIR ]] ||
    tls=(--tls-cert "$TLS_DIR/rank$r.crt" --tls-key "$TLS_DIR/rank$r.key" --tls-ca "$TLS_DIR/ca.crt")
  # shellcheck disable=SC2046  # runtime_flags gives separate words (paths without spaces)
  "${WRAP[@]}" timeout 300 "$STRATA" rank $(runtime_flags "$r" "$world") "${tls[@]}" \
    --prefix-cache-disk "$DIR/rank$r" --prefix-cache-disk-limit "${DISK_LIMIT:-256MiB}" \
    --metrics-linger-after-failure "${LINGER:-0}" "${EXTRA[@]}" >"$DIR/rank$r.$workload.log" 2>&1 &
  PIDS+=($!)
  if [[ $WITH_RUNTIME == 0 ]]; then
    RUNTIMES+=("")
    return
  fi
  [[ $r != 0 ]] || lead=(--workload "$workload" --summary-json "$DIR/summary.$workload.json")
  # shellcheck disable=SC2046
  timeout 300 "$STRATA" runtime $(runtime_flags "$r" "$world") "${lead[@]}" \
    >"$DIR/runtime$r.$workload.log" 2>&1 &
  RUNTIMES+=($!)
}

wait_log() {  # file pattern seconds: until the file holds the pattern
  local i
  for ((i = 0; i < $3 * 10; i++)); do
    grep -q "$2" "$1" 2>/dev/null && return 0
    sleep 0.1
  done
  fail "$1 does not say '$2' after $3 s"
}

serving() {  # world workload: every runtime of a `start_rank` run is attached and in lockstep
  local r
  wait_log "$DIR/runtime0.$2.log" "attached to" 60
  for ((r = 1; r < $1; r++)); do wait_log "$DIR/runtime$r.$2.log" "joined rank zero's runtime" 60; done
}

wait_runtimes() {  # waits for every runtime start_rank started; each must exit 0
  local rc
  for p in "${RUNTIMES[@]}"; do
    [[ -n $p ]] || continue
    rc=0
    wait "$p" || rc=$?
    [[ $rc == 0 ]] || fail "a runtime process exited with $rc"
  done
  RUNTIMES=()
}

# A qualify or restore run: rank zero's runtime ends the peers' runtimes
# when its phases finish; then SIGTERM drains every rank and each exits 0.
finish_run() {
  wait_runtimes
  kill -TERM "${PIDS[@]}"
  wait_all 0
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

