"""GPU planes driven by the same module (run only with STRATA_GPU_TESTS=1,
through ctest's GpuPythonTest.DevicePlanes): planes in device memory
allocated by Strata's CUDA module (strata.DeviceBuffer; Debian's torch has no
CUDA), stored to host memory and to disk and restored byte-exact into other
page ids and a different state slot.

The "attached" tier does the same through a real `strata rank --gpus 0`
(STRATA_BINARY, default build/strata): the runtime's planes are cudaMalloc'd
(every plane at its own offset in one DeviceBuffer, as a caching allocator
hands them out), shared by legacy IPC handle at attach.

It needs no torch and no pytest: `python3 gpu_planes_check.py` runs both
tiers as a script (launch/gpu-bundle.sh ships it with an interpreter to the
GPU machine, whose Python has neither)."""
import os
import pathlib
import random
import subprocess
import sys
import tempfile
import time

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


class _Slice:
    """`count` units of `unit` bytes at `offset` in a DeviceBuffer, as CUDA
    memory (what a tensor from torch's caching allocator looks like)."""

    def __init__(self, buffer, offset, unit, count):
        self.buffer, self.device = buffer, buffer.device
        self.__cuda_array_interface__ = {"shape": (count, unit), "typestr": "|u1",
                                         "data": (buffer.address + offset, False), "version": 2}


def _strata_binary():
    return os.environ.get("STRATA_BINARY",
                          str(pathlib.Path(__file__).resolve().parents[2] / "build" / "strata"))


def check_attached_ipc_planes(tmp_path):
    """Every TINY plane in one cudaMalloc block, attached to `strata rank
    --gpus 0` by IPC handle: stored, zeroed, restored byte-exact."""
    assert strata.cuda_device_count() > 0
    shape = rm.TINY
    units = dict(shape.planes, **{"state.rows": shape.row_bytes})
    counts = {n: (shape.rows if n == "state.rows" else shape.pages) for n in units}
    block = strata.DeviceBuffer(0, 4096 + sum(units[n] * counts[n] for n in units))
    block.fill(0)
    offsets, at = {}, 4096
    for n in units:
        offsets[n], at = at, at + units[n] * counts[n]
    allocs = [strata.Allocation(n, _Slice(block, offsets[n], units[n], counts[n]),
                                strata.STATE_ROWS if n == "state.rows" else strata.PAGE_PLANE)
              for n in units]
    geo = strata.Geometry(shape.page_tokens, allocs)
    rng = random.Random(7)
    originals = {}
    for n in units:
        originals[n] = bytes(rng.getrandbits(8) for _ in range(units[n] * counts[n]))
        block.write(offsets[n], originals[n])
    socket_path = tmp_path / "rank.sock"
    log = open(tmp_path / "rank.log", "w")
    rank = subprocess.Popen([_strata_binary(), "rank", "--attach-socket", str(socket_path),
                             "--gpus", "0", "--preset", "tiny", "--pages", str(shape.pages),
                             "--rows", str(shape.rows), "--prefix-cache-memory", "8MiB",
                             "--metrics-port", "0"], stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while not socket_path.exists():
            assert rank.poll() is None, (tmp_path / "rank.log").read_text()
            assert time.monotonic() < deadline, "no attach socket within 60 s"
            time.sleep(0.05)
        client = strata.attach(str(socket_path), geo, rm.TINY_MODEL, runtime_id="gpu-check")
        tokens = shape.tokens
        client.store(1, tokens, len(tokens), rm.CHAIN, rm.ROW_SLOT)
        assert rm.poll_until(client, "store_answer").outcome == "queued"
        rm.poll_until(client, "stored")
        block.fill(0)
        request = client.lookup(tokens)
        found = rm.poll_until(client, "lookup")
        assert found.request_id == request and found.hit is not None, found
        client.fetch(found.hit, 3, [20, 21, 22, 23], 5)
        rm.poll_until(client, "fetched")
        client.close()
        for n, u in units.items():
            base = offsets[n]
            if n == "state.rows":
                got = block.read(base + 5 * u, u)
                assert got == originals[n][rm.ROW_SLOT * u:(rm.ROW_SLOT + 1) * u], n
                continue
            for src, dst in zip(rm.CHAIN, [20, 21, 22, 23]):
                assert block.read(base + dst * u, u) == originals[n][src * u:(src + 1) * u], (n, dst)
    finally:
        rank.terminate()
        assert rank.wait(timeout=60) == 0, (tmp_path / "rank.log").read_text()
        log.close()


TIERS = ["memory", "disk", "attached"]


def check(tier, tmp_path):
    if tier == "attached":
        check_attached_ipc_planes(tmp_path)
    else:
        check_device_planes(tier, tmp_path)

if pytest is not None:
    @pytest.mark.parametrize("tier", TIERS)
    def test_device_planes_restore_byte_exact(tier, tmp_path):
        check(tier, tmp_path)


if __name__ == "__main__":
    for t in TIERS:
        with tempfile.TemporaryDirectory() as d:
            check(t, pathlib.Path(d))
        print(f"gpu_planes_check: {t} tier restored byte-exact into device planes")
    sys.exit(0)
