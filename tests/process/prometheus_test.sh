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
# 2. A 2-rank cluster serving its synthetic load, rank zero with a disk limit
#    larger than its filesystem holds (so the startup check lowers it), and a
#    Prometheus on loopback scraping both ranks every second with the shipped
#    rules, their `for:` durations rewritten to 0s (the expressions are the
#    shipped ones).
# 3. Every alert evaluates without error and every metric it reads returns
#    series; StrataDiskLimitLowered fires, and the fault alerts do not yet.
# 4. Each rank's /metrics text passes `promtool check metrics`.
# 5. Every record file is damaged: StrataFetchChecksumFailures fires.
# 6. Rank 1 is SIGKILLed: StrataPeerLinkLost, StrataRankDown and
#    StrataRankUnhealthy fire.
# 7. Every expression of launch/examples/grafana/strata.json returns series.
#
# Every wait is bounded; on failure the ranks' and Prometheus's logs are printed.
set -euo pipefail
STRATA=$1
HERE=$(dirname "$0")
EXAMPLES=$HERE/../../launch/examples
# shellcheck source=tests/process/rank_cluster_lib.sh
source "$HERE/rank_cluster_lib.sh"

SHIPPED_ALERTS=10  # alerting rules in strata-alerts.yml
PROM_PORT=$((BASE + 20))
PROM=http://127.0.0.1:$PROM_PORT
for tool in prometheus promtool; do
  command -v "$tool" >/dev/null || fail "$tool is not installed (launch/bootstrap.sh installs Debian's prometheus)"
done

check() { python3 "$HERE/prom_check.py" "$PROM" "$@"; }

wait_for() {  # seconds description command...: polls every 0.2 s until the command succeeds
  local deadline=$((SECONDS + $1)) what=$2
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
prometheus --config.file="$DIR/prometheus.yml" --storage.tsdb.path="$DIR/tsdb" \
  --web.listen-address="127.0.0.1:$PROM_PORT" --log.level=warn >"$DIR/prometheus.log" 2>&1 &
PIDS+=($!)

start_rank 1 2 serve
DISK_LIMIT=1024TiB start_rank 0 2 serve  # far above what the filesystem holds
# PIDS: prometheus, rank 1, rank 0; each rank a timeout(1) whose child is the rank.

wait_for 60 "Prometheus scraping both ranks" check targets-up 2
wait_for 30 "every alert rule evaluated, reading metrics that exist" check rules "$SHIPPED_ALERTS"
wait_for 30 "StrataDiskLimitLowered firing" check firing StrataDiskLimitLowered rank=0
for quiet in StrataPeerLinkLost StrataRankDown StrataRankUnhealthy StrataFetchChecksumFailures; do
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
  python3 - "$DIR" <<'PY'
import pathlib, sys
for f in pathlib.Path(sys.argv[1]).glob("rank*/**/*.ckpt"):
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

pkill -KILL -P "${PIDS[1]}" || fail "rank 1 was not running"
wait_for 30 "StrataPeerLinkLost firing after rank 1 was killed" \
  check firing StrataPeerLinkLost rank=0 peer=1
wait_for 30 "StrataRankDown firing for rank 1" check firing StrataRankDown rank=1
wait_for 30 "StrataRankUnhealthy firing for rank 0" check firing StrataRankUnhealthy rank=0
# Last: the link errors panel has data only once a link failed; the rate
# windows (5m) cover the whole run, so the load before the kill counts.
wait_for 30 "every dashboard expression returning series" \
  check dashboard "$EXAMPLES/grafana/strata.json"
echo "PASS: every dashboard expression and alert returned data under Prometheus; the disk, checksum and peer alerts fired"
