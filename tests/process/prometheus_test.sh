#!/usr/bin/env bash
# Strata's dashboard and alerts against a real Prometheus (Debian's
# `prometheus`, which launch/bootstrap.sh installs; missing, the test fails).
# Run by ctest (tests/CMakeLists.txt) as strata_prometheus_dashboard:
#
#   prometheus_test.sh STRATA
#
# 1. `promtool check rules` on the shipped rules
#    (launch/examples/prometheus/strata-alerts.yml), `promtool check config`
#    on the shipped configurations; prometheus.yml is render-config.sh's output.
# 2. A 2-rank cluster (each rank a `strata rank --attach-socket` and its
#    `strata runtime`, rank_cluster_lib.sh) serving its synthetic load and a Prometheus on loopback
#    scraping both ranks every second with the shipped rules, their `for:`
#    durations rewritten to 0s (the expressions are the shipped ones). Rank
#    zero runs in an unprivileged user and mount namespace (`unshare -r -m`;
#    not permitted, the test fails saying so) with a small tmpfs at its
#    record directory and a disk limit far above it (so the startup check
#    lowers it), and lingers after a failed drain.
# 3. Every alert evaluates without error and every metric it reads returns
#    series; StrataDiskLimitLowered fires, and the fault alerts do not yet.
# 4. Each rank's /metrics text passes `promtool check metrics`.
# 5. Every record file is damaged: StrataFetchChecksumFailures fires.
# 6. A filler file written through /proc/PID/root fills rank zero's tmpfs, so
#    its next record writes fail with ENOSPC: StrataFilesystemFull fires.
#    The filler is removed and rank zero's limit in force comes back above 0.
# 7. Rank 1 is SIGKILLed: StrataPeerLinkLost, StrataRankDown and
#    StrataRankUnhealthy fire.
# 8. Every expression of launch/examples/grafana/strata.json returns series.
# 9. Rank zero is SIGTERMed with its peer gone: its drain fails, it answers
#    /healthz 503 naming the failed drain, StrataDrainFailed fires, and a
#    second SIGTERM ends its linger at once (exit 130).
#
# Every wait is bounded; on failure the ranks' and Prometheus's logs are printed.
set -euo pipefail
STRATA=$1
HERE=$(dirname "$0")
EXAMPLES=$HERE/../../launch/examples
# shellcheck source=tests/process/rank_cluster_lib.sh
source "$HERE/rank_cluster_lib.sh"

SHIPPED_ALERTS=11  # alerting rules in strata-alerts.yml
PROM_PORT=$((BASE + 20))
PROM=http://127.0.0.1:$PROM_PORT
RANK0_FS_SIZE=64m  # rank zero's tmpfs
for tool in prometheus promtool unshare; do
  command -v "$tool" >/dev/null || fail "$tool is not installed (launch/bootstrap.sh installs Debian's prometheus)"
done
unshare -r -m true 2>"$DIR/unshare.err" ||
  fail "unshare -r -m is not permitted here ($(cat "$DIR/unshare.err")): the filesystem-full check needs an unprivileged user and mount namespace (sysctl kernel.unprivileged_userns_clone=1, or a container that allows unshare)"

check() { python3 "$HERE/prom_check.py" "$PROM" "$@"; }

wait_for() {  # seconds description command...: polls every 0.2 s until the command succeeds
  local bound=$1 deadline=$((SECONDS + $1)) what=$2
  shift 2
  while ((SECONDS < deadline)); do
    "$@" >/dev/null 2>&1 && return 0
    sleep 0.2
  done
  "$@" >&2 || true  # what the last try printed
  fail "$what: not within $bound s"
}

promtool check rules "$EXAMPLES/prometheus/strata-alerts.yml" >/dev/null ||
  fail "promtool check rules refuses the shipped rules"
for config in prometheus.yml prometheus-file-sd.yml; do
  promtool check config "$EXAMPLES/prometheus/$config" >/dev/null || fail "promtool check config refuses $config"
done
"$EXAMPLES/prometheus/render-config.sh" 127.0.0.1:9470 127.0.0.1:9471 |
  diff - "$EXAMPLES/prometheus/prometheus.yml" >&2 || fail "prometheus.yml is not render-config.sh's output"
sed -E 's/^( +for: ).*/\10s/' "$EXAMPLES/prometheus/strata-alerts.yml" >"$DIR/alerts.yml"
"$EXAMPLES/prometheus/render-config.sh" --interval 1s --rules "$DIR/alerts.yml" \
  "127.0.0.1:$((BASE + 10))" "127.0.0.1:$((BASE + 11))" >"$DIR/prometheus.yml"
start_rank 1 2 serve
# Rank zero mounts its own tmpfs over its record directory (it exits with
# the namespace); the test reaches it through /proc/PID/root.
mkdir -p "$DIR/rank0"
# shellcheck disable=SC2016 # $1.. are the inner bash's arguments
WRAP=(unshare -r -m bash -c 'mount -t tmpfs -o "size=$1" tmpfs "$2" && shift 2 && exec "$@"'
  tmpfs-at "$RANK0_FS_SIZE" "$DIR/rank0")
LINGER=60s DISK_LIMIT=1024TiB start_rank 0 2 serve  # far above what the tmpfs holds
WRAP=()
# PIDS: rank 1, rank 0 (each a timeout(1) whose child is the rank), prometheus;
# RUNTIMES: rank 1's, rank 0's.
RANK0_FS=/proc/${PIDS[1]}/root$DIR/rank0  # rank zero's tmpfs as the test sees it
prometheus --config.file="$DIR/prometheus.yml" --storage.tsdb.path="$DIR/tsdb" \
  --web.listen-address="127.0.0.1:$PROM_PORT" --log.level=warn >"$DIR/prometheus.log" 2>&1 &
PIDS+=($!)

wait_for 60 "Prometheus scraping both ranks" check targets-up 2
wait_for 30 "every alert rule evaluated, reading metrics that exist" check rules "$SHIPPED_ALERTS"
wait_for 30 "StrataDiskLimitLowered firing" check firing StrataDiskLimitLowered rank=0
grep -q "^tmpfs $DIR/rank0 " "/proc/${PIDS[1]}/mounts" || fail "rank zero's record directory is not its tmpfs"
for quiet in StrataPeerLinkLost StrataRankDown StrataRankUnhealthy StrataFetchChecksumFailures \
  StrataFilesystemFull StrataDrainFailed; do
  check firing "$quiet" && fail "$quiet fires before its fault"
done

for r in 0 1; do
  curl -sf "http://127.0.0.1:$((BASE + 10 + r))/metrics" >"$DIR/metrics.$r.txt" ||
    fail "rank $r's /metrics did not answer"
  problems=$(promtool check metrics <"$DIR/metrics.$r.txt" 2>&1) ||
    fail "promtool check metrics failed on rank $r: $problems"
  [[ -z $problems ]] || fail "promtool check metrics on rank $r: $problems"
done

damage_records() {  # flips one byte in the middle of every record file; always succeeds
  python3 - "$DIR/rank1" "$RANK0_FS" <<'PY'
import pathlib, sys
for f in (f for d in sys.argv[1:] for f in pathlib.Path(d).glob("**/*.ckpt")):
    with open(f, "r+b") as h:
        h.seek(f.stat().st_size // 2)
        b = h.read(1)
        if b:
            h.seek(-1, 1)
            h.write(bytes([b[0] ^ 0xFF]))
PY
}
# New records keep arriving, so damage again until a restore reads one.
fetch_checksum_alert() { damage_records; check firing StrataFetchChecksumFailures rank=0; }
wait_for 60 "StrataFetchChecksumFailures firing after record files were damaged" fetch_checksum_alert

# Appends zeros until the tmpfs is full (dd then fails with ENOSPC); the rank
# evicts to make headroom when a write fails, so fill again until it shows.
fill_rank0_fs() { dd if=/dev/zero of="$RANK0_FS/filler" bs=1M oflag=append conv=notrunc status=none || true; }
filesystem_full_alert() { fill_rank0_fs 2>/dev/null; check firing StrataFilesystemFull rank=0; }
wait_for 60 "StrataFilesystemFull firing after rank zero's tmpfs was filled" filesystem_full_alert
grep -q "a write failed for want of space" "$DIR/rank0.serve.log" ||
  fail "rank zero's log does not say a write failed for want of space"
# The space is freed again: the limit, lowered as far as 0 while the filler
# held the whole tmpfs, comes back above 0 (the configured limit is retried,
# and the next full write lowers it to what the tmpfs holds). The disk fill
# panel reads a limit above 0, and rank zero stops writing once rank 1 dies.
rm -f "$RANK0_FS/filler"
disk_limit_above_zero() {
  curl -sf "http://127.0.0.1:$((BASE + 10))/metrics" |
    awk '$1 ~ /^strata_disk_limit_bytes($|\{)/ && $NF > 0 { ok = 1 } END { exit !ok }'
}
wait_for 30 "rank zero's disk limit in force above 0 once the filler is gone" disk_limit_above_zero
wait_for 30 "Prometheus reading rank zero's disk limit above 0" \
  check query 'strata_disk_limit_bytes{rank="0"} > 0'

pkill -KILL -P "${PIDS[0]}" || fail "rank 1 was not running"
pkill -KILL -P "${RUNTIMES[0]}" || true  # its runtime: the whole node is gone
wait_for 30 "StrataPeerLinkLost firing after rank 1 was killed" \
  check firing StrataPeerLinkLost rank=0 peer=1
wait_for 30 "StrataRankDown firing for rank 1" check firing StrataRankDown rank=1
wait_for 30 "StrataRankUnhealthy firing for rank 0" check firing StrataRankUnhealthy rank=0
# Last: the link errors panel has data only once a link failed; the rate
# windows (5m) cover the whole run, so the load before the kill counts.
wait_for 30 "every dashboard expression returning series" \
  check dashboard "$EXAMPLES/grafana/strata.json"

# Rank zero's peer is gone, so its drain at shutdown fails; it lingers (60 s)
# serving that. The second SIGTERM goes to the rank itself (timeout(1)
# forwards only the first) and must come at least 1 s after the first
# (closer ones are one signal delivered twice): send one every 0.2 s.
RANK0_PID=$(pgrep -P "${PIDS[1]}") || fail "rank zero was not running"
kill -TERM "${PIDS[1]}"
drain_failed_health() { [[ $(health $((BASE + 10))) == "503 the drain at shutdown failed: "* ]]; }
wait_for 30 "rank zero's /healthz naming its failed drain" drain_failed_health
wait_for 30 "StrataDrainFailed firing for rank 0" check firing StrataDrainFailed rank=0
kill -0 "${PIDS[1]}" || fail "rank zero did not linger after its failed drain"
signal_until_gone() { kill -TERM "$RANK0_PID" 2>/dev/null; ! kill -0 "${PIDS[1]}" 2>/dev/null; }
wait_for 10 "rank zero ending its linger on a second SIGTERM" signal_until_gone
rc=0
wait "${PIDS[1]}" || rc=$?
[[ $rc == 130 ]] || fail "rank zero exited with $rc after a second SIGTERM, expected 130"
grep -q "drain did not complete" "$DIR/rank0.serve.log" || fail "rank zero's log does not say its drain failed"
echo "PASS: every dashboard expression and alert returned data under Prometheus; the disk, checksum, filesystem-full, peer and drain alerts fired"
