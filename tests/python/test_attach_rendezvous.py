"""Attached mode with the rendezvous through the runtimes' own
torch.distributed.TCPStore (`strata rank --rendezvous attach`): three
`strata rank` processes, none told where rank zero is (the peers have no
master address, port or job secret; rank zero only listens), and three
Python runtimes. Rank zero's runtime publishes what its rank told it at
attach, the peers' runtimes hand it to their ranks, the ranks join; the
runtimes store from torch CPU tensors, are killed, and their restarts restore
byte-exact from the ranks' record directories."""
import random
import secrets

import pytest
import torch

import runtime_model as rm
import strata
from test_attached import COMMON, STRATA


def start_ranks_without_rendezvous(spawn, scratch, ranks):
    secret = scratch / "job.secret"
    secret.write_text(secrets.token_hex(32))
    secret.chmod(0o600)
    base = 10000 + random.randrange(20000)
    procs, sockets = [], []
    for r in range(ranks):
        sockets.append(scratch / f"rank{r}.sock")
        # Only rank zero has a rendezvous port (where it listens) and the
        # secret; a peer learns both from its runtime.
        own = (["--master-port", base, "--job-secret-file", secret] if r == 0 else [])
        procs.append(spawn.binary(
            STRATA, "rank", "--attach-socket", sockets[-1], *COMMON, "--world-size", ranks,
            "--rank", r, "--local-rank", r, "--rendezvous", "attach", *own,
            "--metrics-port", base + 10, "--prefix-cache-disk", scratch / f"records{r}",
            "--prefix-cache-disk-limit", "64MiB", "--connect-timeout", "60s"))
    for r, proc in enumerate(procs):
        proc.wait_for_line(f"serving the runtime of rank {r}")
    return procs, sockets


def test_ranks_join_through_the_runtimes_store_and_restore_byte_exact(spawn, tcp_store, scratch):
    ranks = 3
    procs, sockets = start_ranks_without_rendezvous(spawn, scratch, ranks)
    for r, socket_path in enumerate(sockets):
        tcp_store.set(f"attach/socket/{r}", str(socket_path))
    tcp_store.set("attach/ranks", str(ranks))
    first = [spawn("attached_runtime.py", r, tcp_store.port, "store", "attach-rendezvous")
             for r in range(ranks)]
    assert '"stored": "queued"' in first[0].wait_for_line('"stored"')
    # What rank zero's runtime published: its rank's address, and the secret.
    value = tcp_store.get("strata/attach/zero").decode().split(" ")
    assert value[0] == "strata-attach-v1" and value[1].startswith("127.0.0.1:")
    assert bytes.fromhex(value[2]) == (scratch / "job.secret").read_bytes().strip()
    for r in range(1, ranks):
        procs[r].wait_for_line(f"joining rank zero through {value[1]}")
    for w in first:
        w.kill()
    second = [spawn("attached_runtime.py", r, tcp_store.port, "restore", "attach-rendezvous")
              for r in range(ranks)]
    for r, w in enumerate(second):
        assert w.result() == {"check": "ok", "tier": "disk"}, f"rank {r}"


def attach_here(socket_path, rendezvous=None):
    """Attaches this process to the rank at socket_path with the tiny planes."""
    regions = {}

    def in_memfd(name, dims):
        regions[name] = strata.MemfdRegion(name, dims[0] * dims[1])
        return torch.frombuffer(regions[name], dtype=torch.uint8).view(dims)

    tensors = rm.allocate(rm.TINY, in_memfd)
    geo = rm.geometry(tensors, lambda name, t: regions[name], rm.TINY.page_tokens)
    return strata.attach(str(socket_path), geo, rm.TINY_MODEL, rendezvous=rendezvous)


def test_a_peer_rank_refuses_a_hello_without_a_usable_rendezvous(spawn, scratch):
    socket_path = scratch / "rank1.sock"
    base = 10000 + random.randrange(20000)
    rank = spawn.binary(STRATA, "rank", "--attach-socket", socket_path, *COMMON,
                        "--world-size", 2, "--rank", 1, "--local-rank", 1,
                        "--rendezvous", "attach", "--metrics-port", base,
                        "--prefix-cache-disk", scratch / "records1",
                        "--prefix-cache-disk-limit", "64MiB", "--connect-timeout", "60s")
    rank.wait_for_line("serving the runtime of rank 1")
    good_secret = secrets.token_hex(32).encode()
    for rendezvous, why in [(None, "the Hello carries none"),
                            (("127.0.0.1", good_secret), "host:port"),
                            (("127.0.0.1:1", b"short"), "job secret")]:
        with pytest.raises(strata.StrataError) as e:
            attach_here(socket_path, rendezvous)
        assert e.value.kind == "invalid_argument", rendezvous
        assert why in e.value.message, e.value.message


def test_publish_needs_a_rank_that_gave_a_rendezvous_and_read_waits_bounded(spawn, scratch,
                                                                           tcp_store):
    socket_path = scratch / "rank0.sock"
    rank = spawn.binary(STRATA, "rank", "--attach-socket", socket_path, *COMMON,
                        "--prefix-cache-memory", "8MiB", "--metrics-port", 0)
    rank.wait_for_line("serving the runtime of rank 0")
    client = attach_here(socket_path)
    assert client.rendezvous is None
    with pytest.raises(strata.StrataError) as e:
        strata.publish_rendezvous(tcp_store, client)
    assert e.value.kind == "failed_precondition"
    client.close()
    with pytest.raises(strata.StrataError) as e:
        strata.read_rendezvous(tcp_store, prefix="nobody/", timeout_s=1)
    assert e.value.kind == "unavailable" and "nobody/attach/zero" in e.value.message
    tcp_store.set("bad/attach/zero", "strata-kv-v1 3 127.0.0.1 80")
    with pytest.raises(strata.StrataError) as e:
        strata.read_rendezvous(tcp_store, prefix="bad/", timeout_s=1)
    assert e.value.kind == "invalid_argument"
