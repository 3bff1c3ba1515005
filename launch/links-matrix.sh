#!/usr/bin/env bash
# Runs `strata bench links --json` for several idle-spin settings, alternated
# RUNS times in one sitting (so each setting sees the same machine state),
# keeps every JSON under OUT_DIR and prints one line per run and the medians
# per setting: the figures issue 18 asks for (docs/performance.md, "Idle
# spinning"). For the 16-core device machine; on 2 cores the figures say
# nothing about the goal.
#
#   launch/links-matrix.sh [STRATA] [OUT_DIR]
#   RUNS=3 RANKS=8 EXTRA="flags" SETTINGS="name:flags;name:flags" launch/links-matrix.sh
#
# Each setting is "name:extra flags for bench links"; the default compares
# the production defaults with the record links' idle spin at a few slot
# counts.
set -euo pipefail
STRATA=${1:-./build/strata}
OUT_DIR=${2:-/tmp/links-matrix}
RUNS=${RUNS:-3}
RANKS=${RANKS:-8}
EXTRA=${EXTRA:-}  # flags for every run, e.g. "--round-trips 500"
SETTINGS=${SETTINGS:-"default:;link100:--link-idle-spin-us 100;link100-s8:--link-idle-spin-us 100 --spin-slots 8;link100-s12:--link-idle-spin-us 100 --spin-slots 12"}
PYTHON=${PYTHON:-$(command -v python3 || true)}

mkdir -p "$OUT_DIR"
IFS=';' read -r -a settings <<<"$SETTINGS"
for ((run = 1; run <= RUNS; ++run)); do
  for setting in "${settings[@]}"; do
    name=${setting%%:*}
    flags=${setting#*:}
    out="$OUT_DIR/$name.$run.json"
    # shellcheck disable=SC2086  # flags are words
    "$STRATA" bench links --json --ranks "$RANKS" $EXTRA $flags >"$out"
    echo "links-matrix: run $run, $name ($flags) -> $out" >&2
  done
done

[[ -n "$PYTHON" ]] || { echo "links-matrix: no python3 for the summary; JSON in $OUT_DIR" >&2; exit 0; }
"$PYTHON" - "$OUT_DIR" "${settings[@]}" <<'SUMMARY'
import glob, json, math, os, statistics, sys
out_dir, settings = sys.argv[1], [s.split(":", 1)[0] for s in sys.argv[2:]]
nan = float("nan")
def num(v):
    return nan if v is None else v
def row(j, ranks):
    return next((r for r in j["fanout"] if r["ranks"] == ranks), {})
print(f"{'setting':<18} {'ratio_4':>8} {'/raw fan-out':>12} {'4r p50':>7} {'4r p99':>7} "
      f"{'sw/trip':>8} {'cpu us':>7} {'hits':>5} {'peer':>5} {'8r ratio':>8} {'raw p99':>8}")
for name in settings:
    ratios = []
    for path in sorted(glob.glob(os.path.join(out_dir, f"{name}.*.json"))):
        with open(path) as f:
            j = json.load(f)
        r4, r8 = row(j, 4), row(j, 8)
        ratio = num(j["fanout_p99_ratio_4"])
        if not math.isnan(ratio):
            ratios.append(ratio)
        print(f"{name:<18} {ratio:>8.2f} {num(j['raw_fanout_p99_ratio_4']):>12.2f} "
              f"{r4.get('p50_us', nan):>7.0f} {r4.get('p99_us', nan):>7.0f} "
              f"{r4.get('switches_per_trip', nan):>8.1f} {r4.get('cpu_us_per_trip', nan):>7.0f} "
              f"{r4.get('link_spin_hits_per_trip', nan):>5.1f} "
              f"{r4.get('peer_link_spin_hits_per_trip', nan):>5.1f} "
              f"{r8.get('p99_ratio_to_raw', nan):>8.2f} {j['raw_ping_pong_us']['p99']:>8.1f}")
    median = statistics.median(ratios) if ratios else nan
    print(f"{name:<18} median fanout_p99_ratio_4 {median:.2f} (goal <= 2)")
SUMMARY
