#!/usr/bin/env bash
# Packs the built binaries for a GPU machine that has the NVIDIA driver but
# none of the Debian packages (docs/performance.md, "GPU runs"): gpu-run/
# gets strata, strata_gpu_tests, the scripts they use and every non-system
# shared library `ldd` lists, with an env file setting LD_LIBRARY_PATH.
# Where the build has the Python module, gpu-run/python gets it, the
# interpreter it was built for with its standard library (the GPU machine's
# Python is another version), and the torch-free GPU check
# (tests/python/gpu_planes_check.py), run there by gpu-run/python-gpu-check.
#
#   ./launch/gpu-bundle.sh [BUILD_DIR]      then, there:
#   source gpu-run/env && STRATA_GPU_TESTS=1 gpu-run/strata_gpu_tests
#   gpu-run/python-gpu-check
#   source gpu-run/env && gpu-run/links-matrix.sh gpu-run/strata /tmp/links-matrix
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
OUT=gpu-run
rm -rf "$OUT"
mkdir -p "$OUT/lib"
cp "$BUILD/strata" "$BUILD/tests/strata_gpu_tests" "$OUT/"
cp launch/links-matrix.sh "$OUT/"  # bench links, several idle spins alternated
bins=("$OUT/strata" "$OUT/strata_gpu_tests")
module=$(ls "$BUILD"/python/strata/_strata.*.so 2>/dev/null | head -n 1 || true)
if [[ -n "$module" ]]; then
  # The interpreter the module was built for: its tag names the version.
  version=$(basename "$module" | sed -nE 's/^_strata\.cpython-([0-9])([0-9]+)-.*/\1.\2/p')
  py=/usr/bin/python$version
  stdlib=/usr/lib/python$version
  mkdir -p "$OUT/python/bin" "$OUT/python/lib"
  cp "$py" "$OUT/python/bin/"
  # The standard library without what a check never imports (25 MiB of it is
  # the static library for embedding).
  tar -C /usr/lib --exclude='__pycache__' --exclude="python$version/config-*" \
    --exclude="python$version/test" --exclude="python$version/idlelib" \
    --exclude="python$version/tkinter" --exclude="python$version/lib2to3" \
    --exclude="python$version/ensurepip" --exclude="python$version/pydoc_data" \
    -cf - "python$version" | tar -C "$OUT/python/lib" -xf -
  cp -r "$BUILD/python/strata" "$OUT/python/"
  cp tests/python/gpu_planes_check.py tests/python/runtime_shape.py "$OUT/python/"
  bins+=("$OUT/python/bin/python$version" "$OUT/python/strata/$(basename "$module")")
  cat >"$OUT/python-gpu-check" <<CHECK
#!/usr/bin/env bash
# The Python module on this machine's GPU (tests/python/gpu_planes_check.py).
here=\$(cd "\$(dirname "\$0")" && pwd)
source "\$here/env"
export PYTHONHOME="\$here/python" PYTHONPATH="\$here/python" PYTHONDONTWRITEBYTECODE=1
export STRATA_BINARY="\$here/strata"
exec "\$here/python/bin/python$version" "\$here/python/gpu_planes_check.py" "\$@"
CHECK
  chmod +x "$OUT/python-gpu-check"
fi
for bin in "${bins[@]}"; do
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
