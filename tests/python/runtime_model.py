"""The small runtime both test modes drive: its KV planes, the bytes it
writes into them, the checkpoint it publishes and how it checks a restore.
Shared by the worker processes (embedded_rank.py, attached_runtime.py)."""
import time

import torch

import strata


class Shape:
    """A runtime's KV layout: page planes (name -> bytes per page) and one
    state-row allocation."""

    def __init__(self, page_tokens, pages, rows, planes, row_bytes):
        self.page_tokens, self.pages, self.rows = page_tokens, pages, rows
        self.planes, self.row_bytes = planes, row_bytes
        self.tokens = list(range(1000, 1000 + 4 * page_tokens))  # four pages


# The embedded tests' own layout.
EMBEDDED = Shape(16, 32, 8, {"layer00.key": 1024, "layer00.value": 1024, "layer01.key": 512}, 768)
# `strata rank --preset tiny --pages 32 --rows 8` (launch/presets.cc).
TINY = Shape(64, 32, 8, {f"layer0{l}.{k}": 4096 for l in (0, 1) for k in ("key", "value")}, 8192)
TINY_MODEL = "synthetic/tiny"

PAGE_TOKENS = EMBEDDED.page_tokens
TOKENS = EMBEDDED.tokens
CHAIN = [3, 7, 9, 11]             # where the runtime keeps the four pages
ROW_SLOT = 2
MODEL = "python-test/model"
POLL_BOUND_S = 30.0


def pattern(rank, name, shape):
    """The deterministic bytes rank `rank` writes into allocation `name`."""
    seed = rank * 7919 + sum(map(ord, name))
    return torch.randint(0, 256, shape, dtype=torch.uint8, generator=torch.Generator().manual_seed(seed))


def allocate(shape=EMBEDDED, make=lambda name, dims: torch.zeros(dims, dtype=torch.uint8)):
    """name -> tensor of dims (ids, bytes per id)."""
    tensors = {name: make(name, (shape.pages, unit)) for name, unit in shape.planes.items()}
    tensors["state.rows"] = make("state.rows", (shape.rows, shape.row_bytes))
    return tensors


def geometry(tensors, memory_of=lambda name, t: t, page_tokens=PAGE_TOKENS):
    def alloc(n, t, kind):
        return strata.Allocation(n, memory_of(n, t), kind, bytes_per_id=t.shape[1], count=t.shape[0])

    allocs = [alloc(n, t, strata.PAGE_PLANE) for n, t in tensors.items() if n != "state.rows"]
    allocs.append(alloc("state.rows", tensors["state.rows"], strata.STATE_ROWS))
    return strata.Geometry(page_tokens, allocs)


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


# Events a poll returned after the one a caller waited for, kept for the
# next wait on the same store (one poll may return several at once).
_pending = {}


def poll_until(store, want, bound_s=POLL_BOUND_S):
    """Polls as a runtime's loop does until an event of kind `want` (or a
    failure) arrives; raises after `bound_s`. Events that arrive with it stay
    pending for the next call."""
    pending = _pending.setdefault(id(store), [])
    deadline = time.monotonic() + bound_s
    while True:
        while pending:
            e = pending.pop(0)
            if e.kind == want:
                return e
            if e.kind in ("store_failed", "fetch_failed", "stopped"):
                raise AssertionError(f"unexpected {e!r}")
        if time.monotonic() >= deadline:
            raise AssertionError(f"no {want} event within {bound_s} s")
        pending.extend(store.poll())
        if not pending:
            time.sleep(0.002)  # a runtime's loop period; the bound above ends the wait
