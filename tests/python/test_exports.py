"""The export hooks as a Python runtime calls them (docs/embedding.md
section 5): a pin the pooled store never asked for is handed back at once
through an "export_ended" event naming it (the ledger's rule, seen through
the events); a refusal's reason is checked; a plain store ignores both; a
store names its checkpoint's generation."""
import pytest

import runtime_model as rm
import strata
from test_pool import manager, until  # noqa: F401  (the fixture)


def test_a_pin_never_requested_is_handed_back_through_an_export_ended_event(manager):  # noqa: F811
    with strata.memory_store(rm.geometry(rm.allocate()), 6 << 20, pool=manager,
                             model_identity=rm.MODEL, pool_instance="exports") as store:
        assert store.stats()["pool"]["attached"]
        store.export_pinned(77, 0, [1, 2], 3)
        ended = []

        def seen():
            ended.extend(e for e in store.poll() if e.kind == "export_ended")
            return ended

        until("the stray pin handed back", seen, store)
        assert ended[0].export_id == 77
        assert not ended[0].ok and ended[0].error_kind == "not found", ended[0].message
        # A refusal of an export never requested is forgotten: no event.
        store.export_refused(78, "no_headroom")
        assert not [e for e in store.poll() if e.kind.startswith("export")]


def test_a_refusals_reason_is_checked_and_a_plain_store_ignores_both():
    tensors = rm.allocate()
    with strata.memory_store(rm.geometry(tensors), 1 << 20) as store:
        with pytest.raises(strata.StrataError) as e:
            store.export_refused(1, "tired")
        assert e.value.kind == "invalid_argument" and "no_headroom" in e.value.message
        store.export_refused(1, "chain_gap")
        store.export_pinned(2, 0, [1], 0)
        consumed = len(rm.CHAIN) * rm.PAGE_TOKENS
        assert store.store(1, rm.TOKENS, consumed, rm.CHAIN, rm.ROW_SLOT, generation=5) == "queued"
        rm.poll_until(store, "stored")
        assert not [e for e in store.poll() if e.kind.startswith("export")]


def test_another_instance_restores_what_only_a_runtimes_planes_hold(manager):  # noqa: F811
    """A stores a checkpoint (its memory tier keeps it: the pool gets
    nothing); B's restore of it goes through an export: A's runtime (the
    thread below, in its poll loop) pins the chain and gets one end; B's
    planes then hold A's bytes."""
    import threading
    import time
    from test_pool import DEST_PAGES, DEST_ROW, BOUND_S

    a_tensors = rm.allocate()
    rm.fill(a_tensors, 0)
    a = strata.memory_store(rm.geometry(a_tensors), 6 << 20, pool=manager,
                            model_identity=rm.MODEL, pool_instance="a")
    consumed = len(rm.CHAIN) * rm.PAGE_TOKENS
    assert a.store(1, rm.TOKENS, consumed, rm.CHAIN, rm.ROW_SLOT, generation=3) == "queued"
    rm.poll_until(a, "stored")
    until("the holding announced", lambda: a.stats()["pool"]["holdings"] == 1, a)
    assert a.stats()["pool"]["puts"] == 0

    requested, ended, errors, stop = [], [], [], threading.Event()

    def runtime_loop():  # A's model thread: answers in the same iteration
        try:
            while not stop.is_set():
                for e in a.poll():
                    if e.kind == "export_requested":
                        requested.append(e)
                        a.export_pinned(e.export_id, e.start_page, rm.CHAIN[e.start_page:],
                                        rm.ROW_SLOT)
                    elif e.kind == "export_ended":
                        ended.append(e)
                time.sleep(0.001)
        except Exception as e:  # noqa: BLE001  (re-raised on the test's thread)
            errors.append(e)

    serving = threading.Thread(target=runtime_loop)
    serving.start()
    b_tensors = rm.allocate()
    try:
        with strata.memory_store(rm.geometry(b_tensors), 6 << 20, pool=manager,
                                 model_identity=rm.MODEL, pool_instance="b") as b:
            deadline = time.monotonic() + BOUND_S
            hit = None
            while hit is None:  # A's announcement may reach the manager after B asks
                assert time.monotonic() < deadline and not errors, f"B never found it {errors}"
                ticket = b.begin_lookup(rm.TOKENS)
                until("the ticket ready", lambda: b.ticket_status(ticket)["state"] == "ready", b)
                hit = b.lookup_for(ticket, rm.TOKENS)
                b.end_lookup(ticket)
            assert hit.consumed == consumed and hit.pages == len(rm.CHAIN)
            b.fetch(hit, 7, DEST_PAGES, DEST_ROW)
            rm.poll_until(b, "fetched")
            assert b.stats()["pool"]["claims"] == 1
        deadline = time.monotonic() + BOUND_S
        while not ended and not errors:
            assert time.monotonic() < deadline, "the export never ended"
            time.sleep(0.01)
    finally:
        stop.set()
        serving.join()
        pool = a.stats()["pool"]
        a.close()
    if errors:
        raise errors[0]
    assert len(requested) == 1 and len(ended) == 1 and ended[0].ok
    assert requested[0].generation == 3
    assert ended[0].export_id == requested[0].export_id
    assert pool["exports_served"] == 1 and pool["exports_aborted"] == 0, pool
    assert rm.check_restored(b_tensors, 0, DEST_PAGES, DEST_ROW) is None
