"""Embedded mode: three Python processes, one rank each, with the rendezvous
through a real torch.distributed.TCPStore; checkpoints stored from torch CPU
tensors and restored byte-exact into other page ids and slots, then again
from disk after every process restarted."""
WORLD = 3


def run_phase(spawn, tcp_store, directory, phase):
    workers = [spawn("embedded_rank.py", r, WORLD, tcp_store.port, directory, phase, f"{phase}/")
               for r in range(WORLD)]
    return [w.result() for w in workers]


def test_store_restore_then_restart_from_disk(spawn, tcp_store, scratch):
    first = run_phase(spawn, tcp_store, scratch, "store")
    for r in first:
        assert r["check"] == "ok", r
    assert first[0]["peer_checks"] == ["ok"] * (WORLD - 1)
    assert first[0]["tier"] == "disk"
    assert all(r["ended"] for r in first[1:])  # rank zero closed every peer's session
    files = [set(r["files"]) for r in first]
    assert any(f.endswith(".rec") or "-" in f for f in files[0]), files[0]
    assert files[1] == files[0] and files[2] == files[0], files

    second = run_phase(spawn, tcp_store, scratch, "restore")
    for r in second:
        assert r["check"] == "ok", r
    assert second[0]["tier"] == "disk"
    assert [set(r["files"]) for r in second] == files
