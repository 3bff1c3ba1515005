"""The small runtime both test modes drive: its KV planes, the bytes it
writes into them, the checkpoint it publishes and how it checks a restore.
Shared by the worker processes (embedded_rank.py, attached_runtime.py)."""
import time

import torch

import strata

PAGE_TOKENS = 16
PAGES = 32
ROWS = 8
PLANES = {"layer00.key": 1024, "layer00.value": 1024, "layer01.key": 512}
ROW_BYTES = 768
TOKENS = list(range(1000, 1064))  # four pages
CHAIN = [3, 7, 9, 11]             # where the runtime keeps them
ROW_SLOT = 2
MODEL = "python-test/model"
POLL_BOUND_S = 30.0


def pattern(rank, name, shape):
    """The deterministic bytes rank `rank` writes into allocation `name`."""
    seed = rank * 7919 + sum(map(ord, name))
    return torch.randint(0, 256, shape, dtype=torch.uint8, generator=torch.Generator().manual_seed(seed))


def allocate(make=lambda name, shape: torch.zeros(shape, dtype=torch.uint8)):
    """name -> tensor of shape (ids, bytes per id)."""
    tensors = {name: make(name, (PAGES, unit)) for name, unit in PLANES.items()}
    tensors["state.rows"] = make("state.rows", (ROWS, ROW_BYTES))
    return tensors


def geometry(tensors, memory_of=lambda name, t: t):
    allocs = [strata.Allocation(n, memory_of(n, t), strata.PAGE_PLANE)
              for n, t in tensors.items() if n != "state.rows"]
    allocs.append(strata.Allocation("state.rows", memory_of("state.rows", tensors["state.rows"]),
                                    strata.STATE_ROWS))
    return strata.Geometry(PAGE_TOKENS, allocs)


def fill(tensors, rank):
    for name, t in tensors.items():
        t.copy_(pattern(rank, name, tuple(t.shape)))


def zero(tensors):
    for t in tensors.values():
        t.zero_()


def check_restored(tensors, rank, page_ids, row_slot):
    """None when page_ids / row_slot hold CHAIN / ROW_SLOT's original bytes,
    else what differs."""
    for name, t in tensors.items():
        original = pattern(rank, name, tuple(t.shape))
        if name == "state.rows":
            if not torch.equal(t[row_slot], original[ROW_SLOT]):
                return f"rank {rank}: row {row_slot} differs"
            continue
        for src, dst in zip(CHAIN, page_ids):
            if not torch.equal(t[dst], original[src]):
                return f"rank {rank}: {name} page {dst} (from {src}) differs"
    return None


def poll_until(store, want, bound_s=POLL_BOUND_S):
    """Polls as a runtime's loop does until an event of kind `want` (or a
    failure) arrives; raises after `bound_s`."""
    deadline = time.monotonic() + bound_s
    while time.monotonic() < deadline:
        for e in store.poll():
            if e.kind == want:
                return e
            if e.kind in ("store_failed", "fetch_failed", "stopped"):
                raise AssertionError(f"unexpected {e!r}")
        time.sleep(0.002)  # a runtime's loop period; the bound above ends the wait
    raise AssertionError(f"no {want} event within {bound_s} s")
