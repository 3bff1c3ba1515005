#!/usr/bin/env bash
# Crash soak: a local cluster of `strata rank --attach-socket` processes,
# each with its `strata runtime` (one pair per rank, rank zero coordinates,
# rank zero's runtime runs the workload), is SIGKILLed at random moments and
# restarted, for a bounded time. First a clean `qualify` run and a `restore` run commit the
# qualification's records (the baseline every later check restores). Then
# each cycle:
#   1. start every rank with a victim workload (`serve`, the light steady
#      load, or `qualify`, which writes harder), wait a random 0-4 s, then
#      SIGKILL one random rank and its runtime or, one time in three, every
#      process; survivors (ranks and runtimes) get SIGTERM, and one still running after a bound is SIGKILLed too
#      (counted in the summary: `qualify` runs its phases to the end);
#   2. restart every rank with `--workload restore`: the startup scan and the
#      agreement between ranks clean up what the kill left, and rank zero
#      restores the committed records from disk, checking every byte; every
#      runtime must exit 0 on its own, then every rank on SIGTERM;
#   3. check: record sets (names and sizes of *.ckpt) identical on every
#      rank, no temporary file survived the scans, and `strata fsck` verifies
#      every record file of every rank (headers, sizes, every checksum).
# Prints a summary (cycles, kills, restarts, records checked) and exits 1 on
# any violation (the directory is kept and the log tails printed).
#
#   crash_soak.sh STRATA [--duration SECONDS] [--ranks N] [--seed N] [--dir DIR] [--keep]
#
# Every wait is bounded. Ports are picked below the ephemeral range (32768+).
set -euo pipefail
STRATA=$1
shift
DURATION=180
RANKS=3
SEED=$$
KEEP=0
DIR=""
while (($#)); do
  case "$1" in
    --duration) DURATION=$2; shift 2 ;;
    --ranks) RANKS=$2; shift 2 ;;
    --seed) SEED=$2; shift 2 ;;
    --dir) DIR=$2; shift 2 ;;
    --keep) KEEP=1; shift ;;
    -h|--help) sed -n '2,24p' "$0"; exit 0 ;;
    *) echo "crash_soak: unknown option $1" >&2; exit 2 ;;
  esac
done
[[ -n $DIR ]] || DIR=$(mktemp -d "${STRATA_TEST_DIR:-/var/tmp}/strata-soak-XXXXXX")
mkdir -p "$DIR"
# One secret for the soak's job; every restart of every rank proves it.
unset STRATA_JOB_SECRET  # the file below is the ranks' only source
"$(dirname "$0")/../../launch/make-job-secret.sh" "$DIR/job.secret"
RANDOM=$SEED

STOP_BOUND=15       # seconds a survivor may take to exit after SIGTERM (peers wait 10 s for rank zero)
READY_BOUND=600     # tenths of a second to wait for rank zero's /healthz
RUN_BOUND=300       # seconds one qualify/restore cluster run may take

PIDS=()      # the ranks: 1..N-1 then 0
RUNTIMES=()  # their runtimes, index for index
BASE=0
CYCLES=0
KILLS=0
RESTARTS=0
RECORDS_CHECKED=0
FORCED=0
PORT_RETRIES=0
VIOLATIONS=0

cleanup() {
  for p in "${PIDS[@]}" "${RUNTIMES[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
  if ((KEEP == 0 && VIOLATIONS == 0 && FORCED == 0)); then rm -rf "$DIR"; fi
  if ((FORCED > 0)); then echo "logs of the forced stops kept in $DIR/forced-*" >&2; fi
}
trap cleanup EXIT

summary() {
  echo "crash soak: seed $SEED, $RANKS ranks, $CYCLES cycles, $KILLS ranks killed," \
    "$RESTARTS cluster restarts, $RECORDS_CHECKED records checked, $FORCED survivors SIGKILLed" \
    "after ignoring SIGTERM for ${STOP_BOUND}s, $PORT_RETRIES runs retried on taken ports," \
    "$VIOLATIONS violations"
}

violation() {
  echo "VIOLATION (cycle $CYCLES): $*" >&2
  VIOLATIONS=$((VIOLATIONS + 1))
  for f in "$DIR"/*.log; do [[ -e $f ]] && { echo "--- $f" >&2; tail -n 15 "$f" >&2; }; done
  summary
  echo "logs and record directories kept in $DIR" >&2
  exit 1
}

new_ports() {  # a fresh port base per cluster start: no reuse of a killed rank's ports
  BASE=$((10000 + RANDOM % 20000))
}

shared_flags() {  # rank -> the flags a rank and its runtime share
  echo --rank "$1" --world-size "$RANKS" --master-port "$BASE" --job-secret-file "$DIR/job.secret" \
    --local-rank "$1" --metrics-port $((BASE + 10)) --connect-timeout 60s --log-level info \
    --attach-socket "$DIR/rank$1.sock"
}

start_rank() {  # rank workload -> background rank (PIDS) and its runtime (RUNTIMES)
  local r=$1 workload=$2 lead=()
  # No `timeout` wrapper: SIGKILL must reach the process itself. Waits are bounded here.
  # No linger after a failed drain (expected once a rank was killed): a survivor exits at once.
  # shellcheck disable=SC2046  # shared_flags gives separate words (paths without spaces)
  "$STRATA" rank $(shared_flags "$r") --metrics-linger-after-failure 0 \
    --prefix-cache-disk "$DIR/rank$r" --prefix-cache-disk-limit 2GiB \
    >"$DIR/rank$r.$workload.log" 2>&1 &
  PIDS+=($!)
  [[ $r != 0 ]] || lead=(--workload "$workload" --summary-json "$DIR/summary.$workload.json")
  # shellcheck disable=SC2046
  "$STRATA" runtime $(shared_flags "$r") "${lead[@]}" >"$DIR/runtime$r.$workload.log" 2>&1 &
  RUNTIMES+=($!)
}

start_cluster() {  # workload: peers first, rank zero last
  new_ports
  PIDS=()
  RUNTIMES=()
  for ((r = 1; r < RANKS; r++)); do start_rank "$r" "$1"; done
  start_rank 0 "$1"
}

healthy() {  # port -> 0 when /healthz answers 200
  (
    exec 3<>"/dev/tcp/127.0.0.1/$1" || exit 1
    printf 'GET /healthz HTTP/1.0\r\nHost: localhost\r\n\r\n' >&3
    read -r -t 5 status <&3 || exit 1
    [[ $status == *" 200"* ]]
  ) 2>/dev/null
}

alive() { kill -0 "$1" 2>/dev/null; }

wait_exit() {  # pid seconds -> 0 when it exited within the bound
  local i
  for ((i = 0; i < $2 * 10; i++)); do
    alive "$1" || return 0
    sleep 0.1
  done
  return 1
}

listing() {  # "name size" of each record file of rank $1
  (cd "$DIR/rank$1" 2>/dev/null && find . -name '*.ckpt' -printf '%f %s\n' | sort)
}

# 1. A victim run killed at a random moment.
kill_cycle() {
  local workload=serve victim p i
  ((RANDOM % 2 == 0)) && workload=qualify
  start_cluster "$workload"
  for ((i = 0; i < READY_BOUND; i++)); do
    healthy $((BASE + 10)) && break
    alive "${PIDS[$((RANKS - 1))]}" || break
    sleep 0.1
  done
  sleep "$((RANDOM % 4)).$((RANDOM % 10))"
  if ((RANDOM % 3 == 0)); then
    victim=all
    for p in "${PIDS[@]}"; do alive "$p" && KILLS=$((KILLS + 1)); kill -KILL "$p" 2>/dev/null || true; done
    for p in "${RUNTIMES[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
  else
    victim=$((RANDOM % RANKS))
    # PIDS and RUNTIMES hold ranks 1..N-1 then rank 0.
    p=${PIDS[$(((victim + RANKS - 1) % RANKS))]}
    alive "$p" && KILLS=$((KILLS + 1))
    kill -KILL "$p" "${RUNTIMES[$(((victim + RANKS - 1) % RANKS))]}" 2>/dev/null || true
  fi
  for p in "${PIDS[@]}" "${RUNTIMES[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}" "${RUNTIMES[@]}"; do
    if ! wait_exit "$p" "$STOP_BOUND"; then
      # Counted and reported, not a violation (a signal ends a rank's turns
      # and joins at once, so none is expected).
      FORCED=$((FORCED + 1))
      echo "cycle $CYCLES: a survivor ignored SIGTERM for ${STOP_BOUND}s ($workload, killed rank $victim); SIGKILL"
      # Its logs stay, for the diagnosis, in $DIR/forced-<cycle>/ (the run's
      # directory is then kept).
      mkdir -p "$DIR/forced-$CYCLES" && cp "$DIR"/*."$workload".log "$DIR/forced-$CYCLES/" 2>/dev/null || true
      kill -KILL "$p" 2>/dev/null || true
    fi
    { wait "$p"; } 2>/dev/null || true  # no "Killed" job notice
  done
  PIDS=()
  RUNTIMES=()
  echo "cycle $CYCLES: $workload, killed rank $victim"
}

# 2. A clean run that must pass: every rank exits 0. Ports are random, so
# another process may hold one: a rank then cannot listen, rank zero's start
# fails, the others are stopped, and the run is retried on new ports
# (counted, at most twice).
clean_run() {  # workload
  local p rc attempt zero_rc i zero_rank zero_runtime
  for ((attempt = 1; ; attempt++)); do
    start_cluster "$1"
    RESTARTS=$((RESTARTS + 1))
    zero_rank=${PIDS[$((RANKS - 1))]} zero_runtime=${RUNTIMES[$((RANKS - 1))]}
    # Rank zero's runtime ends the run; rank zero ends first only when it failed.
    for ((i = 0; i < RUN_BOUND * 10; i++)); do
      if ! alive "$zero_runtime" || ! alive "$zero_rank"; then break; fi
      sleep 0.1
    done
    alive "$zero_runtime" && alive "$zero_rank" && violation "rank zero's runtime ran past ${RUN_BOUND}s in the $1 run"
    zero_rc=0
    if alive "$zero_rank"; then wait "$zero_runtime" || zero_rc=$?; else wait "$zero_rank" || zero_rc=$?; fi
    if [[ $zero_rc != 0 ]] && ((attempt < 3)) &&
      grep -qE "Address already in use|cannot listen on" "$DIR"/*."$1".log; then
      for p in "${PIDS[@]}" "${RUNTIMES[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
      for p in "${PIDS[@]}" "${RUNTIMES[@]}"; do
        wait_exit "$p" "$STOP_BOUND" || violation "a process ignored SIGTERM while joining"
        { wait "$p"; } 2>/dev/null || true
      done
      PIDS=()
      RUNTIMES=()
      PORT_RETRIES=$((PORT_RETRIES + 1))
      echo "cycle $CYCLES: a port of the $1 run was taken by another process; retrying on new ports"
      continue
    fi
    [[ $zero_rc == 0 ]] || violation "rank zero's runtime (or rank zero) exited $zero_rc in the $1 run"
    for p in "${RUNTIMES[@]}"; do  # the peers' runtimes end with rank zero's
      wait_exit "$p" "$STOP_BOUND" || violation "a runtime ran ${STOP_BOUND}s past rank zero's in the $1 run"
      rc=0
      wait "$p" || rc=$?
      [[ $rc == 0 ]] || violation "a runtime exited $rc in the $1 run"
    done
    for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
    for p in "${PIDS[@]}"; do
      wait_exit "$p" "$STOP_BOUND" || violation "a rank ran ${STOP_BOUND}s past SIGTERM in the $1 run"
      rc=0
      wait "$p" || rc=$?
      [[ $rc == 0 ]] || violation "a rank exited $rc in the $1 run"
    done
    break
  done
  PIDS=()
  RUNTIMES=()
  grep -q '"ok": false' "$DIR/summary.$1.json" && violation "a $1 phase failed: $(cat "$DIR/summary.$1.json")"
  grep -q '"ok": true' "$DIR/summary.$1.json" || violation "the $1 run reported no passing phase"
}

# 3. What the restarts left on disk.
check_disk() {
  local zero r out tmp records
  zero=$(listing 0)
  [[ -n $zero ]] || violation "rank 0 holds no record files"
  for ((r = 1; r < RANKS; r++)); do
    [[ $(listing "$r") == "$zero" ]] || violation "rank $r's record files differ from rank 0's"
  done
  tmp=$(find "$DIR" -name '*.tmp' | head -n 3)
  [[ -z $tmp ]] || violation "temporary files survived the scans: $tmp"
  for ((r = 0; r < RANKS; r++)); do
    out=$("$STRATA" fsck "$DIR/rank$r" --quiet 2>&1) || violation "fsck of rank $r: $out"
    records=$(sed -n 's/.* \([0-9][0-9]*\) records ok.*/\1/p' <<<"$out")
    RECORDS_CHECKED=$((RECORDS_CHECKED + ${records:-0}))
  done
}

START=$(date +%s)
clean_run qualify
clean_run restore
check_disk
while (($(date +%s) - START < DURATION)) || ((CYCLES == 0)); do
  CYCLES=$((CYCLES + 1))
  kill_cycle
  clean_run restore
  check_disk
done
summary
