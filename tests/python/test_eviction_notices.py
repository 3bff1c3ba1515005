"""Eviction notices: an offer the store refused for now ("deferred" or
"retry") whose checkpoint the runtime then evicts is counted as an abandoned
retry under its last cause; one that was taken later is not."""
import pytest

import runtime_model as rm
import strata

CAUSE_OF = {"deferred": "slabs", "retry": "queue"}


def distinct_tokens(i):
    return [1000 * (i + 1) + t for t in range(len(rm.TOKENS))]


def test_an_evicted_checkpoint_still_refused_counts_as_an_abandoned_retry():
    tensors = rm.allocate()
    consumed = len(rm.CHAIN) * rm.PAGE_TOKENS
    with strata.memory_store(rm.geometry(tensors), 1 << 20) as store:
        # Without polls every copy stays pinned in flight, so offers fill
        # the slots (or the transfer queue) until one is refused.
        refused = None
        for i in range(512):
            outcome = store.store(i + 1, distinct_tokens(i), consumed, rm.CHAIN, rm.ROW_SLOT)
            if outcome in CAUSE_OF:
                refused = (i, outcome)
                break
            assert outcome == "queued", outcome
        assert refused is not None, "the store never refused an offer"
        i, outcome = refused
        # A notice for a checkpoint it took, and one for a key never offered,
        # count nothing.
        store.evicted([(distinct_tokens(0), consumed, 1), (distinct_tokens(9999), consumed, 1)])
        assert sum(store.stats()["retry_abandoned"].values()) == 0
        store.evicted([(distinct_tokens(i), consumed, 1)])
        abandoned = store.stats()["retry_abandoned"]
        assert abandoned[CAUSE_OF[outcome]] == 1, abandoned
        assert sum(abandoned.values()) == 1, abandoned
        store.evictions_lost()  # accepted, nothing to count without a pool


def test_a_notice_whose_consumed_is_outside_its_tokens_is_refused():
    tensors = rm.allocate()
    with strata.memory_store(rm.geometry(tensors), 1 << 20) as store:
        with pytest.raises(strata.StrataError) as e:
            store.evicted([(rm.TOKENS, len(rm.TOKENS) + 1, 1)])
        assert e.value.kind == "invalid_argument"
        assert "eviction notice 0" in e.value.message
