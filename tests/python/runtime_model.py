"""The small runtime both test modes drive: its KV planes, the bytes it
writes into them, the checkpoint it publishes and how it checks a restore.
Shared by the worker processes (embedded_rank.py, attached_runtime.py)."""
import torch

import strata
from runtime_shape import (CHAIN, EMBEDDED, MODEL, PAGE_TOKENS, POLL_BOUND_S, ROW_SLOT, TINY,  # noqa: F401
                           TINY_MODEL, TOKENS, Shape, poll_until)


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
