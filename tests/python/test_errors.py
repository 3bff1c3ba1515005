"""Error paths raise clean Python exceptions (never crash), and the GIL is
released while a call waits."""
import datetime
import threading

import pytest
import torch
import torch.distributed as dist

import runtime_model as rm
import strata


def test_geometry_larger_than_its_tensor_is_refused():
    t = torch.zeros((8, 256), dtype=torch.uint8)
    rows = torch.zeros((4, 64), dtype=torch.uint8)
    with pytest.raises(strata.StrataError) as e:
        strata.Geometry(16, [strata.Allocation("k", t, bytes_per_id=512),
                             strata.Allocation("rows", rows, strata.STATE_ROWS)])
    assert e.value.kind == "invalid_argument"
    assert "'k' declares 8 x 512 bytes but its memory holds 2048" in e.value.message


def test_geometry_without_state_rows_is_refused():
    with pytest.raises(strata.StrataError) as e:
        strata.Geometry(16, [strata.Allocation("k", torch.zeros((8, 256), dtype=torch.uint8))])
    assert e.value.kind == "invalid_argument"


def test_raw_pointer_allocations_are_accepted():
    t = torch.zeros((8, 256), dtype=torch.uint8)
    rows = torch.zeros((4, 64), dtype=torch.uint8)
    geo = strata.Geometry(16, [strata.Allocation("k", (t.data_ptr(), 256, 8)),
                               strata.Allocation("rows", rows, strata.STATE_ROWS),
                               strata.Allocation("other", kind=strata.PEER, bytes_per_id=64, count=8)])
    assert geo.page_bytes == 256


def test_use_after_close_raises():
    tensors = rm.allocate()
    store = strata.memory_store(rm.geometry(tensors), 1 << 20)
    store.close()
    with pytest.raises(strata.StrataError) as e:
        store.lookup(rm.TOKENS)
    assert e.value.kind == "failed_precondition"
    assert "closed" in e.value.message
    store.close()  # closing twice is harmless


@pytest.mark.parametrize("bad", [[1, 2.5, 3], ["a"], torch.tensor([1.0, 2.0])])
def test_tokens_that_are_not_integers_raise_type_error(bad):
    tensors = rm.allocate()
    with strata.memory_store(rm.geometry(tensors), 1 << 20) as store:
        with pytest.raises(TypeError):
            store.lookup(bad)


def test_tokens_from_a_tensor_and_a_list_name_the_same_prefix():
    tensors = rm.allocate()
    rm.fill(tensors, 0)
    with strata.memory_store(rm.geometry(tensors), 1 << 20) as store:
        assert store.store(1, torch.tensor(rm.TOKENS), 64, rm.CHAIN, rm.ROW_SLOT) == "queued"
        rm.poll_until(store, "stored")
        hit = store.lookup(rm.TOKENS)
        assert hit is not None and hit.consumed == 64 and hit.tier == "memory"


def test_a_fetch_with_the_wrong_id_count_raises():
    tensors = rm.allocate()
    with strata.memory_store(rm.geometry(tensors), 1 << 20) as store:
        store.store(1, rm.TOKENS, 64, rm.CHAIN, rm.ROW_SLOT)
        rm.poll_until(store, "stored")
        hit = store.lookup(rm.TOKENS)
        with pytest.raises(strata.StrataError) as e:
            store.fetch(hit, 1, [1, 2], 0)
        assert e.value.kind == "invalid_argument"


def test_a_wrong_world_size_in_the_store_fails_with_both_sizes(tcp_store, scratch):
    # Rank zero of a world of 2 published itself; this peer believes in 3.
    tcp_store.set("w/zero", "strata-kv-v1 2 127.0.0.1 1")
    geo = rm.geometry(rm.allocate())
    with pytest.raises(strata.StrataError) as e:
        agent = strata.RankAgent(geo, tcp_store, 1, 3, scratch, 1 << 24, rm.MODEL, prefix="w/",
                                 timeout_s=5.0)
        agent.wait(10.0)
    assert "world size 3, rank zero has 2" in e.value.message


def test_a_peer_that_never_arrives_ends_in_a_bounded_error(tcp_store, scratch):
    geo = rm.geometry(rm.allocate())
    with pytest.raises(strata.StrataError) as e:
        strata.coordinator(geo, tcp_store, 2, scratch, 1 << 24, rm.MODEL, prefix="never/",
                           timeout_s=0.5)
    assert e.value.kind == "unavailable"
    assert "rank 1" in e.value.message


def test_a_rendezvous_object_without_set_and_get_is_refused(scratch):
    geo = rm.geometry(rm.allocate())
    with pytest.raises(strata.StrataError) as e:
        strata.coordinator(geo, object(), 2, scratch, 1 << 24, rm.MODEL, timeout_s=0.5)
    assert e.value.kind == "invalid_argument"


def test_the_gil_is_released_while_rank_zero_waits_for_its_peer(tcp_store, scratch):
    # The peer's hello is written by a Python thread that can only run while
    # rank zero's blocking call has released the GIL; without that release
    # the rendezvous would time out.
    peer_ran = threading.Event()

    def peer():
        client = dist.TCPStore("127.0.0.1", tcp_store.port, 1, False,
                               datetime.timedelta(seconds=30))
        client.wait(["gil/zero"], datetime.timedelta(seconds=30))
        peer_ran.set()
        # Say hello as rank 1 would, then let rank zero fail on the record link.
        client.set("gil/hello/1", "strata-kv-v1 2 127.0.0.1")

    t = threading.Thread(target=peer)
    t.start()
    geo = rm.geometry(rm.allocate())
    with pytest.raises(strata.StrataError):
        # No agent follows the hello, so the join ends at its bound.
        strata.coordinator(geo, tcp_store, 2, scratch / "gil", 1 << 24, rm.MODEL, prefix="gil/",
                           timeout_s=3.0)
    t.join(timeout=30)
    assert peer_ran.is_set()
    assert tcp_store.get("gil/ticket/1").startswith(b"ok ")


def test_attach_refuses_host_memory_outside_a_memfd_region():
    # Plain host memory cannot be shared with another process: attach names
    # the two ways it can share planes, before it connects anywhere.
    geo = strata.Geometry(16, [strata.Allocation("k", torch.zeros((8, 256), dtype=torch.uint8)),
                               strata.Allocation("rows", torch.zeros((4, 64), dtype=torch.uint8),
                                                 strata.STATE_ROWS)])
    with pytest.raises(strata.StrataError) as e:
        strata.attach("/nonexistent/strata.sock", geo, "m")
    assert e.value.kind == "invalid_argument"
    assert "memfd" in e.value.message and "IPC handle" in e.value.message
