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
