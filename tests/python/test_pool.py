"""Two in-process stores sharing through a real `strata pool` manager
(docs/pool.md, docs/python.md): store A's memory tier evicts a checkpoint
to the pool; store B, another instance, finds it with a lookup ticket,
restores it byte-exact into other page ids (the claim runs in the fetch),
and another model identity sees nothing."""
import os
import pathlib
import subprocess
import time

import pytest

import strata
import runtime_model as rm

OTHER_TOKENS = list(range(5000, 5000 + 4 * rm.PAGE_TOKENS))
OTHER_CHAIN = [12, 13, 14, 15]
DEST_PAGES, DEST_ROW = [20, 21, 22, 23], 5
BOUND_S = 30.0


@pytest.fixture
def manager(scratch):
    """A `strata pool` on a socket in `scratch`; its socket path."""
    socket = scratch / "pool.sock"
    proc = subprocess.Popen([os.environ["STRATA_BINARY"], "pool", "--name", "py", "--socket",
                             str(socket), "--slot-kib", "64", "--slots", "64", "--no-huge-pages"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + BOUND_S
    while not socket.exists():
        assert proc.poll() is None, proc.stderr.read().decode()
        assert time.monotonic() < deadline, "the manager's socket did not appear"
        time.sleep(0.01)
    yield socket
    proc.terminate()
    proc.wait(timeout=BOUND_S)


def until(what, predicate, store):
    deadline = time.monotonic() + BOUND_S
    while not predicate():
        assert time.monotonic() < deadline, f"{what} within {BOUND_S} s"
        store.poll()
        time.sleep(0.002)


def evict_one_to_the_pool(socket, pool_data="auto"):
    """Store A (memory for one record) publishes two checkpoints: the second
    evicts the first, which goes to the pool. Returns A, open."""
    tensors = rm.allocate()
    rm.fill(tensors, 0)
    geo = rm.geometry(tensors)
    # Five page-record slots hold one record (four pages and a row).
    a = strata.memory_store(geo, 6 * geo.page_record_bytes, pool=socket, model_identity=rm.MODEL,
                            pool_instance="a", pool_data=pool_data)
    a._tensors = tensors
    assert a.stats()["pool"]["attached"]
    assert a.store(1, rm.TOKENS, 64, rm.CHAIN, rm.ROW_SLOT) == "queued"
    rm.poll_until(a, "stored")
    assert a.store(2, OTHER_TOKENS, 64, OTHER_CHAIN, 4) == "queued"
    rm.poll_until(a, "stored")
    until("the evicted record put", lambda: a.stats()["pool"]["puts"] >= 1, a)
    return a


def restore_in_b(socket, pool_data="auto"):
    """Store B, another instance that never saw the checkpoint, finds it
    with a lookup ticket and restores it from the pool into other page ids:
    its planes then hold A's bytes (rank 0's pattern)."""
    tensors = rm.allocate()
    with strata.memory_store(rm.geometry(tensors), 6 << 20, pool=socket,
                             model_identity=rm.MODEL, pool_instance="b", pool_data=pool_data) as b:
        ticket = b.begin_lookup(rm.TOKENS)
        assert ticket != 0
        until("the ticket ready", lambda: b.ticket_status(ticket)["state"] == "ready", b)
        assert b.ticket_status(ticket)["pool_consumed"] == 64
        hit = b.lookup_for(ticket, rm.TOKENS)
        b.end_lookup(ticket)
        assert hit is not None and hit.consumed == 64 and hit.pages == 4
        assert b.stats()["pool"]["claims"] == 0, "admission claims nothing"
        b.fetch(hit, 7, DEST_PAGES, DEST_ROW)
        rm.poll_until(b, "fetched")
        pool = b.stats()["pool"]
        assert pool["claims"] == 1 and pool["claimed_records"] == 1, pool
    for name, t in tensors.items():
        original = rm.pattern(0, name, tuple(t.shape))
        if name == "state.rows":
            assert bool((t[DEST_ROW] == original[rm.ROW_SLOT]).all()), name
            continue
        for src, dst in zip(rm.CHAIN, DEST_PAGES):
            assert bool((t[dst] == original[src]).all()), (name, src, dst)


def test_another_instance_restores_what_one_evicted_byte_exact(manager):
    a = evict_one_to_the_pool(manager)
    restore_in_b(manager)
    a.close()


def test_another_model_identity_shares_nothing(manager):
    a = evict_one_to_the_pool(manager)
    with strata.memory_store(rm.geometry(rm.allocate()), 6 << 20, pool=manager,
                             model_identity="python-test/other", pool_instance="c") as c:
        assert c.lookup(rm.TOKENS) is None
        assert c.stats()["pool"]["claims"] == 0
    a.close()


def test_a_pool_without_a_model_identity_is_refused(manager):
    with pytest.raises(strata.StrataError) as e:
        strata.memory_store(rm.geometry(rm.allocate()), 1 << 20, pool=manager)
    assert e.value.kind == "invalid_argument"


def test_a_store_without_a_pool_gives_no_ticket():
    with strata.memory_store(rm.geometry(rm.allocate()), 1 << 20) as s:
        ticket = s.begin_lookup(rm.TOKENS)
        assert ticket == 0
        assert s.ticket_status(ticket)["state"] == "none"
        assert s.lookup_for(ticket, rm.TOKENS) is None
        assert "pool" not in s.stats()
