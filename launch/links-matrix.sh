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
# the production defaults with the record links' idle spin on 16 slots,
# without and with yielding spinners, and every thread spinning. EXTRA and the flags are split on spaces (no paths with spaces).
# Earlier JSON of the same settings in OUT_DIR is removed first.
set -euo pipefail
STRATA=${1:-./build/strata}
OUT_DIR=${2:-/tmp/links-matrix}
RUNS=${RUNS:-3}
RANKS=${RANKS:-8}
EXTRA=${EXTRA:-}  # flags for every run, e.g. "--round-trips 500"
SETTINGS=${SETTINGS:-"default:;link100-s16:--link-idle-spin-us 100 --spin-slots 16;link100-s16-y:--link-idle-spin-us 100 --spin-slots 16 --spin-yield;all200-s16-y:--idle-spin-us 200 --link-idle-spin-us 200 --spin-slots 16 --spin-yield"}
PYTHON=${PYTHON:-$(command -v python3 || true)}

mkdir -p "$OUT_DIR"
IFS=';' read -r -a settings <<<"$SETTINGS"
for setting in "${settings[@]}"; do rm -f "$OUT_DIR/${setting%%:*}".*.json; done  # one sitting only
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
    """The row of `ranks` ranks, every field this summary reads (a missing
    one is an error); all NaN when fewer ranks were measured."""
    keys = ("p50_us", "p99_us", "switches_per_trip", "cpu_us_per_trip",
            "link_spin_hits_per_trip", "peer_link_spin_hits_per_trip", "p99_ratio_to_raw")
    r = next((r for r in j["fanout"] if r["ranks"] == ranks), None)
    return {k: nan for k in keys} if r is None else {k: r[k] for k in keys}
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
              f"{r4['p50_us']:>7.0f} {r4['p99_us']:>7.0f} "
              f"{r4['switches_per_trip']:>8.1f} {r4['cpu_us_per_trip']:>7.0f} "
              f"{r4['link_spin_hits_per_trip']:>5.1f} "
              f"{r4['peer_link_spin_hits_per_trip']:>5.1f} "
              f"{r8['p99_ratio_to_raw']:>8.2f} {j['raw_ping_pong_us']['p99']:>8.1f}")
    median = statistics.median(ratios) if ratios else nan
    print(f"{name:<18} median fanout_p99_ratio_4 {median:.2f} (goal <= 2)")
SUMMARY
