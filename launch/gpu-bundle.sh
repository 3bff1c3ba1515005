#!/usr/bin/env bash
# Packs the built binaries for a GPU machine that has the NVIDIA driver but
# none of the Debian packages (docs/performance.md, "GPU runs"): gpu-run/
# gets strata, strata_gpu_tests, the scripts they use and every non-system
# shared library `ldd` lists, with an env file setting LD_LIBRARY_PATH.
#
#   ./launch/gpu-bundle.sh [BUILD_DIR]      then, there:
#   source gpu-run/env && STRATA_GPU_TESTS=1 gpu-run/strata_gpu_tests
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
OUT=gpu-run
rm -rf "$OUT"
mkdir -p "$OUT/lib"
cp "$BUILD/strata" "$BUILD/tests/strata_gpu_tests" "$OUT/"
for bin in "$OUT/strata" "$OUT/strata_gpu_tests"; do
  ldd "$bin" | awk '/=> \// {print $3}' | while read -r lib; do
    case $(basename "$lib") in
      libc.so* | libm.so* | libstdc++.so* | libgcc_s.so* | ld-linux*) ;;  # the host's own
      *) cp -L -n "$lib" "$OUT/lib/" ;;
    esac
  done
done
cat >"$OUT/env" <<'ENV'
export LD_LIBRARY_PATH="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
ENV
du -sh "$OUT" | awk '{print "gpu-bundle: " $2 " holds " $1}'
