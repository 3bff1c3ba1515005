"""GPU planes driven by the same module (run only with STRATA_GPU_TESTS=1,
through ctest's GpuPythonTest.DevicePlanes): planes in device memory
allocated by Strata's CUDA module (strata.DeviceBuffer; Debian's torch has no
CUDA), stored to host memory and to disk and restored byte-exact into other
page ids and a different state slot.

It needs no torch and no pytest: `python3 gpu_planes_check.py` runs both
tiers as a script (launch/gpu-bundle.sh ships it with an interpreter to the
GPU machine, whose Python has neither)."""
import pathlib
import random
import sys
import tempfile

try:
    import pytest
except ImportError:  # run as a script
    pytest = None

import runtime_shape as rm
import strata

SHAPE = rm.EMBEDDED


def device_planes():
    buffers = {name: strata.DeviceBuffer(0, SHAPE.pages * unit) for name, unit in SHAPE.planes.items()}
    buffers["state.rows"] = strata.DeviceBuffer(0, SHAPE.rows * SHAPE.row_bytes)
    units = dict(SHAPE.planes, **{"state.rows": SHAPE.row_bytes})
    allocs = [strata.Allocation(n, b, strata.STATE_ROWS if n == "state.rows" else strata.PAGE_PLANE,
                                bytes_per_id=units[n], count=b.bytes // units[n])
              for n, b in buffers.items()]
    return buffers, units, strata.Geometry(SHAPE.page_tokens, allocs)


def fill(buffers):
    rng = random.Random(5)
    originals = {}
    for name, b in buffers.items():
        data = bytes(rng.getrandbits(8) for _ in range(b.bytes))
        b.write(0, data)
        originals[name] = data
    return originals


def check_device_planes(tier, tmp_path):
    assert strata.cuda_device_count() > 0
    buffers, units, geo = device_planes()
    originals = fill(buffers)
    store = (strata.memory_store(geo, 8 << 20) if tier == "memory" else
             strata.disk_store(geo, tmp_path, 64 << 20, rm.MODEL))
    with store:
        assert store.store(1, SHAPE.tokens, len(SHAPE.tokens), rm.CHAIN, rm.ROW_SLOT) == "queued"
        rm.poll_until(store, "stored")
        for b in buffers.values():
            b.fill(0)
        hit = store.lookup(SHAPE.tokens)
        assert hit is not None and hit.tier == tier
        store.fetch(hit, 3, [20, 21, 22, 23], 5)
        rm.poll_until(store, "fetched")
    for name, b in buffers.items():
        u = units[name]
        if name == "state.rows":
            assert b.read(5 * u, u) == originals[name][rm.ROW_SLOT * u:(rm.ROW_SLOT + 1) * u]
            continue
        for src, dst in zip(rm.CHAIN, [20, 21, 22, 23]):
            assert b.read(dst * u, u) == originals[name][src * u:(src + 1) * u], (name, dst)


TIERS = ["memory", "disk"]

if pytest is not None:
    @pytest.mark.parametrize("tier", TIERS)
    def test_device_planes_restore_byte_exact(tier, tmp_path):
        check_device_planes(tier, tmp_path)


if __name__ == "__main__":
    for t in TIERS:
        with tempfile.TemporaryDirectory() as d:
            check_device_planes(t, pathlib.Path(d))
        print(f"gpu_planes_check: {t} tier restored byte-exact into device planes")
    sys.exit(0)
