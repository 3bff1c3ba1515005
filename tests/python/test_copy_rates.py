"""Copy rates from Python: `restore_rate` paces a store's restores into the
planes (the C++ tests check the pacer itself), restores stay byte-exact,
and a rate that is not a count of bytes is refused."""
import time

import pytest

import runtime_model as rm
import strata

# Pages of 2 MiB (two planes): a restore of rm.CHAIN moves 8 MiB, and four
# of them pass the pacer's burst of one 16 MiB batch.
SHAPE = rm.Shape(rm.PAGE_TOKENS, 16, 8, {"layer00.key": 1 << 20, "layer00.value": 1 << 20}, 4096)
RESTORE_BYTES = len(rm.CHAIN) * sum(SHAPE.planes.values()) + SHAPE.row_bytes
BURST_BYTES = 16 << 20  # kMaxBatchBytes
RATE = 32 << 20  # bytes per second
RESTORES = 4
DEST_PAGES, DEST_ROW = [0, 1, 2, 4], 5


def test_restores_are_paced_to_restore_rate_and_byte_exact():
    tensors = rm.allocate(SHAPE)
    rm.fill(tensors, 0)
    with strata.memory_store(rm.geometry(tensors), 64 << 20, restore_rate=RATE) as store:
        consumed = len(rm.CHAIN) * rm.PAGE_TOKENS
        assert store.store(1, rm.TOKENS, consumed, rm.CHAIN, rm.ROW_SLOT) == "queued"
        rm.poll_until(store, "stored")
        start = time.monotonic()
        for ticket in range(1, RESTORES + 1):
            hit = store.lookup(rm.TOKENS)
            assert hit is not None and hit.pages == len(rm.CHAIN)
            store.fetch(hit, ticket, DEST_PAGES, DEST_ROW)
            rm.poll_until(store, "fetched")
        elapsed = time.monotonic() - start
        # What passes the burst waits for RATE (about 0.5 s here; unpaced,
        # these copies take milliseconds). A lower bound only, with a
        # margin: a slow machine cannot make it fail.
        assert elapsed >= 0.5 * (RESTORES * RESTORE_BYTES - BURST_BYTES) / RATE, elapsed
        assert rm.check_restored(tensors, 0, DEST_PAGES, DEST_ROW) is None


def test_a_negative_rate_is_refused():
    tensors = rm.allocate()
    with pytest.raises(TypeError):
        strata.memory_store(rm.geometry(tensors), 1 << 20, copy_out_rate=-1)
