#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz) with clang in their own build
# directory and runs every one of them.
#
#   ./launch/fuzz.sh --smoke          short bounded run for the test suite: a
#                                     fixed number of inputs per target from a
#                                     fixed seed (same inputs every time)
#   ./launch/fuzz.sh [options]        long run: new corpus entries and crash
#                                     files go under --out
#     --time SECONDS   per target (default 600)
#     --jobs N         parallel fuzzing processes per target (libFuzzer -fork)
#     --out DIR        where corpora and crash files go (default build-fuzz/out)
#     --target NAME    only this target (repeatable): record_header,
#                      record_header_encode, wire_decode, wire_encode, frame_reader
#
# Prints one line per target: executions, coverage features, corpus size and
# crashes. Exits non-zero on any crash, leak, sanitizer report or violated
# property, naming the input that reproduces it and the command that replays
# it. STRATA_FUZZ_BUILD_DIR (default build-fuzz) sets the build directory.
# Needs clang and libclang-rt-dev (launch/bootstrap.sh installs them).
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD_DIR=${STRATA_FUZZ_BUILD_DIR:-build-fuzz}
ALL_TARGETS=(record_header record_header_encode wire_decode wire_encode frame_reader)
# Inputs per target in --smoke: about 45 s for all five on a shared 2-core
# machine (build excluded).
declare -A SMOKE_RUNS=([record_header]=50000 [record_header_encode]=250000
  [wire_decode]=250000 [wire_encode]=150000 [frame_reader]=250000)
# Largest input per target: a header and its trailer; frames of a few KiB.
declare -A MAX_LEN=([record_header]=4106 [record_header_encode]=1024
  [wire_decode]=4096 [wire_encode]=1024 [frame_reader]=8192)
SMOKE_SEED=1

smoke=0
seconds=600
jobs=1
out="$BUILD_DIR/out"
targets=()
while (($#)); do
  case "$1" in
    --smoke) smoke=1 ;;
    --time) seconds=$2; shift ;;
    --jobs) jobs=$2; shift ;;
    --out) out=$2; shift ;;
    --target) targets+=("$2"); shift ;;
    -h|--help) sed -n '2,21p' "$0"; exit 0 ;;
    *) echo "fuzz.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done
((${#targets[@]})) || targets=("${ALL_TARGETS[@]}")
for t in "${targets[@]}"; do
  [[ -v "MAX_LEN[$t]" ]] || { echo "fuzz.sh: unknown target '$t'" >&2; exit 2; }
done

for tool in clang clang++; do
  command -v "$tool" >/dev/null || {
    echo "fuzz.sh: $tool not found; install clang and libclang-rt-dev (./launch/bootstrap.sh)" >&2
    exit 1
  }
done
if [[ ! -f "$BUILD_DIR/build.ninja" ]]; then
  cmake -G Ninja -S . -B "$BUILD_DIR" -DSTRATA_FUZZ=ON \
    -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ >/dev/null
fi
cmake --build "$BUILD_DIR" -- -j"$(nproc)" | grep -vE '^(\[[0-9]+/[0-9]+\] |-- )' || true
test "${PIPESTATUS[0]}" -eq 0

bin_dir="$BUILD_DIR/tests/fuzz"
if ((smoke)); then
  out="$BUILD_DIR/smoke"
  rm -rf "$out"
fi
mkdir -p "$out"

failed=0
started=$SECONDS
for t in "${targets[@]}"; do
  corpus="$out/corpus/$t"
  artifacts="$out/crashes/$t"
  log="$out/$t.log"
  mkdir -p "$corpus" "$artifacts"
  # The first folder receives new entries; seeds and checked-in regression
  # inputs (tests/fuzz/corpus, every crash ever fixed) are only read.
  dirs=("$corpus" "$bin_dir/seeds/$t")
  [[ -d "tests/fuzz/corpus/$t" ]] && dirs+=("tests/fuzz/corpus/$t")
  args=(-artifact_prefix="$artifacts/" -max_len="${MAX_LEN[$t]}" -timeout=30 -rss_limit_mb=2048
    -print_final_stats=1 -print_funcs=0)
  if ((smoke)); then
    args+=(-runs="${SMOKE_RUNS[$t]}" -seed="$SMOKE_SEED")
    runner=()
  else
    args+=(-max_total_time="$seconds")
    ((jobs > 1)) && args+=(-fork="$jobs")
    runner=(nice -n 10)
  fi
  rc=0
  "${runner[@]}" "$bin_dir/strata_fuzz_$t" "${args[@]}" "${dirs[@]}" >"$log" 2>&1 || rc=$?

  # The last status line: "#<execs> ... cov: <n> ft: <n> corp: <n>[/size]".
  status_line=$(grep -E '^#[0-9]+:?[[:space:]]' "$log" | tail -n 1 || true)
  execs=$(sed -nE 's/^#([0-9]+).*/\1/p' <<<"$status_line")
  features=$(sed -nE 's/.* ft: ([0-9]+).*/\1/p' <<<"$status_line")
  corp=$(sed -nE 's/.* corp: ([0-9]+).*/\1/p' <<<"$status_line")
  new_files=$(find "$corpus" -type f | wc -l)
  mapfile -t crashes < <(find "$artifacts" -type f \
    \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' -o -name 'oom-*' \) | sort)
  printf 'fuzz %-21s executions %-10s features %-6s corpus %-5s new-inputs %-5s crashes %d\n' \
    "$t" "${execs:-?}" "${features:-?}" "${corp:-?}" "$new_files" "${#crashes[@]}"
  if ((rc != 0 || ${#crashes[@]})); then
    failed=1
    echo "fuzz: $t FAILED (exit $rc); its log is $log:" >&2
    grep -E 'ERROR|SUMMARY|fuzz property violated|runtime error|Test unit written' "$log" |
      head -n 20 >&2 || true
    for f in "${crashes[@]}"; do
      echo "fuzz: reproducing input: $f" >&2
      echo "fuzz: replay with: $bin_dir/strata_fuzz_$t $f" >&2
    done
    ((${#crashes[@]})) || tail -n 30 "$log" >&2
  fi
done
echo "fuzz: ${#targets[@]} targets in $((SECONDS - started)) s; corpora and crash files in $out"
if ((failed)); then
  echo "fuzz: FAILED (fix the bug, then add the reproducing input to tests/fuzz/corpus/<target>/)" >&2
  exit 1
fi
