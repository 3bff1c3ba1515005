#!/usr/bin/env bash
# Installs the Debian packages Strata needs (only those missing; apt-get update
# only when something is missing), then configures and builds into build/.
# Idempotent and fast when everything is already there.
#
#   STRATA_BUILD_DIR  build directory (default: build)
#   STRATA_SANITIZE   1 to build with ASan + UBSan (default: 0)
#   STRATA_UNIT_TESTS 0 to leave strata_unit_tests out of the build, 1 to put
#                     it back (unset: as configured; a new build has them).
#                     launch/test.sh sets 0 when it builds them under ASan.
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(
  cmake ninja-build g++ pkg-config git
  liburing-dev libasio-dev capnproto libcapnp-dev libxxhash-dev libb2-dev libssl-dev
  libgtest-dev libgmock-dev
  libtomlplusplus-dev libcli11-dev libspdlog-dev libcpp-httplib-dev nlohmann-json3-dev
  clang-format clang-tidy openssl curl
  clang libclang-rt-dev  # libFuzzer (launch/fuzz.sh)
  prometheus  # the dashboard and alert tests (tests/process/prometheus_test.sh)
  # The Python package (python/, docs/python.md): built for /usr/bin/python3,
  # the interpreter Debian's torch is installed for; torch and pytest run its tests.
  pybind11-dev python3-dev python3-torch python3-pytest
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "bootstrap: installing ${missing[*]}"
  SUDO=""
  if [[ $(id -u) -ne 0 ]]; then
    command -v sudo >/dev/null || { echo "bootstrap: need root (or sudo) to install ${missing[*]}" >&2; exit 1; }
    SUDO=sudo
  fi
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

BUILD_DIR=${STRATA_BUILD_DIR:-build}
SANITIZE=${STRATA_SANITIZE:-0}
san_flag=OFF
[[ "$SANITIZE" == 1 ]] && san_flag=ON
unit_args=()
case "${STRATA_UNIT_TESTS:-}" in
  "") ;;
  0) unit_args=(-DSTRATA_UNIT_TESTS=OFF) ;;
  1) unit_args=(-DSTRATA_UNIT_TESTS=ON) ;;
  *) echo "bootstrap: STRATA_UNIT_TESTS must be 0 or 1, not '$STRATA_UNIT_TESTS'" >&2; exit 2 ;;
esac
if [[ ! -f "$BUILD_DIR/build.ninja" ]]; then
  cmake -G Ninja -S . -B "$BUILD_DIR" -DSTRATA_SANITIZE="$san_flag" "${unit_args[@]}" >/dev/null
elif ((${#unit_args[@]})); then
  cmake -S . -B "$BUILD_DIR" "${unit_args[@]}" >/dev/null
fi
echo "bootstrap: building in $BUILD_DIR"
# The braces keep grep's "no line printed" from hiding the build's own status.
cmake --build "$BUILD_DIR" -- -j"$(nproc)" | { grep -vE '^\[[0-9]+/[0-9]+\] ' || true; }
echo "bootstrap: $BUILD_DIR/strata is ready"
